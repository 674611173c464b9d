//! The usage report (docs/usage.md): day rows and what the records still have open, summed by
//! day or by agent over a range of days, priced, as JSON or CSV.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::domain::usage::{day_name, tally_open, Tally, DAY_S};
use crate::domain::{AgentKey, AgentRecord, Kind};
use crate::store::UsageRow;

/// How a report's lines are cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    Day,
    Agent,
}

impl By {
    pub fn as_str(self) -> &'static str {
        match self {
            By::Day => "day",
            By::Agent => "agent",
        }
    }
}

/// The deployment's prices (`SNAPWAKE_PRICES`, docs/usage.md). Sandbox-hours of a kind
/// without a price cost nothing in the report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prices {
    pub currency: String,
    pub per_sandbox_hour: BTreeMap<Kind, f64>,
    /// Per GB-month of snapshot, and the size a snapshot is taken to be (AgentKit does not say).
    pub snapshot: Option<SnapshotPrice>,
}

// Prices are finite and never NaN (`parse_prices` refuses anything else), so equality is one.
impl Eq for Prices {}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SnapshotPrice {
    pub per_gb_month: f64,
    pub gb_per_snapshot: f64,
}

/// A month, for snapshot storage: 30 days.
const MONTH_S: f64 = 30.0 * DAY_S as f64;

/// A report's money: what was awake, what the reference Studio would have run, and the
/// wakeable snapshot kept while asleep.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cost {
    pub awake: f64,
    pub reference: f64,
    pub snapshots: f64,
}

impl Cost {
    fn of(tally: &Tally, kind: Kind, prices: &Prices) -> Cost {
        let hourly = prices.per_sandbox_hour.get(&kind).copied().unwrap_or(0.0);
        let hours = |s: u64| s as f64 / 3_600.0;
        Cost {
            awake: hours(tally.awake_s()) * hourly,
            reference: hours(tally.reference_s) * hourly,
            snapshots: prices.snapshot.map_or(0.0, |p| {
                tally.asleep_s as f64 / MONTH_S * p.gb_per_snapshot * p.per_gb_month
            }),
        }
    }

    fn add(&mut self, other: &Cost) {
        self.awake += other.awake;
        self.reference += other.reference;
        self.snapshots += other.snapshots;
    }
}

/// One line's sums.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Entry {
    pub tally: Tally,
    pub cost: Cost,
}

impl Entry {
    fn add(&mut self, other: &Entry) {
        self.tally.add(&other.tally);
        self.cost.add(&other.cost);
    }
}

/// What a line is of.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Line {
    Day(u64),
    Agent {
        agent: AgentKey,
        owner: Option<String>,
    },
}

/// A report, ready to be written as JSON or CSV.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub from: u64,
    pub to: u64,
    pub by: By,
    /// The owner asked about (`*`: everyone).
    pub owner: String,
    pub lines: Vec<(Line, Entry)>,
    pub total: Entry,
    pub prices: Option<Prices>,
}

/// What a report is asked for.
#[derive(Clone, Debug)]
pub struct Asked<'a> {
    pub from: u64,
    pub to: u64,
    pub by: By,
    pub owner: String,
    pub now_s: u64,
    pub prices: Option<&'a Prices>,
}

/// The report of `rows` (the days' rows of the agents asked about) and `records` (those agents'
/// records, whose marks hold what no change has closed yet).
pub fn report(asked: &Asked, rows: &[UsageRow], records: &[AgentRecord]) -> Report {
    let parts = parts(rows, records, asked.now_s);
    let mut lines: BTreeMap<Line, Entry> = BTreeMap::new();
    if asked.by == By::Day {
        for day in asked.from..=asked.to {
            lines.insert(Line::Day(day), Entry::default());
        }
    }
    let mut total = Entry::default();
    for part in parts
        .iter()
        .filter(|p| (asked.from..=asked.to).contains(&p.day))
    {
        let entry = Entry {
            tally: part.tally,
            cost: asked
                .prices
                .map_or_else(Cost::default, |p| Cost::of(&part.tally, part.agent.kind, p)),
        };
        let line = match asked.by {
            By::Day => Line::Day(part.day),
            By::Agent => Line::Agent {
                agent: part.agent.clone(),
                owner: part.owner.clone(),
            },
        };
        lines.entry(line).or_default().add(&entry);
        total.add(&entry);
    }
    Report {
        from: asked.from,
        to: asked.to,
        by: asked.by,
        owner: asked.owner.clone(),
        lines: lines.into_iter().collect(),
        total,
        prices: asked.prices.cloned(),
    }
}

/// What a report sums: the day rows, and what each record's mark still has open at `now_s`.
pub fn parts(rows: &[UsageRow], records: &[AgentRecord], now_s: u64) -> Vec<UsageRow> {
    let mut parts: Vec<UsageRow> = rows.to_vec();
    for record in records {
        let Some(mark) = record.usage else { continue };
        for (day, tally) in tally_open(&mark, now_s) {
            parts.push(UsageRow {
                day,
                owner_key: String::new(),
                owner: record.description.owner.clone(),
                agent: record.key.clone(),
                tally,
            });
        }
    }
    parts
}

/// Money to the cent's hundredth: what a person reads, without a float's tail.
fn money(v: f64) -> f64 {
    (v * 10_000.0).round() / 10_000.0
}

impl Report {
    fn entry_json(&self, entry: &Entry) -> Value {
        let t = &entry.tally;
        let mut out = json!({
            "awake_s": {
                "person": t.awake_person_s,
                "schedule": t.awake_schedule_s,
                "agentkit": t.awake_agentkit_s,
                "total": t.awake_s(),
            },
            "asleep_s": t.asleep_s,
            "reference_s": t.reference_s,
            "saved_s": t.saved_s(),
            "wakes": t.wakes,
            "creates": t.creates,
            "failed_wakes": t.failed_wakes,
            "sleeps": {
                "person": t.sleeps_person,
                "schedule": t.sleeps_schedule,
                "idle": t.sleeps_idle,
                "agentkit": t.sleeps_agentkit,
            },
            "snapshots": t.snapshots,
        });
        if self.prices.is_some() {
            let c = &entry.cost;
            out["cost"] = json!({
                "awake": money(c.awake),
                "reference": money(c.reference),
                "saved": money(c.reference - c.awake),
                "snapshots": money(c.snapshots),
            });
        }
        out
    }

    /// The report as `GET /v1/usage` answers it in JSON.
    pub fn to_json(&self) -> Value {
        let lines: Vec<Value> = self
            .lines
            .iter()
            .map(|(line, entry)| {
                let mut v = self.entry_json(entry);
                match line {
                    Line::Day(day) => v["day"] = json!(day_name(*day)),
                    Line::Agent { agent, owner } => {
                        v["kind"] = json!(agent.kind);
                        v["agent_id"] = json!(agent.agent_id);
                        v["owner"] = json!(owner);
                    }
                }
                v
            })
            .collect();
        let prices = self.prices.as_ref().map(|p| {
            json!({
                "currency": p.currency,
                "per_sandbox_hour": p.per_sandbox_hour,
                "per_snapshot_gb_month": p.snapshot.map(|s| s.per_gb_month),
                "gb_per_snapshot": p.snapshot.map(|s| s.gb_per_snapshot),
            })
        });
        json!({
            "from": day_name(self.from),
            "to": day_name(self.to),
            "by": self.by.as_str(),
            "owner": self.owner,
            "prices": prices,
            "rows": lines,
            "total": self.entry_json(&self.total),
        })
    }

    /// The report as CSV: a header, then a line per day or agent (no total: a sheet sums).
    pub fn to_csv(&self) -> Result<String, csv::Error> {
        let mut out = csv::Writer::from_writer(Vec::new());
        let mut header: Vec<&str> = match self.by {
            By::Day => vec!["day"],
            By::Agent => vec!["kind", "agent_id", "owner"],
        };
        header.extend(Tally::FIELDS);
        header.extend(["awake_s", "saved_s"]);
        if self.prices.is_some() {
            header.extend([
                "cost_awake",
                "cost_reference",
                "cost_saved",
                "cost_snapshots",
            ]);
        }
        out.write_record(&header)?;
        for (line, entry) in &self.lines {
            let mut record: Vec<String> = match line {
                Line::Day(day) => vec![day_name(*day)],
                Line::Agent { agent, owner } => vec![
                    agent.kind.to_string(),
                    agent.agent_id.clone(),
                    owner.clone().unwrap_or_default(),
                ],
            };
            let t = &entry.tally;
            record.extend(t.values().iter().map(u64::to_string));
            record.extend([t.awake_s().to_string(), t.saved_s().to_string()]);
            if self.prices.is_some() {
                let c = &entry.cost;
                record.extend(
                    [c.awake, c.reference, c.reference - c.awake, c.snapshots]
                        .map(|v| money(v).to_string()),
                );
            }
            out.write_record(&record)?;
        }
        let bytes = out.into_inner().map_err(|e| e.into_error())?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// `SNAPWAKE_PRICES`: `codex=0.12,openclaw=0.10,hermes=0.08` (per sandbox-hour), and
/// optionally `snapshot_gb_month=0.05` with `gb_per_snapshot=2`. Empty: no prices.
pub fn parse_prices(spec: &str, currency: &str) -> Result<Option<Prices>, String> {
    let mut prices = Prices {
        currency: currency.to_string(),
        ..Prices::default()
    };
    let (mut gb_month, mut gb) = (None, None);
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = part
            .split_once('=')
            .ok_or_else(|| format!("{part:?} is not name=price"))?;
        let value: f64 = value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("{part:?}: the price is not a number ≥ 0"))?;
        match name.trim() {
            "snapshot_gb_month" => gb_month = Some(value),
            "gb_per_snapshot" => gb = Some(value),
            kind => {
                let kind: Kind = kind.parse().map_err(|e| format!("{part:?}: {e}"))?;
                prices.per_sandbox_hour.insert(kind, value);
            }
        }
    }
    prices.snapshot = match (gb_month, gb) {
        (Some(per_gb_month), Some(gb_per_snapshot)) => Some(SnapshotPrice {
            per_gb_month,
            gb_per_snapshot,
        }),
        (None, None) => None,
        _ => return Err("snapshot_gb_month and gb_per_snapshot go together".into()),
    };
    let priced = !prices.per_sandbox_hour.is_empty() || prices.snapshot.is_some();
    Ok(priced.then_some(prices))
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
