// The onboarding cards (scan or import) and the import folder picker; also reused by "Add mail".

import { api } from "./api.js";
import { showFailure } from "./messages.js";
import { isActive, state } from "./state.js";
import { $, bytes, el } from "./util.js";

export const EMPTY_STATES = ["missing", "empty", "outdated"];

export function renderOnboarding(status) {
  const empty = EMPTY_STATES.includes(status.db);
  const forced = document.body.dataset.addMail === "1";
  $("onboarding").classList.toggle("hidden", !(empty || forced));
  $("stats").classList.toggle("hidden", status.db !== "ready");
  const lead = $("onboarding-lead");
  if (status.db === "outdated") {
    lead.textContent = "This database comes from an older gmail-stats. Run a scan or an import once to upgrade it.";
  } else if (empty) {
    lead.textContent = "Your statistics are empty. Count your mail in one of two ways; everything stays on this computer.";
  } else {
    lead.textContent = "Add more mail: scan Gmail again, or import another Takeout file.";
  }
  const running = isActive(status);
  for (const id of ["start-scan", "start-import"]) {
    const node = $(id);
    if (node.dataset.busy) continue;
    node.disabled = running || (id === "start-import" && !$("import-file").value);
    node.title = running ? "An ingester is already running" : "";
  }
}

export async function loadImports() {
  let body;
  try {
    body = await api("/api/imports");
  } catch (err) {
    showFailure("import-message", err);
    return;
  }
  state.imports = body.files;
  state.importCommand = body.import_command;
  state.runsCommand = body.runs_command;
  $("scan-command").textContent = body.scan_command;
  $("import-dir").textContent = body.import_dir;
  const select = $("import-file");
  const previous = select.value;
  select.replaceChildren(...body.files.map((file) => el("option", { text: `${file.path} (${bytes(file.size)})`, attrs: { value: file.path } })));
  if (body.files.some((f) => f.path === previous)) select.value = previous;
  else {
    // Offer a file not imported yet first: re-importing one only re-reads it.
    const fresh = body.files.find((f) => !state.importedPaths.has(f.path));
    if (fresh) select.value = fresh.path;
  }
  select.disabled = body.files.length === 0;
  const empty = $("import-empty");
  empty.classList.toggle("hidden", body.files.length > 0);
  if (body.import_dir_exists === false) {
    empty.replaceChildren(
      "The import folder ",
      el("code", { text: body.import_dir }),
      " does not exist. Create it (with Docker: ",
      el("code", { text: "./imports" }),
      " beside compose.yaml), put the .mbox file in it, then press Refresh.",
    );
  } else {
    empty.replaceChildren("No ", el("code", { text: ".mbox" }), " file in ", el("code", { text: body.import_dir }), " yet. Put it there, then press Refresh.");
  }
  // Names that are not UTF-8 cannot be picked (no request could name them back): listed escaped, to be renamed.
  const unreadable = body.unreadable_names || [];
  const note = $("import-unreadable");
  note.classList.toggle("hidden", unreadable.length === 0);
  note.replaceChildren(
    `${unreadable.length === 1 ? "A file name is" : `${unreadable.length} file names are`} not valid UTF-8, so it cannot be picked here; rename it and press Refresh: `,
    ...unreadable.flatMap((name, i) => [i ? ", " : "", el("code", { text: name })]),
  );
  updateImportCommand();
  if (state.status) renderOnboarding(state.status);
}

export function updateImportCommand() {
  const path = $("import-file").value;
  const file = (state.imports || []).find((f) => f.path === path);
  if (file) $("import-command").textContent = file.command;
  else if (state.importCommand) $("import-command").textContent = state.importCommand;
}

export function showTakeoutCard(run) {
  document.body.dataset.addMail = "1";
  if (state.status) renderOnboarding(state.status);
  const card = $("card-import");
  card.classList.add("highlight");
  card.scrollIntoView({ behavior: "smooth", block: "start" });
  loadImports().then(() => {
    const match = run && run.mbox_path && (state.imports || []).find((f) => run.mbox_path.endsWith(`/${f.path}`));
    if (match) {
      $("import-file").value = match.path;
      updateImportCommand();
      if (state.status) renderOnboarding(state.status);
    }
  });
}
