// HTTP to the viewer's JSON API: one error type, the CSRF header on writes, and "latest answer wins" channels.

import { withAccount } from "./util.js";

export class ApiFailure extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.kind = (body && body.error) || "http";
    this.hint = body && body.hint;
  }
}

let csrf = "";
export function setCsrf(token) {
  csrf = token || "";
}

// A write refused for its CSRF token (the viewer restarted and made a new one) fetches the new token and is sent
// once more, so hidden senders, imports and cancels keep working without a reload.
export async function api(path, options = {}) {
  try {
    return await send(path, options);
  } catch (err) {
    if (options.body === undefined || !(err instanceof ApiFailure) || err.kind !== "csrf") throw err;
    setCsrf((await send("/api/status", {})).csrf_token);
    return send(path, options);
  }
}

async function send(path, options) {
  const init = { headers: { Accept: "application/json" }, cache: "no-store", signal: options.signal };
  if (options.body !== undefined) {
    init.method = options.method || "POST";
    init.headers = { ...init.headers, "Content-Type": "application/json", "X-Gmail-Stats-Csrf": csrf };
    init.body = JSON.stringify(options.body);
  }
  const response = await fetch(withAccount(path), init);
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) throw new ApiFailure(response.status, body);
  return body;
}

/**
 * A channel where only the newest request counts: starting one aborts the one before, and an answer that
 * arrives after a newer request started is dropped (resolves to `null`), so a slow search never overwrites a
 * faster later one.
 */
export class Latest {
  constructor() {
    this.seq = 0;
    this.controller = null;
  }

  async get(path) {
    this.seq += 1;
    const mine = this.seq;
    if (this.controller) this.controller.abort();
    const controller = new AbortController();
    this.controller = controller;
    try {
      const body = await api(path, { signal: controller.signal });
      return mine === this.seq ? body : null;
    } catch (err) {
      if (mine !== this.seq || (err && err.name === "AbortError")) return null;
      throw err;
    }
  }
}
