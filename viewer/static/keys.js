// Keyboard shortcuts for the sender table: `/` search, `j`/`k` next/previous row, `x` select the row (Shift+x a
// range), `h` hide the selection (or the row), `?` the list of keys. Never while typing or with a dialog open;
// every one is also a button or a link, so nothing needs them.

import { hide } from "./hidden.js";
import { state } from "./state.js";
import { $ } from "./util.js";

const rows = () => [...document.querySelectorAll("#rows tr[data-sender]")];
const currentRow = () => (document.activeElement ? document.activeElement.closest("#rows tr[data-sender]") : null);

function typing(target) {
  return target instanceof HTMLElement && (target.isContentEditable || ["INPUT", "SELECT", "TEXTAREA"].includes(target.tagName));
}

function move(step) {
  const all = rows();
  if (!all.length) return;
  const at = all.indexOf(currentRow());
  const next = all[at < 0 ? (step > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, at + step))];
  next.querySelector("button.who").focus();
}

function hideKey() {
  if (state.selection.all || state.selection.senders.size) return $("selection-hide").click();
  const row = currentRow();
  if (!row) return;
  hide(row.dataset.sender, row.querySelector(".who-name").textContent); // focus moves to Undo, as after a click
}

const ACTIONS = {
  "/": () => $("search").focus(),
  j: () => move(1),
  k: () => move(-1),
  x: () => currentRow()?.querySelector("input.select-row")?.click(),
  X: () => currentRow()?.querySelector("input.select-row")?.dispatchEvent(new MouseEvent("click", { shiftKey: true, bubbles: true })),
  h: hideKey,
  "?": () => ($("keys").open ? $("keys").close() : $("keys").showModal()),
};

export function wireKeys() {
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (document.querySelector("dialog[open]") && !$("keys").open) return;
    const action = ACTIONS[event.key];
    if (!action || (state.view !== "senders" && !["/", "?"].includes(event.key))) return;
    event.preventDefault();
    action();
  });
  $("keys-close").addEventListener("click", () => $("keys").close());
}
