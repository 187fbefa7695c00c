// Small DOM and formatting helpers shared by the page's modules. Every dynamic string goes through textContent.

export const $ = (id) => document.getElementById(id);

/** The account this page shows (`?account=` in its address; the server's only or first account when empty). */
export const ACCOUNT = new URLSearchParams(window.location.search).get("account") || "";

/** `path` with the page's account added, so every request and link reads the same database. */
export function withAccount(path) {
  if (!ACCOUNT) return path;
  return `${path}${path.includes("?") ? "&" : "?"}account=${encodeURIComponent(ACCOUNT)}`;
}

// The default account keeps the keys of before accounts (its hidden senders and Keep list stay); every other
// account has its own.
const PREFIX = ACCOUNT && ACCOUNT !== "default" ? `gmail-stats.${ACCOUNT}.` : "gmail-stats.";

export const store = {
  get(key, fallback) {
    try {
      const raw = localStorage.getItem(`${PREFIX}${key}`);
      return raw === null ? fallback : JSON.parse(raw);
    } catch {
      return fallback;
    }
  },
  set(key, value) {
    try {
      localStorage.setItem(`${PREFIX}${key}`, JSON.stringify(value));
    } catch {
      /* storage full or disabled: the preference simply is not remembered */
    }
  },
};

export function el(tag, { cls, text, attrs } = {}, children = []) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (attrs) for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) node.setAttribute(k, v);
  for (const child of children) if (child) node.append(child);
  return node;
}

export function button(label, kind, onClick, attrs = {}) {
  const node = el("button", { cls: `button ${kind}`, text: label, attrs: { type: "button", ...attrs } });
  node.addEventListener("click", onClick);
  return node;
}

/** A text with `backticks` shown as code elements (server messages quote commands that way). */
export function richText(node, text) {
  const parts = String(text || "").split("`");
  node.replaceChildren(...parts.map((part, i) => (i % 2 ? el("code", { text: part }) : document.createTextNode(part))));
  return node;
}

const nf = new Intl.NumberFormat();
export const fmt = (n) => (n === null || n === undefined ? "–" : nf.format(n));

export function bytes(n) {
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

export function date(unix) {
  if (!unix) return "–";
  return new Date(unix * 1000).toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
}

export function dateTime(unix) {
  if (!unix) return "–";
  return `${date(unix)} ${new Date(unix * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}`;
}

export function percent(fraction) {
  if (fraction === null || fraction === undefined || Number.isNaN(fraction)) return "–";
  return `${Math.round(fraction * 100)}%`;
}

/** A share of all mail: "<0.01%" for the long tail, never a "0.00%" that reads as nothing. */
export function shareText(share) {
  if (!share) return "0%";
  if (share < 0.0001) return "<0.01%";
  return `${(share * 100).toFixed(share < 0.01 ? 2 : 1)}%`;
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

/** Marks a button busy (aria-disabled, aria-busy, a "…" label) until the returned function is called. Not
 * `disabled`: a disabled button drops keyboard focus to <body>; callers ignore clicks while `data-busy` is set. */
export function busy(node, label) {
  const original = node.textContent;
  node.setAttribute("aria-disabled", "true");
  node.setAttribute("aria-busy", "true");
  node.textContent = label;
  node.dataset.busy = "1";
  return () => {
    node.removeAttribute("aria-busy");
    node.removeAttribute("aria-disabled");
    node.textContent = original;
    delete node.dataset.busy;
  };
}
