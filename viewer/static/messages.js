// Messages that stay where the action was taken until the user dismisses them (polling never erases them),
// the page-wide connection notice, and the remedy text for each error kind.

import { ApiFailure } from "./api.js";
import { announce } from "./focus.js";
import { $, el, richText } from "./util.js";

/** Shows `text` in the message slot `slotId` (beside the button that failed) until dismissed or replaced. */
export function showMessage(slotId, text, kind = "error", hint = "", { scroll = true } = {}) {
  const slot = typeof slotId === "string" ? $(slotId) : slotId;
  const body = el("div", { cls: "message-body" });
  richText(body, text);
  if (hint) body.append(el("div", { cls: "message-hint", text: hint }));
  const close = el("button", { cls: "button ghost small", text: "Dismiss", attrs: { type: "button" } });
  close.addEventListener("click", () => slot.replaceChildren());
  const box = el("div", { cls: `message ${kind}`, attrs: { role: kind === "error" ? "alert" : "status" } }, [body, close]);
  slot.replaceChildren(box);
  if (scroll) box.scrollIntoView({ block: "nearest" });
  return box;
}

export function clearMessage(slotId) {
  $(slotId).replaceChildren();
}

export function failureText(err) {
  if (err instanceof ApiFailure) return { text: err.message, hint: err.hint || "" };
  return { text: "The viewer is not answering; check that it is still running.", hint: "" };
}

export function showFailure(slotId, err, options = {}) {
  const { text, hint } = failureText(err);
  return showMessage(slotId, text, "error", hint, options);
}

/** The page-wide line for transient trouble (busy database, viewer unreachable); cleared by the next success. */
export function notice(text, kind = "warn") {
  const box = $("notice");
  if (!text) {
    box.classList.add("hidden");
    box.textContent = "";
    return;
  }
  richText(box, text);
  if (kind === "error") announce(box.textContent, { assertive: true });
  box.classList.toggle("error", kind === "error");
  box.classList.remove("hidden");
}

// [title, what to do, action] for each `error_kind` a run can end with; the action picks the button.
export const REMEDIES = {
  policy_enforced: [
    "Google blocks this app for your account (Advanced Protection).",
    "Use a Takeout export instead: it works for every account.",
    "takeout",
  ],
  missing_credentials: [
    "The OAuth client file is missing or unusable.",
    "Create a Desktop OAuth client in Google Cloud, save it as credentials.json (./secrets with Docker), then start the scan again.",
    "again",
  ],
  auth_required: [
    "Google sign-in is needed.",
    "Consent was denied or timed out, or the saved token expired (apps in Google's Testing status lose it after 7 days). Start the scan again to sign in.",
    "again",
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
  internal: ["The ingester hit an unexpected error.", "Its log has the details; resume to try again.", "resume"],
};

// A cancelled run is not an error (so not an error kind): it only needs the way back.
const CANCELLED = ["", "Resume to count the rest; what was counted is kept.", "resume"];

/** The state the page shows: a row still `running` with nobody running it (`stopped_unexpectedly`, derived by the
 * API from the free ingest lock and the exited runner; the row itself is untouched) is shown as abandoned. */
export function shownState(run) {
  return run.stopped_unexpectedly ? "abandoned" : run.state;
}

export function remedy(run) {
  const runState = shownState(run);
  if (runState === "cancelled") return CANCELLED;
  const kind = runState === "abandoned" ? "abandoned" : run.error_kind;
  return REMEDIES[kind] || ["The run failed.", "See the error below; you can resume it.", "resume"];
}

// What the page says when the database itself is the problem (from /api/status `db` or a 503 error kind).
export const DB_PROBLEMS = {
  too_new: [
    "This database was written by a newer gmail-stats.",
    "This viewer cannot read it safely, so it shows nothing rather than wrong numbers. Upgrade gmail-stats; the file was not changed.",
  ],
  db_too_new: [
    "This database was written by a newer gmail-stats.",
    "This viewer cannot read it safely, so it shows nothing rather than wrong numbers. Upgrade gmail-stats; the file was not changed.",
  ],
  db_unreadable: [
    "The database file could not be read.",
    "It may be damaged or not a gmail-stats database. Nothing was changed. Run `{runs}` in a terminal to see the error.",
  ],
};
