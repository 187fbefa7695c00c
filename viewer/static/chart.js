// The volume-over-time chart, drawn as plain SVG elements (no library, nothing inline that CSP would refuse).

import { bytes, el, fmt } from "./util.js";

const NS = "http://www.w3.org/2000/svg";
const HEIGHT = 160;
const PHONE_HEIGHT = 112; // a phone's chart is lower, so the table's first row fits the first screen
const PAD = { top: 12, right: 8, bottom: 22, left: 44 };

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Every month from the first to the last one in `months`, with zero where nothing arrived. */
export function fillMonths(months) {
  if (!months.length) return [];
  const byMonth = new Map(months.map((m) => [m.month, m]));
  const sorted = [...byMonth.keys()].sort();
  let [year, month] = sorted[0].split("-").map(Number);
  const [lastYear, lastMonth] = sorted[sorted.length - 1].split("-").map(Number);
  const out = [];
  while (year < lastYear || (year === lastYear && month <= lastMonth)) {
    const key = `${year}-${String(month).padStart(2, "0")}`;
    out.push(byMonth.get(key) || { month: key, messages: 0, bytes: 0 });
    month += 1;
    if (month > 12) {
      month = 1;
      year += 1;
    }
  }
  return out;
}

function niceMax(value) {
  if (value <= 5) return 5;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

const MONTH_NAMES = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

function label(key) {
  const [y, m] = key.split("-").map(Number);
  return `${MONTH_NAMES[m - 1]} ${y}`;
}

/** Draws `volume` ({months, undated}) into `container`; `width` is the drawing width in CSS pixels. */
/** `onPick(month)`: the bars become buttons (one Tab stop, arrow keys move between months, Enter or Space picks). */
export function drawVolume(container, volume, { caption = "Messages per month", onPick = null } = {}) {
  const months = fillMonths(volume.months || []);
  const total = months.reduce((sum, m) => sum + m.messages, 0);
  const width = Math.max(280, Math.floor(container.clientWidth || 600));
  if (!months.length) {
    container.replaceChildren(el("p", { cls: "hint", text: volume.undated ? `${fmt(volume.undated)} messages have no date.` : "No dated mail." }));
    return;
  }
  const max = niceMax(Math.max(...months.map((m) => m.messages)));
  // Room for the longest axis label ("250,000"), so no label loses its first digits past the edge.
  const left = Math.max(PAD.left, 14 + fmt(max).length * 7);
  const plotW = width - left - PAD.right;
  const height = width < 520 ? PHONE_HEIGHT : HEIGHT;
  const plotH = height - PAD.top - PAD.bottom;
  const slot = plotW / months.length;
  const barW = Math.max(1, slot * 0.8);
  const root = svg("svg", {
    class: "chart-svg",
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    role: onPick ? "group" : "img", // an image holds no buttons (axe: nested-interactive)
    "aria-label": `${caption}: ${fmt(total)} messages from ${label(months[0].month)} to ${label(months[months.length - 1].month)}`,
  });
  for (const fraction of [0, 0.5, 1]) {
    const y = PAD.top + plotH * (1 - fraction);
    root.append(svg("line", { class: "grid", x1: left, x2: width - PAD.right, y1: y, y2: y }));
    // Messages come whole: a middle line that would read "2.5" keeps its line but not its label.
    if (Number.isInteger(max * fraction)) root.append(svg("text", { class: "axis", x: left - 6, y: y + 4, "text-anchor": "end" }, fmt(max * fraction)));
  }
  months.forEach((m, i) => {
    const h = (m.messages / max) * plotH;
    const bar = svg("rect", {
      class: "bar-rect",
      x: left + i * slot + (slot - barW) / 2,
      y: PAD.top + plotH - h,
      width: barW,
      height: Math.max(h, m.messages ? 1 : 0),
      "data-month": m.month,
    });
    bar.append(svg("title", {}, `${label(m.month)}: ${fmt(m.messages)} messages, ${bytes(m.bytes)}`));
    if (onPick) pickable(bar, m, i === months.length - 1, onPick);
    root.append(bar);
  });
  // Year ticks: January of each year (or the first month), thinned so labels never collide: a label needs 36 px
  // from the one before, also when the first month sits just before a January.
  const every = Math.max(1, Math.ceil(36 / (slot * 12)));
  let shown = 0;
  let lastX = -Infinity;
  months.forEach((m, i) => {
    if (!(m.month.endsWith("-01") || i === 0)) return;
    shown += 1;
    const x = left + i * slot;
    if ((shown - 1) % every || x - lastX < 36) return;
    lastX = x;
    root.append(svg("text", { class: "axis", x, y: height - 6, "text-anchor": "start" }, m.month.slice(0, 4)));
  });
  const table = el("table", { cls: "visually-hidden" }, [
    el("caption", { text: caption }),
    el("tbody", {}, months.filter((m) => m.messages).map((m) => el("tr", {}, [el("th", { text: label(m.month) }), el("td", { text: fmt(m.messages) })]))),
  ]);
  container.replaceChildren(root, table);
  container.dataset.months = String(months.length);
  container.dataset.total = String(total + (volume.undated || 0));
}

function pickable(bar, m, focusable, onPick) {
  bar.classList.add("bar-pick");
  bar.setAttribute("role", "button");
  bar.setAttribute("tabindex", focusable ? "0" : "-1");
  bar.setAttribute("aria-label", `${label(m.month)}: ${fmt(m.messages)} messages. Show the senders with mail that month`);
  bar.addEventListener("click", () => onPick(m.month));
  bar.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      onPick(m.month);
      return;
    }
    const step = { ArrowLeft: -1, ArrowRight: 1, Home: -Infinity, End: Infinity }[event.key];
    if (!step) return;
    event.preventDefault();
    const bars = [...bar.parentNode.querySelectorAll(".bar-pick")];
    const at = Math.min(bars.length - 1, Math.max(0, bars.indexOf(bar) + step));
    for (const b of bars) b.setAttribute("tabindex", b === bars[at] ? "0" : "-1");
    bars[at].focus();
  });
}
