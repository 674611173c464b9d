//! The embedded world of `snapwake serve`: Tools for every kind and retention in the simulator
//! (and the registry naming them), and with `--demo` a believable set of agents across a few
//! owners. Ids are fixed so the README's `curl` examples work as printed.

use snapwake::agentkit::types::MetadataEntry;
use snapwake::domain::{Kind, KindTools, Retention, ToolRegistry};
use snapwake::identity::caller;
use snapwake_sim::{SeedSession, SeedSnapshot, SeedTool, SimControl};

/// The region every embedded Tool lives in.
pub const REGION: &str = "cn-beijing";

/// The owners the demo's agents belong to (alice first: the page opens as her).
pub const OWNERS: [&str; 3] = ["alice", "bob", "carol"];

/// The admin of the README's examples (`X-Snapwake-Admin: 1`); owns no agent.
pub const ADMIN: &str = "root";

/// The demo's asleep codex agent of alice, woken in the README.
pub const ALICE_ASLEEP: &str = "studio-alice-0d5e1f0a0b0c0d0e0f10111213141516";

fn tool_id(kind: Kind, retention: Retention) -> String {
    format!("t-{}-{}", kind, retention)
}

/// Seed one Tool per kind and retention; answer the registry that names them.
pub fn seed_tools(sim: &SimControl) -> Result<ToolRegistry, String> {
    let mut registry = ToolRegistry {
        region: Some(REGION.into()),
        ..ToolRegistry::default()
    };
    for kind in Kind::ALL {
        let mut tools = KindTools::default();
        for retention in Retention::ALL {
            let id = sim
                .seed_tool(
                    REGION,
                    SeedTool {
                        tool_id: Some(tool_id(kind, retention)),
                        name: format!("veadk-studio-local-{kind}-{retention}"),
                        tool_type: kind.tool_type().into(),
                        enable_snapshot: retention.enable_snapshot(),
                        ..SeedTool::default()
                    },
                )
                .map_err(|e| e.to_string())?;
            match retention {
                Retention::Temporary => tools.temporary = Some(id),
                Retention::Recoverable => tools.recoverable = Some(id),
            }
        }
        registry.kinds.insert(kind, tools);
    }
    Ok(registry)
}

/// Session metadata as the Studio writes it; agents from before owners were recorded (empty
/// owner) carry none.
fn metadata(owner: &str, name: &str) -> Vec<MetadataEntry> {
    if owner.is_empty() {
        return Vec::new();
    }
    let mut m = vec![
        MetadataEntry::string("Username", owner),
        MetadataEntry::string("veadk_creator_name", owner),
    ];
    if !name.is_empty() {
        m.push(MetadataEntry::string("veadk_display_name", name));
    }
    m
}

fn asleep(
    sim: &SimControl,
    kind: Kind,
    owner: &str,
    agent_id: &str,
    name: &str,
    snapshots: usize,
) -> Result<(), String> {
    for i in 0..snapshots {
        sim.seed_snapshot(SeedSnapshot {
            tool_id: tool_id(kind, Retention::Recoverable),
            snapshot_id: Some(format!(
                "snap-{}-{}",
                &agent_id[agent_id.len() - 6..],
                i + 1
            )),
            session_id: Some(format!("s-{}-{}", &agent_id[agent_id.len() - 6..], i + 1)),
            user_session_id: Some(agent_id.to_string()),
            created_at: Some(
                time::OffsetDateTime::now_utc() - time::Duration::hours(9 * (snapshots - i) as i64),
            ),
            session_metadata: metadata(owner, name),
            ..SeedSnapshot::default()
        })
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn awake(
    sim: &SimControl,
    kind: Kind,
    retention: Retention,
    owner: &str,
    agent_id: &str,
    name: &str,
) -> Result<(), String> {
    sim.seed_session(SeedSession {
        tool_id: tool_id(kind, retention),
        session_id: Some(format!("s-{}-live", &agent_id[agent_id.len() - 6..])),
        user_session_id: Some(agent_id.to_string()),
        status: Some("Ready".into()),
        metadata: metadata(owner, name),
        ..SeedSession::default()
    })
    .map(|_| ())
    .map_err(|e| e.to_string())
}

/// A few owners' agents: awake, asleep, legacy and temporary, across the three kinds.
pub fn seed_agents(sim: &SimControl) -> Result<(), String> {
    // alice: an asleep codex agent with two snapshots, an awake openclaw agent, a temporary
    // hermes agent, and a legacy Studio agent.
    asleep(sim, Kind::Codex, "alice", ALICE_ASLEEP, "Data helper", 2)?;
    awake(
        sim,
        Kind::Openclaw,
        Retention::Recoverable,
        "alice",
        "studio-alice-0d5e1f0a0b0c0d0e0f10111213141517",
        "Research claw",
    )?;
    awake(
        sim,
        Kind::Hermes,
        Retention::Temporary,
        "alice",
        "studio-alice-0d5e1f0a0b0c0d0e0f10111213141518",
        "Scratch hermes",
    )?;
    let legacy = format!(
        "studio2-{}-0123456789abcdef-QWxpY2UgT2xk",
        caller::fingerprint("alice")
    );
    asleep(sim, Kind::Codex, "alice", &legacy, "", 1)?;
    // bob and carol.
    asleep(
        sim,
        Kind::Codex,
        "bob",
        "studio-bob-0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b01",
        "Bob's notebook",
        1,
    )?;
    asleep(
        sim,
        Kind::Hermes,
        "bob",
        "studio-bob-0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b02",
        "Mail sorter",
        3,
    )?;
    asleep(
        sim,
        Kind::Openclaw,
        "carol",
        "studio-carol-0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c01",
        "Crawler",
        1,
    )?;
    awake(
        sim,
        Kind::Codex,
        Retention::Recoverable,
        "carol",
        "studio-carol-0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c02",
        "Pair programmer",
    )?;
    // An agent from before UserSessionIds carried owners: only admins see it.
    asleep(
        sim,
        Kind::Codex,
        "",
        "studio-1b4e28ba-2fa1-11d2-883f-0016d3cca427",
        "",
        1,
    )?;
    Ok(())
}
