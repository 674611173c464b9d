// The Usage view's chart, drawn by Chart.js (console/vendor, loaded the first time the view is
// shown): per day, the hours agents were awake stacked by what woke them, and beside that
// stack a bar of the hours saved against a Studio that never puts agents to sleep. Colours and
// font come from the page's style sheet, light or dark; the canvas is `role=img` with its
// summary in words (`describe`), and the same numbers are in the table beside it.

import { day, hours } from "./format.js";

/** The series, bottom of the stack first; `color` names the style sheet's custom property. */
export const SERIES = [
  { key: "person", label: "Woken by a person", color: "--usage-person", stack: "awake" },
  { key: "schedule", label: "By schedule", color: "--usage-schedule", stack: "awake" },
  { key: "agentkit", label: "By AgentKit", color: "--usage-agentkit", stack: "awake" },
  { key: "saved", label: "Saved", color: "--usage-saved", stack: "saved" },
];

const seconds = (row, key) => (key === "saved" ? row.saved_s : row.awake_s?.[key]) ?? 0;

let loading = null;

/** Chart.js, loaded once: the vendored UMD build, which sets `window.Chart`. */
export function chartJs() {
  loading ??= import("../vendor/chart.umd.min.js").then(() => {
    if (typeof window.Chart !== "function") throw new Error("Chart.js did not define Chart");
    return window.Chart;
  });
  loading.catch(() => {
    loading = null; // asked again next time
  });
  return loading;
}

const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

/** The chart in words, for its `aria-label`: the range, the totals, the busiest day. */
export function describe(report, rangeWords) {
  const t = report.total;
  const span = `${rangeWords} (${day(report.from)} to ${day(report.to)})`;
  if (!t.awake_s.total && !t.saved_s) return `Bar chart of awake and saved hours per day, ${span}: no agent was awake.`;
  const busiest = report.rows.reduce((a, b) => (b.awake_s.total > a.awake_s.total ? b : a));
  const saved = t.saved_s < 0 ? `${hours(-t.saved_s)} more than a Studio that never sleeps` : `${hours(t.saved_s)} saved`;
  return `Bar chart of awake hours per day, ${span}, stacked by what woke the agents, beside the hours saved each day. `
    + `In all ${hours(t.awake_s.total)} awake (by a person ${hours(t.awake_s.person)}, by schedule `
    + `${hours(t.awake_s.schedule)}, by AgentKit ${hours(t.awake_s.agentkit)}) and ${saved}. `
    + `Most awake: ${day(busiest.day)}, ${hours(busiest.awake_s.total)}. Every day's numbers are in the table "Hours per day".`;
}

/** Chart.js's configuration for `report` (by day) at the canvas's `width`. */
function config(report, width) {
  const rows = report.rows;
  const narrow = width < 520;
  const muted = css("--muted");
  const reduced = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  return {
    type: "bar",
    data: {
      labels: rows.map((r) => day(r.day, rows.length > 10 ? "medium" : "short")),
      datasets: SERIES.map((s) => ({
        label: s.label,
        stack: s.stack,
        data: rows.map((r) => seconds(r, s.key) / 3600),
        backgroundColor: css(s.color),
        borderColor: css("--surface"),
        borderWidth: s.stack === "awake" ? { top: 1 } : 0,
        maxBarThickness: 28,
      })),
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: reduced ? false : { duration: 250 },
      interaction: { mode: "index", intersect: false },
      categoryPercentage: rows.length > 10 ? 0.85 : 0.7,
      barPercentage: 0.9,
      scales: {
        x: { stacked: true, grid: { display: false }, ticks: { color: muted, maxRotation: 0, autoSkipPadding: 6 } },
        y: {
          stacked: true,
          beginAtZero: true,
          grid: { color: css("--line") },
          border: { display: false },
          ticks: { color: muted, maxTicksLimit: 6 },
          title: { display: !narrow, text: "hours", color: muted },
        },
      },
      plugins: {
        legend: {
          position: "top",
          align: "start",
          labels: { color: css("--text"), boxWidth: 12, boxHeight: 12, padding: narrow ? 8 : 14, font: { size: narrow ? 12 : 13 } },
        },
        tooltip: {
          callbacks: {
            title: (items) => day(rows[items[0].dataIndex].day),
            label: (item) => `${item.dataset.label}: ${hours(seconds(rows[item.dataIndex], SERIES[item.datasetIndex].key))}`,
            footer: (items) => `Awake in all: ${hours(rows[items[0].dataIndex].awake_s.total)}`,
          },
        },
      },
    },
  };
}

/**
 * Draw `report` (by day) on `canvas`, replacing what it showed; `label` is its summary in
 * words. Resolves the Chart; throws when Chart.js cannot be loaded.
 */
export async function drawChart(canvas, report, label) {
  const Chart = await chartJs();
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  Chart.getChart(canvas)?.destroy();
  canvas.setAttribute("aria-label", label);
  return new Chart(canvas, config(report, canvas.parentElement.clientWidth));
}

/** Draw again when the colour scheme changes (the colours are the style sheet's). */
export function followColourScheme(redraw) {
  window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", redraw);
}
