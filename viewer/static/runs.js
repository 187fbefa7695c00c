// Everything about ingester runs: the live progress panel, the run-state banner at the top of the page, the
// run history, and the launch/cancel/resume actions with their busy states and messages.

import { api } from "./api.js";
import { remedy, showFailure, showMessage } from "./messages.js";
import { isActive, state } from "./state.js";
import { $, busy, button, dateTime, duration, el, fmt, percent } from "./util.js";

export const SOURCE_LABEL = { mbox: "Takeout import", gmail_api: "Gmail scan", backfill: "Message-ID backfill" };
const STATE_LABEL = {
  running: "running",
  awaiting_auth: "awaiting consent",
  done: "done",
  failed: "failed",
  cancelled: "cancelled",
  abandoned: "abandoned",
};
const VERB = { mbox: "Import", gmail_api: "Scan", backfill: "Backfill" };
let hooks = { poll: async () => {}, showTakeoutCard: () => {} };

export function setRunHooks(value) {
  hooks = value;
}

function setChip(node, runState, label) {
  node.className = `chip ${runState}`;
  node.textContent = label || STATE_LABEL[runState] || runState;
}

/** How far a run got, as a fraction, when it can be known (bytes for imports, the estimate for scans). */
export function fraction(run) {
  if (run.source === "mbox" && run.bytes_total) return Math.min(1, run.bytes_done / run.bytes_total);
  if (run.total_estimate) return Math.min(1, run.messages_seen / run.total_estimate);
  return null;
}

export function isRetrying(status, run) {
  if (run.state !== "running") return false;
  if (typeof status.retrying === "boolean") return status.retrying;
  // A viewer older than `retrying` on /api/status: read the newest warning as before.
  const tail = run.warnings_tail || [];
  return tail.length > 0 && /rate.?limit|429|quota|retry/i.test(String(tail[tail.length - 1]));
}

// ---- The live panel -----------------------------------------------------------------------------------------

export function renderProgress(status) {
  const panel = $("progress");
  const run = status.active_run;
  const pill = $("pill");
  if (!run && !status.ingest_lock_held) {
    panel.classList.add("hidden");
    state.cancelling = null;
    $("progress-cancel").disabled = false;
    renderPillForLast(status);
    return;
  }
  panel.classList.remove("hidden");
  if (!run) {
    // The lock is held but the run row is not written yet (the ingester is starting or migrating).
    $("progress-source").textContent = "Ingester starting";
    setChip($("progress-chip"), "running", "starting");
    $("progress-bar").className = "bar indeterminate";
    for (const id of ["progress-consent", "progress-cancel", "progress-log", "progress-elsewhere"]) $(id).classList.add("hidden");
    pill.className = "pill running";
    pill.textContent = "Starting";
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
    const eta = status.eta_seconds !== null && status.eta_seconds !== undefined ? ` · about ${duration(status.eta_seconds)} left` : "";
    $("progress-eta").textContent = `${Math.floor(done * 100)}%${eta}`;
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

  const cancel = $("progress-cancel");
  cancel.classList.toggle("hidden", !owned);
  cancel.disabled = cancelling;
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
  if (!last || !stoppedEarly(last)) {
    pill.classList.add("hidden");
    return;
  }
  pill.className = `pill ${last.state}`;
  pill.textContent = `Last run ${STATE_LABEL[last.state] || last.state}`;
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
  // Disabled at once and labelled until the run really ends: a second click can do nothing useful.
  state.cancelling = runId;
  node.disabled = true;
  node.textContent = "Cancelling…";
  setChip($("progress-chip"), "cancelling", "cancelling…");
  try {
    await api(`/api/runs/${runId}/cancel`, { body: {} });
    showMessage("progress-message", "Cancelling: the ingester saves what it counted, then stops.", "info");
  } catch (err) {
    state.cancelling = null;
    node.disabled = false;
    node.textContent = "Cancel";
    showFailure("progress-message", err);
  }
  state.pollDelay = 1000;
  hooks.poll();
}

// ---- The run-state banner -----------------------------------------------------------------------------------

/** A run that ended before counting everything it set out to count. */
export function stoppedEarly(run) {
  return ["cancelled", "failed", "abandoned"].includes(run.state);
}

export function renderBanner(status) {
  const banner = $("run-banner");
  const last = !status.active_run && !status.ingest_lock_held ? status.last_run : null;
  if (!last || !stoppedEarly(last) || last.source === "backfill") {
    banner.classList.add("hidden");
    banner.dataset.runId = "";
    return;
  }
  const [title, text, action] = remedy(last);
  const done = fraction(last);
  const verb = VERB[last.source] || "Run";
  const counted = last.messages_new > 0 || last.messages_seen > 0;
  const where = done !== null ? ` at ${percent(done)}` : "";
  const how = { cancelled: "stopped", failed: "failed", abandoned: "stopped unexpectedly" }[last.state];
  const partial = counted ? " — counts are partial." : " before counting any mail.";
  $("run-banner-title").textContent = `${verb} ${how}${where}${partial}`;
  banner.className = `banner run-banner ${last.state}`;
  const text1 = title ? `${title} ${text}` : text;
  $("run-banner-text").textContent = text1;
  $("run-banner-error").textContent = last.error || "";
  const key = `${last.run_id}:${last.state}`;
  if (banner.dataset.runId !== key) {
    banner.dataset.runId = key;
    const actions = $("run-banner-actions");
    actions.replaceChildren(...actionsFor(last, action, "primary", "run-banner-message"));
  }
}

function actionsFor(run, action, kind, slot) {
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

// ---- History ------------------------------------------------------------------------------------------------

export async function loadHistory() {
  try {
    const body = await api("/api/runs?limit=6");
    renderHistory(body.runs);
  } catch {
    /* the status poll reports an unreachable viewer; history simply keeps its last state */
  }
}

function outcomeLabel(run) {
  if (run.state === "running" || run.state === "awaiting_auth") return "in progress";
  if (run.state === "done") return run.outcome === "complete" ? "complete" : `finished with ${fmt(run.warnings_count)} warning${run.warnings_count === 1 ? "" : "s"}`;
  if (run.messages_new === 0 && run.messages_seen === 0) return "nothing counted";
  const done = fraction(run);
  return `partial${done !== null ? `: stopped at ${percent(done)}` : ""}`;
}

export async function loadLog(run, target) {
  const box = $(target);
  let lines = [];
  let error = "";
  if (run.owned) {
    try {
      lines = (await api(`/api/runs/${run.run_id}/log`)).lines;
    } catch (err) {
      error = err.message;
    }
  }
  const warnings = run.warnings_tail || [];
  const parts = [`Run #${run.run_id}`];
  if (lines.length) parts.push(...lines);
  else if (error) parts.push(error);
  if (warnings.length) parts.push(`Warnings (${fmt(run.warnings_count)}; the last ${warnings.length} shown):`, ...warnings.map((w) => `  ${w}`));
  if (!lines.length && !warnings.length && !error) parts.push("(no output and no warnings)");
  box.textContent = parts.join("\n");
  box.classList.remove("hidden");
}

function renderHistory(runs) {
  $("history").classList.toggle("hidden", runs.length === 0);
  const busyNow = isActive(state.status);
  const superseded = new Set(); // source+file of a newer run: resuming an older one would only repeat it
  const items = runs.map((run) => {
    const chip = el("span");
    setChip(chip, run.state);
    const head = el("div", { cls: "run-head" }, [el("span", { cls: "run-title", text: `${SOURCE_LABEL[run.source] || run.source} #${run.run_id}` }), chip]);
    const when = run.finished_at_unix || run.updated_at_unix;
    const children = [
      head,
      el("div", { cls: "run-meta", text: `${dateTime(when)} · ${outcomeLabel(run)}` }),
      el("div", { cls: "run-counts", text: `${fmt(run.messages_seen)} seen · ${fmt(run.messages_new)} new` }),
      el("div", { cls: "run-meta", text: `${fmt(run.messages_skipped)} skipped · ${fmt(run.messages_excluded)} excluded` }),
    ];
    if (run.mbox_path) children.push(el("div", { cls: "run-meta", text: run.mbox_path.split("/").pop() }));
    if (run.error) children.push(el("div", { cls: "run-meta error-text", text: run.error }));
    if (run.warnings_count) {
      const list = el("ul", { cls: "warnings" }, (run.warnings_tail || []).map((w) => el("li", { text: w })));
      const more = run.warnings_count > (run.warnings_tail || []).length ? el("p", { cls: "hint", text: `The last ${(run.warnings_tail || []).length} of ${fmt(run.warnings_count)} are kept.` }) : null;
      children.push(el("details", { cls: "run-warnings" }, [el("summary", { text: `${fmt(run.warnings_count)} warning${run.warnings_count === 1 ? "" : "s"}` }), list, more]));
    }
    const slot = `run-message-${run.run_id}`;
    const actions = el("div", { cls: "row-actions" });
    // Only a run that stopped early can be resumed, and only when no newer run of the same file or scan
    // followed; never a finished one: resuming a done import re-reads the file and changes nothing.
    const lineage = `${run.source}:${run.mbox_path || ""}`;
    if (!busyNow && run.source !== "backfill" && stoppedEarly(run) && !superseded.has(lineage)) {
      actions.append(...actionsFor(run, remedy(run)[2], "ghost small", slot));
    }
    superseded.add(lineage);
    if (run.owned || run.warnings_count) {
      actions.append(
        button("Log", "ghost small", () => {
          const box = $("history-log");
          if (!box.classList.contains("hidden") && box.dataset.runId === String(run.run_id)) {
            box.classList.add("hidden");
            return;
          }
          box.dataset.runId = String(run.run_id);
          loadLog(run, "history-log");
        }),
      );
    }
    if (actions.childElementCount) children.push(actions);
    children.push(el("div", { cls: "message-slot", attrs: { id: slot } }));
    return el("li", { cls: "run", attrs: { "data-run-id": String(run.run_id) } }, children);
  });
  // Keep any message a user has not dismissed yet across redraws.
  const kept = new Map([...document.querySelectorAll("#history-list .message-slot")].map((s) => [s.id, [...s.childNodes]]));
  $("history-list").replaceChildren(...items);
  for (const [id, nodes] of kept) if ($(id)) $(id).replaceChildren(...nodes);
}
