//! `snapwake agents …` against `snapwake serve --demo`: list, wake, sleep, show, every page of
//! everyone's agents, and snapwake's own problem from the real server. The gateway's own error
//! shapes are `agents.rs`.

mod support;

use std::process::{Command, Output};

use support::{demo, serving, Serving};

/// The exit code, and what stderr says.
fn check(out: &Output, code: i32, says: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(code), "{err}");
    for s in says {
        assert!(err.contains(s), "expected {s:?} in:\n{err}");
    }
}

const DATA_HELPER: &str = "studio-alice-0d5e1f0a0b0c0d0e0f10111213141516";

/// `snapwake serve --demo` on a port it picks itself, with short simulated boots and no sweep.
fn demo_server() -> Serving {
    let args = demo(&[
        "--session-ready-delay-ms",
        "300",
        "--snapshot-ready-delay-ms",
        "300",
    ]);
    serving(&args, &["AGENTKIT_ENDPOINT", "SNAPWAKE_TABLE"])
}

fn local(url: &str, args: &[&str]) -> (serde_json::Value, Output) {
    let out = Command::new(env!("CARGO_BIN_EXE_snapwake"))
        .arg("agents")
        .args(args)
        .args(["--url", url])
        .env_remove("SNAPWAKE_TOKEN")
        .output()
        .expect("run snapwake agents");
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (json, out)
}

#[test]
fn list_wake_sleep_and_page_through_everyone_against_snapwake_serve() {
    let server = demo_server();
    let url = server.endpoint.clone();

    let (listing, out) = local(&url, &["list", "--local-user", "alice"]);
    check(&out, 0, &[]);
    let names: Vec<&str> = listing["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .filter_map(|a| a["display_name"].as_str())
        .collect();
    assert!(names.contains(&"Data helper"), "{names:?}");
    assert!(!names.contains(&"Bob's notebook"), "{names:?}");

    let (view, out) = local(
        &url,
        &["wake", "codex", DATA_HELPER, "--local-user", "alice"],
    );
    check(&out, 0, &[&format!("codex/{DATA_HELPER} is awake")]);
    assert_eq!(view["state"], "awake");
    assert_eq!(view["resumed"], true);

    let (view, out) = local(
        &url,
        &["sleep", "codex", DATA_HELPER, "--local-user", "alice"],
    );
    check(&out, 0, &[&format!("codex/{DATA_HELPER} is asleep")]);
    assert_eq!(view["state"], "asleep");
    assert_eq!(view["slept"], true);

    let (view, out) = local(
        &url,
        &["show", "codex", DATA_HELPER, "--local-user", "alice"],
    );
    check(&out, 0, &[]);
    assert_eq!(view["display_name"], "Data helper");

    // Everyone's, three to a page: every page followed, each agent once.
    let (everyone, out) = local(
        &url,
        &[
            "list",
            "--all",
            "--limit",
            "3",
            "--local-user",
            "root",
            "--local-admin",
        ],
    );
    check(&out, 0, &[]);
    let ids: Vec<String> = everyone["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .map(|a| format!("{}/{}", a["kind"], a["agent_id"]))
        .collect();
    let unique: std::collections::BTreeSet<_> = ids.iter().collect();
    assert!(ids.len() > 3 && unique.len() == ids.len(), "{ids:?}");
    assert!(everyone.to_string().contains("Bob's notebook"));

    // snapwake's own problem, from the real server.
    let (_, out) = local(
        &url,
        &["show", "codex", "studio-nobody", "--local-user", "alice"],
    );
    check(&out, 1, &["(404 AGENT_NOT_FOUND)"]);
}
