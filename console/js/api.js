// The snapwake HTTP API (docs/http-api.md) as the page uses it: JSON in and out, identity on
// every request, errors as `Problem`s, retries of answers that say to ask again, and 202s
// followed to the end. Two parties answer errors: snapwake's functions, with RFC 9457
// problem+json, and API Gateway itself (its authorizer, its throttling, its timeout, a
// function that crashed), with a bare {"message"} that is never shown as it is: each is put
// in words for a person here (docs/http-api.md, "Errors API Gateway answers itself").

const text = (v) => (typeof v === "string" ? v : "");

/** An API error: a problem the server answered, or one made up here, always words to show. */
export class Problem extends Error {
  constructor(problem, status = problem.status ?? 0, retryAfter = null) {
    super(text(problem.detail) || text(problem.title) || "Request failed");
    this.title = text(problem.title) || "Request failed";
    this.detail = text(problem.detail);
    this.code = text(problem.code) || null;
    this.status = status;
    this.retryable = Boolean(problem.retryable);
    this.requestId = text(problem.request_id) || text(problem.requestId) || null;
    this.retryAfter = retryAfter;
    // The request body's field a 422 is about (`timezone`, `wake`, …), when it names one.
    this.field = text(problem.field) || null;
    // Which of API Gateway's own answers this was ("unauthorized", "busy", "failed", …);
    // null for snapwake's problems.
    this.gateway = problem.gateway || null;
  }
}

/**
 * snapwake's problems retried without asking: busy, throttled, "try again" (nothing happened;
 * the API says when to ask again) and no answer at all. Other retryable problems (a wake that
 * failed: 502) are shown with a "Try again" button, so a person decides to start another
 * attempt. API Gateway's own "busy" answers follow their own rule (`retriable`).
 */
const AUTO_RETRY = new Set([0, 409, 429, 503]);

/** A promise that resolves after `ms`. */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A Retry-After header (seconds or an HTTP date) in ms, within 1–30 s; null when absent. */
function retryAfterMs(headers) {
  const value = (headers?.get("Retry-After") ?? "").trim();
  if (!value) return null;
  let s = /^\d+$/.test(value) ? Number(value) : (Date.parse(value) - Date.now()) / 1000;
  if (!Number.isFinite(s)) return null;
  s = Math.min(Math.max(s, 1), 30);
  return Math.round(s * 1000);
}

/** Back-off before retry `n` (1 for the first) when the answer named no time: 1 s doubling,
 * at most 8 s, half of it random so many pages throttled together do not return together. */
function backoffMs(n) {
  const ms = Math.min(1000 * 2 ** (n - 1), 8000);
  return Math.round(ms / 2 + Math.random() * (ms / 2));
}

/**
 * One of API Gateway's own answers, a `{"message"}` body, as a problem for a person. Which
 * status means what is in docs/http-api.md; the message itself is not shown.
 */
function gatewayProblem(status, requestId) {
  const report = "If it happens again, tell the people who run snapwake"
    + (requestId ? ` and give them the request id ${requestId}.` : ".");
  switch (status) {
    case 401:
      return { gateway: "unauthorized", title: "Your sign-in has expired", detail: "Sign in again to carry on." };
    case 403:
      return { gateway: "forbidden", title: "Not allowed", detail: "Your sign-in does not allow this. Sign in again, or ask whoever runs snapwake." };
    case 429:
      return { gateway: "busy", title: "snapwake is busy", detail: "Too many requests are reaching it right now.", retryable: true };
    case 503:
    case 504:
      return { gateway: "busy", title: "snapwake is busy", detail: "It did not answer in time.", retryable: true };
    case 500:
    case 502:
      return { gateway: "failed", title: "Something went wrong in snapwake", detail: `The request failed before snapwake could answer. ${report}` };
    case 404:
      return { gateway: "no-route", title: "The page cannot find snapwake", detail: "The API has no such address: the page's api_base (config.json) may be wrong." };
    case 413:
      return { gateway: "too-large", title: "Request too large", detail: "The API refused the request as too large." };
    default:
      return { gateway: "other", title: "Unexpected answer", detail: `The API answered ${status}. ${report}` };
  }
}

/**
 * Whether to ask again without asking the person. API Gateway's 429 refused the request
 * before snapwake saw it: always. Its 503/504 only say it stopped waiting (snapwake may have
 * acted): only a request that is `safe` to repeat (a read, a wake or sleep poll, a create
 * with its Idempotency-Key, a keepalive). snapwake's own problems: AUTO_RETRY.
 */
function retriable(e, safe) {
  if (e.gateway === "busy") return e.status === 429 || safe;
  return e.retryable && AUTO_RETRY.has(e.status);
}

/** "?a=1&b=2" of the query's values that are set, or "". */
function search(query) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : "";
}

export class Api {
  /**
   * @param {string} base the API's base URL ("" = this page's origin)
   * @param {() => Record<string, string>} identity the identity headers of the moment
   */
  constructor(base, identity) {
    this.base = new URL(base || "/", window.location.href);
    this.identity = identity;
  }

  /** The URL of an API path (under the base's own path, e.g. a stage) or of a Location. */
  url(path, { absolute = false } = {}) {
    if (absolute) return new URL(path, this.base).href;
    const prefix = this.base.pathname.replace(/\/$/, "");
    return new URL(prefix + path, this.base.origin).href;
  }

  /**
   * One request. Resolves `{status, headers, body, text}` for 2xx (`body` the JSON, null when
   * the answer is not JSON; `text` the answer as it came); throws a Problem otherwise.
   */
  async request(method, path, { body, headers = {}, absolute = false } = {}) {
    const init = {
      method,
      headers: { Accept: "application/json", ...this.identity(), ...headers },
      cache: "no-store",
    };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(this.url(path, { absolute }), init);
    } catch (e) {
      throw new Problem({
        title: "Cannot reach snapwake",
        detail: `The request did not get an answer (${e.message}).`,
        retryable: true,
      });
    }
    const raw = await res.text();
    let json = null;
    try {
      json = raw ? JSON.parse(raw) : null;
    } catch {
      json = null;
    }
    if (res.ok) return { status: res.status, headers: res.headers, body: json, text: raw };
    const retryAfter = retryAfterMs(res.headers);
    const object = json && typeof json === "object" && !Array.isArray(json) ? json : null;
    if (object && typeof object.title === "string") throw new Problem(object, res.status, retryAfter);
    if (object && typeof object.message === "string") {
      const requestId = res.headers.get("apigw-requestid");
      throw new Problem(gatewayProblem(res.status, requestId), res.status, retryAfter);
    }
    throw new Problem({
      title: "Unexpected answer",
      detail: `The server answered ${res.status} without an explanation.`,
      retryable: res.status >= 500 || res.status === 429,
    }, res.status, retryAfter);
  }

  /**
   * A request asked again while its answer says so (`retriable`), at most `attempts` times in
   * all, after each answer's Retry-After or a back-off; `onRetry(problem, ms)` is told before
   * each wait. `safe`: repeating it is harmless whatever the first attempt did (default: GET).
   */
  async call(method, path, options = {}, { attempts = 4, safe = method === "GET", onRetry = () => {} } = {}) {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.request(method, path, options);
      } catch (e) {
        if (!(e instanceof Problem) || !retriable(e, safe)) throw Api.unrepeated(e);
        if (attempt >= attempts) throw Api.exhausted(e, attempt);
        const ms = e.retryAfter ?? backoffMs(attempt);
        onRetry(e, ms);
        await sleep(ms);
      }
    }
  }

  /** API Gateway stopped waiting for a request that is not safe to repeat: say it may be done. */
  static unrepeated(e) {
    if (!(e instanceof Problem) || e.gateway !== "busy" || e.status === 429) return e;
    return new Problem({
      ...e,
      detail: "It did not answer in time, and may still have done it: refresh to see before trying again.",
      retryable: true,
    }, e.status, e.retryAfter);
  }

  /** Still busy after every attempt: say so, and how often it was tried. */
  static exhausted(e, attempts) {
    if (e.gateway !== "busy") return e;
    return new Problem({
      ...e,
      detail: `It was still too busy after ${attempts} tries. Wait a minute, then try again.`,
      retryable: true,
    }, e.status, e.retryAfter);
  }

  capabilities() {
    return this.call("GET", "/v1/capabilities");
  }

  list(query = {}, hooks = {}) {
    return this.call("GET", `/v1/agents${search(query)}`, {}, hooks);
  }

  /**
   * `GET /v1/usage` (`from`, `to`, `by`, `owner`): the report as JSON, or as CSV in the
   * answer's `text` when `csv` is set (`Accept: text/csv`).
   */
  usage(query = {}, { csv = false, ...hooks } = {}) {
    const headers = csv ? { Accept: "text/csv" } : {};
    return this.call("GET", `/v1/usage${search(query)}`, { headers }, hooks);
  }

  static path(agent, ...rest) {
    const parts = [agent.kind, agent.agent_id, ...rest].map(encodeURIComponent);
    return `/v1/agents/${parts.join("/")}`;
  }

  /**
   * Resume or sleep (`verb`), followed to the end. The request is short (no `Prefer: wait`):
   * a 202 says the work goes on, with the agent as it is now (progress for the page). Wait
   * its Retry-After, then ask again: each ask is a quick read of the agent's record, the API
   * carries on from it and never starts a second wake, and the ask that finds the sandbox
   * ready is the one that completes it (docs/http-api.md, "Resume"). A failed wake comes
   * back as a problem (502, retryable). `onProgress(view)` sees every view.
   */
  async settle(verb, agent, { onProgress = () => {}, onRetry, limitMs = 300_000 }) {
    const started = Date.now();
    // Safe to repeat: a wake or sleep asked again is the same one (docs/wake-protocol.md).
    const post = () => this.call("POST", Api.path(agent, verb), {}, { onRetry, safe: true });
    let res = await post();
    while (res.status === 202) {
      onProgress(res.body);
      if (Date.now() - started > limitMs) {
        throw new Problem({
          title: "Still at work",
          detail: "snapwake is still at it; refresh in a while to see how it ended.",
          retryable: true,
        });
      }
      await sleep(retryAfterMs(res.headers) ?? 1000);
      res = await post();
    }
    return res.body;
  }

  resume(agent, hooks) {
    return this.settle("resume", agent, hooks);
  }

  sleep(agent, hooks) {
    return this.settle("sleep", agent, hooks);
  }

  async keepalive(agent, ttlS, hooks = {}) {
    // Safe to repeat: it sets the time left from now, the same again.
    const res = await this.call("POST", Api.path(agent, "keepalive"), { body: { ttl_s: ttlS } }, { ...hooks, safe: true });
    return res.body;
  }

  /** The agent's idle time in minutes (0 never; null the deployment's): PUT, safe to repeat. */
  async setIdle(agent, minutes, hooks = {}) {
    const res = await this.call("PUT", Api.path(agent, "idle"), { body: { minutes } }, { ...hooks, safe: true });
    return res.body;
  }

  /** DELETE with the view's ETag as If-Match, so what was confirmed is what goes. */
  delete(path, etag, hooks = {}) {
    const headers = etag ? { "If-Match": etag } : {};
    return this.call("DELETE", path, { headers }, hooks);
  }

  deleteAgent(agent, hooks) {
    return this.delete(Api.path(agent), agent.etag, hooks);
  }

  deleteSnapshot(agent, snapshotId, hooks) {
    return this.delete(Api.path(agent, "snapshots", snapshotId), agent.etag, hooks);
  }

  async create(body, idempotencyKey, hooks = {}) {
    // Safe to repeat: the same Idempotency-Key never makes a second agent.
    const res = await this.call("POST", "/v1/agents", { body, headers: { "Idempotency-Key": idempotencyKey } }, { ...hooks, safe: true });
    return res.body;
  }
}
