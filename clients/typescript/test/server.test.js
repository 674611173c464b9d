// @ts-check
// Against a real `snapwake serve --demo` (its in-memory store and AgentKit simulator): the
// client's promises that only the server can prove. SNAPWAKE_BIN names another binary.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { AgentNotFound, Client, InvalidRequest } from "../snapwake.js";

const here = fileURLToPath(new URL(".", import.meta.url));
const bin = process.env.SNAPWAKE_BIN ?? `${here}../../../target/debug/snapwake`;
const SLEEPER = "studio-alice-0d5e1f0a0b0c0d0e0f10111213141516"; // alice's asleep codex agent

/** @type {import("node:child_process").ChildProcess} */
let server;
let api = "";
let sim = "";

/** Starts the server and reads its banner: "snapwake serving on URL (… simulator at URL, …)". */
before(async () => {
  server = spawn(bin, ["serve", "--demo", "--port", "0", "--sweep-every", "0s"], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  const failed = new Promise((_, reject) => {
    server.once("error", reject); // e.g. no binary at `bin`
    server.once("exit", (code) => reject(new Error(`snapwake exited (${code}) before its banner`)));
  });
  const lines = createInterface({ input: /** @type {import("node:stream").Readable} */ (server.stdout) });
  const banner = new Promise((resolve) => lines.once("line", resolve));
  const line = String(await Promise.race([banner, failed]));
  const m = /serving on (http:\/\/\S+) .*simulator at (http:\/\/[^\s,;)]+)/.exec(line);
  assert.ok(m, `unexpected banner: ${line}`);
  [, api, sim] = m;
});

after(() => {
  server?.kill();
});

const as = (/** @type {string} */ user, admin = false) => new Client({ baseUrl: api, user, admin, timeoutMs: 30_000 });

test("10 concurrent wakes: all awake in one session, from exactly one Resume", async () => {
  const alice = as("alice");
  const before = await alice.get("codex", SLEEPER);
  assert.equal(before.state, "asleep");

  const woken = await Promise.all(Array.from({ length: 10 }, () => alice.wake("codex", SLEEPER)));
  assert.deepEqual(new Set(woken.map((a) => a.state)), new Set(["awake"]));
  const sessions = new Set(woken.map((a) => a.session?.session_id));
  assert.equal(sessions.size, 1, `sessions: ${[...sessions]}`);
  assert.ok([...sessions][0]);

  // The simulator counts ResumeSessionFromSnapshot per snapshot id: sum this agent's.
  const counters = await (await fetch(`${sim}/_sim/counters`)).json();
  const resumes = before.snapshots.reduce((n, s) => n + (counters.resumes[s.snapshot_id] ?? 0), 0);
  assert.equal(resumes, 1, JSON.stringify(counters.resumes));
  assert.equal(counters.actions.ResumeSessionFromSnapshot.received, 1);
});

test("someone else's agent is AgentNotFound, not retried", async () => {
  const error = await as("bob").wake("codex", SLEEPER).catch((e) => e);
  assert.ok(error instanceof AgentNotFound, String(error));
  assert.equal(error.status, 404);
  assert.equal(error.code, "AGENT_NOT_FOUND");
  assert.equal(error.retryable, false);
  assert.ok(error.requestId);
});

test("list as alice yields her agents", async () => {
  const agents = [];
  for await (const agent of as("alice").list()) agents.push(agent);
  assert.ok(agents.length >= 2);
  assert.ok(agents.every((a) => a.owner === "alice"));
  assert.ok(agents.some((a) => a.agent_id === SLEEPER));
});

test("owner=* follows next_cursor through every page", async () => {
  const admin = as("root", true);
  let pages = 0;
  const ids = [];
  for await (const page of admin.pages({ owner: "*", limit: 2 })) {
    pages += 1;
    ids.push(...page.agents.map((a) => a.agent_id));
  }
  const all = [];
  for await (const agent of admin.list({ owner: "*", limit: 2 })) all.push(agent.agent_id);
  assert.ok(pages > 1, `${pages} page(s)`);
  assert.equal(new Set(ids).size, ids.length, "no agent twice");
  assert.deepEqual(all, ids);
});

test("activity on an agent in use; its idle time is the owner's to set", async () => {
  const alice = as("alice");
  const made = await alice.create({ kind: "hermes", displayName: "Busy", retention: "recoverable" });
  await alice.activity("hermes", made.agent_id);
  const idle = await alice.getIdle("hermes", made.agent_id);
  assert.equal(idle.deployment_minutes, 30, "serve --demo runs idle sleep at 30 minutes");
  assert.equal(idle.effective_minutes, 30);
  assert.ok(idle.idle_sleep_at, JSON.stringify(idle));
  const never = await alice.setIdle("hermes", made.agent_id, 0);
  assert.deepEqual([never.minutes, never.effective_minutes, never.idle_sleep_at], [0, 0, null]);
  const back = await alice.setIdle("hermes", made.agent_id, null);
  assert.equal(back.minutes, null);
});

/** The one row of `report` for `agentId`. @param {import("../schema.d.ts").Usage} report @param {string} agentId */
const rowOf = (report, agentId) => {
  const rows = report.rows.filter((r) => r.agent_id === agentId);
  assert.equal(rows.length, 1, JSON.stringify(report));
  return rows[0];
};

/** A CSV answer's lines as objects by its header (snapwake's fields need no quoting). @param {string} text */
const csvRows = (text) => {
  const [header, ...lines] = text.trim().split("\n").map((l) => l.split(","));
  return lines.map((cells) => Object.fromEntries(header.map((name, i) => [name, cells[i]])));
};

test("usage counts a new agent by day and by agent, the same in CSV; its errors are typed", async () => {
  const erin = as("erin");
  const made = await erin.create({ kind: "hermes", displayName: "Counted", retention: "recoverable" });
  // serve's relay counts the table's changes every 250 ms: today's row shows the create soon.
  const until = Date.now() + 10_000;
  let report, today;
  for (;;) {
    report = await erin.usage();
    const last = report.to;
    today = report.rows.find((r) => r.day === last);
    if (today && today.awake_s.total > 0 && today.creates + today.wakes >= 1) break;
    assert.ok(Date.now() < until, `not counted in 10 s: ${JSON.stringify(report)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  assert.deepEqual([report.by, report.owner, report.rows.length], ["day", "erin", 7]);
  assert.ok(report.total.creates >= 1);

  // One day, as a string or as a Date (its UTC day).
  const one = await erin.usage({ from: new Date(`${report.to}T12:00:00Z`), to: report.to });
  assert.deepEqual([one.from, one.to, one.rows.length], [report.to, report.to, 1]);
  assert.equal(one.rows[0].creates, today.creates);

  const byAgent = await erin.usage({ by: "agent" });
  const row = rowOf(byAgent, made.agent_id);
  assert.deepEqual([byAgent.by, row.kind, row.owner, row.creates], ["agent", "hermes", "erin", 1]);
  assert.ok(row.awake_s.total > 0);

  // CSV: the same rows; its awake time, still open, read between two JSON reads.
  const before = rowOf(await erin.usage({ by: "agent" }), made.agent_id);
  const text = await erin.usageCsv({ by: "agent" });
  const after = rowOf(await erin.usage({ by: "agent" }), made.agent_id);
  const lines = csvRows(text);
  assert.deepEqual(lines.map((l) => l.agent_id), [made.agent_id], text);
  const [line] = lines;
  assert.deepEqual([line.kind, line.owner], ["hermes", "erin"]);
  const awake = Number(line.awake_s);
  assert.ok(before.awake_s.total <= awake && awake <= after.awake_s.total, `${before.awake_s.total} ≤ ${awake} ≤ ${after.awake_s.total}`);
  assert.deepEqual([Number(line.creates), Number(line.wakes)], [before.creates, before.wakes]);
  assert.deepEqual([after.creates, after.wakes], [before.creates, before.wakes]);
  const days = csvRows(await erin.usageCsv({ from: report.to, to: report.to }));
  assert.deepEqual(days.map((l) => l.day), [report.to]);

  const everyone = await as("root", true).usage({ by: "agent", owner: "*" });
  assert.equal(everyone.owner, "*");
  assert.equal(rowOf(everyone, made.agent_id).owner, "erin");

  for (const bad of [() => erin.usage({ from: "2026-13-01" }), () => erin.usageCsv({ to: "yesterday" })]) {
    const error = await bad().catch((e) => e);
    assert.ok(error instanceof InvalidRequest, String(error));
    assert.deepEqual([error.status, error.code, error.retryable], [400, "INVALID_REQUEST", false]);
  }
  // A range whose from is after its to holds no day; a long one keeps its last 367 days.
  assert.deepEqual((await erin.usage({ from: "2026-12-07", to: "2026-12-01" })).rows, []);
  const long = await erin.usage({ from: "2000-01-01", to: "2026-12-07" });
  assert.deepEqual([long.from, long.rows.length], ["2025-12-06", 367]);
  const refused = await erin.usage({ owner: "*" }).catch((e) => e);
  assert.ok(refused instanceof AgentNotFound && refused.status === 404, String(refused));
  const foreign = await erin.usageCsv({ owner: "frank" }).catch((e) => e);
  assert.ok(foreign instanceof AgentNotFound, String(foreign));
});

test("no schedule reads as null", async () => {
  assert.equal(await as("alice").getSchedule("codex", SLEEPER), null);
});

test("the README's From TypeScript example runs as printed (only its address changed)", async () => {
  const { readFileSync, writeFileSync, mkdtempSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { execFileSync } = await import("node:child_process");
  const readme = readFileSync(`${here}../../../README.md`, "utf8");
  const section = readme.split("## From TypeScript")[1]?.split("\n## ")[0] ?? "";
  const example = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (!example?.includes("http://127.0.0.1:8080")) assert.fail("README: no ts example under From TypeScript");
  const runnable = example
    .replace("./clients/typescript/snapwake.js", new URL("../snapwake.js", import.meta.url).href)
    .replace("http://127.0.0.1:8080", api);
  const file = `${mkdtempSync(`${tmpdir()}/snapwake-readme-`)}/example.mjs`;
  writeFileSync(file, runnable);
  const printed = execFileSync(process.execPath, [file], { encoding: "utf8", timeout: 60_000 }).trim().split("\n");
  assert.ok(printed.some((l) => l.startsWith("Data helper ")), printed.join("\n"));
  assert.match(printed[printed.length - 1], /^awake sess-/);
});
