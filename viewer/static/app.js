// gmail-stats viewer page: vanilla JS, no dependencies. Every dynamic string goes through textContent.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const store = {
    get(key, fallback) {
      try {
        const raw = localStorage.getItem(`gmail-stats.${key}`);
        return raw === null ? fallback : JSON.parse(raw);
      } catch {
        return fallback;
      }
    },
    set(key, value) {
      try {
        localStorage.setItem(`gmail-stats.${key}`, JSON.stringify(value));
      } catch {
        /* storage full or disabled: the preference simply is not remembered */
      }
    },
  };

  const state = {
    csrf: null,
    status: null,
    table: { q: "", sort: "mails_sent", order: "desc", offset: 0, limit: store.get("pageSize", 50) },
    hidden: new Set(store.get("hidden", [])),
    showHidden: false,
    lastPage: null,
    imports: [],
    logOpen: false,
    pollDelay: 1000,
    pollTimer: null,
    lastTableRefresh: 0,
    tableDirty: true,
    lastProgressKey: "",
    busy: false,
  };

  const nf = new Intl.NumberFormat();
  const fmt = (n) => (n === null || n === undefined ? "–" : nf.format(n));
  const SOURCE_LABEL = { mbox: "Takeout import", gmail_api: "Gmail scan", backfill: "Message-ID backfill" };
  const STATE_LABEL = {
    running: "running",
    awaiting_auth: "awaiting consent",
    done: "done",
    failed: "failed",
    cancelled: "cancelled",
    abandoned: "abandoned",
  };

  function el(tag, { cls, text, attrs } = {}, children = []) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (attrs) for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    for (const child of children) node.append(child);
    return node;
  }

  function bytes(n) {
    if (n === null || n === undefined) return "–";
    const units = ["B", "KB", "MB", "GB", "TB"];
    let value = n;
    let unit = 0;
    while (value >= 1000 && unit < units.length - 1) {
      value /= 1000;
      unit += 1;
    }
    return `${value >= 100 || unit === 0 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
  }

  function date(unix) {
    if (!unix) return "–";
    return new Date(unix * 1000).toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
  }

  function ago(seconds) {
    if (seconds < 5) return "just now";
    if (seconds < 90) return `${Math.round(seconds)} s ago`;
    if (seconds < 5400) return `${Math.round(seconds / 60)} min ago`;
    if (seconds < 129600) return `${Math.round(seconds / 3600)} h ago`;
    return `${Math.round(seconds / 86400)} days ago`;
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return "";
    const s = Math.max(0, Math.round(seconds));
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
    return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
  }

  // ---- HTTP ---------------------------------------------------------------------------------------------------

  class ApiFailure extends Error {
    constructor(status, body) {
      super((body && body.message) || `HTTP ${status}`);
      this.status = status;
      this.kind = (body && body.error) || "http";
      this.hint = body && body.hint;
    }
  }

  async function api(path, options = {}) {
    const init = { headers: { Accept: "application/json" }, cache: "no-store", ...options };
    if (options.body !== undefined) {
      init.method = options.method || "POST";
      init.headers = { ...init.headers, "Content-Type": "application/json", "X-Gmail-Stats-Csrf": state.csrf || "" };
      init.body = JSON.stringify(options.body);
    }
    const response = await fetch(path, init);
    let body = null;
    try {
      body = await response.json();
    } catch {
      body = null;
    }
    if (!response.ok) throw new ApiFailure(response.status, body);
    return body;
  }

  function notice(text, kind = "warn") {
    const box = $("notice");
    if (!text) {
      box.classList.add("hidden");
      return;
    }
    box.textContent = text;
    box.classList.toggle("error", kind === "error");
    box.classList.remove("hidden");
  }

  function reportFailure(err) {
    if (err instanceof ApiFailure) {
      const hint = err.hint ? ` (${err.hint})` : "";
      notice(`${err.message}${hint}`, err.status === 503 ? "warn" : "error");
    } else {
      notice("The viewer is not answering; retrying…", "warn");
    }
  }

  // ---- Status and progress ------------------------------------------------------------------------------------

  function isActive(status) {
    return Boolean(status && (status.active_run || status.ingest_lock_held));
  }

  function retrying(run) {
    const tail = run.warnings_tail || [];
    const last = tail.length ? String(tail[tail.length - 1]) : "";
    return run.state === "running" && /rate.?limit|429|quota|retry/i.test(last);
  }

  const REMEDIES = {
    policy_enforced: [
      "Google blocks this app for your account (Advanced Protection).",
      "Use a Takeout export instead: it works for every account.",
      "takeout",
    ],
    missing_credentials: [
      "No OAuth client file.",
      "Create a Desktop OAuth client in Google Cloud, save it as credentials.json (./secrets with Docker), then start the scan again.",
      "retry",
    ],
    auth_required: [
      "Google sign-in is needed.",
      "Consent was denied or timed out, or the saved token expired (apps in Google's Testing status lose it after 7 days). Start the scan again to sign in.",
      "retry",
    ],
    rate_limited: ["Google's quota ran out.", "Nothing is lost: resume in a while.", "resume"],
    gmail_api: ["The Gmail API kept failing.", "Resume it; already counted mail is kept.", "resume"],
    io: ["The file could not be read.", "Check it is still in the import folder, then resume.", "resume"],
    db: ["The database could not be written.", "Check the disk and the ingester's log, then resume.", "resume"],
    abandoned: [
      "The ingester stopped without recording an end.",
      "It was killed or crashed. Resume to finish; counts stay exact.",
      "resume",
    ],
  };

  function renderProgress(status) {
    const panel = $("progress");
    const active = status.active_run;
    const last = status.last_run;
    const recentFailure = !active && last && ["failed", "abandoned"].includes(last.state) ? last : null;
    const run = active || recentFailure;
    const pill = $("pill");
    if (!run && !status.ingest_lock_held) {
      panel.classList.add("hidden");
      pill.classList.add("hidden");
      return;
    }
    panel.classList.remove("hidden");
    if (!run) {
      // The lock is held but the run row is not written yet (the ingester is starting or migrating).
      $("progress-source").textContent = "Ingester starting";
      setChip($("progress-chip"), "running");
      $("progress-bar").className = "bar indeterminate";
      for (const id of ["progress-consent", "progress-failure", "progress-cancel", "progress-log", "progress-elsewhere"]) {
        $(id).classList.add("hidden");
      }
      pill.className = "pill running";
      pill.textContent = "Starting";
      return;
    }
    const owned = Boolean(run.owned);
    $("progress-source").textContent = `${SOURCE_LABEL[run.source] || run.source} #${run.run_id}`;
    setChip($("progress-chip"), run.state);
    $("progress-seen").textContent = fmt(run.messages_seen);
    $("progress-new").textContent = fmt(run.messages_new);
    $("progress-rate").textContent = active && status.rate_per_sec !== null ? fmt(Math.round(status.rate_per_sec)) : "–";
    $("progress-rate-wrap").classList.toggle("hidden", !active);

    const bar = $("progress-bar");
    const fill = bar.querySelector(".bar-fill");
    let fraction = null;
    if (run.source === "mbox" && run.bytes_total) fraction = run.bytes_done / run.bytes_total;
    else if (run.total_estimate) fraction = Math.min(1, run.messages_seen / run.total_estimate);
    if (fraction !== null && active) {
      bar.className = "bar";
      fill.style.width = `${(fraction * 100).toFixed(1)}%`;
      bar.setAttribute("aria-valuenow", String(Math.round(fraction * 100)));
      const eta = status.eta_seconds !== null ? ` · about ${duration(status.eta_seconds)} left` : "";
      $("progress-eta").textContent = `${Math.floor(fraction * 100)}%${eta}`;
    } else if (active) {
      bar.className = "bar indeterminate";
      fill.style.width = "";
      bar.removeAttribute("aria-valuenow");
      $("progress-eta").textContent = run.state === "awaiting_auth" ? "waiting for Google consent" : "";
    } else {
      bar.className = "bar hidden";
      $("progress-eta").textContent = "";
    }

    $("progress-retry").classList.toggle("hidden", !(active && retrying(run)));
    const silent = status.now_unix - run.updated_at_unix;
    $("progress-stalled").classList.toggle("hidden", !(active && run.state === "running" && silent > 15));
    $("progress-stalled").title = `no heartbeat for ${Math.round(silent)} s`;

    const consent = $("progress-consent");
    const link = $("progress-consent-link");
    const url = active && run.state === "awaiting_auth" ? safeConsentUrl(run.auth_url) : null;
    consent.classList.toggle("hidden", !url);
    if (url) link.href = url;
    else link.removeAttribute("href");

    const failure = $("progress-failure");
    failure.classList.toggle("hidden", !recentFailure);
    if (recentFailure) renderFailure(recentFailure);

    $("progress-cancel").classList.toggle("hidden", !(active && owned));
    $("progress-log").classList.toggle("hidden", !owned);
    $("progress-elsewhere").classList.toggle("hidden", !(active && !owned));
    $("progress-cancel").dataset.runId = String(run.run_id);
    $("progress-log").dataset.runId = String(run.run_id);
    if (state.logOpen && owned) loadLog(run.run_id);

    pill.className = `pill ${retrying(run) ? "retrying" : run.state}`;
    pill.textContent = active
      ? `${SOURCE_LABEL[run.source] || run.source}: ${STATE_LABEL[run.state] || run.state}`
      : `Last run ${STATE_LABEL[run.state] || run.state}`;
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

  function setChip(node, runState) {
    node.className = `chip ${runState}`;
    node.textContent = STATE_LABEL[runState] || runState;
  }

  function renderFailure(run) {
    const kind = run.state === "abandoned" ? "abandoned" : run.error_kind;
    const [title, text, action] = REMEDIES[kind] || ["The run failed.", "See the error below; you can retry.", "retry"];
    $("progress-failure-title").textContent = title;
    $("progress-failure-text").textContent = text;
    $("progress-failure-error").textContent = run.error || "";
    const actions = $("progress-failure-actions");
    actions.replaceChildren();
    if (action === "takeout") {
      actions.append(button("Import a Takeout mailbox", "primary", () => showTakeoutCard()));
    } else if (action === "resume") {
      actions.append(button(run.source === "gmail_api" ? "Resume (may restart from the beginning)" : "Resume", "primary", () => resume(run)));
    } else {
      actions.append(button("Start again", "primary", () => startAgain(run)));
    }
  }

  function button(label, kind, onClick) {
    const node = el("button", { cls: `button ${kind}`, text: label, attrs: { type: "button" } });
    node.addEventListener("click", onClick);
    return node;
  }

  async function loadLog(runId, target = "progress-logtext") {
    const box = $(target);
    try {
      const body = await api(`/api/runs/${runId}/log`);
      const text = body.lines.length ? body.lines.join("\n") : "(no output: the ingester runs with --quiet)";
      box.textContent = `Run #${runId}\n${text}`;
    } catch (err) {
      box.textContent = err.message;
    }
    box.classList.remove("hidden");
  }

  // ---- Onboarding ---------------------------------------------------------------------------------------------

  function renderOnboarding(status) {
    const empty = ["missing", "empty", "outdated"].includes(status.db);
    const forced = document.body.dataset.addMail === "1";
    $("onboarding").classList.toggle("hidden", !(empty || forced));
    $("stats").classList.toggle("hidden", empty);
    const lead = $("onboarding-lead");
    if (status.db === "outdated") {
      lead.textContent = "This database comes from an older gmail-stats. Run a scan or an import once to upgrade it.";
    } else if (empty) {
      lead.textContent = "Your statistics are empty. Count your mail in one of two ways; everything stays on this computer.";
    } else {
      lead.textContent = "Add more mail: scan Gmail again, or import another Takeout file.";
    }
    const busy = isActive(status);
    $("start-scan").disabled = busy;
    $("start-import").disabled = busy || !$("import-file").value;
  }

  async function loadImports() {
    try {
      const body = await api("/api/imports");
      state.imports = body.files;
      $("import-dir").textContent = body.import_dir;
      const select = $("import-file");
      const previous = select.value;
      select.replaceChildren();
      for (const file of body.files) {
        const option = el("option", { text: `${file.path} (${bytes(file.size)})`, attrs: { value: file.path } });
        select.append(option);
      }
      if (body.files.some((f) => f.path === previous)) select.value = previous;
      select.disabled = body.files.length === 0;
      $("import-empty").classList.toggle("hidden", body.files.length > 0);
      updateImportCommand();
      if (state.status) renderOnboarding(state.status);
    } catch (err) {
      reportFailure(err);
    }
  }

  function updateImportCommand() {
    const path = $("import-file").value;
    const dir = $("import-dir").textContent.replace(/\/+$/, "");
    const full = path ? `${dir}/${path}` : "path/to/file.mbox";
    $("import-command").textContent = `gmail-stats import ${/[^\w@%+=:,./-]/.test(full) ? `'${full.replace(/'/g, "'\\''")}'` : full}`;
  }

  function showTakeoutCard() {
    document.body.dataset.addMail = "1";
    if (state.status) renderOnboarding(state.status);
    const card = $("card-import");
    card.classList.add("highlight");
    card.scrollIntoView({ behavior: "smooth", block: "start" });
    loadImports();
  }

  // ---- Launch, cancel, resume ---------------------------------------------------------------------------------

  async function launch(body) {
    notice(null);
    try {
      await api("/api/runs", { body });
      document.body.dataset.addMail = "";
      $("card-import").classList.remove("highlight");
      state.pollDelay = 1000;
      await poll();
      window.scrollTo({ top: 0, behavior: "smooth" });
    } catch (err) {
      reportFailure(err);
    }
  }

  function resume(run) {
    launch({ source: run.source, resume_run_id: run.run_id });
  }

  function startAgain(run) {
    if (run.source === "mbox") {
      showTakeoutCard();
      const rel = state.imports.find((f) => run.mbox_path && run.mbox_path.endsWith(`/${f.path}`));
      if (rel) $("import-file").value = rel.path;
    } else {
      launch({ source: "gmail_api" });
    }
  }

  async function cancel() {
    const runId = $("progress-cancel").dataset.runId;
    $("progress-cancel").disabled = true;
    try {
      await api(`/api/runs/${runId}/cancel`, { body: {} });
      notice("Cancelling: the ingester saves what it counted and stops.");
    } catch (err) {
      reportFailure(err);
    } finally {
      $("progress-cancel").disabled = false;
      state.pollDelay = 1000;
      schedule(0);
    }
  }

  // ---- Stats table --------------------------------------------------------------------------------------------

  async function loadTable() {
    const t = state.table;
    const params = new URLSearchParams({ q: t.q, sort: t.sort, order: t.order, offset: String(t.offset), limit: String(t.limit) });
    try {
      const page = await api(`/api/senders?${params}`);
      state.lastPage = page;
      state.lastTableRefresh = Date.now();
      renderTable(page);
      if (!state.busy) notice(null);
    } catch (err) {
      reportFailure(err); // keep the rows we have
    }
  }

  function renderTable(page) {
    $("tile-messages").textContent = fmt(page.total_messages);
    $("tile-senders").textContent = fmt(page.total_senders);
    const top = page.top_sender;
    $("tile-top").textContent = top ? top.display_name || top.sender || "(no sender)" : "–";
    $("tile-top").title = top ? top.sender : "";
    $("tile-top-count").textContent = top
      ? `${top.display_name ? `${top.sender} · ` : ""}${fmt(top.mails_sent)} messages`
      : "";
    const freshness = $("freshness");
    freshness.textContent = `Updated ${new Date(page.generated_at_unix * 1000).toLocaleTimeString()}`;
    freshness.title = "When these numbers were read from the database";

    const tbody = $("rows");
    const rows = [];
    let hiddenOnPage = 0;
    for (const s of page.senders) {
      const isHidden = state.hidden.has(s.sender);
      if (isHidden) hiddenOnPage += 1;
      if (isHidden && !state.showHidden) continue;
      rows.push(row(s, page.total_messages, top ? top.mails_sent : 0, isHidden));
    }
    tbody.replaceChildren(...rows);
    $("no-rows").classList.toggle("hidden", rows.length > 0);
    $("no-rows").textContent = page.total === 0 ? "No sender matches." : "Every sender on this page is hidden.";
    $("hidden-count").textContent = state.hidden.size ? `(${fmt(state.hidden.size)})` : "";
    $("hidden-count").title = hiddenOnPage ? `${hiddenOnPage} hidden on this page` : "";

    const t = state.table;
    const first = page.total ? t.offset + 1 : 0;
    const lastIndex = Math.min(t.offset + t.limit, page.total);
    $("range").textContent = `${fmt(first)}–${fmt(lastIndex)} of ${fmt(page.total)} senders`;
    $("prev").disabled = t.offset === 0;
    $("next").disabled = t.offset + t.limit >= page.total;
    for (const b of document.querySelectorAll("button.sort")) {
      const active = b.dataset.sort === t.sort;
      if (active) b.setAttribute("aria-sort", t.order === "desc" ? "descending" : "ascending");
      else b.removeAttribute("aria-sort");
    }
  }

  function row(s, totalMessages, topCount, isHidden) {
    const name = s.display_name || s.sender || "(no sender)";
    const who = el("div", { cls: "who" }, [
      el("span", { cls: "who-name", text: name, attrs: { title: name } }),
      el("span", { cls: "who-key", text: s.display_name ? s.sender : "", attrs: { title: s.sender } }),
    ]);
    if (s.list_unsubscribe) who.firstChild.append(el("span", { cls: "tag", text: "list" }));
    const share = totalMessages ? s.mails_sent / totalMessages : 0;
    const shareCell = el("td", { cls: "num col-share" }, [
      el("span", { cls: "share" }, [
        el("span", { text: `${(share * 100).toFixed(share < 0.01 ? 2 : 1)}%` }),
        // The bar compares with the top sender, so differences stay visible in a long tail.
        el("span", { cls: "share-bar", attrs: { title: "compared with the top sender" } }, [
          shareFill(topCount ? s.mails_sent / topCount : 0),
        ]),
      ]),
    ]);
    const toggle = button(isHidden ? "Unhide" : "Hide", "ghost small", () => {
      if (state.hidden.has(s.sender)) state.hidden.delete(s.sender);
      else state.hidden.add(s.sender);
      store.set("hidden", [...state.hidden]);
      if (state.lastPage) renderTable(state.lastPage);
    });
    toggle.setAttribute("aria-label", `${isHidden ? "Unhide" : "Hide"} ${name}`);
    const tr = el("tr", { cls: isHidden ? "is-hidden" : "" }, [
      el("td", {}, [who]),
      el("td", { cls: "num", text: fmt(s.mails_sent) }),
      shareCell,
      el("td", { cls: "num col-bytes", text: bytes(s.bytes) }),
      el("td", { cls: "col-date", text: date(s.last_seen_unix) }),
      el("td", { cls: "col-actions" }, [toggle]),
    ]);
    tr.dataset.sender = s.sender;
    return tr;
  }

  function shareFill(share) {
    const fill = el("span", { cls: "share-fill" });
    fill.style.width = `${Math.max(2, Math.round(share * 100))}%`;
    return fill;
  }

  // ---- History ------------------------------------------------------------------------------------------------

  async function loadHistory() {
    try {
      const body = await api("/api/runs?limit=6");
      renderHistory(body.runs);
    } catch (err) {
      reportFailure(err);
    }
  }

  function renderHistory(runs) {
    $("history").classList.toggle("hidden", runs.length === 0);
    const busy = isActive(state.status);
    const items = runs.map((run) => {
      const chip = el("span");
      setChip(chip, run.state);
      const head = el("div", { cls: "run-head" }, [
        el("span", { cls: "run-title", text: `${SOURCE_LABEL[run.source] || run.source} #${run.run_id}` }),
        chip,
      ]);
      const when = run.finished_at_unix || run.updated_at_unix;
      const outcome = run.outcome ? ` · ${run.outcome}` : "";
      const meta = el("div", { cls: "run-meta", text: `${date(when)} ${new Date(when * 1000).toLocaleTimeString()}${outcome}` });
      const counts = el("div", {
        cls: "run-counts",
        text: `${fmt(run.messages_seen)} seen · ${fmt(run.messages_new)} new`,
      });
      const extra = el("div", {
        cls: "run-meta",
        text: `${fmt(run.messages_skipped)} skipped · ${fmt(run.messages_excluded)} excluded · ${fmt(run.warnings_count)} warnings`,
      });
      const children = [head, meta, counts, extra];
      if (run.mbox_path) children.push(el("div", { cls: "run-meta", text: run.mbox_path.split("/").pop() }));
      const actions = el("div", { cls: "row-actions" });
      const open = ["running", "awaiting_auth"].includes(run.state);
      if (!open && !busy && run.source !== "backfill") {
        const complete = run.state === "done" && run.outcome === "complete";
        if (run.state === "failed") actions.append(button("Retry", "ghost small", () => resume(run)));
        else if (!complete) {
          const label = run.source === "gmail_api" ? "Resume (may restart from the beginning)" : "Resume";
          actions.append(button(label, "ghost small", () => resume(run)));
        }
        if (run.state === "done") actions.append(button("Start again", "ghost small", () => startAgain(run)));
      }
      if (run.owned) {
        actions.append(
          button("Log", "ghost small", () => {
            const box = $("history-log");
            if (!box.classList.contains("hidden") && box.dataset.runId === String(run.run_id)) {
              box.classList.add("hidden");
              return;
            }
            box.dataset.runId = String(run.run_id);
            loadLog(run.run_id, "history-log");
          }),
        );
      }
      if (actions.childElementCount) children.push(actions);
      return el("li", { cls: "run", attrs: { "data-run-id": String(run.run_id) } }, children);
    });
    $("history-list").replaceChildren(...items);
  }

  // ---- Polling ------------------------------------------------------------------------------------------------

  function renderMixed(status) {
    $("mixed").classList.toggle("hidden", !status.mixed_sources);
    $("mixed-text").textContent = `${fmt(status.unrepaired_count)} scanned messages have no Message-ID yet, so mail also imported from Takeout may count twice. Repair it once with:`;
  }

  async function poll() {
    let status;
    try {
      status = await api("/api/status");
      state.busy = false;
    } catch (err) {
      state.busy = err instanceof ApiFailure && err.status === 503;
      reportFailure(err);
      state.pollDelay = Math.min(state.pollDelay * 2, 10000);
      schedule(state.pollDelay);
      return;
    }
    const previous = state.status;
    state.status = status;
    state.csrf = status.csrf_token;
    renderOnboarding(status);
    renderProgress(status);
    renderMixed(status);

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
    }
    if (!previous || changed || isActive(previous) !== isActive(status)) {
      await loadHistory();
      if (["missing", "empty", "outdated"].includes(status.db) && !isActive(status)) loadImports();
    }
    if (!state.busy) notice(null);
    state.pollDelay = isActive(status) ? 1000 : Math.min(Math.max(state.pollDelay * 2, 2000), 10000);
    schedule(state.pollDelay);
  }

  function schedule(delay) {
    clearTimeout(state.pollTimer);
    if (document.hidden) return; // paused while the tab is hidden; resumes on visibilitychange
    state.pollTimer = setTimeout(poll, delay);
  }

  // ---- Wiring -------------------------------------------------------------------------------------------------

  function applyTheme(theme) {
    document.documentElement.dataset.theme = theme;
  }

  function init() {
    const prefersDark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
    applyTheme(store.get("theme", prefersDark ? "dark" : "light"));
    $("theme").addEventListener("click", () => {
      const next = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
      applyTheme(next);
      store.set("theme", next);
    });

    const size = $("page-size");
    size.value = String(state.table.limit);
    if (!size.value) {
      state.table.limit = 50;
      size.value = "50";
    }
    size.addEventListener("change", () => {
      state.table.limit = Number(size.value);
      state.table.offset = 0;
      store.set("pageSize", state.table.limit);
      loadTable();
    });

    let searchTimer = null;
    $("search").addEventListener("input", () => {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(() => {
        state.table.q = $("search").value.trim();
        state.table.offset = 0;
        loadTable();
      }, 200);
    });
    for (const b of document.querySelectorAll("button.sort")) {
      b.addEventListener("click", () => {
        const t = state.table;
        if (t.sort === b.dataset.sort) t.order = t.order === "desc" ? "asc" : "desc";
        else {
          t.sort = b.dataset.sort;
          t.order = b.dataset.sort === "sender" ? "asc" : "desc";
        }
        t.offset = 0;
        loadTable();
      });
    }
    $("prev").addEventListener("click", () => {
      state.table.offset = Math.max(0, state.table.offset - state.table.limit);
      loadTable();
    });
    $("next").addEventListener("click", () => {
      state.table.offset += state.table.limit;
      loadTable();
    });
    $("show-hidden").addEventListener("change", () => {
      state.showHidden = $("show-hidden").checked;
      if (state.lastPage) renderTable(state.lastPage);
    });

    $("start-scan").addEventListener("click", () => launch({ source: "gmail_api" }));
    $("start-import").addEventListener("click", () => launch({ source: "mbox", path: $("import-file").value }));
    $("import-file").addEventListener("change", () => {
      updateImportCommand();
      if (state.status) renderOnboarding(state.status);
    });
    $("refresh-imports").addEventListener("click", loadImports);
    $("add-more").addEventListener("click", () => {
      document.body.dataset.addMail = document.body.dataset.addMail === "1" ? "" : "1";
      if (state.status) renderOnboarding(state.status);
      if (document.body.dataset.addMail === "1") {
        loadImports();
        $("onboarding").scrollIntoView({ behavior: "smooth" });
      }
    });
    $("progress-cancel").addEventListener("click", cancel);
    $("progress-log").addEventListener("click", () => {
      state.logOpen = !state.logOpen;
      if (state.logOpen) loadLog($("progress-log").dataset.runId);
      else $("progress-logtext").classList.add("hidden");
    });
    $("pill").addEventListener("click", () => $("progress").scrollIntoView({ behavior: "smooth" }));
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
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden) {
        state.pollDelay = 1000;
        schedule(0);
      } else {
        clearTimeout(state.pollTimer);
      }
    });
    loadImports();
    poll();
  }

  init();
})();
