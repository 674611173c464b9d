// The Usage view (docs/console.md, "Usage"): `GET /v1/usage` over the last 7 or 30 days, by
// day (the chart, its table, the totals in words) and by agent (the table), and either as CSV
// (`Accept: text/csv`), saved as a file. It asks the API only while it is shown.

import { problemBox } from "./cards.js";
import { day, hours, money } from "./format.js";
import { describe, drawChart, followColourScheme } from "./usage-chart.js";
import { agentTable, dayTable } from "./usage-table.js";

const $ = (id) => document.getElementById(id);
const DAY_MS = 86_400_000;

/** The last `n` UTC days up to today's: `{from, to}` as YYYY-MM-DD. */
export function lastDays(n, now = Date.now()) {
  const iso = (t) => new Date(t).toISOString().slice(0, 10);
  return { from: iso(now - (n - 1) * DAY_MS), to: iso(now) };
}

const rangeWords = (n) => `Last ${n} days`;

/** The totals in words: "Last 7 days: 41.5 h awake, 126 h saved." and what follows. */
function summary(report, words) {
  const t = report.total;
  const saved = t.saved_s < 0
    ? `${hours(-t.saved_s)} more than a Studio that never sleeps`
    : `${hours(t.saved_s)} saved`;
  const lead = `${words}: ${hours(t.awake_s.total)} awake, ${saved}.`;
  const more = [
    `A Studio that never puts agents to sleep would have kept them awake ${hours(t.reference_s)}.`,
    `${t.wakes} ${t.wakes === 1 ? "wake" : "wakes"}, ${t.failed_wakes} failed.`,
  ];
  const currency = report.prices?.currency;
  if (currency && t.cost) {
    more.push(`Cost: ${money(t.cost.awake, currency)} awake; ${money(t.cost.saved, currency)} saved.`);
  }
  return { lead, more: more.join(" ") };
}

/**
 * The view. `owner()`: the `owner` to ask about (null for the caller's own); `nameOf(row)`: an
 * agent's name when the page knows it; `showOwners()`: whether rows are of several owners;
 * `onProblem(problem)`: true when the page dealt with it (a sign-in that expired).
 */
export function usageView({ api, announce, owner, nameOf, showOwners, onProblem = () => false }) {
  const panel = $("panel-usage");
  const form = $("usage-controls");
  const canvas = $("usage-chart");
  let generation = 0;
  let stale = true;
  let visible = false;
  let shown = null; // {days, agents, n, from, to}: the reports on screen

  const days = () => Number(form.elements.range.value) || 7;

  function problem(e) {
    const box = $("usage-problem");
    box.hidden = !e;
    box.replaceChildren(...(e ? problemBox(e, null).childNodes : []));
  }

  async function draw() {
    const words = rangeWords(shown.n);
    const { lead, more } = summary(shown.days, words);
    $("usage-summary").replaceChildren(lead);
    $("usage-summary-more").textContent = more;
    const span = `${day(shown.from)} to ${day(shown.to)}`;
    $("usage-days-wrap").replaceChildren(dayTable(shown.days, `Hours per day, ${span}`));
    $("usage-agents-wrap").replaceChildren(agentTable(shown.agents, {
      nameOf,
      showOwner: showOwners(),
      labelledBy: "usage-agents-title",
    }));
    $("usage-agents-range").textContent = span;
    await drawChart(canvas, shown.days, describe(shown.days, words));
  }

  async function load({ announceDone = false } = {}) {
    const mine = ++generation;
    stale = false;
    const n = days();
    const { from, to } = lastDays(n);
    const query = { from, to, owner: owner() };
    panel.setAttribute("aria-busy", "true");
    if (!shown) $("usage-summary").textContent = "Loading usage…";
    try {
      const [byDay, byAgent] = await Promise.all([
        api.usage({ ...query, by: "day" }),
        api.usage({ ...query, by: "agent" }),
      ]);
      if (mine !== generation) return;
      shown = { days: byDay.body, agents: byAgent.body, n, from, to };
      problem(null);
      await draw();
      if (announceDone) announce(summary(shown.days, rangeWords(n)).lead);
    } catch (e) {
      if (mine !== generation) return;
      if (onProblem(e)) return;
      problem(e.title ? e : { title: "The chart could not be drawn", detail: e.message });
      if (!shown) $("usage-summary").textContent = "";
    } finally {
      if (mine === generation) panel.setAttribute("aria-busy", "false");
    }
  }

  /** The report of what is on screen (same days, same owner) as CSV, saved as a file. */
  async function download(by) {
    const { from, to } = shown ?? lastDays(days());
    const name = `snapwake-usage-by-${by}-${from}-${to}.csv`;
    try {
      const res = await api.usage({ from, to, by, owner: owner() }, { csv: true });
      const url = URL.createObjectURL(new Blob([res.text], { type: "text/csv;charset=utf-8" }));
      const link = Object.assign(document.createElement("a"), { href: url, download: name });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      announce(`Saved ${name}.`);
    } catch (e) {
      if (!onProblem(e)) problem(e);
    }
  }

  form.addEventListener("change", () => load({ announceDone: true }));
  form.addEventListener("submit", (e) => e.preventDefault());
  $("usage-csv-day").addEventListener("click", () => download("day"));
  $("usage-csv-agent").addEventListener("click", () => download("agent"));
  $("usage-days-toggle").addEventListener("click", (e) => {
    const show = e.currentTarget.getAttribute("aria-pressed") !== "true";
    e.currentTarget.setAttribute("aria-pressed", String(show));
    const wrap = $("usage-days-wrap");
    wrap.classList.toggle("visually-hidden", !show);
    // Shown, it may scroll sideways on a phone: the keyboard can then scroll it.
    if (show) wrap.tabIndex = 0;
    else wrap.removeAttribute("tabindex");
  });
  followColourScheme(() => {
    if (shown && visible) draw();
  });

  return {
    /** Shown (its tab chosen): ask the API unless what is on screen is still current. */
    show() {
      visible = true;
      if (stale) load();
    },
    hide() {
      visible = false;
    },
    /** What is on screen is no longer current (another owner chosen, a Refresh). */
    refresh({ announceDone = false } = {}) {
      stale = true;
      if (visible) load({ announceDone });
    },
    /** Someone else is calling: forget everything shown. */
    reset() {
      generation += 1;
      stale = true;
      shown = null;
      problem(null);
      panel.setAttribute("aria-busy", "false");
      for (const id of ["usage-summary", "usage-summary-more", "usage-agents-range"]) $(id).textContent = "";
      $("usage-days-wrap").replaceChildren();
      $("usage-agents-wrap").replaceChildren();
      window.Chart?.getChart(canvas)?.destroy();
      canvas.setAttribute("aria-label", "Chart of awake and saved hours per day");
    },
  };
}
