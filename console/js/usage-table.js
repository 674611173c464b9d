// The Usage view's tables, built with DOM calls and text nodes only: the chart's numbers day by
// day, and the report by agent. Every number cell carries the API's own value (`data-value`,
// seconds or a count) and the field it comes from (`data-field`), and shows it in words.

import { h } from "./cards.js";
import { KINDS, day, hours, money } from "./format.js";

const plain = new Intl.NumberFormat();

/** A row's value at "a.b" ("awake_s.total", "sleeps.idle"). */
export function field(row, path) {
  return path.split(".").reduce((v, k) => (v == null ? v : v[k]), row) ?? 0;
}

/**
 * A two-row head: columns with a `group` share a header spanning them (`scope=colgroup`, with
 * a matching `<colgroup>`); the rest span both rows. `lead`: the row headers' columns.
 */
function head(lead, columns) {
  const top = h("tr");
  const sub = h("tr");
  const cols = [h("colgroup", { span: lead.length })];
  for (const title of lead) top.append(h("th", { scope: "col", rowspan: 2 }, title));
  for (let i = 0; i < columns.length; ) {
    const group = columns[i].group;
    if (!group) {
      top.append(h("th", { scope: "col", rowspan: 2, class: "num" }, columns[i].head));
      cols.push(h("colgroup"));
      i += 1;
      continue;
    }
    let n = 0;
    while (columns[i + n]?.group === group) {
      sub.append(h("th", { scope: "col", class: "num" }, columns[i + n].head));
      n += 1;
    }
    top.append(h("th", { scope: "colgroup", colspan: n, class: "group" }, group));
    cols.push(h("colgroup", { span: n }));
    i += n;
  }
  return { cols, thead: h("thead", {}, top, sub) };
}

function cells(row, columns) {
  return columns.map((c) => {
    const value = field(row, c.field);
    return h("td", { class: "num", dataset: { field: c.field, value: String(value) } }, c.format(value));
  });
}

function table(caption, lead, columns, rows, total, empty) {
  const { cols, thead } = head(lead, columns);
  const body = h("tbody", {}, rows.length
    ? rows.map((r) => h("tr", { dataset: r.data }, r.heads, cells(r.row, columns)))
    : h("tr", {}, h("td", { colspan: lead.length + columns.length, class: "muted" }, empty)));
  const foot = h("tfoot", {}, h("tr", { class: "total" }, total.heads, cells(total.row, columns)));
  return h("table", { class: "usage-table" }, caption, cols, thead, body, foot);
}

const count = (v) => plain.format(v);

/** The chart's numbers: awake hours per day by what woke the agents, and hours saved. */
export function dayTable(report, captionText) {
  const columns = [
    { field: "awake_s.person", group: "Awake, woken by", head: "a person", format: hours },
    { field: "awake_s.schedule", group: "Awake, woken by", head: "schedule", format: hours },
    { field: "awake_s.agentkit", group: "Awake, woken by", head: "AgentKit", format: hours },
    { field: "awake_s.total", head: "Awake in all", format: hours },
    { field: "saved_s", head: "Saved", format: hours },
  ];
  const rows = report.rows.map((row) => ({
    row,
    data: { day: row.day },
    heads: [h("th", { scope: "row" }, h("time", { datetime: row.day }, day(row.day)))],
  }));
  const total = { row: report.total, heads: [h("th", { scope: "row" }, "All days")] };
  return table(h("caption", {}, captionText), ["Day"], columns, rows, total, "No days.");
}

/**
 * The report by agent, most awake first: awake and saved hours, wakes, sleeps by what put the
 * agent to sleep, and what it cost when the deployment has prices. `nameOf(row)` is the
 * agent's name when the page knows it; `showOwner` adds the owner's column.
 */
export function agentTable(report, { nameOf = () => null, showOwner = false, labelledBy } = {}) {
  const columns = [
    { field: "awake_s.total", head: "Awake", format: hours },
    { field: "saved_s", head: "Saved", format: hours },
    { field: "wakes", head: "Wakes", format: count },
    { field: "sleeps.idle", group: "Sleeps", head: "idle", format: count },
    { field: "sleeps.schedule", group: "Sleeps", head: "schedule", format: count },
    { field: "sleeps.person", group: "Sleeps", head: "person", format: count },
  ];
  const currency = report.prices?.currency;
  if (currency) {
    const cost = (v) => money(v, currency);
    columns.push(
      { field: "cost.awake", group: `Cost (${currency})`, head: "awake", format: cost },
      { field: "cost.saved", group: `Cost (${currency})`, head: "saved", format: cost },
    );
  }
  const lead = ["Agent", "Kind", ...(showOwner ? ["Owner"] : [])];
  const sorted = [...report.rows].sort((a, b) => field(b, "awake_s.total") - field(a, "awake_s.total")
    || String(a.agent_id).localeCompare(String(b.agent_id)));
  const rows = sorted.map((row) => {
    const name = nameOf(row);
    return {
      row,
      data: { kind: row.kind, agentId: row.agent_id },
      heads: [
        h("th", { scope: "row", class: "agent" }, name || row.agent_id,
          name ? h("small", { class: "agent-id" }, row.agent_id) : null),
        h("td", {}, KINDS[row.kind] || row.kind),
        showOwner ? h("td", { class: "owner" }, row.owner ?? "—") : null,
      ],
    };
  });
  const total = { row: report.total, heads: [h("th", { scope: "row", colspan: lead.length }, "All agents")] };
  const t = table(null, lead, columns, rows, total, "No agent was awake or asleep in these days.");
  if (labelledBy) t.setAttribute("aria-labelledby", labelledBy);
  return t;
}
