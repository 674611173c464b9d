// The agents as cards, grouped by state. Pure rendering: DOM built from the page's state with
// text nodes only (never HTML from data); buttons carry data-action and data-key, and
// main.js handles their clicks in one place.

import { GROUPS, KINDS, STATE_LABELS, agentName, count, duration, relative, shortWhen, until, when } from "./format.js";
import { nextEvent, scheduleText, shortIn } from "./schedule.js";

/** Build an element: `h("p", {class: "x"}, "text", child)`. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export const keyOf = (agent) => `${agent.kind}/${agent.agent_id}`;

const HOUR = 3600;

/**
 * The keepalive a "+N h" button asks for: the session's time left plus N hours, never more
 * than the longest the API allows. Null when the session already lasts that long.
 */
export function extension(agent, hours, maxTtlS, now = Date.now()) {
  const left = Math.max(0, Math.floor((until(agent.session?.expire_at, now) ?? 0) / 1000));
  if (left >= maxTtlS - 60) return null;
  return Math.max(60, Math.min(maxTtlS, left + hours * HOUR));
}

function timeEl(iso, text) {
  return h("time", { datetime: iso || undefined, title: when(iso) || undefined }, text);
}

function button(label, action, key, extra = {}) {
  const { busy, disabled, why, ...attrs } = extra;
  // Disabled says why in words on the card (`why`: the id of that line), never only in a
  // tooltip; busy points at the progress line that says what is under way.
  return h(
    "button",
    {
      type: "button",
      class: attrs.class || "secondary",
      "aria-label": attrs["aria-label"],
      "aria-disabled": busy ? "true" : undefined,
      "aria-describedby": busy ? busyId(key) : disabled ? why : undefined,
      disabled: disabled && !busy ? true : undefined,
      dataset: { action, key, ...(attrs.dataset || {}), focus: `${action}:${key}:${attrs.dataset?.snapshot ?? ""}:${attrs.dataset?.hours ?? ""}` },
    },
    label,
  );
}

const slug = (key) => key.replace(/[^A-Za-z0-9_-]/g, "_");
const busyId = (key) => `busy-${slug(key)}`;

function problemBox(problem, key) {
  return h(
    "div",
    { class: "problem", role: "alert" },
    h("strong", {}, problem.title),
    problem.detail ? h("span", {}, ` ${problem.detail}`) : null,
    problem.requestId ? h("small", {}, ` (request ${problem.requestId})`) : null,
    problem.retryable && key ? button("Try again", "retry", key) : null,
  );
}

/**
 * The state a card shows. A wake that failed leaves the agent asleep, its snapshot intact,
 * even while AgentKit still lists the session it tried to start: the card says asleep, with
 * the failure and "Try again", not "Starting". An agent awake after all is awake.
 */
export function shownState(agent) {
  if (agent.wake?.state === "failed" && ["starting", "waking", "asleep"].includes(agent.state)) return "asleep";
  return agent.state;
}

/**
 * What failed in the agent's last wake, as one notice: the problem its Wake button ended
 * with on this page, else the view's own record of a failed wake. Null when it is awake (the
 * failure is past) or no wake failed.
 */
function wakeFailure(agent, problem) {
  if (shownState(agent) === "awake") return null;
  const mine = problem?.verb === "wake" ? problem : null;
  if (agent.wake?.state === "failed") {
    return {
      title: mine?.title || "Wake failed",
      detail: mine?.detail || agent.wake.error || "no reason was given",
      requestId: mine?.requestId,
      since: mine ? null : agent.wake.since,
    };
  }
  if (mine?.retryable) return { title: mine.title, detail: mine.detail, requestId: mine.requestId };
  return null;
}

function failureNotice(failure, agent, key) {
  return h(
    "div",
    { class: "problem wake-failed", role: "alert" },
    h(
      "p",
      {},
      h("strong", {}, failure.title),
      failure.since ? h("span", { class: "muted" }, ` (${shortWhen(failure.since)})`) : null,
      failure.detail ? ` — ${failure.detail}` : null,
      failure.requestId ? h("small", {}, ` (request ${failure.requestId})`) : null,
    ),
    button("Try again", "retry", key, { class: "primary", "aria-label": `Try again: wake ${agentName(agent)}` }),
  );
}

/** Show `problem` in the box `el`, or hide the box when there is none. */
export function showProblemIn(el, problem) {
  el.hidden = !problem;
  el.replaceChildren(...(problem ? problemBox(problem, null).childNodes : []));
}

export { problemBox };

function sessionLine(agent) {
  const s = agent.session;
  if (!s) return h("p", { class: "muted" }, "No live session");
  if (!s.expire_at) return h("p", {}, `Session ${s.status || "live"}`);
  return h(
    "p",
    { class: "session" },
    "Session ends ",
    timeEl(s.expire_at, shortWhen(s.expire_at)),
    ` (${relative(s.expire_at)})`,
  );
}

function snapshotList(agent, key, busy) {
  const snaps = agent.snapshots || [];
  if (!snaps.length) {
    const why = agent.retention === "temporary" ? " (a temporary agent keeps none)" : "";
    return h("p", { class: "muted" }, `No snapshots${why}`);
  }
  const name = agentName(agent);
  return h(
    "div",
    { class: "snapshots" },
    h("h4", {}, `Snapshots (${snaps.length}), newest first`),
    h(
      "ol",
      {},
      snaps.map((s) =>
        h(
          "li",
          {},
          h(
            "span",
            { class: "snap-when" },
            timeEl(s.created_at, when(s.created_at) || "unknown date"),
            s.created_at ? h("span", { class: "muted" }, ` · ${relative(s.created_at)}`) : null,
            s.reason ? h("span", { class: "muted" }, ` · ${s.reason === "Manual" ? "put to sleep" : s.reason.toLowerCase()}`) : null,
            s.status && s.status !== "Ready" ? h("span", { class: "chip" }, s.status) : null,
          ),
          button("Delete", "delete-snapshot", key, {
            class: "link danger-text",
            busy,
            "aria-label": `Delete the snapshot of ${name} from ${when(s.created_at) || s.snapshot_id}`,
            dataset: { snapshot: s.snapshot_id },
          }),
        ),
      ),
    ),
  );
}

/** Why Wake cannot act in a state it is shown in, or null when it can. */
function wakeBlocked(agent, shown) {
  switch (shown) {
    case "asleep":
      return null;
    case "waking":
    case "starting":
      return "Wake: it is already waking; Refresh shows when it is awake";
    case "sleeping":
      return "Wake: it is going to sleep; wake it once it is asleep";
    case "deleting":
      return "Wake: it is being deleted";
    case "unavailable":
      return agent.retention === "temporary"
        ? "Wake: a temporary agent keeps no snapshot to wake from"
        : "Wake: it has no snapshot to wake from";
    default:
      return "Wake: AgentKit reports a status snapshot cannot wake from";
  }
}

/** An http(s) `open_url`, or null (never a `javascript:` or other scheme). */
function openHref(agent) {
  if (typeof agent.open_url !== "string" || !agent.open_url) return null;
  try {
    const url = new URL(agent.open_url);
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
  } catch {
    return null;
  }
}

/**
 * The card's buttons, and under them, in words, why any of them cannot act (each disabled
 * button is described by its line). Only what fits the state is offered: an awake agent has
 * Open, Sleep now and Keep awake; any other has Wake (or, after a failed wake, the notice's
 * "Try again" instead).
 */
function actions(agent, shown, key, ctx, failed) {
  const busy = ctx.busy.get(key);
  const awake = shown === "awake";
  const name = agentName(agent);
  const label = (verb, idle) => (busy?.verb === verb ? busy.label : idle);
  const reasons = [];
  const why = (what, text) => {
    const id = `why-${what}-${slug(key)}`;
    reasons.push(h("li", { id }, text));
    return id;
  };
  const buttons = [];
  if (awake) {
    const href = openHref(agent);
    if (href) {
      buttons.push(h(
        "a",
        { class: "button primary", href, target: "_blank", rel: "noopener", "aria-label": `Open ${name} (opens a new tab)` },
        "Open",
        h("span", { class: "new-tab", "aria-hidden": "true" }, "↗"),
      ));
    }
    const temporary = agent.retention !== "recoverable";
    buttons.push(button(label("sleep", "Sleep now"), "sleep", key, {
      busy: Boolean(busy),
      disabled: temporary,
      why: temporary && !busy ? why("sleep", "Sleep: temporary agents can't sleep (no snapshot would be kept)") : undefined,
      "aria-label": `Sleep now: put ${name} to sleep`,
    }));
    const ttls = [1, 4].map((hours) => extension(agent, hours, ctx.maxTtlS));
    const keepWhy = ttls.some((t) => !t) && !busy
      ? why("keep", `Keep awake: the session already lasts the longest allowed (${duration(ctx.maxTtlS * 1000)})`)
      : undefined;
    const keep = (hours, ttl) =>
      button(label(`keep${hours}`, `+${hours} h`), "keep", key, {
        busy: Boolean(busy),
        disabled: !ttl,
        why: keepWhy,
        "aria-label": `+${hours} h: keep ${name} awake ${hours} more hour${hours > 1 ? "s" : ""}`,
        dataset: { hours },
      });
    buttons.push(h(
      "span",
      { class: "keep", role: "group", "aria-label": `Keep ${name} awake longer` },
      h("span", { class: "keep-label", "aria-hidden": "true" }, "Keep awake"),
      keep(1, ttls[0]),
      keep(4, ttls[1]),
    ));
  } else if (!failed) {
    const blocked = busy?.verb === "wake" ? null : wakeBlocked(agent, shown);
    buttons.push(button(label("wake", "Wake"), "wake", key, {
      class: "primary",
      busy: Boolean(busy),
      disabled: Boolean(blocked),
      why: blocked && !busy ? why("wake", blocked) : undefined,
      "aria-label": busy?.verb === "wake" ? `Waking ${name}` : `Wake ${name}`,
    }));
  }
  return [
    buttons.length ? h("div", { class: "actions" }, buttons) : null,
    reasons.length ? h("ul", { class: "why" }, reasons) : null,
  ];
}

/**
 * The agent's schedule in words, its next occurrence, and the button that edits it. An agent
 * snapwake keeps no record of yet (one made outside it, never woken since: no `etag`) cannot
 * have a schedule until it has one.
 */
function scheduleLine(agent, key, busy) {
  const s = agent.schedule;
  const name = agentName(agent);
  const next = s ? nextEvent(s) : null;
  const norecord = !agent.etag;
  const whyId = `why-schedule-${slug(key)}`;
  return h(
    "div",
    { class: "schedule" },
    h(
      "p",
      {},
      s ? scheduleText(s) : h("span", { class: "muted" }, "No schedule"),
      next
        ? [` — next ${next.action} `, h("time", { datetime: next.at, title: when(next.at) }, shortIn(next.at, s.timezone))]
        : null,
      next && next.starts
        ? [" (waking starts ", h("time", { class: "starts", datetime: next.starts, title: when(next.starts) }, shortIn(next.starts, s.timezone)), " to be ready by then)"]
        : null,
    ),
    button(s ? "Edit schedule" : "Set a schedule", "schedule", key, {
      class: "link",
      busy,
      disabled: norecord,
      why: norecord && !busy ? whyId : undefined,
      "aria-label": s ? `Edit the schedule of ${name}` : `Set a schedule for ${name}`,
    }),
    norecord ? h("p", { class: "why", id: whyId }, "Schedule: snapwake keeps no record of this agent yet; wake it once first") : null,
  );
}

/** The idle times an owner picks from ("" is the deployment's; 0 never), in minutes. */
const IDLE_CHOICES = [
  ["", "the deployment's time"],
  ["0", "never"],
  ["5", "5 minutes"],
  ["15", "15 minutes"],
  ["30", "30 minutes"],
  ["60", "1 hour"],
  ["120", "2 hours"],
  ["240", "4 hours"],
];

/**
 * Idle sleep (docs/idle.md): how long the agent may go unused before it is put to sleep, and,
 * while it is awake, when that is. A temporary agent keeps no snapshot: idle sleep would lose
 * its work, so it is off and says why. An agent snapwake keeps no record of yet cannot be set.
 */
function idleLine(agent, key, busy) {
  const id = `idle-${slug(key)}`;
  if (agent.retention !== "recoverable") {
    return h("p", { class: "idle muted" }, "Idle sleep: off — a temporary agent keeps no snapshot, so its work would be lost");
  }
  if (!agent.etag) return null;
  const own = agent.idle_minutes;
  const value = own === undefined || own === null ? "" : String(own);
  const choices = IDLE_CHOICES.some(([v]) => v === value) ? IDLE_CHOICES : [...IDLE_CHOICES, [value, `${value} minutes`]];
  const at = agent.idle_sleep_at;
  return h(
    "div",
    { class: "idle" },
    h("label", { for: id }, "Put to sleep when unused for"),
    h(
      "select",
      { id, disabled: busy, "aria-describedby": at ? `${id}-when` : undefined, dataset: { key, action: "idle", focus: `idle:${key}` } },
      choices.map(([v, label]) => h("option", { value: v, selected: v === value }, label)),
    ),
    at ? h("p", { class: "muted", id: `${id}-when` }, "Sleeps ", timeEl(at, shortWhen(at)), ` (${relative(at)}) unless it is used`) : null,
  );
}

function card(agent, ctx) {
  const key = keyOf(agent);
  const busy = ctx.busy.get(key);
  const problem = ctx.problems.get(key);
  const titleId = `t-${slug(key)}`;
  const shown = shownState(agent);
  const failure = busy ? null : wakeFailure(agent, problem);
  const name = agentName(agent);
  const showOwner = ctx.showOwners;
  return h(
    "li",
    {},
    h(
      "article",
      { class: `card state-${shown}`, "aria-labelledby": titleId, "aria-busy": busy ? "true" : "false", tabindex: "-1", dataset: { key } },
      h(
        "header",
        { class: "card-head" },
        h("h3", { id: titleId }, agentName(agent)),
        h("span", { class: `badge badge-${shown}` }, busy?.badge || STATE_LABELS[shown] || shown),
      ),
      h(
        "p",
        { class: "meta" },
        h("span", { class: "chip" }, KINDS[agent.kind] || agent.kind),
        h("span", {}, agent.retention === "recoverable" ? "Recoverable" : "Temporary"),
        showOwner ? h("span", {}, agent.owner ? `Owner: ${agent.owner}` : "No owner recorded") : null,
      ),
      // A session a failed wake left behind is not the agent's: it is shown asleep.
      shown === agent.state || !agent.session ? sessionLine(agent) : h("p", { class: "muted" }, "No live session"),
      agent.wake?.state === "waking" && agent.wake.reason === "SNAPSHOT_IN_PROGRESS"
        ? h("p", { class: "progress" }, "AgentKit is still saving the last session; the agent wakes from it as soon as it is ready")
        : null,
      agent.state === "unknown"
        ? h("p", { class: "wake-error" }, h("strong", {}, "AgentKit reports an unexpected status"), `: ${agent.session?.status || "none"}. Nothing is started beside it; try again later, or delete the agent.`)
        : null,
      snapshotList(agent, key, Boolean(busy)),
      scheduleLine(agent, key, Boolean(busy)),
      idleLine(agent, key, Boolean(busy)),
      busy ? h("p", { class: "progress", id: busyId(key) }, h("span", { class: "spinner", "aria-hidden": "true" }), busy.progress || busy.label) : null,
      failure ? failureNotice(failure, agent, key) : problem && !(problem.verb === "wake" && shown === "awake") ? problemBox(problem, key) : null,
      actions(agent, shown, key, ctx, Boolean(failure)),
      h(
        "footer",
        { class: "card-foot" },
        h("code", { class: "agent-id", title: "Agent id" }, agent.agent_id),
        button(busy?.verb === "delete" ? busy.label : "Delete agent", "delete-agent", key, {
          class: "link danger-text",
          busy: Boolean(busy),
          "aria-label": `Delete agent ${name}`,
        }),
      ),
    ),
  );
}

/** Replace `container`'s content with the agents, grouped by state, keeping focus in place. */
export function render(container, agents, ctx) {
  const focused = document.activeElement?.dataset?.focus;
  const focusedCard = document.activeElement?.closest?.("article.card")?.dataset.key;
  const sections = [];
  for (const group of GROUPS) {
    const members = agents.filter((a) => group.states.includes(shownState(a)));
    if (!members.length) continue;
    sections.push(
      h(
        "section",
        { class: `group group-${group.id}`, "aria-labelledby": `g-${group.id}` },
        h("h2", { id: `g-${group.id}` }, group.title, h("span", { class: "count" }, ` ${members.length}`)),
        h("ul", { class: "cards" }, members.map((a) => card(a, ctx))),
      ),
    );
  }
  const others = agents.filter((a) => !GROUPS.some((g) => g.states.includes(shownState(a))));
  if (others.length) {
    sections.push(h("section", { class: "group" }, h("h2", {}, "Other"), h("ul", { class: "cards" }, others.map((a) => card(a, ctx)))));
  }
  if (!agents.length && ctx.emptyTitle) {
    sections.push(h("div", { class: "empty" }, h("h2", {}, ctx.emptyTitle), h("p", {}, ctx.emptyText)));
  }
  container.replaceChildren(...sections);
  if (focused) {
    const again = container.querySelector(`[data-focus="${CSS.escape(focused)}"]`);
    if (again && !again.disabled) {
      again.focus();
      return;
    }
  }
  if (focusedCard) container.querySelector(`article[data-key="${CSS.escape(focusedCard)}"]`)?.focus();
}

export { count };
