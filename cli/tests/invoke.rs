//! `snapwake invoke` runs every function on its sample events, against DynamoDB Local (a fresh
//! table) and a `snapwake sim` process: deploy plans then applies the Tools, create makes an
//! agent, list and capabilities read it, resume wakes it, delete sweeps and offboards, each
//! printing what the Lambda would answer. Without `AWS_ENDPOINT_URL` this fails, it does not
//! skip.

mod support;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use support::{sim, Sim};

/// `snapwake ARGS` against `table` and `sim`, with `stdin` piped in.
fn snapwake(table: &str, sim: &Sim, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_snapwake"))
        .args(args)
        .env("SNAPWAKE_TABLE", table)
        .env("AGENTKIT_ENDPOINT", &sim.endpoint)
        .env("AGENTKIT_REGIONS", "cn-beijing")
        .env("VOLCENGINE_ACCESS_KEY", "sim-access-key")
        .env("VOLCENGINE_SECRET_KEY", "sim-secret-key")
        .env("SNAPWAKE_APP", "Invoke Test")
        .env_remove("AGENTKIT_CREDENTIALS_SECRET")
        .env_remove("SNAPWAKE_CATALOGUE")
        .env_remove("SNAPWAKE_BASE_PATH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run snapwake");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write the event");
    child.wait_with_output().expect("wait for snapwake")
}

fn json(out: &Output, what: &str) -> Value {
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what} printed no JSON ({e}): {:?}", out.stdout))
}

/// `invoke FUNCTION` on `event`, the printed answer.
fn invoke(table: &str, sim: &Sim, function: &str, event: &Value) -> Value {
    let out = snapwake(table, sim, &["invoke", function], &event.to_string());
    json(&out, &format!("invoke {function}"))
}

fn sample(table: &str, sim: &Sim, name: &str) -> Value {
    json(
        &snapwake(table, sim, &["invoke", "--sample", name], ""),
        &format!("--sample {name}"),
    )
}

/// The JSON body of an API Gateway response.
fn body(answer: &Value) -> Value {
    serde_json::from_str(answer["body"].as_str().unwrap_or("null")).unwrap_or(Value::Null)
}

#[test]
fn every_function_runs_on_its_sample_events() {
    assert!(
        std::env::var_os("AWS_ENDPOINT_URL").is_some(),
        "AWS_ENDPOINT_URL is not set: start DynamoDB Local (scripts/test.sh does)"
    );
    let sim = sim();
    let table = format!("snapwake-invoke-{}", std::process::id());
    let created = snapwake(&table, &sim, &["table", "create"], "");
    assert!(created.status.success(), "table create failed");

    // The samples: listed, and each one JSON.
    let listed = snapwake(&table, &sim, &["invoke", "--sample", "help"], "");
    let listing = String::from_utf8_lossy(&listed.stdout).into_owned();
    for name in [
        "list-agents",
        "capabilities",
        "create-agent",
        "resume-agent",
        "sweep",
        "owner-offboarded",
        "scheduled",
        "deploy-plan",
    ] {
        assert!(listing.contains(name), "{name} not listed:\n{listing}");
        assert!(sample(&table, &sim, name).is_object(), "{name}");
    }
    let unknown = snapwake(&table, &sim, &["invoke", "--sample", "nope"], "");
    assert_eq!(unknown.status.code(), Some(2));

    // deploy: a plan writes nothing; the schedule applies the catalogue.
    let plan = invoke(&table, &sim, "deploy", &sample(&table, &sim, "deploy-plan"));
    assert_eq!(plan["outcome"], "planned", "{plan}");
    let applied = invoke(&table, &sim, "deploy", &sample(&table, &sim, "scheduled"));
    assert_eq!(applied["outcome"], "applied", "{applied}");
    assert_eq!(applied["registry_written"], true, "{applied}");

    // create, then list and capabilities see it, then resume it.
    let made = invoke(
        &table,
        &sim,
        "create",
        &sample(&table, &sim, "create-agent"),
    );
    assert_eq!(made["statusCode"], 201, "{made}");
    let agent = body(&made);
    let agent_id = agent["agent_id"].as_str().expect("an agent id").to_string();
    let listing = invoke(&table, &sim, "list", &sample(&table, &sim, "list-agents"));
    assert_eq!(listing["statusCode"], 200, "{listing}");
    let ids: Vec<Value> = body(&listing)["agents"]
        .as_array()
        .map(|a| a.iter().map(|v| v["agent_id"].clone()).collect())
        .unwrap_or_default();
    assert_eq!(ids, vec![Value::from(agent_id.clone())], "{listing}");
    let caps = invoke(&table, &sim, "list", &sample(&table, &sim, "capabilities"));
    assert_eq!(caps["statusCode"], 200, "{caps}");

    let resume_event: Value = serde_json::from_str(
        &sample(&table, &sim, "resume-agent")
            .to_string()
            .replace("AGENT_ID", &agent_id),
    )
    .expect("the edited sample");
    // The sample says `Prefer: wait=20`: the invoke is held until the agent is awake.
    let resumed = invoke(&table, &sim, "resume", &resume_event);
    assert_eq!(resumed["statusCode"], 200, "{resumed}");
    assert_eq!(body(&resumed)["state"], "awake", "{resumed}");
    assert_eq!(
        resumed["headers"]["preference-applied"], "wait=20",
        "{resumed}"
    );

    // delete: the sweep's schedule and an offboarding, each its report.
    let swept = invoke(&table, &sim, "delete", &sample(&table, &sim, "sweep"));
    assert_eq!(swept["completed"], true, "{swept}");
    let offboarded = invoke(
        &table,
        &sim,
        "delete",
        &sample(&table, &sim, "owner-offboarded"),
    );
    assert!(offboarded.is_object(), "{offboarded}");

    // An event a function does not take is refused, naming what it wants.
    let wrong = snapwake(
        &table,
        &sim,
        &["invoke", "list"],
        &sample(&table, &sim, "sweep").to_string(),
    );
    assert_eq!(wrong.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("API Gateway"),
        "{}",
        String::from_utf8_lossy(&wrong.stderr)
    );
}
