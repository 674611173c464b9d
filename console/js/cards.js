// The agents as cards, grouped by state. Pure rendering: DOM built from the page's state with
// text nodes only (never HTML from data); buttons carry data-action and data-key, and
// main.js handles their clicks in one place.

import { GROUPS, KINDS, STATE_LABELS, agentName, count, relative, shortWhen, until, when } from "./format.js";

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
  const { busy, disabled, reason, ...attrs } = extra;
  return h(
    "button",
    {
      type: "button",
      class: attrs.class || "secondary",
      "aria-label": attrs["aria-label"],
      "aria-disabled": busy ? "true" : undefined,
      disabled: disabled && !busy ? true : undefined,
      title: disabled ? reason : undefined,
      dataset: { action, key, ...(attrs.dataset || {}), focus: `${action}:${key}:${attrs.dataset?.snapshot ?? ""}:${attrs.dataset?.hours ?? ""}` },
    },
    label,
  );
}

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

function actions(agent, key, ctx) {
  const busy = ctx.busy.get(key);
  const awake = agent.state === "awake";
  const name = agentName(agent);
  const label = (verb, idle) => (busy?.verb === verb ? busy.label : idle);
  const keep = (hours) => {
    const ttl = awake ? extension(agent, hours, ctx.maxTtlS) : null;
    return button(label(`keep${hours}`, `+${hours} h`), "keep", key, {
      busy: Boolean(busy),
      disabled: !ttl,
      reason: "Already awake for the longest a session may last",
      "aria-label": `+${hours} h: keep ${name} awake ${hours} more hour${hours > 1 ? "s" : ""}`,
      dataset: { hours },
    });
  };
  return h(
    "div",
    { class: "actions" },
    button(label("wake", "Wake"), "wake", key, {
      class: "primary",
      busy: Boolean(busy),
      disabled: agent.state !== "asleep",
      reason: "Only an asleep agent can be woken",
      "aria-label": busy?.verb === "wake" ? `Waking ${name}` : `Wake ${name}`,
    }),
    awake
      ? button(label("sleep", "Sleep now"), "sleep", key, {
        busy: Boolean(busy),
        disabled: agent.retention !== "recoverable",
        reason: "A temporary agent keeps no snapshot to sleep in",
        "aria-label": `Sleep now: put ${name} to sleep`,
      })
      : null,
    awake
      ? h("span", { class: "keep", role: "group", "aria-label": `Keep ${name} awake longer` }, h("span", { class: "keep-label", "aria-hidden": "true" }, "Keep awake"), keep(1), keep(4))
      : null,
  );
}

function card(agent, ctx) {
  const key = keyOf(agent);
  const busy = ctx.busy.get(key);
  const problem = ctx.problems.get(key);
  const titleId = `t-${key.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  const failed = agent.wake?.state === "failed";
  const name = agentName(agent);
  const showOwner = ctx.showOwners;
  return h(
    "li",
    {},
    h(
      "article",
      { class: `card state-${agent.state}`, "aria-labelledby": titleId, "aria-busy": busy ? "true" : "false", tabindex: "-1", dataset: { key } },
      h(
        "header",
        { class: "card-head" },
        h("h3", { id: titleId }, agentName(agent)),
        h("span", { class: `badge badge-${agent.state}` }, busy?.badge || STATE_LABELS[agent.state] || agent.state),
      ),
      h(
        "p",
        { class: "meta" },
        h("span", { class: "chip" }, KINDS[agent.kind] || agent.kind),
        h("span", {}, agent.retention === "recoverable" ? "Recoverable" : "Temporary"),
        showOwner ? h("span", {}, agent.owner ? `Owner: ${agent.owner}` : "No owner recorded") : null,
      ),
      sessionLine(agent),
      failed
        ? h("p", { class: "wake-error" }, h("strong", {}, "Last wake failed"), agent.wake.since ? ` (${shortWhen(agent.wake.since)})` : "", `: ${agent.wake.error || "no reason given"}`)
        : null,
      agent.wake?.state === "waking" && agent.wake.reason === "SNAPSHOT_IN_PROGRESS"
        ? h("p", { class: "progress" }, "AgentKit is still saving the last session; the agent wakes from it as soon as it is ready")
        : null,
      agent.state === "unknown"
        ? h("p", { class: "wake-error" }, h("strong", {}, "AgentKit reports an unexpected status"), `: ${agent.session?.status || "none"}. Nothing is started beside it; try again later, or delete the agent.`)
        : null,
      snapshotList(agent, key, Boolean(busy)),
      busy ? h("p", { class: "progress" }, h("span", { class: "spinner", "aria-hidden": "true" }), busy.progress || busy.label) : null,
      problem ? problemBox(problem, key) : null,
      actions(agent, key, ctx),
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
    const members = agents.filter((a) => group.states.includes(a.state));
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
  const others = agents.filter((a) => !GROUPS.some((g) => g.states.includes(a.state)));
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
