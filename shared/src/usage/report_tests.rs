use super::*;
use crate::domain::usage::{Resting, UsageMark, WokenBy};

const H: u64 = 3_600;
const MONDAY: u64 = 1_796_601_600;

fn row(day: u64, agent: &str, tally: Tally) -> UsageRow {
    UsageRow {
        day,
        owner_key: "k".into(),
        owner: Some("alice@example.com".into()),
        agent: AgentKey::new(Kind::Codex, agent),
        tally,
    }
}

fn asked(by: By, prices: Option<&Prices>) -> Asked<'_> {
    let day = MONDAY / DAY_S;
    Asked {
        from: day,
        to: day + 1,
        by,
        owner: "alice@example.com".into(),
        now_s: MONDAY + DAY_S + 12 * H,
        prices,
    }
}

#[test]
fn what_a_day_saves_at_the_deployments_prices() {
    let prices = parse_prices("codex=0.12, hermes=0.08", "USD")
        .expect("valid")
        .expect("priced");
    // Awake 8 h 15 min, the reference Studio 10 h (domain::usage's day of one agent).
    let monday = Tally {
        awake_person_s: 8 * H + 900,
        reference_s: 10 * H,
        ..Tally::default()
    };
    let rows = [row(MONDAY / DAY_S, "a", monday)];
    let report = report(&asked(By::Day, Some(&prices)), &rows, &[]);
    let json = report.to_json();
    let day = &json["rows"][0];
    assert_eq!(day["day"], "2026-12-07");
    assert_eq!(day["awake_s"]["total"], 8 * H + 900);
    assert_eq!(day["saved_s"], 6_300);
    // 8.25 h × 0.12 = 0.99; 10 h × 0.12 = 1.20; saved 0.21.
    assert_eq!(day["cost"]["awake"], 0.99);
    assert_eq!(day["cost"]["reference"], 1.2);
    assert_eq!(day["cost"]["saved"], 0.21);
    // Every day of the range is a line, an empty one too.
    assert_eq!(json["rows"].as_array().map(Vec::len), Some(2));
    assert_eq!(json["rows"][1]["awake_s"]["total"], 0);
}

#[test]
fn what_is_open_on_a_record_counts_up_to_now() {
    let mut record = AgentRecord::absent(AgentKey::new(Kind::Codex, "a"));
    record.usage = Some(UsageMark {
        resting: Resting::Awake,
        since_s: MONDAY + DAY_S + 8 * H,
        woken_by: Some(WokenBy::Schedule),
        reference_from_s: Some(MONDAY + DAY_S + 8 * H),
    });
    let report = report(&asked(By::Agent, None), &[], &[record]);
    assert_eq!(report.lines.len(), 1);
    assert_eq!(report.total.tally.awake_schedule_s, 4 * H);
    assert_eq!(report.total.tally.reference_s, 4 * H);
    assert!(report.to_json().get("cost").is_none());
}

#[test]
fn csv_and_json_say_the_same() {
    let prices = parse_prices("codex=0.5", "EUR")
        .expect("valid")
        .expect("priced");
    let t = Tally {
        awake_person_s: 100,
        asleep_s: 50,
        sleeps_idle: 1,
        reference_s: 7_200,
        ..Tally::default()
    };
    let rows = [
        row(MONDAY / DAY_S, "a", t),
        row(MONDAY / DAY_S, "b,\"q\"", t),
    ];
    let report = report(&asked(By::Agent, Some(&prices)), &rows, &[]);
    let csv = report.to_csv().expect("csv");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().expect("header").clone();
    let lines: Vec<csv::StringRecord> = reader.records().map(|r| r.expect("line")).collect();
    let json = report.to_json();
    assert_eq!(lines.len(), 2);
    for (line, j) in lines.iter().zip(json["rows"].as_array().expect("rows")) {
        let get = |name: &str| {
            let i = header.iter().position(|h| h == name).expect(name);
            line[i].to_string()
        };
        assert_eq!(get("agent_id"), j["agent_id"].as_str().expect("id"));
        assert_eq!(get("awake_s"), j["awake_s"]["total"].to_string());
        assert_eq!(get("sleeps_idle"), j["sleeps"]["idle"].to_string());
        assert_eq!(get("saved_s"), j["saved_s"].to_string());
        assert_eq!(get("cost_saved"), j["cost"]["saved"].to_string());
    }
}

#[test]
fn prices_are_read_or_refused() {
    assert_eq!(parse_prices("", "USD"), Ok(None));
    assert!(parse_prices("codex", "USD").is_err());
    assert!(parse_prices("codex=-1", "USD").is_err());
    assert!(parse_prices("dolphin=1", "USD").is_err());
    assert!(parse_prices("snapshot_gb_month=0.1", "USD").is_err());
    let p = parse_prices("snapshot_gb_month=0.1,gb_per_snapshot=2", "USD")
        .expect("valid")
        .expect("priced");
    assert_eq!(p.snapshot.map(|s| s.gb_per_snapshot), Some(2.0));
}
