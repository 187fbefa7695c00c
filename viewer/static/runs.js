// Ingester runs as they happen: the live progress panel, the run-state banner at the top of the page, and the
// launch/cancel/resume actions with their busy states and messages (history.js lists past runs).

import { api } from "./api.js";
import { announce } from "./focus.js";
import { loadLog } from "./history.js";
import { remedy, shownState, showFailure, showMessage } from "./messages.js";
import { state } from "./state.js";
import { $, busy, button, duration, fmt, percent } from "./util.js";

export const SOURCE_LABEL = { mbox: "Takeout import", gmail_api: "Gmail scan", backfill: "Message-ID backfill" };
const STATE_LABEL = {
  running: "running",
  awaiting_auth: "awaiting consent",
  done: "done",
  failed: "failed",
  cancelled: "cancelled",
  abandoned: "stopped unexpectedly",
};
const VERB = { mbox: "Import", gmail_api: "Scan", backfill: "Backfill" };
let hooks = { poll: async () => {}, showTakeoutCard: () => {} };

export function setRunHooks(value) {
  hooks = value;
}

export function setChip(node, runState, label) {
  node.className = `chip ${runState}`;
  node.textContent = label || STATE_LABEL[runState] || runState;
}

/** How far a run got, as a fraction, when it can be known (bytes for imports, the estimate for scans). */
export function fraction(run) {
  if (run.source === "mbox" && run.bytes_total) return Math.min(1, run.bytes_done / run.bytes_total);
  if (run.total_estimate) return Math.min(1, run.messages_seen / run.total_estimate);
  return null;
}

// The API decides from the ingester's marked retry warning; the page never guesses from warning prose.
export function isRetrying(status, run) {
  return run.state === "running" && status.retrying === true;
}

// ---- The live panel -----------------------------------------------------------------------------------------

export function renderProgress(status) {
  const panel = $("progress");
  const run = status.active_run;
  const pill = $("pill");
  if (!run && !status.ingest_lock_held) {
    panel.classList.add("hidden");
    state.cancelling = null;
    $("progress-cancel").removeAttribute("aria-disabled");
    renderPillForLast(status);
    return;
  }
  panel.classList.remove("hidden");
  if (!run) {
    // The lock is held but no run is open: the ingester is starting (or migrating), or a cancelled one has ended
    // its run and is still shutting down. Then Cancel stays, "Cancelling…", keeping the focus it has.
    const stopping = state.cancelling !== null;
    $("progress-source").textContent = stopping ? "Ingester stopping" : "Ingester starting";
    setChip($("progress-chip"), stopping ? "cancelling" : "running", stopping ? "cancelling…" : "starting");
    $("progress-bar").className = "bar indeterminate";
    for (const id of ["progress-consent", "progress-log", "progress-elsewhere"]) $(id).classList.add("hidden");
    $("progress-cancel").classList.toggle("hidden", !stopping);
    pill.className = "pill running";
    pill.textContent = stopping ? "Stopping" : "Starting";
    return;
  }
  const owned = Boolean(run.owned);
  const cancelling = state.cancelling === run.run_id;
  $("progress-source").textContent = `${SOURCE_LABEL[run.source] || run.source} #${run.run_id}`;
  setChip($("progress-chip"), cancelling ? "cancelling" : run.state, cancelling ? "cancelling…" : null);
  $("progress-seen").textContent = fmt(run.messages_seen);
  $("progress-new").textContent = fmt(run.messages_new);
  $("progress-rate").textContent = status.rate_per_sec !== null && status.rate_per_sec !== undefined ? fmt(Math.round(status.rate_per_sec)) : "–";

  const bar = $("progress-bar");
  const fill = bar.querySelector(".bar-fill");
  const done = fraction(run);
  if (done !== null) {
    bar.className = "bar";
    fill.style.width = `${(done * 100).toFixed(1)}%`;
    bar.setAttribute("aria-valuenow", String(Math.round(done * 100)));
    // The API gives an ETA only once the rate is steady, and never a rising one; the last seconds are "almost done".
    const known = status.eta_seconds !== null && status.eta_seconds !== undefined;
    const eta = known ? (status.eta_seconds < 5 ? " · almost done" : ` · about ${duration(status.eta_seconds)} left`) : "";
    $("progress-eta").textContent = `${Math.floor(done * 100)}%${eta}`;
    // Politely, in tens: a screen reader hears the run advance without a number every second.
    announce(`${SOURCE_LABEL[run.source] || run.source} ${Math.floor(done * 10) * 10}% done`);
  } else {
    bar.className = "bar indeterminate";
    fill.style.width = "";
    bar.removeAttribute("aria-valuenow");
    $("progress-eta").textContent = run.state === "awaiting_auth" ? "waiting for Google consent" : "";
  }
  const retrying = isRetrying(status, run);
  $("progress-retry").classList.toggle("hidden", !retrying);
  const silent = status.now_unix - run.updated_at_unix;
  $("progress-stalled").classList.toggle("hidden", !(run.state === "running" && silent > 15));
  $("progress-stalled").title = `no heartbeat for ${Math.round(silent)} s`;

  const consent = $("progress-consent");
  const link = $("progress-consent-link");
  const url = run.state === "awaiting_auth" ? safeConsentUrl(run.auth_url) : null;
  consent.classList.toggle("hidden", !url);
  if (url) link.href = url;
  else link.removeAttribute("href");
  $("progress-paste").dataset.runId = String(run.run_id);
  if (!url) $("progress-paste-message").replaceChildren(); // the next consent starts without the last one's answer

  const cancel = $("progress-cancel");
  cancel.classList.toggle("hidden", !owned);
  // aria-disabled, not disabled: the button keeps keyboard focus while the run winds down.
  if (cancelling) cancel.setAttribute("aria-disabled", "true");
  else cancel.removeAttribute("aria-disabled");
  cancel.textContent = cancelling ? "Cancelling…" : "Cancel";
  cancel.dataset.runId = String(run.run_id);
  $("progress-log").classList.toggle("hidden", !owned);
  $("progress-elsewhere").classList.toggle("hidden", owned);
  $("progress-log").dataset.runId = String(run.run_id);
  if (state.logOpen && owned) loadLog(run, "progress-logtext");

  pill.className = `pill ${retrying ? "retrying" : run.state}`;
  pill.textContent = `${SOURCE_LABEL[run.source] || run.source}: ${cancelling ? "cancelling…" : STATE_LABEL[run.state] || run.state}`;
}

function renderPillForLast(status) {
  const pill = $("pill");
  const last = status.last_run;
  if (!last || (!stoppedEarly(last) && !missedSome(last))) {
    pill.classList.add("hidden");
    return;
  }
  const runState = shownState(last);
  pill.className = `pill ${stoppedEarly(last) ? runState : "partial"}`;
  pill.textContent = stoppedEarly(last) ? `Last run ${STATE_LABEL[runState] || runState}` : "Last run partial";
  pill.setAttribute("aria-controls", "run-banner");
}

function safeConsentUrl(raw) {
  if (!raw) return null;
  try {
    const url = new URL(raw);
    return url.origin === "https://accounts.google.com" ? url.href : null;
  } catch {
    return null;
  }
}

export async function cancel() {
  const node = $("progress-cancel");
  const runId = Number(node.dataset.runId);
  if (state.cancelling === runId) return; // asked already: a second press can do nothing useful
  // Disabled at once and labelled until the run really ends.
  state.cancelling = runId;
  node.setAttribute("aria-disabled", "true");
  node.textContent = "Cancelling…";
  setChip($("progress-chip"), "cancelling", "cancelling…");
  try {
    await api(`/api/runs/${runId}/cancel`, { body: {} });
    showMessage("progress-message", "Cancelling: the ingester saves what it counted, then stops.", "info");
  } catch (err) {
    state.cancelling = null;
    node.removeAttribute("aria-disabled");
    node.textContent = "Cancel";
    showFailure("progress-message", err);
  }
  state.pollDelay = 1000;
  hooks.poll();
}

/**
 * Consent given in a browser that cannot reach the scan (on another machine): the address it ended on goes to the
 * viewer, which hands only its state and code to the scan's own listener; the scan checks the state again.
 */
export async function pasteConsent(event) {
  event.preventDefault();
  const node = $("progress-paste-send");
  if (node.dataset.busy) return;
  const input = $("progress-paste-address");
  const runId = Number($("progress-paste").dataset.runId);
  const done = busy(node, "Sending…");
  $("progress-paste-message").replaceChildren();
  try {
    await api(`/api/runs/${runId}/consent`, { body: { address: input.value } });
    input.value = "";
    showMessage("progress-paste-message", "Consent handed to the scan: it goes on in a moment.", "info");
    state.pollDelay = 1000;
    hooks.poll();
  } catch (err) {
    showFailure("progress-paste-message", err);
  } finally {
    done();
  }
}

// ---- The run-state banner -----------------------------------------------------------------------------------

/** A run that ended before counting everything it set out to count (or whose ingester died under it). */
export function stoppedEarly(run) {
  return ["cancelled", "failed", "abandoned"].includes(shownState(run));
}

/** A run that finished (`done`) but left mail uncounted: a scan's unfetched messages, an import's unreadable ones. */
export function missedSome(run) {
  return run.state === "done" && run.outcome === "partial" && (run.unfetched > 0 || run.messages_skipped > 0);
}

/** What a finished-but-partial run left out, and what completes it: [title, text, action]. */
function missedText(run) {
  if (run.source === "gmail_api" && run.unfetched > 0) {
    const n = `${fmt(run.unfetched)} message${run.unfetched === 1 ? "" : "s"}`;
    return [
      `Scan finished, but ${n} could not be fetched — counts are partial.`,
      "Google kept failing for them. The next scan fetches them; what was counted is kept.",
      "again",
    ];
  }
  const n = `${fmt(run.messages_skipped)} message${run.messages_skipped === 1 ? "" : "s"}`;
  return [
    `${VERB[run.source] || "Run"} finished, but ${n} could not be read — counts miss ${run.messages_skipped === 1 ? "it" : "them"}.`,
    "Their warnings in Recent runs say where; a fresh Takeout export may have them whole.",
    null,
  ];
}

function hideBanner(banner) {
  banner.classList.add("hidden");
  banner.dataset.runId = "";
  $("counts-note").classList.add("hidden");
}

export function renderBanner(status) {
  const banner = $("run-banner");
  const last = !status.active_run && !status.ingest_lock_held ? status.last_run : null;
  if (!last || last.source === "backfill" || (!stoppedEarly(last) && !missedSome(last))) {
    hideBanner(banner);
    return;
  }
  const runState = shownState(last);
  // Only new mail makes the totals partial: a re-import that stopped before adding anything changed nothing.
  const counted = last.messages_new > 0;
  let heading;
  let body;
  let action;
  if (stoppedEarly(last)) {
    const [title, text, remedyAction] = remedy(last);
    const done = fraction(last);
    const where = done !== null ? ` at ${percent(done)}` : "";
    const how = { cancelled: "stopped", failed: "failed", abandoned: "stopped unexpectedly" }[runState];
    const partial = counted ? " — counts are partial." : last.messages_seen > 0 ? " before adding any new mail." : " before counting any mail.";
    heading = `${VERB[last.source] || "Run"} ${how}${where}${partial}`;
    body = title ? `${title} ${text}` : text;
    action = remedyAction;
  } else {
    [heading, body, action] = missedText(last);
  }
  $("run-banner-title").textContent = heading;
  announce(heading);
  banner.className = `banner run-banner ${stoppedEarly(last) ? runState : "partial"}`;
  $("run-banner-text").textContent = body;
  $("run-banner-error").textContent = last.error || "";
  // The tiles say it too: a partial total must never read as the final one.
  const note = $("counts-note");
  note.textContent = counted ? `Counts are partial: ${heading.split(" — ")[0].replace(/\.$/, "")}.` : "";
  note.classList.toggle("hidden", !counted);
  const key = `${last.run_id}:${runState}:${last.outcome}`;
  if (banner.dataset.runId !== key) {
    banner.dataset.runId = key;
    const actions = $("run-banner-actions");
    actions.replaceChildren(...(action ? actionsFor(last, action, "primary", "run-banner-message") : []));
  }
}

export function actionsFor(run, action, kind, slot) {
  if (action === "takeout") return [button("Import a Takeout mailbox", kind, () => hooks.showTakeoutCard())];
  if (action === "again") return [startAgainButton(run, kind, slot)];
  const label = run.source === "gmail_api" ? "Resume (may restart from the beginning)" : "Resume";
  const resumeButton = button(label, kind, () => resume(run, resumeButton, slot));
  return [resumeButton];
}

function startAgainButton(run, kind, slot) {
  const node = button("Start again", kind, () => {
    if (run.source === "mbox") hooks.showTakeoutCard(run);
    else launch({ source: "gmail_api" }, node, slot);
  });
  return node;
}

// ---- Launching ----------------------------------------------------------------------------------------------

/** Starts an ingester; the button shows it is working, and a failure stays beside it until dismissed. */
export async function launch(body, node, slot) {
  if (node && (node.dataset.busy || node.disabled)) return; // busy buttons keep focus, so they still get clicks
  const done = node ? busy(node, body.resume_run_id ? "Resuming…" : "Starting…") : () => {};
  $(slot).replaceChildren();
  try {
    await api("/api/runs", { body });
    document.body.dataset.addMail = "";
    $("card-import").classList.remove("highlight");
    state.pollDelay = 1000;
    done();
    await hooks.poll();
    window.scrollTo({ top: 0, behavior: "smooth" });
  } catch (err) {
    done();
    showFailure(slot, err);
  }
}

export function resume(run, node, slot) {
  return launch({ source: run.source, resume_run_id: run.run_id }, node, slot);
}
