// Five-field cron (minute hour day-of-month month day-of-week) as schedules use it
// (docs/schedules.md): parsed here to say what is wrong before anything is saved, and
// evaluated in an IANA time zone to preview the next occurrences. Names MON–SUN and JAN–DEC,
// `*`, lists, ranges and steps; Sunday is 0 or 7. When both day fields are restricted (neither
// starts with `*`), a day matching either fires (Vixie cron's rule). Local times that do not
// exist (a daylight-saving gap) fire at the transition, the next valid minute; local times that
// exist twice (a fold) fire once, at the first.

const FIELDS = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day of month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12, names: ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"], base: 1 },
  { name: "day of week", min: 0, max: 7, names: ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"], base: 0 },
];

export class CronError extends Error {}

function value(text, field) {
  if (/^\d+$/.test(text)) {
    const n = Number(text);
    if (n < field.min || n > field.max) {
      throw new CronError(`${field.name} ${n} is out of range (${field.min}–${field.max})`);
    }
    return n;
  }
  const i = field.names ? field.names.indexOf(text.toUpperCase()) : -1;
  if (i < 0) {
    throw new CronError(`“${text}” is not a ${field.name}${field.names ? ` (a number or ${field.names[0]}–${field.names[field.names.length - 1]})` : " (a number)"}`);
  }
  return i + field.base;
}

/** One field's text as the sorted set of values it allows. */
function parseField(text, field) {
  const set = new Set();
  for (const part of text.split(",")) {
    if (!part) throw new CronError(`${field.name} has an empty item in “${text}”`);
    const [range, stepText, extra] = part.split("/");
    if (extra !== undefined) throw new CronError(`${field.name} “${part}” has two steps`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) < 1) {
        throw new CronError(`${field.name} step “${stepText}” must be a whole number of at least 1`);
      }
      step = Number(stepText);
    }
    let lo;
    let hi;
    if (range === "*") {
      lo = field.min;
      hi = field.name === "day of week" ? 6 : field.max;
    } else if (range.includes("-")) {
      const [a, b, more] = range.split("-");
      if (more !== undefined || !a || !b) throw new CronError(`${field.name} “${range}” is not a range`);
      lo = value(a, field);
      hi = value(b, field);
      if (lo > hi) throw new CronError(`${field.name} range ${range} goes backwards`);
    } else {
      lo = value(range, field);
      // "5/15": from 5 to the end, every 15 (as cron reads it).
      hi = stepText !== undefined ? field.max : lo;
    }
    for (let v = lo; v <= hi; v += step) set.add(field.name === "day of week" && v === 7 ? 0 : v);
  }
  return set;
}

/**
 * Parse a five-field expression. Returns {minutes, hours, days, months, weekdays, daysStar,
 * weekdaysStar}; throws CronError naming what is wrong.
 */
export function parseCron(text) {
  const parts = String(text ?? "").trim().split(/\s+/).filter(Boolean);
  if (parts.length !== 5) {
    throw new CronError(`needs five fields (minute hour day-of-month month day-of-week), not ${parts.length}`);
  }
  const [minutes, hours, days, months, weekdays] = parts.map((p, i) => parseField(p, FIELDS[i]));
  return {
    minutes: [...minutes].sort((a, b) => a - b),
    hours: [...hours].sort((a, b) => a - b),
    days,
    months,
    weekdays,
    daysStar: parts[2].startsWith("*"),
    weekdaysStar: parts[4].startsWith("*"),
  };
}

/** The error of an expression in words, or null when it is valid. */
export function cronError(text) {
  try {
    parseCron(text);
    return null;
  } catch (e) {
    if (e instanceof CronError) return e.message;
    throw e;
  }
}

function dayMatches(cron, y, m, d) {
  if (!cron.months.has(m)) return false;
  const dom = cron.days.has(d);
  const dow = cron.weekdays.has(new Date(Date.UTC(y, m - 1, d)).getUTCDay());
  if (cron.daysStar || cron.weekdaysStar) return dom && dow;
  return dom || dow;
}

// ---- Wall-clock time in a zone, with Intl only.

const formatters = new Map();

function partsIn(zone) {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric",
      hour: "numeric", minute: "numeric", second: "numeric",
    });
    formatters.set(zone, f);
  }
  return f;
}

/** The wall-clock time at instant `t` (ms) in `zone`, as ms of the same numbers read as UTC. */
function wallAt(t, zone) {
  const p = {};
  for (const { type, value: v } of partsIn(zone).formatToParts(new Date(t))) p[type] = Number(v);
  return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
}

/** The zone's offset from UTC at instant `t`, in ms (wall − instant). */
function offsetAt(t, zone) {
  const whole = Math.floor(t / 1000) * 1000;
  return wallAt(whole, zone) - whole;
}

const MINUTE = 60_000;
const DAY = 86_400_000;

/**
 * The instant a zone's wall-clock time `wall` (ms, read as UTC) stands for: the earlier one
 * when it exists twice, the transition when it does not exist (a gap).
 */
export function instantOf(wall, zone) {
  const before = offsetAt(wall - DAY, zone);
  const after = offsetAt(wall + DAY, zone);
  const fits = [...new Set([before, after, offsetAt(wall, zone)])]
    .map((o) => wall - o)
    .filter((t) => wallAt(t, zone) === wall)
    .sort((a, b) => a - b);
  if (fits.length) return fits[0];
  // In a gap: the first instant on the far side of the transition, to the minute.
  let lo = wall - Math.max(before, after);
  let hi = wall - Math.min(before, after);
  if (offsetAt(lo, zone) === offsetAt(hi, zone)) return hi;
  const late = offsetAt(hi, zone);
  while (hi - lo > MINUTE) {
    const mid = lo + Math.floor((hi - lo) / 2 / MINUTE) * MINUTE;
    if (offsetAt(mid, zone) === late) hi = mid;
    else lo = mid;
  }
  return hi;
}

/**
 * The next `n` instants (Dates, ascending) after `now` (ms) at which `cron` (text or parsed)
 * fires in `zone`. Fewer when it fires less often within eight years (`0 0 30 2 *`: never).
 */
export function nextOccurrences(cron, zone, n = 3, now = Date.now()) {
  const c = typeof cron === "string" ? parseCron(cron) : cron;
  const out = [];
  const start = wallAt(now, zone);
  let day = start - (start % DAY);
  for (let i = 0; i < 366 * 8 && out.length < n; i += 1, day += DAY) {
    const d = new Date(day);
    if (!dayMatches(c, d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate())) continue;
    for (const h of c.hours) {
      for (const m of c.minutes) {
        const wall = day + h * 3_600_000 + m * MINUTE;
        if (wall < start - DAY) continue;
        const t = instantOf(wall, zone);
        if (t <= now) continue;
        // Times in a gap all fire at the transition: once.
        if (out.length && out[out.length - 1].getTime() >= t) continue;
        out.push(new Date(t));
        if (out.length >= n) return out;
      }
    }
  }
  return out;
}
