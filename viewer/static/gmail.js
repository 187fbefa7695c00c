// The Gmail dialog: numbered search links and a filters file for a selection, both built by the viewer
// (`/api/gmail/links`, `/api/gmail/filters.xml`, from shared.gmail_search and shared.gmail_filters), and the
// Gmail address they open in (asked once, kept in this browser). Nothing here writes to Gmail: the person does,
// in Gmail, with Gmail's own buttons.

import { ApiFailure, api } from "./api.js";
import { forgetSets, setId } from "./hidden.js";
import { showFailure } from "./messages.js";
import { state } from "./state.js";
import { saveAddress } from "./accounts.js";
import { $, el, fmt, store, withAccount } from "./util.js";

const DEFAULT_ACCOUNT = "https://mail.google.com/mail/u/0/#";
let current = null; // { describe, params, forget } of the selection the dialog acts on
let baseParams = null; // its resolved parameters

/** A Gmail URL moved from the first signed-in account to the person's own (`authuser=`), when known. */
export function inAccount(url) {
  const account = state.gmailAccount || state.accountAddress;
  if (!account || !url.startsWith(DEFAULT_ACCOUNT)) return url;
  return `https://mail.google.com/mail/?authuser=${encodeURIComponent(account).replace("%40", "@")}#${url.slice(DEFAULT_ACCOUNT.length)}`;
}

function withAddress(params) {
  const mine = new URLSearchParams(params);
  if (state.gmailAccount) mine.set("address", state.gmailAccount);
  return mine;
}

function narrowing(params) {
  if ($("gmail-unread").checked) params.set("unread", "true");
  if ($("gmail-inbox").checked) params.set("inbox", "true");
  const older = Number($("gmail-older").value);
  if (Number.isInteger(older) && older >= 1) params.set("older_than_months", String(Math.min(older, 1200)));
  const larger = Number($("gmail-larger").value);
  if (Number.isInteger(larger) && larger >= 1) params.set("larger_mb", String(Math.min(larger, 100)));
  return params;
}

function filterActions(params) {
  for (const [id, key] of [["gmail-archive", "archive"], ["gmail-mark-read", "mark_read"], ["gmail-trash", "trash"], ["gmail-never-spam", "never_spam"]]) {
    if ($(id).checked) params.set(key, "true");
  }
  const label = $("gmail-label").value.trim();
  if (label) params.set("label", label);
  return params;
}

/** The download link follows the chosen actions; without one it is disabled (Gmail needs an action). */
function updateFiltersLink() {
  const link = $("gmail-filters");
  const params = baseParams ? filterActions(withAddress(baseParams)) : null;
  const ready = params && [...params.keys()].some((k) => ["archive", "mark_read", "trash", "never_spam", "label"].includes(k));
  if (ready) link.setAttribute("href", withAccount(`/api/gmail/filters.xml?${params}`)); // followed by the browser
  else link.removeAttribute("href");
  link.setAttribute("aria-disabled", String(!ready));
  $("gmail-filters-hint").textContent = ready ? "" : "Choose at least one action for the filters.";
}

async function makeLinks() {
  const list = $("gmail-links");
  $("gmail-message").replaceChildren();
  list.replaceChildren(el("li", { cls: "hint", text: "Making links…" }));
  const fetchLinks = () => api(`/api/gmail/links?${narrowing(withAddress(baseParams))}`);
  let answer;
  try {
    try {
      answer = await fetchLinks();
    } catch (err) {
      if (!(err instanceof ApiFailure) || err.kind !== "hidden_unknown") throw err;
      current.forget(); // the viewer restarted: register the selection again
      baseParams = await current.params();
      answer = await fetchLinks();
    }
  } catch (err) {
    list.replaceChildren();
    showFailure("gmail-message", err, { scroll: false });
    return;
  }
  const count = answer.links.length;
  const items = answer.links.map((link) =>
    el("li", {}, [
      el("a", {
        cls: "link-action",
        text: count === 1 ? "Open the search in Gmail" : `Search ${link.number} of ${count}: ${fmt(link.senders)} senders`,
        attrs: { href: link.url, target: "_blank", rel: "noopener noreferrer", title: link.query },
      }),
    ]),
  );
  if (!items.length) items.push(el("li", { cls: "hint", text: "No sender here can be searched for in Gmail." }));
  if (answer.left_out.length) items.push(el("li", { cls: "hint", text: `${fmt(answer.left_out.length)} left out: Gmail cannot search for them (no letter or digit, or too long).` }));
  list.replaceChildren(...items);
}

/**
 * Fetches the file first, so a refusal (too many senders for Gmail's 1,000 filters, a restarted viewer) is shown
 * as one line here instead of being saved as a file; then hands it to the browser as a download.
 */
async function downloadFilters() {
  const link = $("gmail-filters");
  $("gmail-message").replaceChildren();
  const fetchFile = () => fetch(link.getAttribute("href"), { cache: "no-store" });
  try {
    let response = await fetchFile();
    if (response.status === 409) {
      current.forget();
      baseParams = await current.params();
      updateFiltersLink();
      response = await fetchFile();
    }
    if (!response.ok) {
      let body = null;
      try {
        body = await response.json();
      } catch {
        body = null;
      }
      throw new ApiFailure(response.status, body);
    }
    const url = URL.createObjectURL(await response.blob());
    const save = el("a", { attrs: { href: url, download: "gmail-stats-filters.xml" } });
    save.classList.add("hidden");
    $("gmail").append(save); // inside the modal dialog: the page behind it is inert
    save.click();
    save.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    const filters = response.headers.get("X-Gmail-Stats-Filters");
    const senders = response.headers.get("X-Gmail-Stats-Senders");
    $("gmail-filters-hint").textContent = filters ? `${fmt(Number(filters))} filters for ${fmt(Number(senders))} senders.` : "";
  } catch (err) {
    showFailure("gmail-message", err, { scroll: false });
  }
}

function saveAccount() {
  const input = $("gmail-account");
  const value = input.value.trim();
  if (value && !input.checkValidity()) return;
  state.gmailAccount = value;
  store.set("gmailAccount", value);
  // A Takeout-only account is told its address once: the ingester stores it, and it names the account.
  if (value && !state.accountAddress) saveAddress(value);
  updateFiltersLink();
  document.dispatchEvent(new Event("gmail-account-changed")); // the rows' Gmail links follow it
}

/** A "Gmail…" button for one sender or domain: the dialog with its narrowing and filters, for that one term. */
export function gmailButton(term, name) {
  const b = el("button", { cls: "button ghost small", text: "Gmail…", attrs: { type: "button", "aria-haspopup": "dialog", "aria-label": `Gmail search links and filters for ${name}` } });
  b.addEventListener("click", () =>
    openGmail({
      describe: `Mail from ${name}`,
      params: async () => new URLSearchParams({ selected: await setId(new Set([term])) }),
      forget: forgetSets,
    }),
  );
  return b;
}

export async function openGmail(selection) {
  current = selection;
  baseParams = null;
  const dialog = $("gmail");
  $("gmail-what").textContent = selection.describe;
  $("gmail-links").replaceChildren();
  $("gmail-message").replaceChildren();
  $("gmail-account").value = state.gmailAccount || state.accountAddress;
  updateFiltersLink();
  if (!dialog.open) dialog.showModal();
  if (!state.gmailAccount && !state.accountAddress) $("gmail-account").focus(); // asked once; kept in this browser
  try {
    baseParams = await selection.params();
  } catch (err) {
    showFailure("gmail-message", err, { scroll: false });
  }
  updateFiltersLink();
}

export function wireGmail() {
  $("gmail-close").addEventListener("click", () => $("gmail").close());
  $("gmail-account").addEventListener("change", saveAccount);
  $("gmail-make-links").addEventListener("click", () => baseParams && makeLinks());
  for (const id of ["gmail-archive", "gmail-mark-read", "gmail-trash", "gmail-never-spam", "gmail-label"]) $(id).addEventListener("input", updateFiltersLink);
  $("gmail-filters").addEventListener("click", (event) => {
    event.preventDefault();
    if ($("gmail-filters").hasAttribute("href")) downloadFilters();
  });
}
