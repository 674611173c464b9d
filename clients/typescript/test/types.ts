// Type-checked only (npm run typecheck), never run: what a TypeScript user gets from the JSDoc
// of snapwake.js with `allowJs`. Inside a function so that running it by mistake does nothing.
import { AgentNotFound, Client, Problem, StillWorking, problemClasses } from "../snapwake.js";
import type { Agent, AgentState, Kind, Schedule, Usage } from "../schema.d.ts";

export async function usage(): Promise<void> {
  const client = new Client({ baseUrl: "https://api.example", token: async () => "jwt" });

  const a = await client.wake("codex", "x");
  const s: AgentState = a.state;
  const exact: "awake" | "starting" | "waking" | "asleep" | "sleeping" | "deleting" | "unavailable" | "unknown" = a.state;
  const resumed: boolean = a.resumed;
  const slept: boolean = (await client.sleep("hermes", "x", { wait: false, timeoutMs: 5000 })).slept;
  const ttl: number = (await client.keepalive("openclaw", "x", 3600)).ttl_s;

  // @ts-expect-error: not a kind
  await client.wake("nope", "x");
  // @ts-expect-error: display_name is displayName here
  await client.create({ kind: "codex", display_name: "x" });
  // @ts-expect-error: not a retention
  await client.create({ kind: "codex", displayName: "x", retention: "forever" });

  for await (const agent of client.list({ owner: "*", state: "asleep" })) {
    const k: Kind = agent.kind;
    const same: Agent = agent;
  }
  for await (const page of client.pages({ limit: 10 })) {
    const next: string | undefined = page.next_cursor;
  }
  const schedule: Schedule | null = await client.getSchedule("codex", "x", { signal: AbortSignal.timeout(1000) });
  await client.setSchedule("codex", "x", { timezone: "Europe/Berlin", wake: "30 8 * * MON-FRI", sleep: null });
  await client.delete("codex", "x", { ifMatch: '"7"' });
  const report: Usage = await client.usage({ from: new Date(), to: "2026-12-07", by: "agent", owner: "*" });
  const awakeS: number = report.total.awake_s.total;
  const csv: string = await client.usageCsv({ by: "day" }, { timeoutMs: 5000 });
  // @ts-expect-error: not a grouping
  await client.usage({ by: "week" });

  try {
    await client.get("codex", "x");
  } catch (e) {
    if (e instanceof AgentNotFound) {
      const status: number = e.status;
      const code: string = e.code;
      const retryAfter: number | null = e.retryAfter;
    }
    if (e instanceof StillWorking) {
      const last: Agent | null = e.agent;
    }
    if (e instanceof Problem && e.code === "AGENT_BUSY") {
      const field: string | null = e.field;
    }
  }
  const Busy: typeof Problem = problemClasses.AGENT_BUSY;
  // @ts-expect-error: not a problem code
  problemClasses.NO_SUCH_CODE;

  void [s, exact, resumed, slept, ttl, schedule, awakeS, csv, Busy];
}
