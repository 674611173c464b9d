//! Usage through the deployed functions (docs/usage.md): a studio's week on the simulated
//! deployment's clock — a person's wakes and sleeps, idle sleep, a schedule, AgentKit's 8 hours,
//! a create and a delete — and `GET /v1/usage` equal, agent by agent and day by day to the
//! second, to a count made from the published events alone (`snapwake_tests::usage_count`);
//! its CSV says what its JSON says.

use lambda_http::{Body, Response};
use snapwake::domain::usage::{parse_day, Tally, DAY_S};
use snapwake_tests::deployment::Deployment;

use super::idle::{ask, created, in_a_studio, minutes_until, now, path, START_S};
use super::*;

/// A usage row's tally, read back from its JSON.
fn tally_of(row: &Value) -> Tally {
    let n = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("a count: {v}"));
    Tally {
        awake_person_s: n(&row["awake_s"]["person"]),
        awake_schedule_s: n(&row["awake_s"]["schedule"]),
        awake_agentkit_s: n(&row["awake_s"]["agentkit"]),
        asleep_s: n(&row["asleep_s"]),
        reference_s: n(&row["reference_s"]),
        wakes: n(&row["wakes"]),
        creates: n(&row["creates"]),
        failed_wakes: n(&row["failed_wakes"]),
        sleeps_person: n(&row["sleeps"]["person"]),
        sleeps_schedule: n(&row["sleeps"]["schedule"]),
        sleeps_idle: n(&row["sleeps"]["idle"]),
        sleeps_agentkit: n(&row["sleeps"]["agentkit"]),
        snapshots: n(&row["snapshots"]),
    }
}

/// `GET /v1/usage` as alice, with `query` (`name=value&…`), in `accept` (None: JSON).
async fn usage_as(d: &Deployment, query: &str, accept: Option<&str>) -> Response<Body> {
    let pairs: Vec<(&str, &str)> = query.split('&').filter_map(|p| p.split_once('=')).collect();
    let mut req = request_query("GET", "/v1/usage", &pairs, Who::User("alice"));
    if let Some(accept) = accept {
        req = with_header(req, "accept", accept);
    }
    d.api.handle(req).await
}

async fn usage(d: &Deployment, query: &str) -> Value {
    let (status, body) = answer(&usage_as(d, query, None).await);
    assert_eq!(status, 200, "{body}");
    body
}

#[test]
fn a_week_of_usage_is_what_the_events_count_to_the_second() {
    in_a_studio(15, |d| async move {
        let monday = START_S as u64 / DAY_S;
        let day_ms = |day: u64, h: u64, m: u64| ((monday + day) * DAY_S + h * 3600 + m * 60) * 1000;
        // Left alone: idle sleep. Woken by its owner at 10:00 each weekday, put to sleep at 10:10.
        let a = created(&d, "recoverable").await;
        // Its owner's schedule, weekdays 09:00 to 17:00.
        let b = created(&d, "recoverable").await;
        let (status, body) = ask(
            &d,
            "PUT",
            &path(&b, "/schedule"),
            Some(r#"{"timezone": "UTC", "wake": "0 9 * * 1-5", "sleep": "0 17 * * 1-5"}"#),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        // Never idle: awake until AgentKit's 8 hours end its session (a snapshot kept).
        let c = created(&d, "recoverable").await;
        let (status, body) = ask(&d, "PUT", &path(&c, "/idle"), Some(r#"{"minutes": 0}"#)).await;
        assert_eq!(status, 200, "{body}");
        // Made and deleted within the hour.
        let e = created(&d, "temporary").await;
        minutes_until(&d, day_ms(0, 8, 40), true).await;
        let (status, body) = ask(&d, "DELETE", &path(&e, ""), None).await;
        assert!(status == 204 || status == 200, "{status} {body}");

        for day in 0..7 {
            if day < 5 {
                minutes_until(&d, day_ms(day, 10, 0), true).await;
                let (status, body) = ask(&d, "POST", &path(&a, "/resume"), None).await;
                assert_eq!(status, 200, "{body}");
                minutes_until(&d, day_ms(day, 10, 10), true).await;
                let (status, body) = ask(&d, "POST", &path(&a, "/sleep"), None).await;
                assert_eq!(status, 200, "{body}");
                minutes_until(&d, day_ms(day, 19, 0), true).await;
            }
            // The night and the weekend: nothing is due, the tick would find nothing.
            tokio::time::sleep(Duration::from_millis(day_ms(day + 1, 7, 0) - now())).await;
        }
        minutes_until(&d, day_ms(7, 7, 5), true).await;
        d.relay().await;
        assert!(d.unrelayed().is_empty(), "the stream consumed");

        let published = d.bus.published.lock().unwrap().clone();
        let now_s = now() / 1000;
        let counted = snapwake_tests::usage_count::count(&published, now_s);
        let ours = [&a, &b, &c, &e];
        let mut week = Tally::default();
        for day in monday..=monday + 7 {
            let name = snapwake::domain::usage::day_name(day);
            let report = usage(&d, &format!("from={name}&to={name}&by=agent")).await;
            let rows = report["rows"].as_array().expect("rows");
            for key in ours {
                let row = rows
                    .iter()
                    .find(|r| r["agent_id"] == key.agent_id.as_str())
                    .map(tally_of)
                    .unwrap_or_default();
                let count = counted
                    .get(&(key.clone(), day))
                    .copied()
                    .unwrap_or_default();
                assert_eq!(row, count, "{key} on {name}");
                week.add(&row);
            }
        }
        // Every trigger is in the week, and what it saved.
        assert!(week.sleeps_idle >= 1 && week.sleeps_person == 5, "{week:?}");
        assert!(
            week.sleeps_schedule == 5 && week.sleeps_agentkit >= 1,
            "{week:?}"
        );
        assert!(week.awake_schedule_s > 0 && week.creates == 4, "{week:?}");
        assert!(week.saved_s() > 0, "{week:?}");

        // The week by day sums what the days by agent said; its CSV says what its JSON says.
        let from = snapwake::domain::usage::day_name(monday);
        let to = snapwake::domain::usage::day_name(monday + 7);
        let by_day = usage(&d, &format!("from={from}&to={to}")).await;
        assert_eq!(tally_of(&by_day["total"]), week);
        let resp = usage_as(
            &d,
            &format!("from={from}&to={to}&by=agent"),
            Some("text/csv"),
        )
        .await;
        assert_eq!(resp.status(), 200);
        assert_eq!(
            header_of(&resp, "content-type"),
            Some("text/csv; charset=utf-8")
        );
        let csv = match resp.body() {
            Body::Text(t) => t.clone(),
            other => panic!("a text body: {other:?}"),
        };
        let json = usage(&d, &format!("from={from}&to={to}&by=agent")).await;
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let header = reader.headers().expect("a header").clone();
        let lines: Vec<csv::StringRecord> = reader.records().map(|r| r.expect("a line")).collect();
        let rows = json["rows"].as_array().expect("rows");
        assert_eq!(lines.len(), rows.len());
        for (line, row) in lines.iter().zip(rows) {
            let t = tally_of(row);
            let mut values = vec![
                row["kind"].as_str().unwrap_or_default().to_string(),
                row["agent_id"].as_str().unwrap_or_default().to_string(),
                row["owner"].as_str().unwrap_or_default().to_string(),
            ];
            values.extend(t.values().iter().map(u64::to_string));
            values.extend([t.awake_s().to_string(), t.saved_s().to_string()]);
            assert_eq!(line.iter().collect::<Vec<_>>(), values, "{header:?}");
        }
        assert!(parse_day(&from).is_some());
    });
}
