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

const oneDecimal = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

/**
 * Seconds as hours a person reads: "41.5 h", "126 h", "0 h"; under six minutes in minutes
 * ("4 min", "under a minute"), so a short day is not "0 h". Negative keeps its sign ("−2 h").
 */
export function hours(s) {
  const n = Number(s) || 0;
  if (n === 0) return "0 h";
  const sign = n < 0 ? "−" : "";
  const abs = Math.abs(n);
  if (abs < 360) {
    const min = Math.round(abs / 60);
    return min < 1 ? "under a minute" : `${sign}${min} min`;
  }
  return `${sign}${oneDecimal.format(abs / 3600)} h`;
}

/** An amount of `currency` (ISO 4217) in the reader's locale: "$4.98"; the code if unknown. */
export function money(amount, currency) {
  const n = Number(amount) || 0;
  try {
    return new Intl.NumberFormat(undefined, { style: "currency", currency }).format(n);
  } catch {
    return `${n.toFixed(2)} ${currency}`;
  }
}

const dayFormats = {
  short: new Intl.DateTimeFormat(undefined, { timeZone: "UTC", weekday: "short", day: "numeric" }),
  medium: new Intl.DateTimeFormat(undefined, { timeZone: "UTC", day: "numeric", month: "short" }),
  long: new Intl.DateTimeFormat(undefined, { timeZone: "UTC", weekday: "short", day: "numeric", month: "short", year: "numeric" }),
};

/** A UTC day ("2026-12-03") as "Thu 3" (`short`), "3 Dec" (`medium`) or "Thu, 3 Dec 2026". */
export function day(iso, style = "long") {
  const t = Date.parse(`${iso}T00:00:00Z`);
  return Number.isNaN(t) ? String(iso) : dayFormats[style].format(new Date(t));
}
