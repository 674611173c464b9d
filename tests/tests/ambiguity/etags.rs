//! The `ETag` of an answer names the record a client can `If-Match` (docs/http-api.md): when
//! the write that completes a wake cannot be confirmed (its answer lost and the re-read
//! failing, or it timed out without landing), the 200 still says the agent is awake, and
//! either carries no `ETag` or the version the table holds for the awake record: never the
//! version of the record still marked waking.

use super::faulty_store::*;
use super::*;

/// The completing write of a wake: the holder's fenced write to `awake`.
fn completing(condition: &Condition, changes: &Changes) -> bool {
    matches!(condition, Condition::Held { .. }) && changes.state == Some(WakeState::Awake)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wake_whose_completion_is_unconfirmed_answers_no_stale_etag() {
    for mode in MODES {
        let (store, world, _) = deployed("unconfirmed-etag", Duration::ZERO).await;
        let (agent_id, _) = world.asleep_agent("alice", "Etag");
        let faulty = Arc::new(FaultyStore::new(store.clone()));
        // Every send of the write, and (answer lost) every re-read after it, fails.
        let settings = LockSettings::default();
        faulty.arm(completing, mode, settings.write_attempts);
        faulty.fail_reads_after_fault(true);
        let f = resume_fn(faulty.clone(), world.client(), quick_wake());
        let path = format!("/v1/agents/codex/{agent_id}/resume");
        let wake = prefer_wait(alices_request("POST", &path), 10);
        let resp = f.handle(wake).await;
        let (status, body) = answer(&resp);
        assert_eq!(
            (status, body["state"].as_str()),
            (200, Some("awake")),
            "{mode:?}: {body}"
        );
        assert!(
            faulty.fired() > 0,
            "{mode:?}: the completing write was never hit"
        );
        let etag = header_of(&resp, "etag").map(str::to_string);
        faulty.disarm();
        faulty.fail_reads_after_fault(false);

        let key = AgentKey::new(Kind::Codex, &agent_id);
        let record = store.get(&key).await.unwrap().expect("a record");
        if let Some(etag) = etag {
            assert_eq!(
                etag,
                record.etag(),
                "{mode:?}: the ETag names no record the table holds ({record:?})"
            );
            assert_eq!(record.state, WakeState::Awake, "{mode:?}: {record:?}");
            assert_eq!(body["etag"].as_str(), Some(etag.as_str()), "{mode:?}");
        } else {
            assert!(body["etag"].is_null(), "{mode:?}: {body}");
        }
    }
}
