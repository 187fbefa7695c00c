// Hidden senders: kept in this browser only (localStorage), sent to the API as `exclude` so they leave totals,
// paging and the export; each Hide offers Undo at once, and the Hidden list can unhide any of them.

import { saveHidden, state } from "./state.js";
import { loadTable } from "./table.js";
import { $, el, fmt } from "./util.js";

let undoTimer = null;

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
