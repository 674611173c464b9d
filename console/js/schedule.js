// An agent's schedule in words (docs/schedules.md): "Wakes weekdays 08:30 · sleeps 19:00
// (Europe/Berlin)", its next occurrence, and the presets the editor offers.

import { parseCron } from "./cron.js";

export const PRESETS = {
  weekdays: { wake: "0 9 * * MON-FRI", sleep: "0 18 * * MON-FRI" },
  everyday: { wake: "0 8 * * *", sleep: "0 20 * * *" },
  none: { wake: "", sleep: "" },
};

const DAY_NAMES = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

/** "weekdays", "every day", "weekends", "Mon, Wed", or null when the days are not that simple. */
function daysOf(text) {
  const [, , dom, month, dow] = text.trim().split(/\s+/);
  if (dom !== "*" || month !== "*") return null;
  const days = [...parseCron(text).weekdays].sort((a, b) => a - b).join(",");
  if (days === "0,1,2,3,4,5,6") return "every day";
  if (days === "1,2,3,4,5") return "weekdays";
  if (days === "0,6") return "weekends";
  return days.split(",").map((d) => DAY_NAMES[d]).join(", ");
}

/** "08:30" when the expression fires at one time of day, else null. */
function timeOf(text) {
  const [minute, hour] = text.trim().split(/\s+/);
  if (!/^\d+$/.test(minute) || !/^\d+$/.test(hour)) return null;
  return `${hour.padStart(2, "0")}:${minute.padStart(2, "0")}`;
}

/** One expression in words: {days, time} or {raw}. */
function words(text) {
  try {
    const days = daysOf(text);
    const time = timeOf(text);
    return days && time ? { days, time } : { raw: `at “${text}”` };
  } catch {
    return { raw: `at “${text}”` };
  }
}

/** "Wakes weekdays 08:30 · sleeps 19:00 (Europe/Berlin)". */
export function scheduleText(schedule) {
  const wake = schedule.wake ? words(schedule.wake) : null;
  const sleep = schedule.sleep ? words(schedule.sleep) : null;
  const parts = [];
  if (wake) parts.push(wake.raw ? `wakes ${wake.raw}` : `wakes ${wake.days} ${wake.time}`);
  if (sleep) {
    const sameDays = wake && !wake.raw && !sleep.raw && wake.days === sleep.days;
    parts.push(sleep.raw ? `sleeps ${sleep.raw}` : sameDays ? `sleeps ${sleep.time}` : `sleeps ${sleep.days} ${sleep.time}`);
  }
  if (!parts.length) return `No times set (${schedule.timezone})`;
  const text = `${parts.join(" · ")} (${schedule.timezone})`;
  return text[0].toUpperCase() + text.slice(1);
}

/** An instant as "Mon 08:30" in `zone` (with the date when it is a week or more away). */
export function shortIn(iso, zone, now = Date.now()) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "";
  const far = t - now >= 6 * 86_400_000;
  const options = { timeZone: zone, weekday: "short", hour: "2-digit", minute: "2-digit", hourCycle: "h23" };
  if (far) Object.assign(options, { day: "numeric", month: "short" });
  try {
    return new Intl.DateTimeFormat(undefined, options).format(new Date(t));
  } catch {
    return new Date(t).toISOString();
  }
}

/**
 * The sooner of the schedule's next wake and next sleep: {action, at, starts} or null. `starts`:
 * for a wake that snapwake starts early so that the agent is Ready at `at`, when it starts.
 */
export function nextEvent(schedule) {
  const events = [["wake", schedule.next_wake_at], ["sleep", schedule.next_sleep_at]]
    .filter(([, at]) => at && !Number.isNaN(Date.parse(at)))
    .sort((a, b) => Date.parse(a[1]) - Date.parse(b[1]));
  if (!events.length) return null;
  const [action, at] = events[0];
  const starts = schedule.wake_starts_at;
  const early = action === "wake" && starts && Date.parse(starts) < Date.parse(at);
  return { action, at, starts: early ? starts : null };
}

/** An expression with its whitespace made single spaces ("" for none). */
export function oneLine(text) {
  return (text || "").trim().split(/\s+/).join(" ");
}

/**
 * Which preset a pair of expressions is ("custom" when none); `wakeOnly`: by the wake alone
 * (a temporary agent has no sleep).
 */
export function presetOf(wake, sleep, { wakeOnly = false } = {}) {
  for (const [id, p] of Object.entries(PRESETS)) {
    if (oneLine(p.wake) === oneLine(wake) && (wakeOnly || oneLine(p.sleep) === oneLine(sleep))) return id;
  }
  return "custom";
}

/** The IANA zones to offer: the browser's list, with `extra` zones (the browser's own, the saved one). */
export function zones(...extra) {
  let list = [];
  try {
    list = Intl.supportedValuesOf("timeZone");
  } catch {
    list = [];
  }
  const all = new Set([...list, ...extra.filter(Boolean)]);
  if (!all.has("UTC")) all.add("UTC");
  return [...all].sort();
}

export function browserZone() {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch {
    return "UTC";
  }
}
