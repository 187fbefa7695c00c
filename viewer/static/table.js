// The sender and domain tables: server-side paging, sorting, search, presets and hidden senders (kept in this
// browser, sent as a registered set, `hidden=`, so they leave totals and paging too). Only the newest answer is
// ever drawn.

import { setReadAt } from "./accounts.js";
import { Latest } from "./api.js";
import { openDetail } from "./detail.js";
import { daysBefore, findParams, readAddress, renderMonthFilter, wireFinder, writeAddress } from "./finder.js";
import { inAccount, wireGmail } from "./gmail.js";
import { hide, unhide, wireHidden, withHidden } from "./hidden.js";
import { wireKept } from "./keep.js";
import { wireKeys } from "./keys.js";
import { selectPage, syncSelection, toggleRow, wireSelection } from "./selection.js";
import { notice, showFailure } from "./messages.js";
import { state } from "./state.js";
import { $, bytes, date, el, fmt, percent, shareText, store, withAccount } from "./util.js";

const MOSTLY_UNREAD = 0.8;
const channel = new Latest();

// Presets are filters the API applies, so totals, paging and export agree with what the table shows.
export const PRESETS = {
  all: { filters: {}, sort: null },
  unsubscribe: { filters: { min_messages: 10, min_unread_ratio: MOSTLY_UNREAD, has_unsubscribe: "true" }, sort: ["mails_sent", "desc"] },
  // At least 5 messages: otherwise one-message senders at 100% unread lead a list of tens of thousands.
  unread: { filters: { min_messages: 5, min_unread_ratio: MOSTLY_UNREAD }, sort: ["unread_ratio", "desc"] },
  largest: { filters: {}, sort: ["bytes", "desc"] },
  // Dated from today each time the table loads, so a page left open for a day still means what it says.
  silent: { filters: () => ({ last_before: daysBefore({ years: 2 }) }), sort: ["last_seen", "asc"] },
  fresh: { filters: () => ({ first_after: daysBefore({ months: 12 }) }), sort: ["mails_sent", "desc"] },
};
// Presets that test a sender's own terms: the domain view has no such row.
const SENDER_PRESETS = ["unsubscribe", "unread", "silent", "fresh"];

// [key, label, sort key or null, extra class]; the widths live in app.css (table-layout: fixed).
const COLUMNS = {
  senders: [
    ["select", "Select", null, "col-select"],
    ["who", "Sender", "@sender", "col-who"],
    ["mails_sent", "Messages", "mails_sent", "num col-count"],
    ["share", "Share", null, "num col-share"],
    ["unread", "Unread", "unread_ratio", "num col-unread"], // and `unread`, the count (a second button)
    ["bytes", "Size", "bytes", "num col-bytes"],
    ["first_seen", "First seen", "first_seen", "col-date col-first"],
    ["last_seen", "Last seen", "last_seen", "col-date col-last"],
    ["actions", "Actions", null, "col-actions"],
  ],
  domains: [
    ["who", "Domain", "domain", "col-who"],
    ["senders", "Senders", "senders", "num col-count"],
    ["mails_sent", "Messages", "mails_sent", "num col-count"],
    ["share", "Share", null, "num col-share"],
    ["unread", "Unread", "unread_ratio", "num col-unread"],
    ["bytes", "Size", "bytes", "num col-bytes"],
    ["last_seen", "Last seen", "last_seen", "col-date col-last"],
    ["actions", "Actions", null, "col-actions"],
  ],
};

export function filterParams() {
  const t = state.table;
  const params = new URLSearchParams();
  if (t.q) params.set("q", t.q);
  const preset = PRESETS[t.preset].filters;
  for (const [k, v] of Object.entries(typeof preset === "function" ? preset() : preset)) params.set(k, String(v));
  if (t.domain && state.view === "senders") params.set("domain", t.domain);
  findParams(params);
  return params;
}

export function safeLink(raw, schemes) {
  if (!raw) return null;
  try {
    const url = new URL(raw);
    return schemes.includes(url.protocol) ? url.href : null;
  } catch {
    return null;
  }
}

export function gmailLink(s) {
  const given = safeLink(s.gmail_url, ["https:"]);
  if (given && given.startsWith("https://mail.google.com/")) return inAccount(given);
  return s.sender ? inAccount(`https://mail.google.com/mail/u/0/#search/${encodeURIComponent(`from:${s.sender}`)}`) : null;
}

/** True while a preset proposes senders: the Keep list then leaves the table too. */
export const keptLeftOut = () => state.view === "senders" && state.table.preset !== "all";

export const unreadRatio = (row) =>
  typeof row.unread_ratio === "number" ? row.unread_ratio : row.mails_sent ? (row.unread || 0) / row.mails_sent : null;

// The Sender column sorts by what the row shows (`name`: the display name, else the address) where the API
// offers it; an older API sorts by address only, and then the rows show the address first.
function senderSortKey() {
  return state.nameSort ? "name" : "sender";
}

/** The filter a `Count all` click asked the exact figure for (a new filter is counted up to the limit again). */
const exactKey = () => JSON.stringify([state.table.q, state.table.preset, state.table.domain, state.table.find]);

export async function loadTable() {
  const t = state.table;
  const params = filterParams();
  params.set("sort", t.sort);
  params.set("order", t.order);
  params.set("offset", String(t.offset));
  params.set("limit", String(t.limit));
  // Past 30,000 matches the API stops counting ("30,000+") until the person asks for the figure (`Count all`).
  if (state.view === "senders" && t.exactFor === exactKey()) params.set("exact_count", "true");
  const path = state.view === "domains" ? "/api/domains" : "/api/senders";
  writeAddress();
  let page;
  try {
    page = await withHidden(params, (mine) => {
      // The export link names the same hidden set as the page it was built with.
      const exportParams = filterParams();
      if (mine.has("hidden")) exportParams.set("hidden", mine.get("hidden"));
      exportParams.set("sort", t.sort);
      exportParams.set("order", t.order);
      const domains = state.view === "domains";
      $("export").href = withAccount(`/api/${domains ? "domains" : "export"}.csv?${exportParams}`);
      $("export").setAttribute("download", domains ? "gmail-stats-domains.csv" : "gmail-stats-senders.csv");
      return channel.get(`${path}?${mine}`);
    }, { withKept: keptLeftOut() });
  } catch (err) {
    showFailure("table-message", err, { scroll: false }); // keep the rows we have; say why they are not fresh
    return;
  }
  if (page === null) return; // a newer request replaced this one
  if (page.senders && page.senders.length && "gmail_url" in page.senders[0]) state.nameSort = true;
  $("table-message").replaceChildren();
  state.lastPage = page;
  state.lastTableRefresh = Date.now();
  renderTable(page);
  notice(null);
}

function renderHead() {
  const t = state.table;
  const cols = COLUMNS[state.view].map(([key, label, sort, cls]) => [key, label, sort === "@sender" ? senderSortKey() : sort, cls]);
  $("cols").replaceChildren(...cols.map(([, , , cls]) => el("col", { cls })));
  $("head").replaceChildren(
    ...cols.map(([key, label, sort, cls]) => {
      const th = el("th", { cls, attrs: { scope: "col", "data-col": key } });
      if (key === "actions") th.append(el("span", { cls: "visually-hidden", text: label }));
      else if (key === "select") {
        const box = el("input", { cls: "select-box", attrs: { type: "checkbox", id: "select-page", "aria-label": "Select every sender on this page" } });
        box.addEventListener("change", () => selectPage(box.checked));
        th.append(box);
      }
      else if (sort) {
        const b = el("button", { cls: "sort", text: label, attrs: { type: "button", "data-sort": sort } });
        b.addEventListener("click", () => sortBy(sort));
        th.append(b);
        const sorts = key === "unread" && state.view === "senders" ? [sort, "unread"] : [sort];
        th.setAttribute("aria-sort", sorts.includes(t.sort) ? (t.order === "desc" ? "descending" : "ascending") : "none");
        if (sorts.length > 1) {
          // Two sorts in one header: the share (the label) and the count ("#"); only the active one shows an arrow.
          b.title = "Sort by unread share";
          b.classList.toggle("sort-off", t.sort === "unread");
          const off = t.sort === "unread" ? "" : " sort-off";
          const count = el("button", { cls: `sort sort-count${off}`, text: "#", attrs: { type: "button", "data-sort": "unread", "aria-label": "Sort by unread messages", title: "Sort by unread messages" } });
          count.addEventListener("click", () => sortBy("unread"));
          th.append(count);
        }
      } else th.textContent = label;
      return th;
    }),
  );
}

function sortBy(sort) {
  const t = state.table;
  if (t.sort === sort) t.order = t.order === "desc" ? "asc" : "desc";
  else {
    t.sort = sort;
    t.order = ["sender", "name", "domain"].includes(sort) ? "asc" : "desc";
  }
  t.offset = 0;
  loadTable();
}

export function renderTable(page) {
  const t = state.table;
  renderHead();
  const items = state.view === "domains" ? page.domains || [] : page.senders || [];
  renderTiles(page);
  setReadAt(page.generated_at_unix);

  const topCount = items.reduce((max, s) => Math.max(max, s.mails_sent), 0);
  const rows = items
    .filter((s) => state.view === "domains" || !state.hidden.has(s.sender)) // belt and braces: the API excludes them
    .map((s) => (state.view === "domains" ? domainRow(s, page.total_messages, topCount) : senderRow(s, page.total_messages, topCount)));
  $("rows").replaceChildren(...rows);
  const empty = $("no-rows");
  empty.classList.toggle("hidden", rows.length > 0);
  empty.textContent = state.view === "domains" ? "No domain matches." : "No sender matches.";
  $("hidden-count").textContent = fmt(state.hidden.size);

  const capped = page.total_exact === false; // the count stopped at `total`: more match
  const shown = items.length;
  const first = (capped ? shown : page.total) ? t.offset + 1 : 0;
  const last = capped ? t.offset + shown : Math.min(t.offset + t.limit, page.total);
  const noun = (state.view === "domains" ? "domain" : "sender") + (page.total === 1 && !capped ? "" : "s");
  const range = `${fmt(first)}–${fmt(last)} of ${fmt(page.total)}${capped ? "+" : ""} ${noun}`;
  $("range").textContent = range;
  $("range-bottom").textContent = range;
  $("count-exact").classList.toggle("hidden", !capped);
  $("prev").disabled = t.offset === 0;
  $("next").disabled = capped ? shown < t.limit : t.offset + t.limit >= page.total;
  renderDomainFilter();
  renderMonthFilter(loadTable);
  syncSelection();
}

function renderTiles(page) {
  const hiddenNote = state.hidden.size ? `without ${fmt(state.hidden.size)} hidden` : "";
  $("tile-messages").textContent = fmt(page.total_messages);
  $("tile-messages-sub").textContent = hiddenNote;
  if (state.view === "domains") return; // a domain page has no sender totals: keep the last ones
  $("tile-senders").textContent = fmt(page.total_senders);
  $("tile-senders-sub").textContent = hiddenNote;
  const top = page.top_sender;
  $("tile-top").textContent = top ? top.display_name || top.sender || "(no sender)" : "–";
  $("tile-top").title = top ? top.sender : "";
  $("tile-top-count").textContent = top ? `${top.display_name ? `${top.sender} · ` : ""}${fmt(top.mails_sent)} messages` : "";
}

function renderDomainFilter() {
  let chip = $("domain-filter");
  const t = state.table;
  if (!t.domain || state.view !== "senders") {
    if (chip) chip.remove();
    return;
  }
  if (!chip) {
    chip = el("span", { cls: "filter-chip", attrs: { id: "domain-filter" } });
    $("range").after(chip);
  }
  const clear = el("button", { cls: "button ghost small", text: "✕", attrs: { type: "button", "aria-label": `Show every domain, not only ${t.domain}` } });
  clear.addEventListener("click", () => {
    t.domain = "";
    t.offset = 0;
    loadTable();
  });
  chip.replaceChildren(el("span", { text: `Domain: ${t.domain}` }), clear);
}

function shareCell(row, totalMessages, topCount) {
  const share = totalMessages ? row.mails_sent / totalMessages : 0;
  const fill = el("span", { cls: "share-fill" });
  // The bar compares with the biggest row on the page, so differences stay visible in a long tail.
  fill.style.width = `${Math.max(2, Math.round((topCount ? row.mails_sent / topCount : 0) * 100))}%`;
  return el("td", { cls: "num col-share" }, [
    el("span", { cls: "share" }, [
      el("span", { text: shareText(share) }),
      el("span", { cls: "share-bar", attrs: { title: "compared with the biggest row on this page" } }, [fill]),
    ]),
  ]);
}

function unreadCell(row) {
  const ratio = unreadRatio(row);
  const mostly = ratio !== null && ratio >= MOSTLY_UNREAD && row.mails_sent >= 2;
  const td = el("td", { cls: `num col-unread${mostly ? " mostly-unread" : ""}` }, [el("span", { cls: "unread-value", text: percent(ratio) })]);
  td.title = `${fmt(row.unread)} of ${fmt(row.mails_sent)} unread${mostly ? ": mostly unread" : ""}`;
  return td;
}

function senderRow(s, totalMessages, topCount) {
  const name = s.display_name || s.sender || "(no sender)";
  const addressFirst = state.table.sort === "sender"; // the sort key is the address, so show it first then
  const primary = addressFirst ? s.sender || "(no sender)" : name;
  const secondary = addressFirst ? (s.display_name ? s.display_name : "") : s.display_name ? s.sender : "";
  const who = el("button", { cls: "who", attrs: { type: "button", "aria-haspopup": "dialog", title: `${name}: details` } }, [
    el("span", { cls: "who-name", text: primary }),
    el("span", { cls: addressFirst ? "who-key" : "who-key who-address", text: secondary }),
  ]);
  who.addEventListener("click", () => openDetail({ kind: "sender", row: s, totalMessages }));
  const box = el("input", { cls: "select-box select-row", attrs: { type: "checkbox", "aria-label": `Select ${name}` } });
  const kept = state.kept.has(s.sender) ? el("span", { cls: "kept-badge", text: "kept", attrs: { title: "On your Keep list: presets do not propose it" } }) : null;
  if (kept) who.append(kept);
  const cells = [el("td", { cls: "col-select" }, [box]), el("td", { cls: "col-who" }, [who]), el("td", { cls: "num col-count", text: fmt(s.mails_sent) }), shareCell(s, totalMessages, topCount), unreadCell(s)];
  cells.push(el("td", { cls: "num col-bytes", text: bytes(s.bytes) }));
  cells.push(el("td", { cls: "col-date col-first", text: date(s.first_seen_unix) }));
  cells.push(el("td", { cls: "col-date col-last", text: date(s.last_seen_unix) }));
  cells.push(el("td", { cls: "col-actions" }, [senderActions(s, name)]));
  const tr = el("tr", {}, cells);
  tr.dataset.sender = s.sender;
  tr.dataset.messages = String(s.mails_sent);
  box.addEventListener("click", (event) => toggleRow(tr, box.checked, event.shiftKey));
  return tr;
}

export function senderActions(s, name, { inDialog = false } = {}) {
  const box = el("div", { cls: "actions" });
  const gmail = gmailLink(s);
  if (gmail) box.append(el("a", { cls: "link-action", text: inDialog ? "Open in Gmail" : "Gmail", attrs: { href: gmail, target: "_blank", rel: "noopener noreferrer", "aria-label": `Open ${name} in Gmail`, title: "Open this sender's mail in Gmail" } }));
  const unsub = safeLink(s.unsubscribe_url, ["https:", "http:", "mailto:"]);
  if (unsub) {
    // A plain http: page can be read or altered on the way (and tells the sender the link was opened): say so.
    const plain = unsub.startsWith("http:");
    const title = plain
      ? "Unencrypted (http:): the sender's unsubscribe page opens without HTTPS, so others on the network can see or change it"
      : s.one_click ? "The sender offers one-click unsubscribe; this opens its page" : "Opens the sender's unsubscribe page or an e-mail to it";
    const label = `Unsubscribe from ${name}${plain ? " (unencrypted http: link)" : ""}`;
    const marker = plain ? el("span", { cls: "tag-http", text: inDialog ? "unencrypted" : "http" }) : null;
    box.append(el("a", { cls: `link-action unsub${plain ? " unencrypted" : ""}`, text: "Unsubscribe", attrs: { href: unsub, target: "_blank", rel: "noopener noreferrer", "aria-label": label, title } }, [marker]));
  }
  const hidden = state.hidden.has(s.sender);
  const toggle = el("button", { cls: "button ghost small hide-button", text: hidden ? "Unhide" : "Hide", attrs: { type: "button", "aria-label": `${hidden ? "Unhide" : "Hide"} ${name}` } });
  toggle.addEventListener("click", () => {
    if (hidden) unhide(s.sender); // what the button says, even if a reload failed since it was drawn
    else hide(s.sender, name);
    if (inDialog) $("detail").close();
  });
  box.append(toggle);
  return box;
}

function domainRow(d, totalMessages, topCount) {
  const who = el("button", { cls: "who", attrs: { type: "button", "aria-haspopup": "dialog", title: `${d.domain}: details` } }, [
    el("span", { cls: "who-name", text: d.domain || "(no domain)" }),
    el("span", { cls: "who-key", text: `${fmt(d.senders)} sender${d.senders === 1 ? "" : "s"}` }),
  ]);
  who.addEventListener("click", () => openDetail({ kind: "domain", row: d, totalMessages }));
  const show = el("button", { cls: "button ghost small", text: "Senders", attrs: { type: "button", "aria-label": `Show the senders of ${d.domain}` } });
  show.addEventListener("click", () => showDomainSenders(d.domain));
  const gmail = safeLink(d.gmail_url, ["https:"]);
  const links = gmail && gmail.startsWith("https://mail.google.com/") ? [el("a", { cls: "link-action", text: "Gmail", attrs: { href: inAccount(gmail), target: "_blank", rel: "noopener noreferrer", "aria-label": `Open mail from ${d.domain} in Gmail` } })] : [];
  const tr = el("tr", {}, [
    el("td", { cls: "col-who" }, [who]),
    el("td", { cls: "num col-count", text: fmt(d.senders) }),
    el("td", { cls: "num col-count", text: fmt(d.mails_sent) }),
    shareCell(d, totalMessages, topCount),
    unreadCell(d),
    el("td", { cls: "num col-bytes", text: bytes(d.bytes) }),
    el("td", { cls: "col-date col-last", text: date(d.last_seen_unix) }),
    el("td", { cls: "col-actions" }, [el("div", { cls: "actions" }, [...links, show])]),
  ]);
  tr.dataset.domain = d.domain;
  return tr;
}

export function showDomainSenders(domain) {
  state.table.domain = domain;
  setView("senders");
}

export function setView(view) {
  showView(view);
  loadTable();
}

/** The view's buttons, caption and presets, without loading. */
function showView(view) {
  state.view = view;
  const t = state.table;
  t.offset = 0;
  const valid = COLUMNS[view].some(([, , sort]) => sort === t.sort || (sort === "@sender" && ["sender", "name"].includes(t.sort))) || (view === "senders" && t.sort === "unread");
  if (!valid) {
    t.sort = "mails_sent";
    t.order = "desc";
  }
  $("view-senders").setAttribute("aria-pressed", String(view === "senders"));
  $("view-domains").setAttribute("aria-pressed", String(view === "domains"));
  $("table-caption").textContent = view === "domains" ? "Mail by domain" : "Mail by sender";
  $("search").placeholder = view === "domains" ? "Search domains" : "Search senders";
  // The API applies the sender filters to senders only: in the domain view only "All" and "Largest" mean anything.
  for (const b of document.querySelectorAll("button.preset")) {
    b.disabled = view === "domains" && SENDER_PRESETS.includes(b.dataset.preset);
    b.title = b.disabled ? "Applies to senders, not domains" : b.dataset.title || "";
  }
  if (view === "domains" && SENDER_PRESETS.includes(t.preset)) t.preset = "all";
  for (const b of document.querySelectorAll("button.preset")) b.setAttribute("aria-pressed", String(b.dataset.preset === t.preset));
  $("search").setAttribute("aria-label", $("search").placeholder);
  $("find-more").classList.toggle("hidden", view === "domains"); // dates and sizes are a sender's own
}

export function setPreset(name) {
  const t = state.table;
  t.preset = name;
  const preset = PRESETS[name];
  if (preset.sort) [t.sort, t.order] = preset.sort;
  else [t.sort, t.order] = ["mails_sent", "desc"];
  t.offset = 0;
  for (const b of document.querySelectorAll("button.preset")) b.setAttribute("aria-pressed", String(b.dataset.preset === name));
  loadTable();
}

export function wireTable() {
  for (const b of document.querySelectorAll("button.preset")) b.dataset.title = b.title;
  readAddress(PRESETS, Object.keys(COLUMNS));
  showView(state.view);
  wireFinder(loadTable);
  const size = $("page-size");
  size.value = String(state.table.limit);
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
    }, 150);
  });
  $("prev").addEventListener("click", () => {
    state.table.offset = Math.max(0, state.table.offset - state.table.limit);
    loadTable();
  });
  $("next").addEventListener("click", () => {
    state.table.offset += state.table.limit;
    loadTable();
  });
  $("count-exact").addEventListener("click", () => {
    state.table.exactFor = exactKey();
    loadTable();
  });
  $("view-senders").addEventListener("click", () => setView("senders"));
  $("view-domains").addEventListener("click", () => setView("domains"));
  for (const b of document.querySelectorAll("button.preset")) b.addEventListener("click", () => setPreset(b.dataset.preset));
  wireHidden();
  wireKept();
  wireSelection();
  wireGmail();
  wireKeys();
  document.addEventListener("gmail-account-changed", () => state.lastPage && renderTable(state.lastPage));
}
