// The snapwake HTTP API (docs/http-api.md) as the page uses it: JSON in and out, identity on
// every request, RFC 9457 problems as `Problem` errors, retries of retryable problems after
// their Retry-After, and 202s followed to the end.

/** An API error: the problem+json the server answered, or one made up for a network failure. */
export class Problem extends Error {
  constructor(problem, status = problem.status ?? 0, retryAfter = null) {
    super(problem.detail || problem.title || "Request failed");
    this.title = problem.title || "Request failed";
    this.detail = problem.detail || "";
    this.code = problem.code || null;
    this.status = status;
    this.retryable = Boolean(problem.retryable);
    this.requestId = problem.request_id || null;
    this.retryAfter = retryAfter;
  }
}

/**
 * Problems retried without asking: busy, throttled, "try again" (nothing happened; the API
 * says when to ask again) and no answer at all. Other retryable problems (a wake that failed:
 * 502) are shown with a "Try again" button, so a person decides to start another attempt.
 */
const AUTO_RETRY = new Set([0, 409, 429, 503]);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Seconds from a Retry-After header, within 1–10 s; `fallback` when absent. */
function retryAfterMs(headers, fallback = 2) {
  const n = Number.parseInt(headers?.get("Retry-After") ?? "", 10);
  const s = Number.isFinite(n) ? n : fallback;
  return Math.min(Math.max(s, 1), 10) * 1000;
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

  /** One request. Resolves `{status, headers, body}` for 2xx; throws a Problem otherwise. */
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
    const text = await res.text();
    let json = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    if (res.ok) return { status: res.status, headers: res.headers, body: json };
    const problem = json && typeof json === "object" && json.title ? json : {
      title: res.statusText || `HTTP ${res.status}`,
      detail: `The server answered ${res.status} without an explanation.`,
      retryable: res.status >= 500 || res.status === 429,
    };
    throw new Problem(problem, res.status, retryAfterMs(res.headers));
  }

  /**
   * A request retried while its problem is retryable and one of AUTO_RETRY (at most
   * `attempts` times in all),
   * waiting each problem's Retry-After; `onRetry(problem, ms)` is told before each wait.
   */
  async call(method, path, options = {}, { attempts = 3, onRetry = () => {} } = {}) {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.request(method, path, options);
      } catch (e) {
        if (!(e instanceof Problem) || !e.retryable || !AUTO_RETRY.has(e.status) || attempt >= attempts) {
          throw e;
        }
        const ms = e.retryAfter ?? 2000;
        onRetry(e, ms);
        await sleep(ms);
      }
    }
  }

  capabilities() {
    return this.call("GET", "/v1/capabilities");
  }

  list(query = {}) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
    const s = q.toString();
    return this.call("GET", `/v1/agents${s ? `?${s}` : ""}`);
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
    const post = () => this.call("POST", Api.path(agent, verb), {}, { onRetry });
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
      await sleep(retryAfterMs(res.headers, 1));
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
    const res = await this.call("POST", Api.path(agent, "keepalive"), { body: { ttl_s: ttlS } }, hooks);
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
    const res = await this.call("POST", "/v1/agents", { body, headers: { "Idempotency-Key": idempotencyKey } }, hooks);
    return res.body;
  }
}
