//! Unit tests of `plan`.

use super::*;
use crate::reconcile::catalogue::Catalogue;
use snapwake::agentkit::types::EnvVar;

fn ev(k: &str, v: &str) -> EnvVar {
    EnvVar {
        key: k.into(),
        value: v.into(),
    }
}

#[test]
fn envs_merge_only_when_they_differ() {
    let current = vec![ev("A", "1"), ev("B", "2")];
    assert_eq!(merged_envs(&current, &[ev("A", "1")]), None);
    assert_eq!(merged_envs(&current, &[]), None);
    let merged = merged_envs(&current, &[ev("A", "9"), ev("C", "3")]).unwrap();
    assert_eq!(merged, vec![ev("B", "2"), ev("A", "9"), ev("C", "3")]);
}

#[test]
fn a_recoverable_tool_needs_snapshots_and_readiness() {
    let c = Catalogue::default_for(None);
    let rec = c.entry(Kind::Codex, Retention::Recoverable).unwrap();
    let mut tool = Tool {
        tool_id: Some("t-1".into()),
        tool_type: Some("CodeEnv".into()),
        status: Some("Ready".into()),
        enable_snapshot: Some(false),
        ..Tool::default()
    };
    assert_eq!(
        resolve(rec, &tool).unwrap(),
        vec![Step::EnableSnapshots, Step::AwaitReady]
    );
    tool.enable_snapshot = Some(true);
    assert!(resolve(rec, &tool).unwrap().is_empty());
    tool.status = Some("Creating".into());
    assert_eq!(resolve(rec, &tool).unwrap(), vec![Step::AwaitReady]);
    tool.status = Some("CreateFailed".into());
    assert!(resolve(rec, &tool).is_err());
    tool.status = Some("Ready".into());
    tool.tool_type = Some("HermesEnv".into());
    assert!(resolve(rec, &tool).unwrap_err().contains("ToolType"));
}
