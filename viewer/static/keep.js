// The Keep list: senders the person wants (kept in this browser, like hidden senders). Presets never propose them
// again (table.js leaves them out while a preset is on); they stay in "All", the totals and the export.

import { offerUndo } from "./hidden.js";
import { saveKept, state } from "./state.js";
import { loadTable } from "./table.js";
import { $, el, fmt } from "./util.js";

function changed() {
  saveKept();
  renderKeptList();
  loadTable();
}

export function keepMany(senders) {
  const added = senders.filter((s) => !state.kept.has(s));
  for (const s of added) state.kept.add(s);
  changed();
  offerUndo(`Kept ${fmt(added.length)} sender${added.length === 1 ? "" : "s"}: presets no longer propose them.`, () => unkeepMany(added));
}

export function unkeepMany(senders) {
  for (const s of senders) state.kept.delete(s);
  changed();
}

export function renderKeptList() {
  $("kept-count").textContent = fmt(state.kept.size);
  const items = [...state.kept].sort().map((sender) => {
    const b = el("button", { cls: "button ghost small", text: "Unkeep", attrs: { type: "button", "aria-label": `Unkeep ${sender || "(no sender)"}` } });
    b.addEventListener("click", () => {
      unkeepMany([sender]);
      offerUndo(`${sender || "(no sender)"} is off the Keep list.`, () => keepMany([sender]));
    });
    return el("li", {}, [el("span", { cls: "hidden-sender", text: sender || "(no sender)" }), b]);
  });
  if (!items.length) items.push(el("li", { cls: "hint", text: "No kept senders. Select senders and choose Keep." }));
  $("kept-list").replaceChildren(...items);
}

export function wireKept() {
  $("kept-toggle").addEventListener("click", () => {
    const open = $("kept-panel").classList.toggle("hidden") === false;
    $("kept-toggle").setAttribute("aria-expanded", String(open));
    renderKeptList();
  });
  renderKeptList();
}
