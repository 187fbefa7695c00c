// The run history: what each recent run did, its warnings, its log, and the one action that still helps.

import { api } from "./api.js";
import { remedy, shownState } from "./messages.js";
import { actionsFor, fraction, missedSome, SOURCE_LABEL, setChip, stoppedEarly } from "./runs.js";
import { isActive, state } from "./state.js";
import { $, button, dateTime, el, fmt, percent } from "./util.js";

export async function loadHistory() {
  try {
    // One more than shown: whether "Show older runs" has anything to show.
    const body = await api(`/api/runs?limit=${state.historyLimit + 1}`);
    const more = body.runs.length > state.historyLimit;
    renderHistory(body.runs.slice(0, state.historyLimit));
    $("history-more").classList.toggle("hidden", !more);
    for (const run of body.runs) if (run.source === "mbox" && run.state === "done" && run.mbox_path) state.importedPaths.add(run.mbox_path);
  } catch {
    /* the status poll reports an unreachable viewer; history simply keeps its last state */
  }
}

export function wireHistory() {
  $("history-more").addEventListener("click", () => {
    state.historyLimit = Math.min(state.historyLimit + 20, 99);
    loadHistory();
  });
}

function outcomeLabel(run) {
  const runState = shownState(run);
  if (runState === "running" || runState === "awaiting_auth") return "in progress";
  if (runState === "done" && missedSome(run)) {
    return run.source === "gmail_api" && run.unfetched > 0 ? `partial: ${fmt(run.unfetched)} not fetched yet` : `partial: ${fmt(run.messages_skipped)} unreadable`;
  }
  if (runState === "done") return run.outcome === "complete" ? "complete" : `finished with ${fmt(run.warnings_count)} warning${run.warnings_count === 1 ? "" : "s"}`;
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
    setChip(chip, missedSome(run) ? "partial" : shownState(run));
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
