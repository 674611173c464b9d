// My Agents: the page's state, what each button does, and who is calling. Reads config.json
// beside the page (docs/console.md): `mode: "local"` against `snapwake serve` (identity from
// the "signed in as" picker), or `oidc` when deployed (a bearer token from the provider).

import { Api, Problem, sleep } from "./api.js";
import { h, keyOf, problemBox, render, extension } from "./cards.js";
import { confirmDialog, createDialog } from "./dialogs.js";
import { scheduleDialog } from "./schedule-dialog.js";
import { agentName, count, duration, shortWhen, until, when } from "./format.js";
import { localSession } from "./identity.js";
import { oidcSession } from "./auth.js";
import { tabs } from "./tabs.js";
import { usageView } from "./usage.js";

const $ = (id) => document.getElementById(id);

const state = {
  config: null,
  session: null,
  api: null,
  agents: [],
  listing: null,
  admin: false,
  caps: null,
  // What is listed: mine, one owner's, or everyone's a page at a time (admins).
  scope: { mode: "mine", owner: "", limit: 20, page: 1, cursors: [null] },
  busy: new Map(), // agent key → {verb, label, badge, progress}: one action at a time per agent
  problems: new Map(), // agent key → the Problem its last action ended with
  retries: new Map(), // agent key → how to run that action again
  generation: 0, // bumped when the identity changes: late answers for the old one are dropped
  signInProblem: null, // why the sign-in this page came back from failed (deployed)
  schedules: null, // the schedule editor
  views: null, // the tabs: "agents" or "usage"
  usage: null, // the Usage view
};

function announce(text) {
  $("status").textContent = text;
}

/** "trying again in N s…", never "in 0 s". */
const retryNote = (p, ms) => `${p.title}: trying again in ${Math.max(1, Math.round(ms / 1000))} s…`;

function showProblem(problem, retry) {
  const box = $("problem");
  box.hidden = !problem;
  if (!problem) return box.replaceChildren();
  const content = problemBox(problem, null);
  if (problem.status === 401 && state.config?.mode === "oidc") {
    // The token was refused (expired, most often): sign-in is a click, never automatic, so a
    // token the API keeps refusing cannot send the page round the provider in a loop.
    const again = h("button", { type: "button" }, "Sign in again");
    again.addEventListener("click", () => state.session.signIn().catch((e) => showProblem(e)));
    content.append(again);
  } else if (problem.retryable && retry) {
    const again = h("button", { type: "button", class: "secondary" }, "Try again");
    again.addEventListener("click", retry);
    content.append(again);
  }
  box.replaceChildren(...content.childNodes);
}

function draw() {
  const listing = state.listing;
  const notes = [];
  if (listing?.partial?.length) {
    notes.push(`Some agents could not be read just now (${count(listing.partial.length, "Tool")}): the list may be incomplete.`);
  }
  const mode = state.scope.mode;
  // Everyone's agents come in pages (the pager); one owner's stop at the API's limit.
  if (listing?.truncated && mode !== "everyone") notes.push("Only the newest agents are shown.");
  render($("agents"), state.agents, {
    busy: state.busy,
    problems: state.problems,
    maxTtlS: Number(state.config?.max_ttl_s) || 28800,
    showOwners: mode !== "mine",
    // Only a listing that arrived can say there are none (not a failed one, not signed out).
    emptyTitle: !listing ? null : mode === "mine" ? "No agents yet" : "No agents here",
    emptyText: mode === "mine" ? "Create one with New agent." : "Nobody's agents match.",
  });
  if (notes.length) $("agents").prepend(h("p", { class: "note" }, notes.join(" ")));
  const pager = $("pager");
  pager.hidden = !(state.admin && mode === "everyone");
  // The label says why a pager button is off (each disabled one is described by it).
  const first = state.scope.page <= 1;
  const last = !listing?.next_cursor;
  const where = first && last ? " (the only one)" : first ? " (the first)" : last ? " (the last)" : "";
  $("page-label").textContent = `Page ${state.scope.page}${where}`;
  for (const [id, off] of [["first-page", first], ["next-page", last]]) {
    $(id).disabled = off;
    if (off) $(id).setAttribute("aria-describedby", "page-label");
    else $(id).removeAttribute("aria-describedby");
  }
}

function query() {
  const s = state.scope;
  if (s.mode === "owner") return { owner: s.owner };
  if (s.mode === "everyone") return { owner: "*", limit: s.limit, cursor: s.cursors[s.page - 1] };
  return {};
}

/** List the agents in scope; true when the listing arrived. */
async function load({ announceDone = false, keepProblem = false } = {}) {
  const generation = state.generation;
  $("agents").setAttribute("aria-busy", "true");
  try {
    const res = await state.api.list(query(), { onRetry: (p, ms) => announce(retryNote(p, ms)) });
    if (generation !== state.generation) return false;
    state.listing = res.body;
    state.agents = res.body.agents || [];
    if (!keepProblem) showProblem(null);
    if (announceDone) announce(`${count(state.agents.length, "agent")} listed.`);
    return true;
  } catch (e) {
    if (generation !== state.generation) return false;
    // The live region must not keep saying "trying again" (or an old count) once it failed.
    announce("");
    if (!handleAuth(e)) showProblem(e, () => load({ announceDone: true }));
    return false;
  } finally {
    if (generation === state.generation) {
      $("agents").setAttribute("aria-busy", "false");
      draw();
    }
  }
}

/** A 401 in deployed mode: the token is no longer good; sign in again. */
function handleAuth(e) {
  if (!(e instanceof Problem) || e.status !== 401 || state.config.mode === "local") return false;
  state.session.forget();
  signedOut(e);
  return true;
}

const find = (key) => state.agents.find((a) => keyOf(a) === key);

function apply(view) {
  const key = keyOf(view);
  const i = state.agents.findIndex((a) => keyOf(a) === key);
  if (i >= 0) state.agents[i] = view;
  else state.agents.unshift(view);
}

/**
 * Run one action on one agent. While it runs the agent's buttons do nothing more (however
 * often they are clicked) and its card says what is happening; the live region announces the
 * start, any progress and the end.
 */
async function act(agent, verb, words, run) {
  const key = keyOf(agent);
  if (state.busy.has(key)) return;
  const generation = state.generation;
  state.problems.delete(key);
  state.retries.set(key, () => act(find(key) || agent, verb, words, run));
  state.busy.set(key, { verb, label: words.busy, badge: words.badge, progress: words.busy });
  announce(words.start);
  draw();
  const hooks = {
    onProgress: (view) => {
      const b = state.busy.get(key);
      if (!b || generation !== state.generation) return;
      b.progress = words.progress?.(view) ?? b.progress;
      announce(b.progress);
      draw();
    },
    onRetry: (p, ms) => {
      const b = state.busy.get(key);
      if (!b) return;
      b.progress = retryNote(p, ms);
      announce(b.progress);
      draw();
    },
  };
  try {
    const view = await run(hooks);
    if (generation !== state.generation) return;
    if (view === null) state.agents = state.agents.filter((a) => keyOf(a) !== key);
    else if (view) apply(view);
    state.retries.delete(key);
    announce(words.done(view));
  } catch (e) {
    if (generation !== state.generation) return;
    if (handleAuth(e)) return;
    announce(`${words.failed}: ${e.title}. ${e.detail}`);
    if ([404, 410].includes(e.status)) {
      // Gone (or never the caller's): its card goes with the next listing, so say it above.
      showProblem(new Problem({ ...e, title: e.title, detail: `${agentName(agent)}: ${e.detail}`, retryable: false }, e.status));
      state.busy.delete(key);
      await load({ keepProblem: true });
    } else {
      e.shownAt = Date.now();
      e.verb = verb;
      state.problems.set(key, e);
      // Changed since it was shown (If-Match): show it as it is now, the problem on its card.
      if (e.status === 412) {
        state.busy.delete(key);
        await load();
      }
    }
  } finally {
    if (generation === state.generation) {
      state.busy.delete(key);
      draw();
    }
  }
}


/**
 * Wake `agent`. `again`: "Try again" on a failure the page knows only from the agent's view
 * (after a reload). A failed wake stays the answer for its Retry-After, so the first answer
 * may be that same failure: when the agent's record still shows it (the same `since`), ask
 * once more after the Retry-After, which starts the new wake.
 */
function wake(agent, { again = false } = {}) {
  const name = agentName(agent);
  return act(agent, "wake", {
    busy: "Waking…",
    badge: "Waking",
    start: `Waking ${name}…`,
    progress: (v) =>
      v?.wake?.reason === "SNAPSHOT_IN_PROGRESS"
        ? `${name} is still waking: AgentKit is still saving the last session, and the agent wakes from it as soon as it is ready…`
        : `${name} is still waking${v?.wake?.since ? ` (since ${shortWhen(v.wake.since)})` : ""}: its session is starting…`,
    done: () => `${name} is awake.`,
    failed: `${name} did not wake`,
  }, async (hooks) => {
    try {
      return await state.api.resume(agent, hooks);
    } catch (e) {
      if (!again || !(e instanceof Problem) || e.status !== 502 || !e.retryable) throw e;
      const now = (await state.api.call("GET", Api.path(agent), {}, hooks)).body;
      if (now?.wake?.state !== "failed" || now.wake.since !== agent.wake?.since) throw e;
      await sleep(e.retryAfter ?? 3000);
      return state.api.resume(agent, hooks);
    }
  });
}

function sleepNow(agent) {
  const name = agentName(agent);
  return act(agent, "sleep", {
    busy: "Going to sleep…",
    badge: "Going to sleep",
    start: `Putting ${name} to sleep: saving its workspace…`,
    progress: () => `${name}: still saving its workspace…`,
    done: () => `${name} is asleep; its workspace is saved in a snapshot.`,
    failed: `${name} did not go to sleep`,
  }, (hooks) => state.api.sleep(agent, hooks));
}

function keepAwake(agent, hours) {
  const name = agentName(agent);
  const ttl = extension(agent, hours, Number(state.config.max_ttl_s) || 28800);
  if (!ttl) return;
  return act(agent, `keep${hours}`, {
    busy: "Keeping awake…",
    start: `Keeping ${name} awake ${duration(ttl * 1000)} from now…`,
    done: (v) => `${name} stays awake until ${shortWhen(v?.session?.expire_at)}.`,
    failed: `${name} could not be kept awake`,
  }, (hooks) => state.api.keepalive(agent, ttl, hooks));
}

/** Idle sleep's time for `agent` (docs/idle.md): "" the deployment's, "0" never, else minutes. */
function setIdle(agent, value) {
  const name = agentName(agent);
  const minutes = value === "" ? null : Number(value);
  return act(agent, "idle", {
    busy: "Saving…",
    start: `Changing when ${name} is put to sleep unused…`,
    done: () =>
      minutes === null
        ? `${name} is put to sleep after the deployment's idle time.`
        : minutes === 0
          ? `${name} is never put to sleep for being unused.`
          : `${name} is put to sleep after ${duration(minutes * 60_000)} unused.`,
    failed: `The idle time of ${name} was not changed`,
  }, async (hooks) => {
    await state.api.setIdle(agent, minutes, hooks);
    const fresh = await state.api.call("GET", Api.path(agent), {}, hooks);
    return fresh.body;
  });
}

async function deleteAgent(agent) {
  const name = agentName(agent);
  const snaps = agent.snapshots || [];
  const lost = [];
  if (agent.session) lost.push(h("li", {}, `Its running session ends now${agent.session.expire_at ? ` (it would have run until ${shortWhen(agent.session.expire_at)})` : ""}.`));
  if (snaps.length) {
    lost.push(h("li", {}, `${snaps.length === 1 ? "Its snapshot" : `All ${snaps.length} of its snapshots`} (the newest from ${when(snaps[0].created_at) || "an unknown date"}) and the workspace saved in ${snaps.length === 1 ? "it" : "them"}.`));
  }
  lost.push(h("li", {}, "The agent itself: it cannot be woken or brought back."));
  const ok = await confirmDialog({
    title: `Delete ${name}?`,
    body: [h("p", {}, "This deletes, for good:"), h("ul", {}, lost)],
    ok: "Delete agent",
  });
  if (!ok) return;
  await act(agent, "delete", {
    busy: "Deleting…",
    badge: "Deleting",
    start: `Deleting ${name}…`,
    done: () => `Deleted ${name}.`,
    failed: `${name} was not deleted`,
  }, async (hooks) => {
    await state.api.deleteAgent(agent, hooks);
    return null;
  });
  if (!find(keyOf(agent))) $("main").focus();
}

async function deleteSnapshot(agent, snapshotId) {
  const name = agentName(agent);
  const snap = (agent.snapshots || []).find((s) => s.snapshot_id === snapshotId);
  const ready = (agent.snapshots || []).filter((s) => s.status === "Ready" || !s.status);
  const body = [h("p", {}, `The workspace ${name} saved ${snap?.created_at ? `on ${when(snap.created_at)}` : "in it"} is deleted for good.`)];
  if (agent.state === "asleep" && ready.length === 1 && ready[0].snapshot_id === snapshotId) {
    body.push(h("p", { class: "warning" }, `It is ${name}'s only way back: without it, ${name} can no longer be woken.`));
  } else if ((agent.snapshots || []).length > 1) {
    body.push(h("p", {}, `${name} keeps its other ${count(agent.snapshots.length - 1, "snapshot")}.`));
  }
  const ok = await confirmDialog({ title: `Delete a snapshot of ${name}?`, body, ok: "Delete snapshot" });
  if (!ok) return;
  await act(agent, "delete-snapshot", {
    busy: "Deleting snapshot…",
    start: `Deleting the snapshot of ${name}…`,
    done: () => `Deleted the snapshot of ${name}.`,
    failed: `The snapshot of ${name} was not deleted`,
  }, async (hooks) => {
    await state.api.deleteSnapshot(agent, snapshotId, hooks);
    const fresh = await state.api.call("GET", Api.path(agent), {}, hooks);
    return fresh.body;
  });
}

$("agents").addEventListener("click", (e) => {
  const button = e.target.closest("button[data-action]");
  if (!button || button.disabled || button.getAttribute("aria-disabled") === "true") return;
  const key = button.dataset.key;
  const agent = find(key);
  if (!agent) return;
  switch (button.dataset.action) {
    case "wake":
      return wake(agent);
    case "sleep":
      return sleepNow(agent);
    case "keep":
      return keepAwake(agent, Number(button.dataset.hours));
    case "delete-agent":
      return deleteAgent(agent);
    case "delete-snapshot":
      return deleteSnapshot(agent, button.dataset.snapshot);
    case "schedule":
      return state.schedules.open(agent);
    case "retry": {
      // A failed wake stays the answer for its Retry-After (everyone polling it learns how it
      // ended); a retry after that is a new wake. So "Try again" waits out what is left of it.
      const shown = state.problems.get(key);
      const left = shown?.shownAt ? (shown.retryAfter ?? 0) - (Date.now() - shown.shownAt) : 0;
      // After a reload the failed wake is only in the agent's view: wake it again.
      const again = () => (state.retries.get(key) ?? (() => wake(find(key) || agent, { again: true })))();
      return left > 0 ? sleep(left).then(again) : again();
    }
    default:
  }
});

$("agents").addEventListener("change", (e) => {
  const select = e.target.closest("select[data-action='idle']");
  const agent = select && find(select.dataset.key);
  if (agent) setIdle(agent, select.value);
});

// ---- Admins: whose agents, and everyone's a page at a time.

function readFilter() {
  const form = $("admin-filter");
  const mode = form.querySelector('input[name="scope"]:checked').value;
  const owner = $("owner-id").value.trim();
  if (mode === "owner" && !owner) {
    $("owner-id").focus();
    return null;
  }
  return { mode, owner, limit: Number($("page-size").value), page: 1, cursors: [null] };
}

$("admin-filter").addEventListener("submit", (e) => {
  e.preventDefault();
  const scope = readFilter();
  if (!scope) return;
  state.scope = scope;
  announce("Loading agents…");
  refresh();
});
$("owner-id").addEventListener("input", () => {
  $("admin-filter").querySelector('input[value="owner"]').checked = true;
});
$("next-page").addEventListener("click", () => {
  const next = state.listing?.next_cursor;
  if (!next) return;
  const s = state.scope;
  s.cursors[s.page] = next;
  s.page += 1;
  load({ announceDone: true });
});
$("first-page").addEventListener("click", () => {
  state.scope.page = 1;
  load({ announceDone: true });
});
/** List the agents again, and the usage too (now if it is shown); the view shown announces. */
function refresh() {
  const usage = state.views.current === "usage";
  load({ announceDone: !usage });
  state.usage.refresh({ announceDone: usage });
}
$("refresh").addEventListener("click", refresh);

// ---- Who is calling.

function signedOut(problem) {
  state.agents = [];
  state.listing = null;
  $("signed-out").hidden = false;
  $("new-agent").hidden = true;
  $("refresh").hidden = true;
  $("admin-filter").hidden = true;
  $("agents").replaceChildren();
  $("pager").hidden = true;
  $("views").hidden = true;
  $("panel-usage").hidden = true;
  $("sign-in").hidden = false;
  $("sign-out").hidden = true;
  $("oidc-user").textContent = "";
  announce("");
  showProblem(problem || null);
}

/** Start (again) as whoever the session says is calling. */
async function begin() {
  state.generation += 1;
  const generation = state.generation;
  state.agents = [];
  state.listing = null;
  state.caps = null;
  state.admin = false;
  state.busy.clear();
  state.problems.clear();
  state.scope = { mode: "mine", owner: "", limit: 20, page: 1, cursors: [null] };
  $("admin-filter").reset();
  $("agents").replaceChildren();
  state.usage.reset();
  showProblem(null);
  if (!state.session.signedIn) return signedOut(state.signInProblem);
  $("signed-out").hidden = true;
  $("views").hidden = false;
  state.views.select(state.views.current);
  $("new-agent").hidden = false;
  $("refresh").hidden = false;
  announce(`Loading the agents of ${state.session.label()}…`);
  const admin = state.session.admin;
  state.admin = admin;
  const loaded = await load();
  if (generation !== state.generation || !state.session.signedIn) return;
  $("admin-filter").hidden = !admin;
  // Usage names the agents the listing knows, so it is asked for after it.
  if (state.views.current === "usage") state.usage.show();
  if (loaded) announce(`${state.session.label()}${admin ? " (admin)" : ""}: ${count(state.agents.length, "agent")}.`);
  draw();
}

async function capabilities() {
  if (!state.caps) state.caps = (await state.api.capabilities()).body;
  return state.caps;
}

async function main() {
  let config;
  try {
    const res = await fetch("config.json", { cache: "no-store" });
    if (!res.ok) throw new Error(`config.json answered ${res.status}`);
    config = await res.json();
  } catch (e) {
    showProblem(new Problem({ title: "The page is not configured", detail: `${e.message}; see docs/console.md.` }));
    return;
  }
  state.config = config;
  const mode = config.mode || (config.oidc ? "oidc" : "local");
  config.mode = mode;
  if (mode === "oidc") {
    state.session = oidcSession(config);
    $("oidc-identity").hidden = false;
    $("sign-in").addEventListener("click", () => state.session.signIn().catch((e) => showProblem(e)));
    $("sign-out").addEventListener("click", () => state.session.signOut());
    try {
      await state.session.start();
    } catch (e) {
      state.signInProblem = e;
    }
    if (state.session.signedIn) {
      $("oidc-user").textContent = `Signed in as ${state.session.label()}`;
      $("sign-in").hidden = true;
      $("sign-out").hidden = false;
    }
  } else {
    state.session = localSession(config, () => begin());
  }
  state.api = new Api(config.api_base || "", () => state.session.headers());
  state.usage = usageView({
    api: state.api,
    announce,
    owner: () => ({ owner: state.scope.owner, everyone: "*" })[state.scope.mode] ?? null,
    nameOf: (row) => {
      const agent = find(keyOf(row));
      return agent ? agentName(agent) : null;
    },
    showOwners: () => state.scope.mode !== "mine",
    onProblem: handleAuth,
  });
  state.views = tabs($("views"), (view) => (view === "usage" ? state.usage.show() : state.usage.hide()));
  const dialog = createDialog({
    api: state.api,
    capabilities,
    announce,
    onCreated: (view) => {
      apply(view);
      draw();
      load();
    },
  });
  $("new-agent").addEventListener("click", () => dialog.open());
  state.schedules = scheduleDialog({
    api: state.api,
    announce,
    onSaved: (agent, schedule) => {
      const now = find(keyOf(agent));
      if (now) now.schedule = schedule;
      draw();
    },
  });
  await begin();
  // Times such as "in 7 h 58 min" move on: redraw now and then (no request).
  setInterval(() => {
    if (state.agents.some((a) => a.session && until(a.session.expire_at) !== null)) draw();
  }, 60_000);
}

main();
