//! The store can fail between steps (docs/wake-protocol.md, step 6): the fenced write that
//! records `resume_sent_at` lands, its answer is lost, and the re-read that would settle it
//! fails too. The holder never sent Resume, so it must not leave the agent waiting out the
//! readiness timeout on a Resume that never was: it takes the marker back, answers 503, and the
//! next caller wakes the agent with one Resume.

use std::time::Duration;

use snapwake::domain::{AgentKey, Kind, WakeState};
use snapwake::registry_cache::{RegistryCache, ToolOverrides};
use snapwake::store::{AgentStore, Changes, Condition};
use snapwake::wake::WakeSettings;
use snapwake_resume::Resume;
use snapwake_tests::lost_answers::LostAnswers;
use snapwake_tests::*;

/// The Resume marker: the fenced write that sets `resume_sent_at`.
fn marker(condition: &Condition, changes: &Changes) -> bool {
    matches!(condition, Condition::Held { .. })
        && matches!(changes.resume_sent_at_ms, Some(Some(_)))
}

fn settings() -> WakeSettings {
    WakeSettings {
        lock: quick_lock(Duration::from_secs(60)),
        // The default readiness timeout: a marker left behind would hold callers for minutes.
        ready_timeout: Duration::from_secs(360),
        poll_min: Duration::from_millis(50),
        poll_max: Duration::from_millis(200),
        watch_min: Duration::from_millis(25),
        watch_max: Duration::from_millis(100),
        wait: Duration::from_secs(4),
        ..WakeSettings::default()
    }
}

async fn scenario(reads_after: u32) {
    let store = dynamo_store("marker-lost").await;
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let (agent_id, snapshot) = world.asleep_agent("alice", "Marker");
    let resume = Resume {
        store: {
            // Lost on every attempt the lock makes (each lands), the reads after them failing.
            let lossy = LostAnswers::new(store.clone(), marker, reads_after);
            lossy.lose_updates.store(
                snapwake::lock::LockSettings::default().write_attempts,
                std::sync::atomic::Ordering::SeqCst,
            );
            lossy
        },
        agentkit: world.client(),
        registry: RegistryCache::new(ToolOverrides::default()),
        identity: identity(),
        wake: settings(),
    };
    let path = format!("/v1/agents/codex/{agent_id}/resume");
    let call = || resume.handle(request("POST", &path, Who::User("alice"), None));
    let ctl = world.sim.control();

    let (status, body) = answer(&call().await);
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["retryable"], true, "{body}");
    assert_eq!(ctl.counters().received("ResumeSessionFromSnapshot"), 0);
    let key = AgentKey::new(Kind::Codex, &agent_id);
    let record = store.get(&key).await.unwrap().expect("a record");
    assert_eq!(record.state, WakeState::Asleep, "{record:?}");
    assert!(
        record.resume_sent_at_ms.is_none(),
        "marker taken back: {record:?}"
    );

    // The next caller wakes the agent (once the table answers its reads again): no six minutes
    // of 202 on a Resume never sent.
    let (mut status, mut body) = answer(&call().await);
    for _ in 0..reads_after {
        if status != 503 {
            break;
        }
        (status, body) = answer(&call().await);
    }
    assert_eq!(status, 200, "{body}");
    let counters = ctl.counters();
    assert_eq!(counters.received("ResumeSessionFromSnapshot"), 1);
    assert_eq!(counters.resumes_of(&snapshot), 1);
    assert_eq!(counters.live_sessions_of(&agent_id), 1);
}

#[tokio::test]
async fn a_lost_resume_marker_whose_reread_fails_is_taken_back_not_waited_out() {
    // The write's own re-read fails (the lock re-reads to settle an ambiguous write).
    scenario(1).await;
}

#[tokio::test]
async fn a_lost_resume_marker_whose_rereads_keep_failing_is_still_taken_back() {
    // Every re-read of that write fails; the take-back itself is fenced and needs none.
    scenario(3).await;
}
