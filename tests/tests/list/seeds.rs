//! The agents the list tests seed: alice's, bob's and nobody's agents in every state a list
//! distinguishes, as AgentKit and the records hold them ([`Seeded`]).

use super::*;

/// A live session on `tool` (Ready, or `Creating` for a long while) whose metadata names
/// `username` and `name`.
fn session(world: &World, tool: &str, usid: &str, username: &str, name: &str, status: &str) {
    world
        .sim
        .control()
        .seed_session(SeedSession {
            tool_id: tool.into(),
            user_session_id: Some(usid.into()),
            status: Some(status.into()),
            metadata: vec![
                MetadataEntry::string("Username", username),
                MetadataEntry::string("veadk_display_name", name),
            ],
            ..SeedSession::default()
        })
        .unwrap();
}

/// A record as the resume or delete function would leave it.
async fn record<S: AgentStore + snapwake::store::ScheduleStore + snapwake::store::UsageStore>(
    store: &S,
    world: &World,
    id: &str,
    changes: Changes,
) -> AgentRecord {
    let key = AgentKey::new(Kind::Codex, id);
    let describe = Description {
        owner: Some("alice".into()),
        owner_key: caller::UserSessionId::parse(id).owner_key(),
        tool_id: Some(world.recoverable.clone()),
        region: Some(REGION.into()),
        retention: Some(Retention::Recoverable),
        ..Description::default()
    };
    store
        .update(
            &key,
            &Condition::Absent,
            &Changes {
                // A name the caller gives (a wake's acquire writes the agent's) is kept.
                describe: Some(Description {
                    display_name: changes
                        .describe
                        .as_ref()
                        .and_then(|d| d.display_name.clone()),
                    ..describe
                }),
                ..changes
            },
        )
        .await
        .unwrap()
}

/// Alice's, Bob's and nobody's agents in every state a list distinguishes.
pub(crate) struct Seeded {
    pub(crate) asleep: String,
    pub(crate) awake_temporary: String,
    pub(crate) starting: String,
    pub(crate) resumed: String,
    pub(crate) failed: String,
    pub(crate) waking: String,
    pub(crate) gone: String,
    pub(crate) legacy: String,
    pub(crate) bob_asleep: String,
    pub(crate) bob_awake: String,
    pub(crate) mislabelled: String,
    pub(crate) ownerless: String,
    pub(crate) older: String,
}

pub(crate) async fn seed<
    S: AgentStore + snapwake::store::ScheduleStore + snapwake::store::UsageStore,
>(
    store: &S,
    world: &World,
) -> Seeded {
    world.register(store).await;
    let ctl = world.sim.control();
    let (asleep, _) = world.asleep_agent("alice", "Sleepy");
    // Two more snapshots of the same agent, older and newer, so they spread over pages.
    for at in ["2026-01-01T00:00:00Z", "2030-01-01T00:00:00Z"] {
        ctl.seed_snapshot(SeedSnapshot {
            tool_id: world.recoverable.clone(),
            user_session_id: Some(asleep.clone()),
            created_at: Some(
                time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339)
                    .unwrap(),
            ),
            session_metadata: vec![
                MetadataEntry::string("Username", "alice"),
                MetadataEntry::string("veadk_display_name", "Sleepy"),
            ],
            ..SeedSnapshot::default()
        })
        .unwrap();
    }
    let awake_temporary = caller::mint("alice");
    session(
        world,
        &world.temporary,
        &awake_temporary,
        "alice",
        "Live",
        "Ready",
    );
    let starting = caller::mint("alice");
    session(
        world,
        &world.temporary,
        &starting,
        "alice",
        "Starting",
        "Creating",
    );
    let (resumed, _) = world.asleep_agent("alice", "Resumed");
    // Resumed sessions carry their snapshot's metadata.
    session(
        world,
        &world.recoverable,
        &resumed,
        "alice",
        "Resumed",
        "Ready",
    );
    let (failed, _) = world.asleep_agent("alice", "Failed");
    record(
        store,
        world,
        &failed,
        Changes {
            state: Some(WakeState::Failed),
            error: Some(Some("session failed".into())),
            ..Changes::default()
        },
    )
    .await;
    let (waking, _) = world.asleep_agent("alice", "Waking");
    record(
        store,
        world,
        &waking,
        Changes {
            state: Some(WakeState::Waking),
            holder: Some(Some("h".into())),
            bump_fence: true,
            lease_until_ms: Some(now_ms() + 600_000),
            // As a wake's acquire describes the agent it holds.
            describe: Some(Description {
                display_name: Some("Waking".into()),
                ..Description::default()
            }),
            ..Changes::default()
        },
    )
    .await;
    let (gone, _) = world.asleep_agent("alice", "Gone");
    record(
        store,
        world,
        &gone,
        Changes {
            state: Some(WakeState::Gone),
            expires_at: Some(Some(now_s() + 86_400)),
            ..Changes::default()
        },
    )
    .await;
    let legacy = format!(
        "studio2-{}-0123456789abcdef-{}",
        caller::fingerprint("alice"),
        BASE64URL_NOPAD.encode("Alice Old".as_bytes())
    );
    ctl.seed_snapshot(SeedSnapshot {
        tool_id: world.recoverable.clone(),
        user_session_id: Some(legacy.clone()),
        ..SeedSnapshot::default()
    })
    .unwrap();
    let (bob_asleep, _) = world.asleep_agent("bob", "Bob's");
    let bob_awake = caller::mint("bob");
    session(
        world,
        &world.temporary,
        &bob_awake,
        "bob",
        "Bob live",
        "Ready",
    );
    // Metadata says alice, the id says bob: the id wins.
    let mislabelled = caller::mint("bob");
    session(
        world,
        &world.temporary,
        &mislabelled,
        "alice",
        "Trick",
        "Ready",
    );
    let snap = ctl
        .seed_snapshot(SeedSnapshot {
            tool_id: world.recoverable.clone(),
            ..SeedSnapshot::default()
        })
        .unwrap();
    let older = format!("studio-{}", uuid::Uuid::new_v4().hyphenated());
    ctl.seed_snapshot(SeedSnapshot {
        tool_id: world.recoverable.clone(),
        user_session_id: Some(older.clone()),
        ..SeedSnapshot::default()
    })
    .unwrap();
    Seeded {
        asleep,
        awake_temporary,
        starting,
        resumed,
        failed,
        waking,
        gone,
        legacy,
        bob_asleep,
        bob_awake,
        mislabelled,
        ownerless: format!("snapshot-{snap}"),
        older,
    }
}

pub(crate) fn alices(s: &Seeded) -> BTreeSet<String> {
    [
        &s.asleep,
        &s.awake_temporary,
        &s.starting,
        &s.resumed,
        &s.failed,
        &s.waking,
        &s.legacy,
    ]
    .into_iter()
    .cloned()
    .collect()
}
