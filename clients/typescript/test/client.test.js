// @ts-check
// The client against a fake fetch that answers from a script: retries, waits, tokens and
// errors, each as the API (or API Gateway) would answer.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import {
  AgentBusy,
  Client,
  GatewayError,
  Problem,
  StillWorking,
  Unreachable,
  problemClasses,
} from "../snapwake.js";

const AGENT = "studio-alice-0f3c";
const view = (/** @type {string} */ state) => ({
  kind: "codex", agent_id: AGENT, display_name: "Data helper", retention: "recoverable",
  state, snapshots: [], session: state === "awake" ? { session_id: "s-1" } : null,
});

/** @typedef {{ url: string, method: string, headers: Record<string, string>, body: string | undefined, at: number }} Seen */

/**
 * A fetch answering from `script` in order (a Response, an Error to throw, or a function of the
 * request); `seen` records each request.
 * @param {Array<Response | Error | ((r: Seen) => Response)>} script
 */
function fake(script) {
  /** @type {Seen[]} */
  const seen = [];
  const start = Date.now();
  /** @type {typeof globalThis.fetch} */
  const answer = async (url, init = {}) => {
    const request = {
      url: String(url),
      method: init.method ?? "GET",
      headers: /** @type {Record<string, string>} */ (init.headers),
      body: /** @type {string | undefined} */ (init.body),
      at: Date.now() - start,
    };
    seen.push(request);
    const next = script.shift();
    if (!next) throw new Error("the script has no more answers");
    if (next instanceof Error) throw next;
    return typeof next === "function" ? next(request) : next;
  };
  return { fetch: answer, seen };
}

const json = (/** @type {number} */ status, /** @type {unknown} */ body, headers = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });

const problem = (/** @type {number} */ status, /** @type {string} */ code, retryable = false, headers = {}) =>
  new Response(
    JSON.stringify({ type: "urn:snapwake:problem:x", title: code, status, detail: `a ${code}`, code, retryable, request_id: "r-1" }),
    { status, headers: { "Content-Type": "application/problem+json", ...headers } },
  );

const client = (/** @type {typeof globalThis.fetch} */ f, more = {}) =>
  new Client({ baseUrl: "https://api.example/prod/", user: "alice", fetch: f, ...more });

test("a 202 is asked again after its Retry-After, until awake", async () => {
  const { fetch, seen } = fake([json(202, view("waking"), { "Retry-After": "1" }), json(200, { ...view("awake"), resumed: true })]);
  const agent = await client(fetch).wake("codex", AGENT);
  assert.equal(agent.state, "awake");
  assert.equal(seen.length, 2);
  assert.ok(seen[1].at >= 950, `asked again after ${seen[1].at} ms`);
  assert.equal(seen[0].url, `https://api.example/prod/v1/agents/codex/${AGENT}/resume`);
  assert.equal(seen[0].method, "POST");
  assert.match(seen[0].headers.Prefer, /^wait=(19|20)$/);
  assert.equal(seen[0].headers["X-Snapwake-User"], "alice");
});

test("wait: false answers the first 202's agent; a deadline before awake is StillWorking", async () => {
  const first = fake([json(202, view("waking"), { "Retry-After": "1" })]);
  const agent = await client(first.fetch).wake("codex", AGENT, { wait: false });
  assert.equal(agent.state, "waking");
  assert.equal(first.seen[0].headers.Prefer, undefined);

  const late = fake([json(202, view("waking"), { "Retry-After": "2" })]);
  const error = await client(late.fetch).wake("codex", AGENT, { timeoutMs: 1500 }).catch((e) => e);
  assert.ok(error instanceof StillWorking);
  assert.equal(error.agent?.state, "waking");
  assert.equal(error.retryable, true);
  assert.equal(late.seen.length, 1);
});

test("a retryable 409 AGENT_BUSY is asked again after its Retry-After, never at once", async () => {
  const { fetch, seen } = fake([problem(409, "AGENT_BUSY", true, { "Retry-After": "1" }), new Response(null, { status: 204 })]);
  await client(fetch).delete("codex", AGENT, { ifMatch: '"7"' });
  assert.equal(seen.length, 2);
  assert.ok(seen[1].at >= 950, `asked again after ${seen[1].at} ms`);
  assert.equal(seen[1].headers["If-Match"], '"7"');

  // When the deadline does not allow the wait, the 409 itself is the answer.
  const busy = fake([problem(409, "AGENT_BUSY", true, { "Retry-After": "5" })]);
  const error = await client(busy.fetch).delete("codex", AGENT, { timeoutMs: 2000 }).catch((e) => e);
  assert.ok(error instanceof AgentBusy);
  assert.equal(error.retryAfter, 5);
  assert.equal(busy.seen.length, 1);
});

test("a token function is called again once after a 401; a second 401 throws", async () => {
  let calls = 0;
  const token = async () => `secret-${++calls}`;
  const unauthorized = () => json(401, { message: "Unauthorized" });
  const ok = fake([unauthorized(), json(200, view("asleep"))]);
  const c = client(ok.fetch, { token, user: undefined });
  assert.equal((await c.get("codex", AGENT)).state, "asleep");
  assert.equal(calls, 2);
  assert.deepEqual(ok.seen.map((r) => r.headers.Authorization), ["Bearer secret-1", "Bearer secret-2"]);

  const refused = fake([unauthorized(), unauthorized()]);
  calls = 0;
  const error = await client(refused.fetch, { token }).get("codex", AGENT).catch((e) => e);
  assert.ok(error instanceof GatewayError);
  assert.equal(error.code, "UNAUTHENTICATED");
  assert.equal(calls, 2);
  assert.equal(refused.seen.length, 2);
  assert.ok(!String(error.message).includes("secret") && !error.stack?.includes("secret"));
});

test("create sends the same Idempotency-Key again after a network error", async () => {
  const created = json(201, view("starting"), { Location: `/v1/agents/codex/${AGENT}` });
  const { fetch, seen } = fake([new TypeError("fetch failed"), created]);
  const agent = await client(fetch).create({ kind: "codex", displayName: "Data helper" });
  assert.equal(agent.agent_id, AGENT);
  assert.equal(seen.length, 2);
  const key = seen[0].headers["Idempotency-Key"];
  assert.match(key, /^[A-Za-z0-9_.:-]{1,200}$/);
  assert.equal(seen[1].headers["Idempotency-Key"], key);
  assert.equal(seen[1].body, seen[0].body);
  assert.deepEqual(JSON.parse(String(seen[0].body)), { kind: "codex", display_name: "Data helper" });
  assert.equal(seen[0].headers.Prefer, undefined);
});

test("API Gateway's 429 and 503 are retried, its 500 is not; no answer at all is Unreachable", async () => {
  const busy = fake([json(429, { message: "Too Many Requests" }), json(503, { message: "Service Unavailable" }), json(200, { kinds: [] })]);
  assert.deepEqual(await client(busy.fetch).capabilities(), { kinds: [] });
  assert.equal(busy.seen.length, 3);

  const crashed = fake([json(500, { message: "Internal Server Error" }, { "apigw-requestid": "gw-1" })]);
  const error = await client(crashed.fetch).capabilities().catch((e) => e);
  assert.ok(error instanceof GatewayError);
  assert.equal(error.status, 500);
  assert.equal(error.requestId, "gw-1");
  assert.equal(error.retryable, false);

  const down = fake(Array.from({ length: 20 }, () => new TypeError("fetch failed")));
  const gone = await client(down.fetch).capabilities({ timeoutMs: 1200 }).catch((e) => e);
  assert.ok(gone instanceof Unreachable, String(gone));
  assert.ok(down.seen.length >= 2);
});

test("list with owner=* follows next_cursor; a retryable 502 is not retried", async () => {
  const { fetch, seen } = fake([
    json(200, { agents: [view("awake")], truncated: false, partial: [], next_cursor: "c/1" }),
    json(200, { agents: [view("asleep")], truncated: false, partial: [] }),
  ]);
  const states = [];
  for await (const a of client(fetch).list({ owner: "*", limit: 1 })) states.push(a.state);
  assert.deepEqual(states, ["awake", "asleep"]);
  assert.equal(new URL(seen[1].url).searchParams.get("cursor"), "c/1");
  assert.equal(new URL(seen[1].url).searchParams.get("owner"), "*");

  const failed = fake([problem(502, "PROVIDER_ERROR", true, { "Retry-After": "3" })]);
  const error = await client(failed.fetch).wake("codex", AGENT).catch((e) => e);
  assert.ok(error instanceof problemClasses.PROVIDER_ERROR);
  assert.equal(failed.seen.length, 1);
});

test("every problem code of the OpenAPI document has its own class", async () => {
  // The problem codes: the block-style enum that lists AGENT_NOT_FOUND, read with a regex (no
  // YAML parser for one list), wherever the document keeps it (inline or as its own schema).
  const yaml = readFileSync(new URL("../../../infra/openapi.yaml", import.meta.url), "utf8");
  const lists = [...yaml.matchAll(/\benum:[ \t]*\n((?:[ \t]+- [A-Z_]+[ \t]*\n)+)/g)].map((m) => m[1]);
  const list = lists.filter((l) => /- AGENT_NOT_FOUND\b/.test(l));
  assert.equal(list.length, 1, "one enum of problem codes");
  const codes = [...list[0].matchAll(/- ([A-Z_]+)/g)].map((m) => m[1]);
  assert.ok(codes.length >= 20, codes.join());
  assert.deepEqual(Object.keys(problemClasses).sort(), [...codes].sort());

  const pascal = (/** @type {string} */ code) => code.toLowerCase().replace(/(^|_)([a-z])/g, (_, __, c) => c.toUpperCase());
  for (const code of codes) {
    const { fetch } = fake([problem(400, code)]);
    const error = await client(fetch).get("codex", AGENT).catch((e) => e);
    const Class = problemClasses[/** @type {keyof typeof problemClasses} */ (code)];
    assert.ok(error instanceof Class && Class !== Problem, code);
    assert.equal(error.constructor.name, pascal(code));
    assert.equal(error.name, pascal(code));
    assert.equal(error.code, code);
    assert.equal(error.status, 400);
    assert.equal(error.requestId, "r-1");
  }

  const { fetch } = fake([problem(418, "SOMETHING_NEW")]);
  const unknown = await client(fetch).get("codex", AGENT).catch((e) => e);
  assert.equal(unknown.constructor, Problem);
  assert.equal(unknown.code, "SOMETHING_NEW");
});

test("a wake of a session still starting is followed until awake", async () => {
  const { fetch, seen } = fake([json(200, { ...view("starting"), resumed: false }, { "Retry-After": "0" }), json(200, { ...view("awake"), resumed: false })]);
  const agent = await client(fetch).wake("codex", AGENT);
  assert.equal(agent.state, "awake");
  assert.equal(seen.length, 2);
});

test("a delete naming a version is not repeated when the first may have acted", async () => {
  const timedOut = () => json(503, { message: "Service Unavailable" });
  const plain = fake([timedOut(), new Response(null, { status: 204 })]);
  await client(plain.fetch).delete("codex", AGENT);
  assert.equal(plain.seen.length, 2);

  const versioned = fake([timedOut(), new Response(null, { status: 204 })]);
  const error = await client(versioned.fetch).delete("codex", AGENT, { ifMatch: '"7"' }).catch((e) => e);
  assert.ok(error instanceof GatewayError && error.status === 503, String(error));
  assert.equal(versioned.seen.length, 1);
});

test("each attempt asks to be held no longer than the deadline allows", async () => {
  const { fetch, seen } = fake([problem(409, "AGENT_BUSY", true, { "Retry-After": "2" }), json(200, { ...view("awake"), resumed: true })]);
  await client(fetch).wake("codex", AGENT, { timeoutMs: 12_000 });
  const [first, second] = seen.map((r) => Number(r.headers.Prefer.slice(5)));
  assert.ok(first >= 6 && second <= first - 2, `${first} then ${second}`);
});

test("usage sends its days (a Date as its UTC day) and asks for CSV by Accept; a page that is not CSV is an error", async () => {
  const csv = new Response("day,wakes\n", { status: 200, headers: { "Content-Type": "text/csv; charset=utf-8" } });
  const { fetch, seen } = fake([csv]);
  // 23:30 at UTC-2 is the next day in UTC.
  const text = await client(fetch).usageCsv({ from: "2026-12-01", to: new Date("2026-12-07T23:30:00-02:00"), owner: "*" });
  assert.equal(text, "day,wakes\n");
  const url = new URL(seen[0].url);
  assert.ok(url.pathname.endsWith("/v1/usage"), url.pathname);
  assert.deepEqual(Object.fromEntries(url.searchParams), { from: "2026-12-01", to: "2026-12-08", owner: "*" });
  assert.equal(seen[0].headers.Accept, "text/csv");

  const page = fake([new Response("<html>", { status: 200, headers: { "Content-Type": "text/html" } })]);
  const error = await client(page.fetch).usageCsv().catch((e) => e);
  assert.ok(error instanceof GatewayError && error.status === 200, String(error));
  const report = fake([json(200, { from: "2026-12-01", to: "2026-12-07", by: "day", owner: "a", prices: null, rows: [], total: {} })]);
  assert.equal((await client(report.fetch).usage()).to, "2026-12-07");
  assert.equal(new URL(report.seen[0].url).search, "");
  assert.equal(report.seen[0].headers.Accept, "application/json");
});

test("an answer that is not snapwake's is an error, not a success; a cursor answered twice ends the walk", async () => {
  const page = fake([new Response("<html>", { status: 200, headers: { "Content-Type": "text/html" } })]);
  const error = await client(page.fetch).capabilities().catch((e) => e);
  assert.ok(error instanceof GatewayError && error.status === 200, String(error));

  const listing = { agents: [view("awake")], truncated: false, partial: [], next_cursor: "c1" };
  const twice = fake([json(200, listing), json(200, listing), json(200, listing)]);
  const walked = [];
  const stopped = await (async () => {
    for await (const a of client(twice.fetch).list({ owner: "*" })) walked.push(a);
  })().catch((e) => e);
  assert.match(String(stopped), /same cursor/);
  assert.equal(twice.seen.length, 2);
});
