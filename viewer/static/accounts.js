// The account switcher (`?account=` in the page's address: a switch keeps the rest of the URL), the header's one
// freshness line ("Updated 10:42:05 · last complete run 12 min ago · next refresh in 48 min": when the page last read
// the numbers, then the shown account's freshness) and its refresh setting. The viewer never writes these settings:
// it runs `gmail-stats account` for them (POST /api/account/settings).

import { api } from "./api.js";
import { state } from "./state.js";
import { $, ACCOUNT, el } from "./util.js";

const NEW = "\u0000new"; // the "Add an account…" choice; no account name can contain a NUL
const NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;
let shownKey = "";
let currentName = "";
let readAtUnix = null; // when the table's numbers were read from the database (the last poll that answered)
let accountPart = ""; // the account's freshness, or why its refresh setting did not change

function span(seconds) {
  const minutes = Math.round(Math.max(0, seconds) / 60);
  if (minutes < 1) return "less than a minute";
  if (minutes < 90) return `${minutes} min`;
  const hours = Math.round(minutes / 60);
  return hours < 36 ? `${hours} h` : `${Math.round(hours / 24)} days`;
}

/** "last complete run 12 min ago · next refresh in 48 min", or what keeps the refresh from running. */
export function freshnessText(account, nowUnix) {
  const parts = [];
  if (account.updated_at_unix) parts.push(`last complete run ${span(nowUnix - account.updated_at_unix)} ago`);
  if (account.needs_consent) parts.push("refresh paused: start a scan to give Gmail consent again");
  else if (account.refresh !== "off" && account.next_refresh_unix) {
    parts.push(account.next_refresh_unix <= nowUnix ? "refreshing soon" : `next refresh in ${span(account.next_refresh_unix - nowUnix)}`);
  }
  return parts.join(" · ");
}

function renderFreshness() {
  const node = $("freshness");
  const read = readAtUnix === null ? "" : `Updated ${new Date(readAtUnix * 1000).toLocaleTimeString()}`;
  node.textContent = [read, accountPart].filter(Boolean).join(" · ");
  node.title = "When these numbers were read from the database, and when a run last completed for this account";
}

/** The time the shown numbers were read (null: none to show, as when the database cannot be read). */
export function setReadAt(unix) {
  readAtUnix = unix;
  renderFreshness();
}

function setAccountPart(text) {
  accountPart = text;
  renderFreshness();
}

function label(account) {
  if (!account.gmail_address) return account.name;
  return account.name === "default" ? account.gmail_address : `${account.gmail_address} (${account.name})`;
}

function renderSwitch(accounts, current) {
  const key = JSON.stringify(accounts.map((a) => [a.name, a.gmail_address]));
  if (key === shownKey) return;
  shownKey = key;
  const select = $("account-switch");
  const options = accounts.map((a) => el("option", { text: label(a), attrs: { value: a.name } }));
  options.push(el("option", { text: "Add an account…", attrs: { value: NEW } }));
  select.replaceChildren(...options);
  select.value = current;
}

export async function loadAccounts() {
  let body;
  try {
    body = await api("/api/accounts");
  } catch {
    return; // the status poll says what is wrong
  }
  const accounts = body.accounts;
  const current = ACCOUNT || (accounts[0] ? accounts[0].name : "default");
  let mine = accounts.find((a) => a.name === current);
  if (!mine) {
    mine = { name: current, gmail_address: null, refresh: "off", refresh_offered: false, needs_consent: false };
    accounts.push(mine);
  }
  currentName = current;
  document.body.dataset.accounts = String(accounts.length);
  renderSwitch(accounts, current);
  state.accountAddress = mine.gmail_address || "";
  setAccountPart(freshnessText(mine, body.now_unix));
  const choice = $("refresh-choice");
  $("refresh-field").classList.toggle("hidden", !mine.refresh_offered); // offered once a scan has completed
  if (document.activeElement !== choice) choice.value = mine.refresh;
}

function switchTo(name) {
  const url = new URL(window.location.href);
  url.searchParams.set("account", name);
  window.location.assign(url.toString());
}

export async function saveAddress(address) {
  try {
    await api("/api/account/settings", { body: { address } });
  } catch {
    return; // kept in this browser all the same; the next scan learns it from Gmail
  }
  loadAccounts();
}

export function wireAccounts() {
  const select = $("account-switch");
  select.addEventListener("change", () => {
    if (select.value !== NEW) {
      switchTo(select.value);
      return;
    }
    const name = (window.prompt("A short name for the new account (a-z, 0-9, - and _), e.g. work:") || "").trim().toLowerCase();
    if (NAME.test(name)) switchTo(name);
    else select.value = currentName;
  });
  $("refresh-choice").addEventListener("change", async () => {
    const choice = $("refresh-choice");
    choice.disabled = true;
    try {
      await api("/api/account/settings", { body: { refresh: choice.value } });
    } catch (err) {
      setAccountPart(`refresh not changed: ${err.message}`);
    } finally {
      choice.disabled = false;
    }
    loadAccounts();
  });
  loadAccounts();
  setInterval(loadAccounts, 15000);
}
