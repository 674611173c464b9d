//! `snapwake schedule …` against `snapwake serve --demo`, whose own tick wakes the agent when
//! the simulator's clock reaches the schedule's time (`--tick-every 1s`: the same minute ticked
//! again and again, which changes nothing until it is due), and announces the wake at
//! `GET /v1/events` (admins).

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{demo, serving, Serving};

const DATA_HELPER: &str = "studio-alice-0d5e1f0a0b0c0d0e0f10111213141516";

fn demo_server() -> Serving {
    let args = demo(&["--tick-every", "1s", "--session-ready-delay-ms", "300"]);
    let cleared = ["AGENTKIT_ENDPOINT", "SNAPWAKE_TABLE", "SNAPWAKE_OPEN_URL"];
    serving(&args, &cleared)
}

fn schedule(url: &str, args: &[&str]) -> (Value, std::process::Output) {
    let out = Command::new(env!("CARGO_BIN_EXE_snapwake"))
        .arg("schedule")
        .args(args)
        .args(["--url", url, "--local-user", "alice"])
        .env_remove("SNAPWAKE_TOKEN")
        .output()
        .expect("run snapwake schedule");
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (json, out)
}

/// `snapwake schedule set` of Data helper's wake, in Berlin.
fn set_wake(url: &str, cron: &str) -> (Value, std::process::Output) {
    let args = [
        "set",
        "codex",
        DATA_HELPER,
        "--timezone",
        "Europe/Berlin",
        "--wake",
        cron,
    ];
    schedule(url, &args)
}

fn curl(args: &[&str]) -> Value {
    let out = Command::new("curl")
        .arg("-s")
        .args(args)
        .output()
        .expect("curl");
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn agent(url: &str) -> Value {
    curl(&[
        "-H",
        "X-Snapwake-User: alice",
        &format!("{url}/v1/agents/codex/{DATA_HELPER}"),
    ])
}

#[test]
fn serve_ticks_a_wake_schedule_when_the_simulated_clock_gets_there() {
    let server = demo_server();
    let url = server.endpoint.clone();
    let sim = server.simulator();
    assert_eq!(agent(&url)["state"], "asleep");

    let (set, out) = set_wake(&url, "30 8 * * MON-FRI");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let next = set["next_wake_at"]
        .as_str()
        .expect("next_wake_at")
        .to_string();
    let (shown, _) = schedule(&url, &["show", "codex", DATA_HELPER]);
    assert_eq!(shown, set);

    // A bad expression: the API's 422 names the field, the command says so and fails.
    let (_, out) = set_wake(&url, "30 25 * * *");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("wake: hour: 25 is out of range 0-23"), "{err}");

    // Move AgentKit's clock (and so the local tick's) just past the wake time.
    let past = snapwake_tick_time(&next);
    curl(&[
        "-X",
        "POST",
        "-d",
        &format!("{{\"now\": \"{past}\"}}"),
        &format!("{sim}/_sim/clock/set"),
    ]);
    let until = Instant::now() + Duration::from_secs(30);
    let mut view = agent(&url);
    while view["state"] != "awake" && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(300));
        view = agent(&url);
    }
    assert_eq!(view["state"], "awake", "{view}");
    assert!(
        view["open_url"]
            .as_str()
            .is_some_and(|u| u.contains(DATA_HELPER)),
        "{view}"
    );
    let (after, _) = schedule(&url, &["show", "codex", DATA_HELPER]);
    assert_ne!(after["next_wake_at"], set["next_wake_at"], "{after}");

    // The wake was announced, set off by the schedule; admins see it, nobody else does. Events
    // come from the store's change feed, which serve reads every 250 ms: the event may follow
    // the write that made the agent awake by one read, so it is waited for.
    let admin_events = || {
        curl(&[
            "-H",
            "X-Snapwake-User: root",
            "-H",
            "X-Snapwake-Admin: 1",
            &format!("{url}/v1/events"),
        ])
    };
    let about = |events: &Value| -> Vec<Value> {
        events["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["detail"]["agent_id"] == DATA_HELPER)
            .cloned()
            .collect()
    };
    let until = Instant::now() + Duration::from_secs(10);
    let mut events = admin_events();
    while about(&events).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
        events = admin_events();
    }
    // A repeat would have been relayed by now too.
    std::thread::sleep(Duration::from_millis(600));
    events = admin_events();
    let woken = about(&events);
    assert_eq!(woken.len(), 1, "{events}");
    assert_eq!(woken[0]["detail_type"], "snapwake.agent.awake");
    assert_eq!(woken[0]["detail"]["trigger"], "schedule");
    assert!(woken[0]["detail"]["session_id"].is_string(), "{events}");
    assert_eq!(
        woken[0]["detail"]["session_id"],
        view["session"]["session_id"]
    );
    let refused = curl(&["-H", "X-Snapwake-User: alice", &format!("{url}/v1/events")]);
    assert_eq!(refused["status"], 404, "{refused}");

    let (_, out) = schedule(&url, &["clear", "codex", DATA_HELPER]);
    assert!(out.status.success());
    let (_, out) = schedule(&url, &["show", "codex", DATA_HELPER]);
    assert!(!out.status.success(), "no schedule any more");
}

/// 20 seconds after `rfc3339`.
fn snapwake_tick_time(rfc3339: &str) -> String {
    let t = time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339)
        .expect("RFC 3339");
    (t + Duration::from_secs(20))
        .format(&time::format_description::well_known::Rfc3339)
        .expect("format")
}
