// Hidden senders: kept in this browser only (localStorage), registered with the viewer as one set (`POST
// /api/hidden`) and named by its id (`hidden=`), so any number of them leave totals, paging, the domain view, the
// chart and the export; each Hide offers Undo at once, and the Hidden list can unhide any of them.

import { api } from "./api.js";
import { saveHidden, state } from "./state.js";
import { loadTable } from "./table.js";
import { $, el, fmt } from "./util.js";

let undoTimer = null;
let registered = { key: null, id: null };

// The id of the current hidden set, registering it when it changed; null when nothing is hidden.
async function hiddenId() {
  if (!state.hidden.size) return null;
  const senders = [...state.hidden].sort();
  const key = senders.join("\n");
  if (registered.key !== key) {
    const answer = await api("/api/hidden", { body: { senders } });
    registered = { key, id: answer.hidden };
  }
  return registered.id;
}

/**
 * Runs `request(params)` with the hidden set in `params` (as `hidden=`). A viewer that no longer holds the set
 * (it restarted) answers `hidden_unknown`: the set is sent again and the request repeated once.
 */
export async function withHidden(params, request) {
  const attempt = async () => {
    const id = await hiddenId();
    const mine = new URLSearchParams(params);
    if (id) mine.set("hidden", id);
    return request(mine);
  };
  try {
    return await attempt();
  } catch (err) {
    if (!err || err.kind !== "hidden_unknown") throw err;
    registered = { key: null, id: null };
    return attempt();
  }
}

function changed() {
  saveHidden();
  document.dispatchEvent(new Event("hidden-changed")); // the all-mail chart leaves hidden senders out too
}

export function hide(sender, name) {
  state.hidden.add(sender);
  changed();
  const t = state.table;
  loadTable().then(() => {
    // Hiding the last row of the last page would leave an empty page: step back one.
    if (state.lastPage && t.offset > 0 && t.offset >= state.lastPage.total) {
      t.offset = Math.max(0, t.offset - t.limit);
      loadTable();
    }
  });
  renderHiddenList();
  $("undo-text").textContent = `Hid ${name}. It no longer counts in totals or pages.`;
  $("undo").classList.remove("hidden");
  $("undo-button").dataset.sender = sender;
  // The row (and the focused Hide button) is gone: keyboard users land on Undo instead of the page top.
  if (document.activeElement === document.body || !document.contains(document.activeElement) || document.activeElement.classList.contains("hide-button")) $("undo-button").focus();
  clearTimeout(undoTimer);
  undoTimer = setTimeout(() => $("undo").classList.add("hidden"), 15000);
}

export function unhide(sender) {
  state.hidden.delete(sender);
  changed();
  $("undo").classList.add("hidden");
  renderHiddenList();
  loadTable();
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
}

export function wireHidden() {
  $("hidden-toggle").addEventListener("click", () => {
    const open = $("hidden-panel").classList.toggle("hidden") === false;
    $("hidden-toggle").setAttribute("aria-expanded", String(open));
    renderHiddenList();
  });
  $("undo-button").addEventListener("click", () => {
    unhide($("undo-button").dataset.sender);
    $("table-nav").focus();
  });
  renderHiddenList();
}
