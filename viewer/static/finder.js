// Finding what to act on (#22): the date and size filters beside the presets, the month a chart bar picked, and
// the page address, which keeps the table's view, preset, filters and sort (a reload or a shared link shows
// the same senders). Every filter here is one the API applies, so totals, paging, selection and export agree.

import { state } from "./state.js";
import { $, el } from "./util.js";

// Each filter: its API parameter, the input that sets it, and how the input's value becomes the parameter's.
const MB = 1024 * 1024;
const FIELDS = [
  ["last_before", "find-last-before", (v) => v],
  ["last_after", "find-last-after", (v) => v],
  ["min_bytes", "find-min-mb", (v) => String(Math.round(Number(v) * MB))],
  ["min_avg_bytes", "find-min-avg-kb", (v) => String(Math.round(Number(v) * 1024))],
];
// The search is not kept (it is what a person types now, and it would land in the browser's history).
const URL_KEYS = ["view", "preset", "domain", "sort", "order", "month", ...FIELDS.map(([key]) => key)];
const MONTH_NAMES = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** A UTC day `years` and `months` before today, as the API's dates are written (YYYY-MM-DD). */
export function daysBefore({ years = 0, months = 0 } = {}) {
  const now = new Date();
  const then = new Date(Date.UTC(now.getUTCFullYear() - years, now.getUTCMonth() - months, now.getUTCDate()));
  return then.toISOString().slice(0, 10);
}

export const monthLabel = (key) => `${MONTH_NAMES[Number(key.slice(5, 7)) - 1]} ${key.slice(0, 4)}`;

/** The filters of this file as API parameters (sender view only: a domain row is no one sender's dates). */
export function findParams(params) {
  if (state.view !== "senders") return;
  for (const [key, value] of Object.entries(state.table.find)) if (value !== "" && value !== undefined) params.set(key, value);
}

/** Reads the table's state from the page address, before the first load. Unknown values are left to the API,
 * which answers 422 for a bad one (shown in the table's message). */
export function readAddress(presets, views) {
  const got = new URLSearchParams(window.location.search);
  const t = state.table;
  if (views.includes(got.get("view"))) state.view = got.get("view");
  if (got.get("preset") in presets) t.preset = got.get("preset");
  if (got.get("domain")) t.domain = got.get("domain");
  if (got.get("sort")) t.sort = got.get("sort");
  if (["asc", "desc"].includes(got.get("order"))) t.order = got.get("order");
  for (const key of ["month", ...FIELDS.map(([k]) => k)]) if (got.get(key)) t.find[key] = got.get(key);
  for (const [key, id] of FIELDS) {
    const raw = t.find[key];
    if (raw === undefined) continue;
    $(id).value = key === "min_bytes" ? String(Number(raw) / MB) : key === "min_avg_bytes" ? String(Number(raw) / 1024) : raw;
  }
  if (FIELDS.some(([key]) => t.find[key])) $("find-more").open = true;
}

/** Writes the table's state into the address (replacing it: paging and sorting are no history entries); what
 * else the address holds (`account=`, accounts.js) stays as it is, so a reload shows the same account. */
export function writeAddress() {
  const t = state.table;
  const values = { view: state.view === "senders" ? "" : state.view, preset: t.preset === "all" ? "" : t.preset, domain: state.view === "senders" ? t.domain : "", sort: t.sort === "mails_sent" && t.order === "desc" ? "" : t.sort, order: t.sort === "mails_sent" && t.order === "desc" ? "" : t.order, ...t.find };
  const out = new URLSearchParams(window.location.search);
  for (const key of URL_KEYS) out.delete(key);
  for (const key of URL_KEYS) if (values[key]) out.set(key, values[key]);
  const search = out.size ? `?${out}` : "";
  if (search !== window.location.search) window.history.replaceState(null, "", `${window.location.pathname}${search}${window.location.hash}`);
}

/** The chip that says a chart bar narrows the table, with its ✕ (keyboard reachable like any button). */
export function renderMonthFilter(reload) {
  let chip = $("month-filter");
  const month = state.table.find.month;
  if (!month || state.view !== "senders") {
    if (chip) chip.remove();
    return;
  }
  if (!chip) {
    chip = el("span", { cls: "filter-chip", attrs: { id: "month-filter" } });
    $("range").after(chip);
  }
  const clear = el("button", { cls: "button ghost small", text: "✕", attrs: { type: "button", "aria-label": `Show senders of every month, not only ${monthLabel(month)}` } });
  clear.addEventListener("click", () => {
    delete state.table.find.month;
    state.table.offset = 0;
    reload();
    $("search").focus();
  });
  chip.replaceChildren(el("span", { text: `Mail in ${monthLabel(month)}` }), clear);
}

/** A chart bar picked: the sender table shows the senders with mail that month. */
export function pickMonth(month, showSenders) {
  state.table.find.month = month;
  state.table.offset = 0;
  showSenders();
}

export function wireFinder(reload) {
  for (const [key, id, toParam] of FIELDS) {
    $(id).addEventListener("change", () => {
      const raw = $(id).value.trim();
      const valid = raw !== "" && $(id).checkValidity() && !(key.startsWith("min_") && !(Number(raw) > 0));
      if (valid) state.table.find[key] = toParam(raw);
      else delete state.table.find[key];
      state.table.offset = 0;
      reload();
    });
  }
  $("find-clear").addEventListener("click", () => {
    for (const [key, id] of FIELDS) {
      $(id).value = "";
      delete state.table.find[key];
    }
    state.table.offset = 0;
    reload();
  });
}
