// The schedule editor of one agent (docs/console.md, "Schedules"): a time zone (the browser's
// by default), presets, and a wake and a sleep cron each previewed live with its next three
// occurrences in that zone. Save is `PUT …/schedule`, Remove `DELETE …/schedule`; a 422 is
// shown next to the field it names.

import { Api, Problem } from "./api.js";
import { h, showProblemIn } from "./cards.js";
import { cronError, nextOccurrences } from "./cron.js";
import { agentName } from "./format.js";
import { PRESETS, browserZone, oneLine, presetOf, scheduleText, zones } from "./schedule.js";

const $ = (id) => document.getElementById(id);
const FIELDS = ["timezone", "wake", "sleep"];

/** A 422's field: the problem's `field` (every INVALID_REQUEST of the route names one), or
 * `NOT_SLEEPABLE`'s sleep. */
function problemField(p) {
  if (FIELDS.includes(p.field)) return p.field;
  return p.code === "NOT_SLEEPABLE" ? "sleep" : null;
}

function previewFormat(zone) {
  return new Intl.DateTimeFormat(undefined, {
    timeZone: zone, weekday: "short", day: "numeric", month: "short", year: "numeric",
    hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZoneName: "short",
  });
}

/**
 * `open(agent)` shows the dialog for `agent`; `onSaved(agent, schedule | null)` gets the
 * schedule as saved (null once removed).
 */
export function scheduleDialog({ api, onSaved, announce }) {
  const dialog = $("schedule-dialog");
  const form = $("schedule-form");
  const zone = $("schedule-zone");
  const inputs = { wake: $("schedule-wake"), sleep: $("schedule-sleep") };
  const save = $("schedule-save");
  const remove = $("schedule-remove");
  const status = $("schedule-status");
  const problem = $("schedule-problem");
  let agent = null;
  let current = null; // the schedule as the server has it
  let busy = false;

  const temporary = () => agent?.retention === "temporary";

  const showProblem = (p) => showProblemIn(problem, p);

  /** Show (or clear) a field's error; the input is marked invalid while it has one. */
  function fieldError(field, text) {
    const el = $(`schedule-${field}-error`);
    el.textContent = text || "";
    el.hidden = !text;
    const input = field === "timezone" ? zone : inputs[field];
    if (text) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  }

  /** The next three occurrences of one field in the chosen zone, or what is wrong with it. */
  function preview(field) {
    const out = $(`schedule-${field}-next`);
    const text = inputs[field].value.trim();
    if (inputs[field].disabled) return out.replaceChildren();
    if (!text) {
      fieldError(field, null);
      return out.replaceChildren(h("span", { class: "muted" }, field === "wake" ? "Never wakes on its own." : "Never put to sleep on its own."));
    }
    const error = cronError(text);
    if (error) {
      fieldError(field, `Not a schedule: ${error}.`);
      return out.replaceChildren();
    }
    let next;
    try {
      next = nextOccurrences(text, zone.value, 3);
    } catch {
      fieldError(field, null);
      return out.replaceChildren(h("span", { class: "muted" }, "No preview in this time zone."));
    }
    if (!next.length) {
      fieldError(field, "Not a schedule: it never fires (no such day in the coming years).");
      return out.replaceChildren();
    }
    fieldError(field, null);
    const fmt = previewFormat(zone.value);
    out.replaceChildren(
      h("span", { class: "muted" }, "Next: "),
      h("ol", {}, next.map((d) => h("li", {}, h("time", { datetime: d.toISOString() }, fmt.format(d))))),
    );
  }

  function refresh() {
    preview("wake");
    preview("sleep");
    // A temporary agent's presets are their wake times alone.
    const id = presetOf(inputs.wake.value, inputs.sleep.value, { wakeOnly: temporary() });
    form.querySelector(`input[name="preset"][value="${id}"]`).checked = true;
  }

  function fill(schedule) {
    const here = browserZone();
    const chosen = schedule?.timezone || here;
    zone.replaceChildren(...zones(here, chosen).map((z) => new Option(z, z, false, z === chosen)));
    zone.value = chosen;
    inputs.wake.value = schedule?.wake || "";
    inputs.sleep.value = temporary() ? "" : schedule?.sleep || "";
    inputs.sleep.disabled = temporary();
    const reason = $("schedule-sleep-reason");
    reason.hidden = !temporary();
    reason.textContent = temporary() ? "Sleep: temporary agents can't sleep (no snapshot would be kept)." : "";
    remove.hidden = !schedule;
    for (const f of FIELDS) fieldError(f, null);
    refresh();
  }

  function setBusy(on, words) {
    busy = on;
    for (const b of [save, remove]) b.setAttribute("aria-disabled", on ? "true" : "false");
    status.textContent = words || "";
  }

  function open(target) {
    agent = target;
    current = target.schedule || null;
    $("schedule-title").textContent = `Schedule of ${agentName(agent)}`;
    showProblem(null);
    setBusy(false);
    // The agent's view says its schedule (null: none).
    fill(current);
    dialog.showModal();
    zone.focus();
  }

  /** The body to save, or null with the errors shown when a field is not right. */
  function body() {
    refresh();
    const bad = ["wake", "sleep"].find((f) => !$(`schedule-${f}-error`).hidden);
    if (bad) {
      inputs[bad].focus();
      return null;
    }
    const value = (f) => (inputs[f].disabled ? null : oneLine(inputs[f].value) || null);
    return { timezone: zone.value, wake: value("wake"), sleep: value("sleep") };
  }

  async function send(run, words) {
    if (busy) return;
    showProblem(null);
    setBusy(true, words.start);
    try {
      const schedule = await run();
      dialog.close();
      current = schedule;
      onSaved(agent, schedule);
      announce(words.done(schedule));
    } catch (e) {
      setBusy(false);
      const field = e instanceof Problem && e.status === 422 ? problemField(e) : null;
      if (field) {
        // The server's words, next to the field they are about.
        fieldError(field, e.detail.replace(new RegExp(`^${field}: `), "") || e.title);
        (field === "timezone" ? zone : inputs[field]).focus();
      } else {
        showProblem(e);
      }
      return;
    }
    setBusy(false);
  }

  const removeIt = () =>
    send(async () => {
      await api.call("DELETE", Api.path(agent, "schedule"), {}, { safe: true });
      return null;
    }, { start: "Removing the schedule…", done: () => `${agentName(agent)} has no schedule now.` });

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (busy) return;
    const b = body();
    if (!b) return;
    // Nothing to wake or sleep at is no schedule at all.
    if (!b.wake && !b.sleep) {
      if (current) return removeIt();
      dialog.close();
      return;
    }
    send(async () => (await api.call("PUT", Api.path(agent, "schedule"), { body: b }, { safe: true })).body, {
      start: "Saving the schedule…",
      done: (s) => `${agentName(agent)} now ${scheduleText(s).replace(/^./, (c) => c.toLowerCase())}.`,
    });
  });
  remove.addEventListener("click", () => {
    if (!busy) removeIt();
  });
  $("schedule-cancel").addEventListener("click", () => dialog.close());
  form.addEventListener("change", (e) => {
    if (e.target.name !== "preset") return;
    const p = PRESETS[e.target.value];
    if (!p) return; // custom: the fields as they are
    inputs.wake.value = p.wake;
    if (!temporary()) inputs.sleep.value = p.sleep;
    refresh();
  });
  zone.addEventListener("change", () => {
    fieldError("timezone", null);
    refresh();
  });
  for (const input of Object.values(inputs)) input.addEventListener("input", refresh);

  return { open };
}
