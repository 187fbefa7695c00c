// While a first scan fetches in random order: every sender's estimated totals with 95% intervals, from
// /api/estimates, in their own panel and banner. Never mixed with the exact table, and gone once the scan completes.

import { ApiFailure, Latest } from "./api.js";
import { $, el, fmt, shareText } from "./util.js";

const channel = new Latest();
const SHOWN = 20;
let lastLoad = 0;
let lastActive = null;

/** "about 2 h 40 min": the banner's words for the time left. */
function inWords(seconds) {
  const minutes = Math.max(1, Math.round(seconds / 60));
  if (minutes < 60) return `about ${minutes} min`;
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return rest ? `about ${hours} h ${rest} min` : `about ${hours} h`;
}

/** "≈ 4,800 ± 300": an estimate and its 95% margin, both rounded to what the margin allows. */
export function approx(value) {
  const margin = value.high_95 === null ? null : (value.high_95 - value.low_95) / 2;
  if (margin === null) return `≈ ${fmt(Math.round(value.estimate))} (no bound yet)`;
  const step = margin >= 1000 ? 100 : margin >= 100 ? 10 : 1;
  const round = (n) => Math.round(n / step) * step;
  return `≈ ${fmt(round(value.estimate))} ± ${fmt(Math.max(round(margin), step === 1 ? Math.ceil(margin) : step))}`;
}

function bannerText(body) {
  const share = body.sample.share_of_mailbox;
  const part = share >= 0.01 ? `${Math.round(share * 100)}%` : "less than 1%";
  if (body.phase === "listing") return "Listing every message first, so the figures below can be estimated from a random sample in a moment.";
  if (body.phase === "stopped") return `Estimated from ${part} of your mailbox — the scan stopped; resume it for exact counts.`;
  const eta = body.sample.exact_in_seconds;
  return `Estimated from ${part} of your mailbox — exact in ${eta === null ? "a while" : inWords(eta)}.`;
}

function row(r) {
  const rank = r.estimated_too_wide_to_rank
    ? el("span", { cls: "hint", text: "too early to rank" })
    : document.createTextNode(r.estimated_rank_best === r.estimated_rank_worst ? `${r.estimated_rank}` : `${r.estimated_rank} (${r.estimated_rank_best}–${r.estimated_rank_worst})`);
  const share = r.estimated_share;
  return el("tr", {}, [
    el("td", {}, [rank]),
    el("td", { cls: "sender-cell", text: r.key || "(no sender)" }),
    el("td", { cls: "num", text: approx(r.estimated_messages) }),
    el("td", { cls: "num", text: `${shareText(share.estimate)} (${shareText(share.low_95)}–${shareText(share.high_95)})` }),
    el("td", { cls: "num", text: `${Math.round(r.estimated_unread_share.estimate * 100)}%` }),
  ]);
}

export function renderEstimates(body) {
  const panel = $("estimates");
  panel.classList.toggle("hidden", !body.estimated);
  if (!body.estimated) return;
  $("estimates-banner").textContent = bannerText(body);
  $("estimates-body").replaceChildren(...body.rows.slice(0, SHOWN).map(row));
  $("estimates-table").classList.toggle("hidden", body.rows.length === 0);
}

/** Polled with the status: every 10 s while a scan runs (the sample grows slowly; a read costs one pass over it), once when idle (a stopped scan's estimates stay). */
export async function loadEstimates(active) {
  const changed = active !== lastActive;
  lastActive = active;
  if (!changed && Date.now() - lastLoad < (active ? 10000 : 30000)) return;
  lastLoad = Date.now();
  try {
    const body = await channel.get(`/api/estimates?limit=${SHOWN}`);
    if (body !== null) renderEstimates(body);
  } catch (err) {
    // A viewer or database without estimates has nothing to add: the exact table stands alone.
    if (!(err instanceof ApiFailure)) throw err;
    $("estimates").classList.add("hidden");
  }
}
