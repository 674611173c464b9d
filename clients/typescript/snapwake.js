// @ts-check
// snapwake's HTTP API (infra/openapi.yaml; semantics in docs/http-api.md) as one ES module with
// no dependencies: it runs as it is in a browser and in Node 18+ (global fetch), and TypeScript
// reads its types from the JSDoc below, which names only types generated from the OpenAPI
// document (schema.d.ts), so the client cannot drift from the API without tsc saying so.
//
// Two parties answer errors: snapwake itself with RFC 9457 problem+json, and (deployed) API
// Gateway with a bare {"message"} (docs/http-api.md, "Errors API Gateway answers itself").
// One retry rule serves every operation (`retryDelayMs`): each is safe to ask again when the
// answer says nothing was done, and all but a delete naming a version also when it is unknown
// whether the first acted. The rules, and the Python client's same ones: docs/clients.md.

/** @typedef {import("./schema.d.ts").components["schemas"]} Schemas */
/** @typedef {import("./schema.d.ts").operations} Operations */
/** @typedef {Schemas["Agent"]} Agent */
/** @typedef {Schemas["Kind"]} Kind */
/** @typedef {Schemas["AgentState"]} AgentState */
/** @typedef {Schemas["Retention"]} Retention */
/** @typedef {Schemas["Listing"]} Listing */
/** @typedef {Schemas["Capabilities"]} Capabilities */
/** @typedef {Schemas["Schedule"]} Schedule */
/** @typedef {Schemas["ScheduleBody"]} ScheduleBody */
/** @typedef {Schemas["IdleSetting"]} IdleSetting */
/** @typedef {Schemas["Usage"]} Usage */
/** @typedef {Schemas["Problem"]} ProblemBody */
/** @typedef {ProblemBody["code"]} ProblemCode */
/** @typedef {Operations["resumeAgent"]["responses"][200]["content"]["application/json"]} WokenAgent */
/** @typedef {Operations["sleepAgent"]["responses"][200]["content"]["application/json"]} SleptAgent */
/** @typedef {Operations["keepAgentAlive"]["responses"][200]["content"]["application/json"]} KeptAgent */
/** @typedef {NonNullable<Operations["listAgents"]["parameters"]["query"]>} ListQuery */
/**
 * The query of `usage` and `usageCsv`: the route's, where a day may also be a Date (its UTC day).
 * @typedef {Omit<NonNullable<Operations["getUsage"]["parameters"]["query"]>, "from" | "to"> & { from?: string | Date, to?: string | Date }} UsageQuery
 */

/**
 * Options every method takes last.
 * @typedef {object} CallOptions
 * @property {number} [timeoutMs] the most this call may take, retries and waits included
 * @property {AbortSignal} [signal] aborts the call (it rejects with the signal's reason)
 */

/**
 * @typedef {object} ClientOptions
 * @property {string} baseUrl e.g. "https://api.example.com/prod" (a stage or base path is kept)
 * @property {string | (() => string | Promise<string>)} [token] a JWT, or a function that gets
 *   one: called when first needed, cached, and called once more after a 401
 * @property {string} [user] `snapwake serve` only: sent as X-Snapwake-User
 * @property {boolean} [admin] `snapwake serve` only: sends X-Snapwake-Admin: 1
 * @property {number} [timeoutMs] default for every call (30000)
 * @property {number} [waitTimeoutMs] default for wake and sleep, which wait for the agent (120000)
 * @property {typeof fetch} [fetch] another fetch (tests, proxies)
 * @property {Record<string, string>} [headers] extra headers on every request
 */

/** @typedef {{ status: number, headers: Headers, body: any }} Answer */
/**
 * What one operation sends.
 * @typedef {object} Request
 * @property {unknown} [body] JSON
 * @property {Record<string, string>} [headers]
 * @property {boolean} [hold] ask snapwake to hold it (`Prefer: wait`) as long as the deadline allows
 * @property {boolean} [repeatable] may be sent again when it is unknown whether the first acted
 *   (default true; a delete naming a version is not)
 * @property {string} [text] the answer is text of this media type (e.g. "text/csv"), not JSON
 */
/** @typedef {{ deadline: number, signal?: AbortSignal }} Budget */

// ---------------------------------------------------------------------------------------------
// Errors

/** Every error this client throws (except the caller's own abort reason). */
export class SnapwakeError extends Error {
  /**
   * @param {string} message
   * @param {{ status?: number | null, code?: string | null, retryable?: boolean, retryAfter?: number | null, cause?: unknown }} [more]
   */
  constructor(message, more = {}) {
    super(message, more.cause === undefined ? undefined : { cause: more.cause });
    this.name = new.target.name;
    /** HTTP status, or null when there was no answer. @type {number | null} */
    this.status = more.status ?? null;
    /** snapwake's problem code; "UNAUTHENTICATED" for API Gateway's 401/403. @type {string | null} */
    this.code = more.code ?? null;
    /** Whether asking again (later) may succeed. */
    this.retryable = more.retryable ?? false;
    /** The answer's Retry-After in seconds, or null. @type {number | null} */
    this.retryAfter = more.retryAfter ?? null;
  }
}

/** An RFC 9457 problem snapwake answered; a subclass per known `code` (see `problemClasses`). */
export class Problem extends SnapwakeError {
  // Declared again, narrower than the base's: a problem always has a status and a code.
  /** @type {number} */ status;
  /** @type {string} */ code;

  /**
   * @param {ProblemBody | Record<string, any>} problem the body as answered
   * @param {{ status?: number, retryAfter?: number | null }} [answer] the HTTP status and Retry-After
   */
  constructor(problem, answer = {}) {
    const status = answer.status ?? problem.status ?? 0;
    const code = String(problem.code ?? "");
    super(`${code || "problem"} (${status}): ${problem.detail || problem.title || "no detail"}`, {
      status,
      code,
      retryable: problem.retryable === true,
      retryAfter: answer.retryAfter ?? null,
    });
    this.status = status;
    this.code = code;
    /** @type {string} */
    this.title = String(problem.title ?? "");
    /** @type {string} */
    this.detail = String(problem.detail ?? "");
    /** API Gateway's (or Lambda's) request id, for a report. @type {string | null} */
    this.requestId = problem.request_id ?? null;
    /** The request body's field a 422 is about. @type {string | null} */
    this.field = problem.field ?? null;
    /** The body as answered. */
    this.problem = problem;
  }
}

/** 401: the request carries no verified identity. */
export class Unauthenticated extends Problem {}
/** 404: no such agent, or not yours (the two are answered alike on purpose). */
export class AgentNotFound extends Problem {}
/** 404: the agent has no such snapshot. */
export class SnapshotNotFound extends Problem {}
/** 404: the agent has no schedule (`getSchedule` answers null instead). */
export class ScheduleNotFound extends Problem {}
/** 404: no such route (`snapwake serve`; deployed, API Gateway answers a GatewayError). */
export class RouteNotFound extends Problem {}
/** 405: a known path with another method. */
export class MethodNotAllowed extends Problem {}
/** 410: the agent was deleted. */
export class AgentGone extends Problem {}
/** 409: another operation holds the agent (retried after its Retry-After until the deadline). */
export class AgentBusy extends Problem {}
/** 412: If-Match does not name the agent's version. */
export class PreconditionFailed extends Problem {}
/** 413: the body is over 16 KiB. */
export class PayloadTooLarge extends Problem {}
/** 400/422: a malformed or unacceptable request; `field` names the body's field when it can. */
export class InvalidRequest extends Problem {}
/** 422: nothing to wake from (no Ready snapshot, or the named one is not Ready). */
export class NotWakeable extends Problem {}
/** 422: a temporary agent cannot sleep. */
export class NotSleepable extends Problem {}
/** 422: keepalive without a live session. */
export class NotAwake extends Problem {}
/** 429: AgentKit kept throttling (retried after its Retry-After until the deadline). */
export class ProviderThrottled extends Problem {}
/** 500: a failure snapwake cannot explain. */
export class Internal extends Problem {}
/** 502: AgentKit failed, or a wake or sleep failed (not retried here: a person decides). */
export class ProviderError extends Problem {}
/** 502: the woken session stayed starting past the readiness timeout. */
export class SessionStuck extends Problem {}
/** 502: the newest snapshot stayed Creating past the snapshot timeout. */
export class SnapshotStuck extends Problem {}
/** 503: nothing deployed for the request (not retryable). */
export class NotConfigured extends Problem {}
/** 503: too little budget left to act safely; nothing changed (retried). */
export class TryAgain extends Problem {}
/** 503: the table did not answer in time (retried). */
export class StoreUnavailable extends Problem {}

/**
 * The class of each problem code. Keyed by the generated code union, so tsc fails when the
 * OpenAPI document gains a code that has no class here.
 * @type {{ [C in ProblemCode]: typeof Problem }}
 */
export const problemClasses = {
  UNAUTHENTICATED: Unauthenticated,
  AGENT_NOT_FOUND: AgentNotFound,
  SNAPSHOT_NOT_FOUND: SnapshotNotFound,
  SCHEDULE_NOT_FOUND: ScheduleNotFound,
  ROUTE_NOT_FOUND: RouteNotFound,
  METHOD_NOT_ALLOWED: MethodNotAllowed,
  AGENT_GONE: AgentGone,
  AGENT_BUSY: AgentBusy,
  PRECONDITION_FAILED: PreconditionFailed,
  PAYLOAD_TOO_LARGE: PayloadTooLarge,
  INVALID_REQUEST: InvalidRequest,
  NOT_WAKEABLE: NotWakeable,
  NOT_SLEEPABLE: NotSleepable,
  NOT_AWAKE: NotAwake,
  PROVIDER_THROTTLED: ProviderThrottled,
  INTERNAL: Internal,
  PROVIDER_ERROR: ProviderError,
  SESSION_STUCK: SessionStuck,
  SNAPSHOT_STUCK: SnapshotStuck,
  NOT_CONFIGURED: NotConfigured,
  TRY_AGAIN: TryAgain,
  STORE_UNAVAILABLE: StoreUnavailable,
};

/**
 * One of API Gateway's own answers (`{"message": ...}`): its authorizer's 401 (code
 * "UNAUTHENTICATED", as is 403: sign in again), throttling's 429 and timeout's 503/504
 * (retryable), a crashed function's 500, an unknown route's 404.
 */
export class GatewayError extends SnapwakeError {
  /** @type {number} */ status;

  /**
   * @param {number} status
   * @param {string} message API Gateway's reason phrase, e.g. "Unauthorized"
   * @param {{ requestId?: string | null, retryAfter?: number | null }} [more]
   */
  constructor(status, message, more = {}) {
    super(`API Gateway answered ${status}: ${message}`, {
      status,
      code: status === 401 || status === 403 ? "UNAUTHENTICATED" : null,
      retryable: status === 429 || status === 503 || status === 504,
      retryAfter: more.retryAfter ?? null,
    });
    this.status = status;
    /** The `apigw-requestid` header, when it could be read. @type {string | null} */
    this.requestId = more.requestId ?? null;
  }
}

/** A wake, sleep or create still at work when the call's deadline came: call it again. */
export class StillWorking extends SnapwakeError {
  /**
   * @param {Agent | null} agent the agent as last answered (null: no answer came in time)
   * @param {number | null} [retryAfter] seconds the last answer asked to wait
   */
  constructor(agent, retryAfter = null) {
    super(`still ${agent?.state ?? "at work"} when the deadline came; ask again`, {
      status: agent ? 202 : null,
      retryable: true,
      retryAfter,
    });
    this.agent = agent;
  }
}

/** No answer: the network failed, or the deadline came before any answer (`timedOut`). */
export class Unreachable extends SnapwakeError {
  /**
   * @param {string} what e.g. "GET /v1/agents" (never a header, so never a token)
   * @param {{ cause?: unknown, timedOut?: boolean }} more
   */
  constructor(what, more) {
    const why = more.timedOut ? "no answer before the deadline" : errorText(more.cause);
    super(`${what}: ${why}`, { retryable: true, cause: more.cause });
    this.timedOut = more.timedOut ?? false;
  }
}

/** @param {unknown} e */
function errorText(e) {
  const cause = e instanceof Error && e.cause instanceof Error ? ` (${e.cause.message})` : "";
  return (e instanceof Error ? e.message : String(e)) + cause;
}

// ---------------------------------------------------------------------------------------------
// Timing

const MAX_RETRY_AFTER_S = 60;
const MAX_PREFER_WAIT_S = 20; // snapwake's most (docs/http-api.md), under API Gateway's 30 s
const ANSWER_MARGIN_S = 5; // what a held request needs beyond the hold: the answer's own trip
const MAX_TIMER_MS = 2 ** 31 - 1; // setTimeout fires at once beyond this

/** `Retry-After` as delta-seconds or an HTTP date (RFC 9110 §10.2.3), at most a minute; else null. */
function retryAfterOf(/** @type {Headers} */ headers) {
  const value = headers.get("Retry-After")?.trim() ?? "";
  const s = /^\d+$/.test(value) ? Number(value) : value ? (Date.parse(value) - Date.now()) / 1000 : NaN;
  return Number.isNaN(s) ? null : Math.min(Math.max(s, 0), MAX_RETRY_AFTER_S);
}

/** The pause a `Retry-After` of `s` seconds asks for: never none ("0" still means "not in this
 * same instant"), never more than a minute. */
function pauseMs(/** @type {number} */ s) {
  return Math.max(Math.min(s, MAX_RETRY_AFTER_S) * 1000, 50);
}

/** Back-off before retry `n` (0 first) when the answer named no time: 0.5 s doubling to 8 s,
 * the upper half random so callers throttled together do not come back together. */
function backoffMs(/** @type {number} */ n) {
  const ms = Math.min(500 * 2 ** n, 8000);
  return ms / 2 + Math.random() * (ms / 2);
}

/**
 * How long to wait before asking again after `error`, or null to give up. snapwake's problems:
 * only retryable 409/429/503 (busy, throttled, try again; a failed wake's 502 is for a person
 * to retry). API Gateway: 429 (it never reached snapwake) and 503/504 (it stopped waiting, so
 * the request may have acted: only a `repeatable` one; all are but a delete naming a version,
 * which a repeat after a done delete would answer 412). No answer: the same. A 409 is never
 * asked again at once: that would be the storm of duplicate Resumes snapwake exists to prevent.
 * @param {unknown} error
 * @param {number} n retries so far
 * @param {boolean} repeatable
 */
function retryDelayMs(error, n, repeatable) {
  const again =
    (error instanceof Problem && error.retryable && [409, 429, 503].includes(error.status)) ||
    (error instanceof GatewayError && (error.status === 429 || (error.retryable && repeatable))) ||
    (error instanceof Unreachable && !error.timedOut && repeatable);
  if (!again) return null;
  const s = error instanceof SnapwakeError ? error.retryAfter : null;
  return s === null ? backoffMs(n) : pauseMs(s);
}

/** Resolves after `ms`, or rejects with the signal's reason. */
function pause(/** @type {number} */ ms, /** @type {AbortSignal | undefined} */ signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(undefined);
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** An Idempotency-Key: Web Crypto where there is one (browsers, Node 19+), else node:crypto
 * (Node 18 keeps its global behind a flag). The module's name is a variable so that neither
 * tsc (without @types/node) nor a browser bundler goes looking for it. A page served over
 * plain http has getRandomValues but no randomUUID: 32 random hex digits then. */
async function newKey() {
  const nodeCrypto = "node:crypto";
  /** @type {Crypto} */
  const crypto = globalThis.crypto ?? (await import(nodeCrypto)).webcrypto;
  if (crypto.randomUUID) return crypto.randomUUID();
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

// ---------------------------------------------------------------------------------------------
// The client

export class Client {
  #base;
  #token;
  /** @type {Promise<string | null> | null} the token being or last fetched, shared by calls */
  #tokenPromise = null;
  #user;
  #admin;
  #timeoutMs;
  #waitTimeoutMs;
  #fetch;
  #headers;

  /** @param {ClientOptions} options */
  constructor(options) {
    this.#base = String(options.baseUrl).replace(/\/+$/, "");
    this.#token = options.token;
    this.#user = options.user;
    this.#admin = options.admin ?? false;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#waitTimeoutMs = options.waitTimeoutMs ?? 120_000;
    // Called through a wrapper: a browser's fetch refuses to be called as a method of another object.
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#headers = options.headers ?? {};
  }

  /**
   * Per kind, which retentions can be chosen, and the default.
   * @param {CallOptions} [options]
   * @returns {Promise<Capabilities>}
   */
  async capabilities(options) {
    return (await this.#call("GET", "/v1/capabilities", {}, this.#budget(options))).body;
  }

  /**
   * The agents, one Listing page at a time: `owner: "*"` (admins) follows `next_cursor` to the
   * last page; any other query is answered whole in one page. Each page has its own timeout.
   * @param {ListQuery} [query]
   * @param {CallOptions} [options]
   * @returns {AsyncGenerator<Listing, void, undefined>}
   */
  async *pages(query = {}, options) {
    let cursor = query.cursor;
    do {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries({ ...query, cursor })) {
        if (v !== undefined && v !== null) q.set(k, String(v));
      }
      const s = q.toString();
      /** @type {Listing} */
      const page = (await this.#call("GET", `/v1/agents${s ? `?${s}` : ""}`, {}, this.#budget(options))).body;
      yield page;
      if (page.next_cursor !== undefined && page.next_cursor === cursor) {
        // A cursor answered twice would page forever: an answer snapwake never gives.
        throw new SnapwakeError(`the listing answered the same cursor twice (${cursor.slice(0, 40)})`);
      }
      cursor = page.next_cursor;
    } while (cursor);
  }

  /**
   * Every agent the query finds (see `pages`).
   * @param {ListQuery} [query]
   * @param {CallOptions} [options]
   * @returns {AsyncGenerator<Agent, void, undefined>}
   */
  async *list(query, options) {
    for await (const page of this.pages(query, options)) yield* page.agents;
  }

  /**
   * One agent, live from AgentKit.
   * @param {Kind} kind
   * @param {string} agentId
   * @param {CallOptions} [options]
   * @returns {Promise<Agent>}
   */
  async get(kind, agentId, options) {
    return (await this.#call("GET", agentPath(kind, agentId), {}, this.#budget(options))).body;
  }

  /**
   * Create an agent. One Idempotency-Key per call, sent again on every retry, so however often
   * the request is repeated one agent is made; a 202 (AgentKit's answer was lost) is followed
   * with the same key until 201, or StillWorking at the deadline.
   * @param {{ kind: Kind, displayName: string, retention?: Retention }} agent
   * @param {CallOptions & { idempotencyKey?: string }} [options]
   * @returns {Promise<Agent>}
   */
  async create(agent, options = {}) {
    const budget = this.#budget(options);
    const key = options.idempotencyKey ?? (await newKey());
    /** @type {Schemas["CreateBody"]} */
    const body = { kind: agent.kind, display_name: agent.displayName, retention: agent.retention };
    const request = { body, headers: { "Idempotency-Key": key } };
    return this.#settle("POST", "/v1/agents", request, { follow: true }, budget);
  }

  /**
   * Ensure the agent is awake. snapwake sends one Resume however many callers ask. With `wait`
   * (the default) each request asks to be held (`Prefer: wait`) and 202s are asked again after
   * their Retry-After until the agent is awake, or StillWorking at the deadline; without, the
   * first answer (awake or waking) is returned.
   * @param {Kind} kind
   * @param {string} agentId
   * @param {CallOptions & { snapshotId?: string, wait?: boolean }} [options]
   * @returns {Promise<WokenAgent>}
   */
  async wake(kind, agentId, options = {}) {
    const body = options.snapshotId ? { snapshot_id: options.snapshotId } : undefined;
    const path = `${agentPath(kind, agentId)}/resume`;
    const wait = options.wait ?? true;
    const how = { follow: wait, booting: ["starting"] };
    return this.#settle("POST", path, { body, hold: wait }, how, this.#budget(options, wait));
  }

  /**
   * Snapshot the agent and end its session; followed like `wake`.
   * @param {Kind} kind
   * @param {string} agentId
   * @param {CallOptions & { wait?: boolean }} [options]
   * @returns {Promise<SleptAgent>}
   */
  async sleep(kind, agentId, options = {}) {
    const path = `${agentPath(kind, agentId)}/sleep`;
    const wait = options.wait ?? true;
    return this.#settle("POST", path, { hold: wait }, { follow: wait }, this.#budget(options, wait));
  }

  /**
   * Make the live session last `ttlS` more seconds from now.
   * @param {Kind} kind
   * @param {string} agentId
   * @param {number} ttlS
   * @param {CallOptions} [options]
   * @returns {Promise<KeptAgent>}
   */
  async keepalive(kind, agentId, ttlS, options) {
    const path = `${agentPath(kind, agentId)}/keepalive`;
    return (await this.#call("POST", path, { body: { ttl_s: ttlS } }, this.#budget(options))).body;
  }

  /**
   * Say the agent is in use, so idle sleep leaves it awake (docs/idle.md): when its user talks
   * to it, and every few minutes while it works on a task. Cheap: coalesced by snapwake.
   * @param {Kind} kind
   * @param {string} agentId
   * @param {CallOptions} [options]
   * @returns {Promise<void>}
   */
  async activity(kind, agentId, options) {
    await this.#call("POST", `${agentPath(kind, agentId)}/activity`, {}, this.#budget(options));
  }

  /**
   * The agent's idle time, the deployment's, and when it would be put to sleep.
   * @param {Kind} kind
   * @param {string} agentId
   * @param {CallOptions} [options]
   * @returns {Promise<IdleSetting>}
   */
  async getIdle(kind, agentId, options) {
    return (await this.#call("GET", `${agentPath(kind, agentId)}/idle`, {}, this.#budget(options))).body;
  }

  /**
   * Set the agent's idle time in minutes: 0 never, null the deployment's.
   * @param {Kind} kind
   * @param {string} agentId
   * @param {number | null} minutes
   * @param {CallOptions} [options]
   * @returns {Promise<IdleSetting>}
   */
  async setIdle(kind, agentId, minutes, options) {
    const path = `${agentPath(kind, agentId)}/idle`;
    return (await this.#call("PUT", path, { body: { minutes } }, this.#budget(options))).body;
  }

  /**
   * What agents were awake, what woke and slept them, and what that saved, over the UTC days
   * `from` to `to` included ("YYYY-MM-DD" or a Date; default the last 7 days up to today, at
   * most 367): a row per `by` "day" (the default) or "agent". Admins may name another `owner`,
   * or "*" for everyone's.
   * @param {UsageQuery} [query]
   * @param {CallOptions} [options]
   * @returns {Promise<Usage>}
   */
  async usage(query = {}, options) {
    return (await this.#call("GET", usagePath(query), {}, this.#budget(options))).body;
  }

  /**
   * `usage` as CSV text: a header line and the same rows, no total.
   * @param {UsageQuery} [query]
   * @param {CallOptions} [options]
   * @returns {Promise<string>}
   */
  async usageCsv(query = {}, options) {
    const request = { headers: { Accept: "text/csv" }, text: "text/csv" };
    return (await this.#call("GET", usagePath(query), request, this.#budget(options))).body;
  }

  /**
   * Delete the agent, its sessions and snapshots (done, too, when it was already gone).
   * @param {Kind} kind
   * @param {string} agentId
   * @param {CallOptions & { ifMatch?: string }} [options] ifMatch: the agent's etag, or "*"
   * @returns {Promise<void>}
   */
  async delete(kind, agentId, options = {}) {
    const request = { headers: ifMatch(options), repeatable: !options.ifMatch };
    await this.#call("DELETE", agentPath(kind, agentId), request, this.#budget(options));
  }

  /**
   * Delete one snapshot, safely against a wake in flight.
   * @param {Kind} kind
   * @param {string} agentId
   * @param {string} snapshotId
   * @param {CallOptions & { ifMatch?: string }} [options]
   * @returns {Promise<void>}
   */
  async deleteSnapshot(kind, agentId, snapshotId, options = {}) {
    const path = `${agentPath(kind, agentId)}/snapshots/${encodeURIComponent(snapshotId)}`;
    await this.#call("DELETE", path, { headers: ifMatch(options), repeatable: !options.ifMatch }, this.#budget(options));
  }

  /**
   * The agent's schedule, or null when it has none.
   * @param {Kind} kind
   * @param {string} agentId
   * @param {CallOptions} [options]
   * @returns {Promise<Schedule | null>}
   */
  async getSchedule(kind, agentId, options) {
    try {
      return (await this.#call("GET", `${agentPath(kind, agentId)}/schedule`, {}, this.#budget(options))).body;
    } catch (e) {
      if (e instanceof ScheduleNotFound) return null;
      throw e;
    }
  }

  /**
   * Replace the agent's schedule (five-field cron in `timezone`; null or absent for none).
   * @param {Kind} kind
   * @param {string} agentId
   * @param {ScheduleBody} schedule
   * @param {CallOptions} [options]
   * @returns {Promise<Schedule>}
   */
  async setSchedule(kind, agentId, schedule, options) {
    const path = `${agentPath(kind, agentId)}/schedule`;
    return (await this.#call("PUT", path, { body: schedule }, this.#budget(options))).body;
  }

  /**
   * Remove the agent's schedule (done, too, when there was none).
   * @param {Kind} kind
   * @param {string} agentId
   * @param {CallOptions} [options]
   * @returns {Promise<void>}
   */
  async deleteSchedule(kind, agentId, options) {
    await this.#call("DELETE", `${agentPath(kind, agentId)}/schedule`, {}, this.#budget(options));
  }

  // -------------------------------------------------------------------------------------------

  /** @param {CallOptions} [options] @returns {Budget} */
  #budget(options = {}, waits = false) {
    const ms = options.timeoutMs ?? (waits ? this.#waitTimeoutMs : this.#timeoutMs);
    return { deadline: Date.now() + ms, signal: options.signal };
  }

  /**
   * A request that may answer 202 (still at work): `follow` asks again after each 202's
   * Retry-After until a final answer, or throws StillWorking when the deadline comes first; else
   * the first answer is returned. A 200 whose agent is in a `booting` state is followed like a
   * 202: a wake of an agent whose session is already starting (a create a moment ago) answers at
   * once, as it needs no Resume.
   * @param {string} method
   * @param {string} path
   * @param {Request} request
   * @param {{ follow: boolean, booting?: string[] }} how
   * @param {Budget} budget
   */
  async #settle(method, path, request, how, budget) {
    /** @type {Agent | null} */
    let agent = null;
    for (;;) {
      let answer;
      try {
        answer = await this.#call(method, path, request, budget);
      } catch (e) {
        // The deadline came while a request was out: the work may well be going on.
        if (e instanceof Unreachable && e.timedOut) throw new StillWorking(agent);
        throw e;
      }
      const booting = how.booting?.includes(answer.body?.state) ?? false;
      if (!how.follow || (answer.status !== 202 && !booting)) return answer.body;
      agent = answer.body;
      const s = retryAfterOf(answer.headers) ?? 1;
      if (Date.now() + pauseMs(s) >= budget.deadline) throw new StillWorking(agent, s);
      await pause(pauseMs(s), budget.signal);
    }
  }

  /**
   * One operation: requests until an answer, asked again while `retryDelayMs` says so and the
   * deadline allows; a 401 with a token function gets one fresh token and one more request.
   * @param {string} method
   * @param {string} path
   * @param {Request} request
   * @param {Budget} budget
   * @returns {Promise<Answer>}
   */
  async #call(method, path, request, budget) {
    /** @type {Promise<string | null> | null} the token a 401 refused */
    let refused = null;
    for (let retries = 0; ; ) {
      const token = this.#bearer(refused);
      /** @type {Record<string, string>} */
      const headers = { ...request.headers };
      if (request.hold) {
        // Each attempt asks to be held no longer than what is left of the deadline allows.
        const s = Math.floor((budget.deadline - Date.now()) / 1000) - ANSWER_MARGIN_S;
        headers.Prefer = `wait=${Math.max(0, Math.min(MAX_PREFER_WAIT_S, s))}`;
      }
      try {
        return await this.#send(method, path, { ...request, headers }, budget, await token);
      } catch (e) {
        if (e instanceof SnapwakeError && e.status === 401 && typeof this.#token === "function" && !refused) {
          refused = token;
          continue;
        }
        const ms = retryDelayMs(e, retries, request.repeatable ?? true);
        if (ms === null || Date.now() + ms >= budget.deadline) throw e;
        await pause(ms, budget.signal);
        retries += 1;
      }
    }
  }

  /**
   * One request. Resolves 2xx answers; throws the error an answer means, Unreachable for none,
   * or the caller's abort reason.
   * @param {string} method
   * @param {string} path
   * @param {{ body?: unknown, headers?: Record<string, string>, text?: string }} request
   * @param {Budget} budget
   * @param {string | null} token
   * @returns {Promise<Answer>}
   */
  async #send(method, path, request, budget, token) {
    /** @type {Record<string, string>} */
    const headers = { ...this.#headers, Accept: "application/json", ...request.headers };
    if (token) headers.Authorization = `Bearer ${token}`;
    if (this.#user) headers["X-Snapwake-User"] = this.#user;
    if (this.#admin) headers["X-Snapwake-Admin"] = "1";
    if (request.body !== undefined) headers["Content-Type"] = "application/json";

    // One signal for this attempt: the caller's, or the deadline's.
    const attempt = new AbortController();
    const onAbort = () => attempt.abort(budget.signal?.reason);
    budget.signal?.addEventListener("abort", onAbort, { once: true });
    if (budget.signal?.aborted) onAbort();
    const timer = setTimeout(() => attempt.abort(), Math.min(Math.max(0, budget.deadline - Date.now()), MAX_TIMER_MS));
    let res, text;
    try {
      res = await this.#fetch(this.#base + path, {
        method,
        headers,
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
        signal: attempt.signal,
        // snapwake never redirects, and following one could turn a POST into a GET.
        redirect: "manual",
      });
      text = await res.text();
    } catch (e) {
      if (budget.signal?.aborted) throw budget.signal.reason;
      throw new Unreachable(`${method} ${path}`, { cause: e, timedOut: attempt.signal.aborted });
    } finally {
      clearTimeout(timer);
      budget.signal?.removeEventListener("abort", onAbort);
    }

    let json = null;
    let readable = true;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      readable = false; // A proxy's page, or a body cut short: judged by its status below.
    }
    const retryAfter = retryAfterOf(res.headers);
    const requestId = res.headers.get("apigw-requestid");
    if (res.ok && request.text) {
      if (res.headers.get("Content-Type")?.startsWith(request.text)) return { status: res.status, headers: res.headers, body: text };
      throw new GatewayError(res.status, `an answer that is not ${request.text}`, { requestId, retryAfter });
    }
    if (res.ok) {
      if (readable) return { status: res.status, headers: res.headers, body: json };
      throw new GatewayError(res.status, "an answer that is not JSON", { requestId, retryAfter });
    }

    // Tell the two parties apart by the body (docs/http-api.md): snapwake's problems have a
    // code, API Gateway's answers a message; anything else is neither (a proxy, a redirect
    // (status 0 in a browser), a wrong URL), judged by its status as API Gateway's would be.
    const object = json !== null && typeof json === "object" && !Array.isArray(json) ? json : null;
    if (object && typeof object.code === "string" && "status" in object) {
      const code = /** @type {ProblemCode} */ (object.code);
      const Class = Object.hasOwn(problemClasses, code) ? problemClasses[code] : Problem;
      throw new Class(object, { status: res.status, retryAfter });
    }
    const message = object && typeof object.message === "string" ? object.message : `an answer that is not snapwake's`;
    throw new GatewayError(res.status, message, { requestId, retryAfter });
  }

  /**
   * The token to send, if any. A token function is called once and its token shared, until a
   * 401 refuses that token (`refused`): then once more, however many calls saw the 401.
   * @param {Promise<string | null> | null} refused
   * @returns {Promise<string | null>}
   */
  #bearer(refused) {
    const token = this.#token;
    if (typeof token !== "function") return Promise.resolve(token ?? null);
    if (!this.#tokenPromise || this.#tokenPromise === refused) {
      const promise = Promise.resolve().then(token);
      this.#tokenPromise = promise;
      // A failed fetch of a token is not cached: the next call tries again.
      promise.catch(() => {
        if (this.#tokenPromise === promise) this.#tokenPromise = null;
      });
    }
    return this.#tokenPromise;
  }
}

/** `/v1/agents/{kind}/{agent_id}`, each part percent-encoded. */
function agentPath(/** @type {string} */ kind, /** @type {string} */ agentId) {
  return `/v1/agents/${encodeURIComponent(kind)}/${encodeURIComponent(agentId)}`;
}

/** `/v1/usage` and its query; a Date is its UTC day. @param {UsageQuery} query */
function usagePath(query) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null) q.set(k, v instanceof Date ? v.toISOString().slice(0, 10) : String(v));
  }
  const s = q.toString();
  return `/v1/usage${s ? `?${s}` : ""}`;
}

/** @param {{ ifMatch?: string }} options @returns {Record<string, string>} */
function ifMatch(options) {
  return options.ifMatch ? { "If-Match": options.ifMatch } : {};
}
