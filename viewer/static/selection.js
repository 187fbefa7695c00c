// Row selection and the bulk actions on it: checkboxes, shift-click ranges, the page's box, "every matching
// sender" (named by the filter, never listed in the browser), and the selection bar (Hide, Keep, Gmail…, Clear).
// The selection lives in this page only; Hide and Keep persist through hidden.js and keep.js.

import { openGmail } from "./gmail.js";
import { forgetSets, hideMany, setId, withHidden } from "./hidden.js";
import { keepMany } from "./keep.js";
import { api } from "./api.js";
import { showFailure } from "./messages.js";
import { state } from "./state.js";
import { filterParams, keptLeftOut } from "./table.js";
import { $, fmt } from "./util.js";

const sel = state.selection;
const MAX_BULK = 100000; // what one hidden set may hold (`POST /api/hidden`)
const READ_PAGE = 500;
let anchor = null; // the sender last clicked, where a shift-click range starts

const filterKey = () => `${state.view}|${filterParams()}|${keptLeftOut()}`;
const pageRows = () => [...document.querySelectorAll("#rows tr[data-sender]")];

export const isSelected = (sender) => (sel.all ? true : sel.senders.has(sender));

function mark(row, on) {
  if (on) sel.senders.set(row.dataset.sender, Number(row.dataset.messages) || 0);
  else sel.senders.delete(row.dataset.sender);
}

/** From "every match" to the rows on this page (the only ones the page can list). */
function leaveAll(rows) {
  if (!sel.all) return;
  sel.all = null;
  for (const r of rows) mark(r, true);
}

export function toggleRow(row, on, shift) {
  const rows = pageRows();
  leaveAll(rows);
  const from = shift && anchor !== null ? rows.findIndex((r) => r.dataset.sender === anchor) : -1;
  const to = rows.indexOf(row);
  const range = from >= 0 ? rows.slice(Math.min(from, to), Math.max(from, to) + 1) : [row];
  for (const r of range) mark(r, on);
  anchor = row.dataset.sender;
  render();
}

export function selectPage(on) {
  const rows = pageRows();
  leaveAll(rows);
  for (const r of rows) mark(r, on);
  render();
}

export function selectAllMatching() {
  const page = state.lastPage;
  if (!page) return;
  sel.senders.clear();
  sel.all = { key: filterKey(), total: page.total, exact: page.total_exact !== false, messages: page.matched_messages };
  render();
}

export function clearSelection() {
  sel.all = null;
  sel.senders.clear();
  anchor = null;
  render();
}

/** After each table render: "every match" follows its filter's new count, or ends when the filter changed. */
export function syncSelection() {
  const page = state.lastPage;
  if (sel.all && (sel.all.key !== filterKey() || state.view !== "senders")) sel.all = null;
  else if (sel.all && page) Object.assign(sel.all, { total: page.total, exact: page.total_exact !== false, messages: page.matched_messages });
  for (const s of [...sel.senders.keys()]) if (state.hidden.has(s)) sel.senders.delete(s);
  render();
}

function counts() {
  if (sel.all) return [sel.all.total, sel.all.messages];
  let messages = 0;
  for (const n of sel.senders.values()) messages += n;
  return [sel.senders.size, messages];
}

const plural = (n, word) => `${fmt(n)} ${word}${n === 1 ? "" : "s"}`;

function render() {
  const rows = pageRows();
  for (const r of rows) {
    const on = isSelected(r.dataset.sender);
    const box = r.querySelector("input.select-row");
    if (box) box.checked = on;
    r.classList.toggle("selected", on);
  }
  const on = rows.filter((r) => isSelected(r.dataset.sender)).length;
  const head = $("select-page");
  if (head) {
    head.checked = rows.length > 0 && on === rows.length;
    head.indeterminate = on > 0 && on < rows.length;
  }
  const [senders, messages] = counts();
  $("selection-bar").classList.toggle("hidden", senders === 0 || state.view !== "senders");
  const counted = sel.all && !sel.all.exact ? `${fmt(senders)}+ senders selected` : `${plural(senders, "sender")} selected · ${plural(messages ?? 0, "message")}`;
  $("selection-count").textContent = `${counted}${sel.all ? " (every match)" : ""}`;
  const total = state.lastPage ? state.lastPage.total : 0;
  const matching = $("select-matching");
  matching.classList.toggle("hidden", Boolean(sel.all) || !rows.length || on < rows.length || total <= senders);
  matching.textContent = `Select all ${fmt(total)}${state.lastPage && state.lastPage.total_exact === false ? "+" : ""} matching`;
}

/** The selected senders as a list; "every match" is read from the API a page at a time. */
async function selectedSenders() {
  if (!sel.all) return [...sel.senders.keys()];
  if (sel.all.total > MAX_BULK) throw new Error(`At most ${fmt(MAX_BULK)} senders at once; narrow the search or preset first.`);
  const out = [];
  const params = filterParams();
  for (const [k, v] of [["sort", "mails_sent"], ["order", "desc"], ["limit", String(READ_PAGE)]]) params.set(k, v);
  // Read to the last page, not to `total`: past 30,000 the count may have stopped there.
  for (let offset = 0; ; offset += READ_PAGE) {
    params.set("offset", String(offset));
    const page = await withHidden(params, (mine) => api(`/api/senders?${mine}`), { withKept: keptLeftOut() });
    out.push(...page.senders.map((s) => s.sender));
    if (out.length > MAX_BULK) throw new Error(`At most ${fmt(MAX_BULK)} senders at once; narrow the search or preset first.`);
    $("selection-count").textContent = `Reading ${fmt(out.length)} of ${fmt(sel.all.total)}${sel.all.exact ? "" : "+"} senders…`;
    if (page.senders.length < READ_PAGE) break;
  }
  return out;
}

/** The query parameters naming the selection for `/api/gmail/…`: a registered set, or the table's filter. */
async function selectionParams() {
  if (sel.all) return withHidden(filterParams(), async (mine) => mine, { withKept: keptLeftOut() });
  const params = new URLSearchParams();
  params.set("selected", await setId(new Set(sel.senders.keys())));
  return params;
}

async function bulk(action) {
  const bar = $("selection-bar");
  for (const b of bar.querySelectorAll("button")) b.disabled = true;
  try {
    const senders = await selectedSenders();
    clearSelection();
    action(senders);
  } catch (err) {
    showFailure("table-message", err, { scroll: false });
    render();
  } finally {
    for (const b of bar.querySelectorAll("button")) b.disabled = false;
  }
}

export function wireSelection() {
  $("select-matching").addEventListener("click", selectAllMatching);
  $("selection-clear").addEventListener("click", clearSelection);
  $("selection-hide").addEventListener("click", () => bulk((senders) => hideMany(senders)));
  $("selection-keep").addEventListener("click", () => bulk((senders) => keepMany(senders)));
  $("selection-gmail").addEventListener("click", () => {
    const [senders] = counts();
    openGmail({ describe: `${plural(senders, "sender")} selected`, params: selectionParams, forget: forgetSets });
  });
}
