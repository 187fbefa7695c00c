// The page's one mutable state object, shared by its modules (the server stays the source of every number).

import { store } from "./util.js";

export const PAGE_SIZES = [25, 50, 100, 500];

export const state = {
  status: null,
  view: "senders", // or "domains"
  table: {
    q: "",
    sort: "mails_sent",
    order: "desc",
    offset: 0,
    limit: PAGE_SIZES.includes(store.get("pageSize", 50)) ? store.get("pageSize", 50) : 50,
    preset: "all",
    domain: "", // a domain picked from the domain view narrows the sender view
    find: {}, // date, size and month filters (finder.js): API parameter → value
  },
  hidden: new Set(store.get("hidden", [])),
  kept: new Set(store.get("kept", [])), // the Keep list: senders presets never propose again
  // The selection: explicit senders (sender → messages), or `all`, every sender matching the filter it names.
  selection: { senders: new Map(), all: null },
  gmailAccount: store.get("gmailAccount", ""), // asked once: links open in this account (`authuser=`)
  accountAddress: "", // the address the account's database knows (learnt by a scan, or told once)
  lastPage: null,
  imports: null,
  importCommand: "", // the server writes every terminal command (under Docker: `make …` with host paths)
  runsCommand: "gmail-stats runs --verbose", // replaced by the server's form before the first poll
  logOpen: false,
  pollDelay: 1000,
  pollTimer: null,
  lastTableRefresh: 0,
  tableDirty: true,
  lastProgressKey: "",
  cancelling: null, // run id whose cancel was asked for, until the run ends
  importedPaths: new Set(), // import-folder paths of finished imports in the history, for the Add mail picker
  historyLimit: 6, // runs shown in the history; "Show older runs" raises it
  unhealthy: false, // the last status poll failed: the next success reads everything again
  nameSort: false, // the API sorts senders by shown name (`sort=name`)
};

export function saveHidden() {
  store.set("hidden", [...state.hidden]);
}

export function saveKept() {
  store.set("kept", [...state.kept]);
}

export function isActive(status) {
  return Boolean(status && (status.active_run || status.ingest_lock_held));
}
