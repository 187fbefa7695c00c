// gmail-stats viewer page (entry module): polling /api/status and wiring the parts together. No dependencies;
// every module is served from /static (CSP default-src 'self'), and every dynamic string goes through textContent.

import { ApiFailure, Latest, api, setCsrf } from "./api.js";
import { setReadAt, wireAccounts } from "./accounts.js";
import { drawVolume } from "./chart.js";
import { pickMonth } from "./finder.js";
import { wireDetail } from "./detail.js";
import { loadEstimates } from "./estimates.js";
import { wireFocus } from "./focus.js";
import { DB_PROBLEMS, notice, showFailure } from "./messages.js";
import { EMPTY_STATES, loadImports, renderOnboarding, showTakeoutCard, updateImportCommand } from "./onboarding.js";
import { loadHistory, loadLog, wireHistory } from "./history.js";
import { cancel, launch, pasteConsent, renderBanner, renderProgress, setRunHooks } from "./runs.js";
import { isActive, state } from "./state.js";
import { withHidden } from "./hidden.js";
import { loadTable, setView, wireTable } from "./table.js";
import { $, busy, el, fmt, richText, store } from "./util.js";

const volumeChannel = new Latest();
let lastVolume = null;
let lastVolumeAt = 0;

function renderMixed(status) {
  $("mixed").classList.toggle("hidden", !status.mixed_sources);
  $("mixed-text").textContent = `${fmt(status.unrepaired_count)} scanned messages have no Message-ID yet, so mail also imported from Takeout may count twice. Repair it once with:`;
}

/** A database this viewer must not read (too new, unreadable) replaces the whole page body with one message. */
function renderDbProblem(kind, detail) {
  const box = $("db-problem");
  const problem = kind ? DB_PROBLEMS[kind] : null;
  box.classList.toggle("hidden", !problem);
  if (!problem) return false;
  $("db-problem-title").textContent = problem[0];
  richText($("db-problem-text"), problem[1].replace("{runs}", state.runsCommand));
  if (detail) $("db-problem-text").append(el("span", { cls: "error-text", text: ` (${detail})` }));
  for (const id of ["stats", "onboarding", "progress", "run-banner", "mixed"]) $(id).classList.add("hidden");
  setReadAt(null);
  return true;
}

// The main chart's bars narrow the sender table to their month (finder.js).
const ALL_MAIL = { caption: "Messages per month, all mail", onPick: (month) => pickMonth(month, () => setView("senders")) };

async function loadVolume() {
  try {
    const volume = await withHidden(new URLSearchParams(), (params) => volumeChannel.get(`/api/volume${params.size ? `?${params}` : ""}`));
    if (volume === null) return;
    lastVolume = volume;
    lastVolumeAt = Date.now();
    drawVolume($("chart-all"), volume, ALL_MAIL);
    $("chart-note").textContent = volume.undated ? `${fmt(volume.undated)} messages have no date` : "";
  } catch (err) {
    // A viewer without /api/volume has no chart to offer: drop the panel rather than show an error in it.
    $("chart-all").closest(".chart-panel").classList.toggle("hidden", err instanceof ApiFailure && err.status === 404);
    $("chart-all").replaceChildren(el("p", { cls: "hint", text: err instanceof ApiFailure ? err.message : "The chart could not be loaded." }));
  }
}

async function poll() {
  let status;
  try {
    status = await api("/api/status");
  } catch (err) {
    if (err instanceof ApiFailure && DB_PROBLEMS[err.kind]) renderDbProblem(err.kind);
    else if (err instanceof ApiFailure) notice(`${err.message}${err.hint ? ` (${err.hint})` : ""}`, err.status === 503 ? "warn" : "error");
    else notice("The viewer is not answering; retrying…", "warn");
    state.unhealthy = true;
    // Soon enough that a viewer back from a restart is noticed within a few seconds; a database the page cannot
    // read is not going to heal by itself that fast.
    const ceiling = err instanceof ApiFailure && DB_PROBLEMS[err.kind] ? 10000 : 2000;
    state.pollDelay = Math.min(state.pollDelay * 2, ceiling);
    schedule(state.pollDelay);
    return;
  }
  notice(null);
  // Back after an outage: whatever failed meanwhile (the table, the chart, a Hide whose reload failed) is read
  // again, so nothing stale stays on the page and every button matches what it will do.
  const healed = state.unhealthy;
  state.unhealthy = false;
  if (healed) {
    state.tableDirty = true;
    state.lastTableRefresh = 0;
  }
  const previous = state.status;
  state.status = status;
  setCsrf(status.csrf_token);
  if (renderDbProblem(status.db === "too_new" ? "too_new" : null)) {
    state.pollDelay = 10000;
    schedule(state.pollDelay);
    return;
  }
  renderOnboarding(status);
  renderProgress(status);
  renderBanner(status);
  renderMixed(status);
  if (status.db === "ready") loadEstimates(isActive(status));

  const run = status.active_run;
  const progressKey = run ? `${run.run_id}:${run.messages_new}:${run.state}` : `idle:${status.last_run ? status.last_run.run_id + status.last_run.state : ""}`;
  const changed = progressKey !== state.lastProgressKey;
  state.lastProgressKey = progressKey;
  if (changed || !previous || previous.db !== status.db) state.tableDirty = true;
  // Live but throttled while a run counts; at once when it ends, so the final numbers always show.
  const due = !isActive(status) || Date.now() - state.lastTableRefresh > 1500;
  if (status.db === "ready" && ((state.tableDirty && due) || !state.lastPage)) {
    state.tableDirty = false;
    await loadTable();
    if (healed || !isActive(status) || Date.now() - lastVolumeAt > 10000 || !lastVolume) loadVolume();
  }
  if (!previous || changed || healed || isActive(previous) !== isActive(status)) {
    await loadHistory();
    if (EMPTY_STATES.includes(status.db) && !isActive(status) && state.imports === null) loadImports();
  }
  state.pollDelay = isActive(status) ? 1000 : Math.min(Math.max(state.pollDelay * 2, 2000), 10000);
  schedule(state.pollDelay);
}

/** Export CSV, fetched here so the link can say it is working: the viewer may take seconds to write 200k senders
 * before the first byte, and a plain download link shows nothing meanwhile. */
async function exportCsv(event) {
  const link = $("export");
  event.preventDefault();
  if (link.dataset.busy) return;
  const done = busy(link, "Preparing CSV…");
  try {
    const response = await fetch(link.href, { credentials: "same-origin" });
    if (!response.ok) throw new ApiFailure(response.status, await response.json().catch(() => null));
    const url = URL.createObjectURL(await response.blob());
    const save = el("a", { attrs: { href: url, download: link.getAttribute("download") || "gmail-stats-senders.csv" } });
    document.body.append(save);
    save.click();
    save.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  } catch (err) {
    showFailure("table-message", err, { scroll: false });
  } finally {
    done();
  }
}

function schedule(delay) {
  clearTimeout(state.pollTimer);
  if (document.hidden) return; // paused while the tab is hidden; resumes on visibilitychange
  state.pollTimer = setTimeout(poll, delay);
}

function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  $("theme").setAttribute("aria-pressed", String(theme === "dark"));
}

function init() {
  const prefersDark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  applyTheme(store.get("theme", prefersDark ? "dark" : "light"));
  $("theme").addEventListener("click", () => {
    const next = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
    applyTheme(next);
    store.set("theme", next);
  });
  wireFocus();
  wireAccounts();
  setRunHooks({ poll, showTakeoutCard });
  wireTable();
  wireDetail();
  wireHistory();

  $("start-scan").addEventListener("click", () => launch({ source: "gmail_api" }, $("start-scan"), "scan-message"));
  $("start-import").addEventListener("click", () => launch({ source: "mbox", path: $("import-file").value }, $("start-import"), "import-message"));
  $("import-file").addEventListener("change", () => {
    updateImportCommand();
    if (state.status) renderOnboarding(state.status);
  });
  $("refresh-imports").addEventListener("click", loadImports);
  $("close-add-mail").addEventListener("click", () => {
    document.body.dataset.addMail = "";
    if (state.status) renderOnboarding(state.status);
    $("add-more").focus();
  });
  $("add-more").addEventListener("click", () => {
    document.body.dataset.addMail = document.body.dataset.addMail === "1" ? "" : "1";
    if (state.status) renderOnboarding(state.status);
    if (document.body.dataset.addMail === "1") {
      loadImports();
      $("onboarding").scrollIntoView({ behavior: "smooth" });
    }
  });
  $("export").addEventListener("click", exportCsv);
  $("progress-cancel").addEventListener("click", cancel);
  $("progress-paste").addEventListener("submit", pasteConsent);
  $("progress-log").addEventListener("click", () => {
    state.logOpen = !state.logOpen;
    $("progress-log").setAttribute("aria-expanded", String(state.logOpen));
    const run = state.status && state.status.active_run;
    if (state.logOpen && run) loadLog(run, "progress-logtext");
    else $("progress-logtext").classList.add("hidden");
  });
  $("pill").addEventListener("click", () => {
    const target = $("progress").classList.contains("hidden") ? $("run-banner") : $("progress");
    target.scrollIntoView({ behavior: "smooth" });
  });
  for (const copy of document.querySelectorAll("button.copy")) {
    copy.addEventListener("click", async () => {
      const text = $(copy.dataset.copy).textContent;
      try {
        await navigator.clipboard.writeText(text);
        copy.textContent = "Copied";
      } catch {
        copy.textContent = "Select and copy";
      }
      setTimeout(() => {
        copy.textContent = "Copy";
      }, 1500);
    });
  }
  document.addEventListener("hidden-changed", loadVolume);
  let resizeTimer = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => lastVolume && drawVolume($("chart-all"), lastVolume, ALL_MAIL), 200);
  });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) {
      state.pollDelay = 1000;
      schedule(0);
    } else {
      clearTimeout(state.pollTimer);
    }
  });
  // The first poll waits for /api/imports: it names the commands in the person's own form (`make runs` under
  // Docker), which a database problem found by that poll quotes.
  loadImports()
    .then(() => poll())
    .catch((err) => showFailure("table-message", err));
}

init();
