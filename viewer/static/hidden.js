// Hidden senders: kept in this browser only (localStorage), registered with the viewer as one set (`POST
// /api/hidden`) and named by its id (`hidden=`), so any number of them leave totals, paging, the domain view, the
// chart and the export; each Hide offers Undo at once, and the Hidden list can unhide any of them. Kept senders
// (the Keep list, also in this browser) join the set while a preset is on, so presets never propose them again.

import { api } from "./api.js";
import { saveHidden, state } from "./state.js";
import { loadTable } from "./table.js";
import { $, el, fmt } from "./util.js";

let undoTimer = null;
let undoAction = null;
const registered = new Map(); // the joined members → the id the viewer gave them

/** The id of a sender set, registered with the viewer when new to it; null for an empty set. */
export async function setId(members) {
  if (!members.size) return null;
  const senders = [...members].sort();
  const key = senders.join("\n");
  if (!registered.has(key)) {
    const answer = await api("/api/hidden", { body: { senders } });
    if (registered.size > 4) registered.clear(); // the viewer keeps a few sets only; old ids go stale anyway
    registered.set(key, answer.hidden);
  }
  return registered.get(key);
}

/** Forgets every registered id (the viewer answered `hidden_unknown`: it restarted). */
export function forgetSets() {
  registered.clear();
}

/** What a read leaves out: the hidden senders, plus the kept ones when `withKept` (a preset is proposing). */
function leftOut(withKept) {
  return withKept && state.kept.size ? new Set([...state.hidden, ...state.kept]) : state.hidden;
}

/**
 * Runs `request(params)` with the hidden set in `params` (as `hidden=`). A viewer that no longer holds the set
 * (it restarted) answers `hidden_unknown`: the set is sent again and the request repeated once.
 */
export async function withHidden(params, request, { withKept = false } = {}) {
  const attempt = async () => {
    const id = await setId(leftOut(withKept));
    const mine = new URLSearchParams(params);
    if (id) mine.set("hidden", id);
    return request(mine);
  };
  try {
    return await attempt();
  } catch (err) {
    if (!err || err.kind !== "hidden_unknown") throw err;
    registered.clear();
    return attempt();
  }
}

function changed() {
  saveHidden();
  document.dispatchEvent(new Event("hidden-changed")); // the all-mail chart leaves hidden senders out too
}

function reload() {
  const t = state.table;
  loadTable().then(() => {
    // Hiding the last rows of the last page would leave an empty page: step back.
    if (state.lastPage && t.offset > 0 && t.offset >= state.lastPage.total) {
      t.offset = Math.max(0, Math.floor((state.lastPage.total - 1) / t.limit) * t.limit);
      loadTable();
    }
  });
  renderHiddenList();
}

/** Shows the toast with `text` and an Undo that runs `action` once (each bulk action offers its own). */
export function offerUndo(text, action) {
  $("undo-text").textContent = text;
  $("undo").classList.remove("hidden");
  undoAction = action;
  // The row (and the focused button) may be gone: keyboard users land on Undo instead of the page top.
  const active = document.activeElement;
  if (active === document.body || !document.contains(active) || active.classList.contains("hide-button") || active.closest("#selection-bar, #rows")) $("undo-button").focus();
  clearTimeout(undoTimer);
  undoTimer = setTimeout(() => $("undo").classList.add("hidden"), 15000);
}

export function hide(sender, name) {
  hideMany([sender], `Hid ${name}. It no longer counts in totals or pages.`);
}

/** Hides every sender of `senders`; Undo unhides exactly the ones this call hid. */
export function hideMany(senders, text) {
  const added = senders.filter((s) => !state.hidden.has(s));
  for (const s of added) state.hidden.add(s);
  changed();
  reload();
  offerUndo(text || `Hid ${fmt(added.length)} sender${added.length === 1 ? "" : "s"}. They no longer count in totals or pages.`, () => unhideMany(added, { quiet: true }));
}

export function unhide(sender) {
  unhideMany([sender], { quiet: true });
}

export function unhideMany(senders, { quiet = false } = {}) {
  const removed = senders.filter((s) => state.hidden.has(s));
  for (const s of removed) state.hidden.delete(s);
  changed();
  $("undo").classList.add("hidden");
  reload();
  if (!quiet) offerUndo(`Unhid ${fmt(removed.length)} sender${removed.length === 1 ? "" : "s"}.`, () => hideMany(removed, `Hid ${fmt(removed.length)} senders again.`));
}

export function renderHiddenList() {
  $("hidden-count").textContent = fmt(state.hidden.size);
  const items = [...state.hidden].sort().map((sender) => {
    const b = el("button", { cls: "button ghost small", text: "Unhide", attrs: { type: "button", "aria-label": `Unhide ${sender || "(no sender)"}` } });
    b.addEventListener("click", () => unhide(sender));
    return el("li", {}, [el("span", { cls: "hidden-sender", text: sender || "(no sender)" }), b]);
  });
  if (!items.length) items.push(el("li", { cls: "hint", text: "No hidden senders." }));
  $("hidden-list").replaceChildren(...items);
  $("unhide-all").disabled = !state.hidden.size;
}

export function wireHidden() {
  $("hidden-toggle").addEventListener("click", () => {
    const open = $("hidden-panel").classList.toggle("hidden") === false;
    $("hidden-toggle").setAttribute("aria-expanded", String(open));
    renderHiddenList();
  });
  $("undo-button").addEventListener("click", () => {
    const action = undoAction;
    undoAction = null;
    $("undo").classList.add("hidden");
    if (action) action();
    $("table-nav").focus();
  });
  $("unhide-all").addEventListener("click", () => unhideMany([...state.hidden]));
  renderHiddenList();
}
