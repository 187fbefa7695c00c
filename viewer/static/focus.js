// Keyboard focus that survives the page's redraws: when the focused element is replaced (a table or history
// redraw), hidden (a panel that closed) or disabled, focus moves to the element that took its place, never to
// <body>. Also the page's two screen-reader announcers (polite for progress, assertive for errors).

import { $ } from "./util.js";

// What replaced an element that went away, by its id or the id of the region it was in (nearest first).
const SUCCESSORS = {
  "start-import": ["#progress-cancel", "#progress"],
  "start-scan": ["#progress-cancel", "#progress"],
  onboarding: ["#progress-cancel", "#progress", "#table-nav"],
  "progress-cancel": ["#run-banner-actions button", "#run-banner", "#progress", "#table-nav"],
  progress: ["#run-banner-actions button", "#run-banner", "#table-nav"],
  "run-banner": ["#progress-cancel", "#progress", "#table-nav"],
  history: ["#progress-cancel", "#progress", "#history-list button", "#history"],
};
const FOCUSABLE = "button, a[href], input, select, textarea, summary, [tabindex]";
const FOCUSABLE_NATIVE = "button, a[href], input, select, textarea, summary"; // a control, not a stand-in region

let last = null; // { node, key } of the element focused last
// Where focus went in place of a successor not shown yet (a region while its run starts): it moves on to the
// better successor once that appears, unless the person has moved focus since.
let standIn = null; // { node, key }

function usable(node) {
  if (!node || !node.isConnected || node.disabled) return false;
  return node.checkVisibility ? node.checkVisibility() : node.offsetParent !== null;
}

function labelOf(node) {
  return node.getAttribute("aria-label") || node.textContent.trim();
}

/** What identifies `node` across a redraw: its id, its row or run, its class and label, and its regions. */
export function keyOf(node) {
  const row = node.closest("tr[data-sender], tr[data-domain]");
  const run = node.closest("li[data-run-id]");
  const regions = [];
  for (let up = node; up && up !== document.body; up = up.parentElement) if (up.id) regions.push(up.id);
  return {
    id: node.id || "",
    sort: node.dataset ? node.dataset.sort || "" : "",
    row: row ? (row.dataset.sender !== undefined ? ["sender", row.dataset.sender] : ["domain", row.dataset.domain]) : null,
    rowIndex: row ? [...row.parentElement.children].indexOf(row) : -1,
    run: run ? run.dataset.runId : "",
    cls: node.className || "",
    label: labelOf(node),
    regions,
  };
}

function sameIn(scope, key) {
  if (!scope) return null;
  const all = [...scope.querySelectorAll(FOCUSABLE)].filter(usable);
  return all.find((n) => n.className === key.cls && labelOf(n) === key.label) || null;
}

function firstIn(scope, key) {
  if (!scope) return null;
  const all = [...scope.querySelectorAll(FOCUSABLE)].filter(usable);
  return all.find((n) => n.className === key.cls) || all[0] || null;
}

function rowFor(key) {
  if (!key.row) return null;
  const [kind, value] = key.row;
  const exact = document.querySelector(`#rows tr[data-${kind}="${CSS.escape(value)}"]`);
  if (exact) return exact;
  const rows = $("rows").children;
  return rows.length ? rows[Math.min(key.rowIndex, rows.length - 1)] : null;
}

function successor(key) {
  for (const name of [key.id, ...key.regions]) {
    for (const selector of SUCCESSORS[name] || []) {
      const found = [...document.querySelectorAll(selector)].find(usable);
      if (found) return found;
    }
  }
  return null;
}

/** The element that stands where `key`'s element stood, or null. */
export function equivalent(key) {
  const byId = key.id ? $(key.id) : null;
  if (usable(byId)) return byId;
  if (key.sort) {
    const sort = document.querySelector(`button[data-sort="${CSS.escape(key.sort)}"]`);
    if (usable(sort)) return sort;
  }
  const run = key.run ? document.querySelector(`li[data-run-id="${CSS.escape(key.run)}"]`) : null;
  const row = rowFor(key);
  const same = sameIn(row, key) || sameIn(run, key);
  if (same) return same;
  const next = successor(key);
  if (next) return next;
  const near = firstIn(row, key) || firstIn(run, key);
  if (near) return near;
  for (const id of key.regions) {
    const region = $(id);
    if (usable(region)) return firstIn(region, key) || region;
  }
  return $("table-nav") && usable($("table-nav")) ? $("table-nav") : $("main");
}

/** Focuses `node`, making a region focusable by script (tabindex -1) when it is not by itself. */
export function moveFocus(node, { scroll = true } = {}) {
  if (!node) return;
  if (!node.matches(FOCUSABLE)) node.setAttribute("tabindex", "-1");
  node.focus({ preventScroll: !scroll });
}

// Run from the MutationObserver's microtask, right after the change and before anything paints or any other task
// runs, so focus is never seen resting on <body>; `checkVisibility` brings the styles up to date first.
function check() {
  if (standIn) {
    const node = standIn.node;
    const better = document.activeElement === node && usable(node) ? successor(standIn.key) : null;
    if (better !== node) standIn = null;
    if (better && better !== node) { // shown before the stand-in in the successors' order: where focus belongs
      moveFocus(better);
      return;
    }
  }
  if (!last) return;
  const active = document.activeElement;
  if (active && active !== document.body && active !== last.node) return; // focus is somewhere on purpose
  if (usable(last.node)) {
    if (active !== last.node) last = null; // the person clicked elsewhere: not ours to move
    return;
  }
  if (last.node.closest && last.node.closest("dialog")) return; // the dialog returns focus itself (detail.js)
  const key = last.key;
  const target = equivalent(key);
  const samePlace = Boolean(key.row || key.run || key.sort);
  moveFocus(target, { scroll: !samePlace });
  standIn = target && target === successor(key) && !target.matches(FOCUSABLE_NATIVE) ? { node: target, key } : null;
}

export function wireFocus() {
  document.addEventListener("focusin", (event) => {
    const node = event.target;
    if (node && node !== document.body && node.nodeType === 1) last = { node, key: keyOf(node) };
  });
  new MutationObserver(check).observe(document.body, {
    childList: true,
    subtree: true,
    attributes: true,
    attributeFilter: ["class", "disabled", "hidden", "open"],
  });
}

/** Says `text` to screen readers: politely (progress, run state) or at once (errors). */
export function announce(text, { assertive = false } = {}) {
  const box = $(assertive ? "announce-assertive" : "announce-polite");
  if (!box || box.textContent === text) return;
  box.textContent = text;
}
