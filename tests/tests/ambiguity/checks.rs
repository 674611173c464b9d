//! The checks the flows and the tests make: an answer well-formed for its status, a converged wake
//! (awake, nobody holding it) and a settled sleep; and an agent seeded asleep from a snapshot.

use super::*;

/// Why an answer is not well-formed, if it is not: a 2xx carries the agent as JSON (204
/// nothing), anything else is problem+json.
pub(crate) fn malformed(resp: &lambda_http::Response<lambda_http::Body>) -> Option<String> {
    let (status, body) = answer(resp);
    match status {
        200..=202 => {
            let json = header_of(resp, "content-type") == Some("application/json");
            (!json || !body["agent_id"].is_string()).then(|| {
                format!(
                    "content-type {:?}, body {body}",
                    header_of(resp, "content-type")
                )
            })
        }
        204 => (!body.is_null()).then(|| format!("a 204 with a body: {body}")),
        _ => problem_fault(resp, status, None),
    }
}

pub(crate) fn session_of(body: &Value) -> String {
    body["session"]["session_id"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A converged wake: awake with the answered session, nobody holding it, nothing pending.
pub(crate) fn assert_awake(record: Option<AgentRecord>, session: &str) {
    let r = record.expect("a record");
    assert_eq!(r.state, WakeState::Awake, "{r:?}");
    assert!(r.holder.is_none(), "nobody holds it: {r:?}");
    assert_eq!(r.lease_until_ms, 0, "{r:?}");
    assert_eq!(r.session_id.as_deref(), Some(session), "{r:?}");
    assert!(r.resume_sent_at_ms.is_none() && r.error.is_none(), "{r:?}");
}

/// A settled sleep: asleep, nobody holding it, no session, the sleep's snapshot among the
/// record's summaries, and with `first`, first among them (as the sleep's own `asleep` write
/// leaves them; a later sleep that finds the agent asleep already rewrites them from a listing,
/// where snapshots of the same whole second come in no particular order).
pub(crate) fn assert_asleep(record: Option<AgentRecord>, snapshot: &str, first: bool) {
    let r = record.expect("a record");
    assert_eq!(r.state, WakeState::Asleep, "{r:?}");
    assert!(
        r.holder.is_none() && r.lease_until_ms == 0,
        "nobody holds it: {r:?}"
    );
    assert_eq!(r.session_id, None, "{r:?}");
    assert!(r.error.is_none(), "{r:?}");
    assert!(
        r.snapshots.iter().any(|s| s.snapshot_id == snapshot),
        "{snapshot} among the summaries: {r:?}"
    );
    if first {
        assert_eq!(
            r.snapshots.first().map(|s| s.snapshot_id.as_str()),
            Some(snapshot),
            "{r:?}"
        );
    }
}

pub(crate) const AN_HOUR: Duration = Duration::from_secs(3600);

/// An asleep agent of alice whose one Ready snapshot was taken at `taken` (an hour ago, say:
/// then a snapshot a sleep takes is newer by far, whatever the whole seconds of AgentKit's
/// times). Answers (agent id, snapshot id).
pub(crate) fn asleep_since(world: &World, taken: time::OffsetDateTime) -> (String, String) {
    let agent_id = snapwake::identity::caller::mint("alice");
    let snapshot = world
        .sim
        .control()
        .seed_snapshot(SeedSnapshot {
            tool_id: world.recoverable.clone(),
            user_session_id: Some(agent_id.clone()),
            session_id: Some(format!("s-old-{}", &agent_id[agent_id.len() - 8..])),
            created_at: Some(taken),
            session_metadata: vec![
                MetadataEntry::string("Username", "alice"),
                MetadataEntry::string("veadk_display_name", "Sleeper"),
            ],
            ..SeedSnapshot::default()
        })
        .unwrap();
    (agent_id, snapshot)
}
