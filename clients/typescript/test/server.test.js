// @ts-check
// Against a real `snapwake serve --demo` (its in-memory store and AgentKit simulator): the
// client's promises that only the server can prove. SNAPWAKE_BIN names another binary.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { AgentNotFound, Client } from "../snapwake.js";

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
