// Words and times as the page shows them: kinds, states, dates in the reader's locale,
// durations in hours and minutes.

export const KINDS = { codex: "Codex", openclaw: "OpenClaw", hermes: "Hermes" };

/** The page's groups, in the order shown; each lists the API states it holds. */
export const GROUPS = [
  { id: "awake", title: "Awake", states: ["awake"] },
  { id: "waking", title: "Waking", states: ["waking", "starting"] },
  { id: "asleep", title: "Asleep", states: ["asleep"] },
  { id: "sleeping", title: "Going to sleep", states: ["sleeping"] },
  { id: "deleting", title: "Being deleted", states: ["deleting"] },
  { id: "unavailable", title: "Unavailable", states: ["unavailable"] },
  { id: "unknown", title: "Needs a look", states: ["unknown"] },
];

export const STATE_LABELS = {
  awake: "Awake",
  starting: "Starting",
  waking: "Waking",
  asleep: "Asleep",
  sleeping: "Going to sleep",
  deleting: "Deleting",
  unavailable: "Unavailable",
  unknown: "Status unknown",
};

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const timeOnly = new Intl.DateTimeFormat(undefined, { timeStyle: "short" });

function parse(iso) {
  if (!iso) return null;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : new Date(t);
}

/** "2 Dec 2026, 14:05", or "" for a missing or unreadable time. */
export function when(iso) {
  const d = parse(iso);
  return d ? dateTime.format(d) : "";
}

/** "14:05" when it is today, else the date and the time. */
export function shortWhen(iso, now = Date.now()) {
  const d = parse(iso);
  if (!d) return "";
  return new Date(now).toDateString() === d.toDateString() ? timeOnly.format(d) : dateTime.format(d);
}

/** A span of time as "7 h 58 min", "45 min" or "under a minute". */
export function duration(ms) {
  const minutes = Math.floor(Math.abs(ms) / 60_000);
  if (minutes < 1) return "under a minute";
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  const mins = minutes % 60;
  const parts = [];
  if (days) parts.push(`${days} d`);
  if (hours) parts.push(`${hours} h`);
  if (mins && !days) parts.push(`${mins} min`);
  return parts.join(" ");
}

/** "in 7 h 58 min" or "9 h ago". */
export function relative(iso, now = Date.now()) {
  const d = parse(iso);
  if (!d) return "";
  const ms = d.getTime() - now;
  return ms >= 0 ? `in ${duration(ms)}` : `${duration(ms)} ago`;
}

/** Milliseconds from now until `iso` (negative once past), or null. */
export function until(iso, now = Date.now()) {
  const d = parse(iso);
  return d ? d.getTime() - now : null;
}

/** The name a person knows the agent by. */
export function agentName(agent) {
  const name = (agent.display_name || "").trim();
  return name || `Unnamed ${KINDS[agent.kind] || agent.kind} agent`;
}

/** "1 snapshot", "3 snapshots". */
export function count(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}
