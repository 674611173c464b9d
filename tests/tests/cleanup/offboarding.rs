//! Offboarding: every agent of an owner deleted, a redelivered event finding nothing left.

use super::*;

/// alice's and bob's agents on several kinds.
pub(crate) struct Owners {
    /// alice's, by what they are.
    alice: BTreeMap<&'static str, AgentKey>,
    bob: Vec<AgentKey>,
    /// bob's snapshots and live sessions before anything ran.
    bob_snapshots: BTreeSet<String>,
    bob_sessions: BTreeSet<String>,
}

pub(crate) fn legacy_id(owner: &str, name: &str) -> String {
    format!(
        "studio2-{}-{}-{}",
        caller::fingerprint(owner),
        &uuid::Uuid::new_v4().simple().to_string()[..16],
        data_encoding::BASE64URL_NOPAD.encode(name.as_bytes())
    )
}

pub(crate) async fn seed_owners<S: AgentStore + snapwake::store::ScheduleStore + Clone>(
    store: &S,
    world: &World,
) -> Owners {
    let more = world.seed_more_kinds();
    world.register_with(store, &more).await;
    let ctl = world.sim.control();
    let temporary_session = |tool: &str, owner: &str, agent_id: &str| {
        ctl.seed_session(SeedSession {
            tool_id: tool.to_string(),
            user_session_id: Some(agent_id.to_string()),
            metadata: vec![MetadataEntry::string("Username", owner)],
            ..SeedSession::default()
        })
        .unwrap()
    };
    let mut alice = BTreeMap::new();

    // codex, recoverable, asleep with three snapshots.
    let (asleep, _) = world.asleep_agent("alice", "Asleep");
    world.more_snapshots("alice", &asleep, 2);
    alice.insert("codex asleep", codex(&asleep));
    // codex, recoverable, woken through snapwake (its record names the session).
    let (woken, _) = world.asleep_agent("alice", "Woken");
    let resume = resume_fn(store.clone(), world.client(), quick_wake());
    let (status, body) = answer(
        &resume
            .handle(alices_request(
                "POST",
                &format!("/v1/agents/codex/{woken}/resume"),
            ))
            .await,
    );
    assert_eq!(status, 200, "{body}");
    alice.insert("codex woken", codex(&woken));
    // codex, recoverable, awake outside snapwake (no record).
    let (awake, _) = world.asleep_agent("alice", "Awake");
    world.live_session("alice", &awake);
    alice.insert("codex awake", codex(&awake));
    // codex, temporary, awake.
    let temporary = caller::mint("alice");
    temporary_session(&world.temporary, "alice", &temporary);
    alice.insert("codex temporary", codex(&temporary));
    // openclaw on its legacy snapshot Tool, with a legacy id.
    let legacy = legacy_id("alice", "Claw Old");
    ctl.seed_snapshot(SeedSnapshot {
        tool_id: more.openclaw_legacy.clone(),
        user_session_id: Some(legacy.clone()),
        ..SeedSnapshot::default()
    })
    .unwrap();
    alice.insert("openclaw legacy", AgentKey::new(Kind::Openclaw, legacy));
    // openclaw and hermes, temporary, awake.
    let claw = caller::mint("alice");
    temporary_session(&more.openclaw_temporary, "alice", &claw);
    alice.insert("openclaw temporary", AgentKey::new(Kind::Openclaw, claw));
    let hermes = caller::mint("alice");
    temporary_session(&more.hermes_temporary, "alice", &hermes);
    alice.insert("hermes temporary", AgentKey::new(Kind::Hermes, hermes));

    // bob: one of each shape.
    let (bob_asleep, _) = world.asleep_agent("bob", "Bob asleep");
    world.more_snapshots("bob", &bob_asleep, 1);
    let bob_awake = caller::mint("bob");
    temporary_session(&world.temporary, "bob", &bob_awake);
    let bob_legacy = legacy_id("bob", "Bob Claw");
    ctl.seed_snapshot(SeedSnapshot {
        tool_id: more.openclaw_legacy.clone(),
        user_session_id: Some(bob_legacy.clone()),
        ..SeedSnapshot::default()
    })
    .unwrap();
    let bob = vec![
        codex(&bob_asleep),
        codex(&bob_awake),
        AgentKey::new(Kind::Openclaw, bob_legacy),
    ];
    let (bob_snapshots, bob_sessions) = bobs_state(world, &bob);
    assert_eq!((bob_snapshots.len(), bob_sessions.len()), (3, 1));
    Owners {
        alice,
        bob,
        bob_snapshots,
        bob_sessions,
    }
}

/// bob's snapshots and live sessions in AgentKit.
pub(crate) fn bobs_state(world: &World, bob: &[AgentKey]) -> (BTreeSet<String>, BTreeSet<String>) {
    let ctl = world.sim.control();
    let ids: BTreeSet<&str> = bob.iter().map(|k| k.agent_id.as_str()).collect();
    let ours = |usid: &Option<String>| usid.as_deref().is_some_and(|u| ids.contains(u));
    let snapshots = ctl
        .snapshots()
        .into_iter()
        .filter(|s| ours(&s.user_session_id))
        .filter_map(|s| s.snapshot_id)
        .collect();
    let sessions = ctl
        .sessions()
        .into_iter()
        .filter(|s| ours(&s.user_session_id) && s.is_active())
        .filter_map(|s| s.session_id)
        .collect();
    (snapshots, sessions)
}

/// Every one of alice's agents is deleted (tombstone, no session, no snapshot); bob's are
/// as they were.
pub(crate) async fn assert_offboarded<S: AgentStore + snapwake::store::ScheduleStore>(
    store: &S,
    world: &World,
    owners: &Owners,
) {
    let counters = world.sim.control().counters();
    for (what, key) in &owners.alice {
        let record = store
            .get(key)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{what}: no record"));
        assert_eq!(record.state, WakeState::Gone, "{what}: {record:?}");
        assert!(record.holder.is_none(), "{what}");
        let expires = record
            .expires_at
            .unwrap_or_else(|| panic!("{what}: no TTL"));
        assert!(
            expires > now_s() + TOMBSTONE_TTL_S - 3600,
            "{what}: a 30-day tombstone"
        );
        assert_eq!(
            counters.live_sessions_of(&key.agent_id),
            0,
            "{what}: a live session left"
        );
        assert!(
            world.snapshots_of(&key.agent_id).is_empty(),
            "{what}: a snapshot left"
        );
    }
    assert_eq!(
        bobs_state(world, &owners.bob),
        (owners.bob_snapshots.clone(), owners.bob_sessions.clone()),
        "bob's agents are untouched"
    );
    for key in &owners.bob {
        let record = store.get(key).await.unwrap();
        assert!(
            record.is_none_or(|r| r.state != WakeState::Gone),
            "{key} is bob's"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn offboarding_deletes_every_agent_of_the_owner_and_a_redelivery_finds_nothing() {
    let store = Arc::new(dynamo_store("cleanup-offboard").await);
    let world = World::start(Duration::ZERO).await;
    let owners = seed_owners(&store, &world).await;
    let f = cleanup_fn(store.clone(), world.client(), SweepSettings::default());

    let report = offboard(&f, "alice").await;
    assert_eq!(report.owner, "alice");
    assert_eq!(report.failed, 0, "{report:?}");
    assert_eq!(report.deleted, owners.alice.len(), "{report:#?}");
    let keys: BTreeSet<&AgentKey> = report.agents.iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        owners.alice.values().collect::<BTreeSet<_>>(),
        "exactly alice's agents"
    );
    assert_offboarded(&store, &world, &owners).await;

    // Redelivered: nothing left to do, success.
    let counters = world.sim.control().counters();
    let again = offboard(&f, "alice").await;
    assert_eq!((again.deleted, again.failed), (0, 0), "{again:#?}");
    let after = world.sim.control().counters();
    for action in ["DeleteSession", "DeleteSessionSnapshot"] {
        assert_eq!(
            after.received(action),
            counters.received(action),
            "{action} sent again"
        );
    }
    assert_offboarded(&store, &world, &owners).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn the_offboarding_event_twice_after_a_sweep_deletes_alices_agents_once() {
    let store = Arc::new(dynamo_store("cleanup-offboard-event").await);
    let world = World::start(Duration::ZERO).await;
    let owners = seed_owners(&store, &world).await;
    let f = cleanup_fn(store.clone(), world.client(), SweepSettings::default());
    // The sweep indexes every agent: offboarding finds them through the owner index too.
    let report = sweep(&f, Duration::from_secs(60)).await;
    assert!(report.completed && report.counts.errors == 0, "{report:?}");
    for key in owners.alice.values() {
        let record = store.get(key).await.unwrap();
        assert!(
            record.is_some_and(|r| r.description.owner_key.is_some()),
            "{key} indexed"
        );
    }

    let event = fixture("owner-offboarded.json");
    let first = f.invoke(event.clone(), context(60_000)).await.unwrap();
    assert_eq!(first["owner"], "alice", "{first}");
    assert_eq!(first["failed"], 0, "{first}");
    assert_eq!(first["deleted"], owners.alice.len(), "{first}");
    assert_offboarded(&store, &world, &owners).await;

    let deletes = received(&world, "DeleteSessionSnapshot") + received(&world, "DeleteSession");
    let second = f.invoke(event, context(60_000)).await.unwrap();
    assert_eq!(
        (&second["deleted"], &second["failed"]),
        (&Value::from(0), &Value::from(0)),
        "{second}"
    );
    assert_eq!(
        second["already_gone"],
        owners.alice.len(),
        "the index still names the tombstones: {second}"
    );
    assert_eq!(
        received(&world, "DeleteSessionSnapshot") + received(&world, "DeleteSession"),
        deletes
    );
    assert_offboarded(&store, &world, &owners).await;
}
