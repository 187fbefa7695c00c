// The row detail view (a modal <dialog>): every column of one sender or domain, its links, and its volume
// chart. On a phone it is the only place Size, First seen and Last seen are shown.

import { ApiFailure, Latest } from "./api.js";
import { drawVolume } from "./chart.js";
import { gmailButton, inAccount } from "./gmail.js";
import { equivalent, keyOf, moveFocus } from "./focus.js";
import { failureText } from "./messages.js";
import { $, bytes, date, el, fmt, percent, shareText } from "./util.js";

const channel = new Latest();
let opener = null;
let openerKey = null;

function unsubscribeFact(row) {
  if (!row.unsubscribe_url) return "none offered";
  if (row.unsubscribe_url.toLowerCase().startsWith("http:")) return "link (unencrypted http:)";
  return row.one_click ? "link (one-click)" : "link";
}

function fact(label, value) {
  return [el("dt", { text: label }), el("dd", { text: value })];
}

export async function openDetail({ kind, row, totalMessages }) {
  // Imported lazily to avoid a module cycle (table.js draws rows that open this view).
  const table = await import("./table.js");
  const dialog = $("detail");
  opener = document.activeElement;
  openerKey = opener && opener !== document.body ? keyOf(opener) : null;
  const isSender = kind === "sender";
  const name = isSender ? row.display_name || row.sender || "(no sender)" : row.domain || "(no domain)";
  $("detail-title").textContent = name;
  $("detail-key").textContent = isSender ? (row.display_name ? row.sender : "") : `${fmt(row.senders)} sender${row.senders === 1 ? "" : "s"}`;
  const ratio = table.unreadRatio(row);
  const share = totalMessages ? row.mails_sent / totalMessages : 0;
  const facts = [
    ...fact("Messages", fmt(row.mails_sent)),
    ...fact("Share of all mail", shareText(share)),
    ...fact("Unread", `${fmt(row.unread)} (${percent(ratio)})`),
    ...fact("Size", bytes(row.bytes)),
    ...fact("First seen", date(row.first_seen_unix)),
    ...fact("Last seen", date(row.last_seen_unix)),
  ];
  if (isSender && row.domain) facts.push(...fact("Domain", row.domain));
  if (isSender) facts.push(...fact("Unsubscribe", unsubscribeFact(row)));
  $("detail-facts").replaceChildren(...facts);
  const links = $("detail-links");
  if (isSender) {
    links.replaceChildren(table.senderActions(row, name, { inDialog: true }));
    if (row.sender) links.firstChild.append(gmailButton(row.sender, name));
  }
  else {
    const show = el("button", { cls: "button small", text: "Show its senders", attrs: { type: "button" } });
    show.addEventListener("click", () => {
      dialog.close();
      table.showDomainSenders(row.domain);
    });
    const gmail = table.safeLink(row.gmail_url, ["https:"]);
    const open = gmail && gmail.startsWith("https://mail.google.com/")
      ? el("a", { cls: "link-action", text: "Open in Gmail", attrs: { href: inAccount(gmail), target: "_blank", rel: "noopener noreferrer" } })
      : null;
    links.replaceChildren(el("div", { cls: "actions" }, [open, row.domain ? gmailButton(row.domain, row.domain) : null, show]));
  }
  const chart = $("detail-chart");
  chart.replaceChildren(el("p", { cls: "hint", text: "Loading…" }));
  if (!dialog.open) dialog.showModal();
  const scope = isSender ? `sender=${encodeURIComponent(row.sender)}` : `domain=${encodeURIComponent(row.domain)}`;
  try {
    const volume = await channel.get(`/api/volume?${scope}`);
    if (volume === null) return;
    drawVolume(chart, volume, { caption: `Messages per month from ${name}` });
    if (volume.undated) chart.append(el("p", { cls: "hint", text: `${fmt(volume.undated)} messages have no date.` }));
  } catch (err) {
    const missing = err instanceof ApiFailure && err.status === 404;
    chart.replaceChildren(el("p", { cls: "hint", text: missing ? "This viewer has no monthly figures yet." : failureText(err).text }));
  }
}

export function wireDetail() {
  const dialog = $("detail");
  $("detail-close").addEventListener("click", () => dialog.close());
  dialog.addEventListener("click", (event) => {
    if (event.target === dialog) dialog.close(); // a click on the backdrop
  });
  dialog.addEventListener("close", () => {
    // A live run may have redrawn the table meanwhile: then its new copy of the opener takes the focus.
    if (opener && document.contains(opener)) opener.focus();
    else if (openerKey) moveFocus(equivalent(openerKey), { scroll: false });
  });
}
