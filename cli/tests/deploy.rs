//! `snapwake deploy` against a `snapwake sim` child: `--apply` creates the catalogue's seven
//! Tools and reports them; `--plan` with a catalogue file writes nothing.

mod support;

use std::process::Command;

use support::{sim, Sim};

fn deploy(sim: &Sim, args: &[&str]) -> (bool, serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_snapwake"))
        .arg("deploy")
        .args(args)
        .arg("--json")
        .env("AGENTKIT_ENDPOINT", &sim.endpoint)
        .env("AGENTKIT_REGIONS", "cn-beijing")
        .env("VOLCENGINE_ACCESS_KEY", "sim-access-key")
        .env("VOLCENGINE_SECRET_KEY", "sim-secret-key")
        .env("SNAPWAKE_APP", "Cli Test")
        .env_remove("SNAPWAKE_TABLE")
        .env_remove("SNAPWAKE_CATALOGUE")
        .env_remove("AGENTKIT_CREDENTIALS_SECRET")
        .output()
        .expect("run snapwake deploy");
    let report = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (
        out.status.success(),
        report,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn apply_creates_the_catalogue_and_plan_writes_nothing() {
    let sim = sim();
    let (ok, report, stderr) = deploy(&sim, &["--apply"]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("not persisted"), "{stderr}");
    assert_eq!(report["outcome"], "applied");
    assert_eq!(report["writes"], 7);
    assert_eq!(report["throttles"], 0);
    let entries = report["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 7);
    assert!(entries.iter().all(|e| e["status"] == "created"));
    assert!(entries[0]["name"]
        .as_str()
        .unwrap()
        .starts_with("veadk-studio-cli-test-chat-temporary-"));

    let dir = std::env::temp_dir().join(format!("snapwake-cli-deploy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("catalogue.json");
    std::fs::write(
        &file,
        r#"{"entries": [{"key": "codex", "envs": {"MODE": "fast"}}]}"#,
    )
    .unwrap();
    let (ok, plan, stderr) = deploy(&sim, &["--plan", "--catalogue", file.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert_eq!(plan["outcome"], "planned");
    assert_eq!(plan["writes"], 0);
    let codex = plan["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == "codex")
        .unwrap();
    assert_eq!(codex["steps"][0], "set_envs(MODE)");
    assert!(!plan.to_string().contains("fast"), "env values never shown");

    let (ok, _, stderr) = deploy(&sim, &[]);
    assert!(!ok && stderr.contains("--plan"), "{stderr}");
}
