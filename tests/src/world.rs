//! The simulated AgentKit of a test: Tools of every kind, a registry, agents asleep and awake,
//! and clients that sign like production.

use std::sync::Arc;
use std::time::Duration;

use snapwake::agentkit::answer::RetryPolicy;
use snapwake::agentkit::types::MetadataEntry;
use snapwake::agentkit::AgentKitClient;
use snapwake::agentkit::{AgentKitConfig, CredentialsSource};
use snapwake::domain::{Kind, KindTools, ToolRegistry};
use snapwake::identity::caller;
use snapwake::store::dynamo::DynamoStore;
use snapwake::store::AgentStore;
use snapwake_sim::{
    RateLimits, RunningSim, SeedSnapshot, SeedTool, SimConfig, SimControl, Simulator,
};

use crate::store::{dynamo_store, REGION};

/// Where most tests start: a fresh table for `test` on DynamoDB Local, a [`World`] whose
/// registry is written in it, and the simulator's control.
pub async fn deployed(
    test: &str,
    session_ready_delay: Duration,
) -> (DynamoStore, World, SimControl) {
    let store = dynamo_store(test).await;
    let world = World::registered(session_ready_delay, &store).await;
    let ctl = world.sim.control();
    (store, world, ctl)
}

/// [`deployed`], its store behind an `Arc` for the tests that share it between tasks.
pub async fn deployed_shared(
    test: &str,
    session_ready_delay: Duration,
) -> (Arc<DynamoStore>, World, SimControl) {
    let (store, world, ctl) = deployed(test, session_ready_delay).await;
    (Arc::new(store), world, ctl)
}

/// The simulator, one recoverable and one temporary codex Tool, and the registry naming them.
pub struct World {
    pub sim: RunningSim,
    pub recoverable: String,
    pub temporary: String,
}

impl World {
    pub async fn start(session_ready_delay: Duration) -> World {
        let sim = Simulator::start(SimConfig {
            session_ready_delay,
            rate_limits: rate_limits(),
            ..SimConfig::default()
        })
        .await
        .unwrap();
        World::seeded(sim)
    }

    /// [`World::start`], with its registry written into `store`.
    pub async fn registered<S: AgentStore + snapwake::store::ScheduleStore>(
        session_ready_delay: Duration,
        store: &S,
    ) -> World {
        let world = World::start(session_ready_delay).await;
        world.register(store).await;
        world
    }

    /// [`World::start`] with the simulator on threads of its own
    /// ([`Simulator::start_apart`]): for tests that keep hundreds of callers busy at once.
    pub fn start_apart(session_ready_delay: Duration) -> World {
        let sim = Simulator::start_apart(SimConfig {
            session_ready_delay,
            rate_limits: rate_limits(),
            ..SimConfig::default()
        })
        .unwrap();
        World::seeded(sim)
    }

    /// `sim` with one recoverable and one temporary codex Tool.
    fn seeded(sim: RunningSim) -> World {
        let ctl = sim.control();
        let tool = |name: &str, snapshots: bool| SeedTool::code_env(name, snapshots);
        let recoverable = ctl.seed_tool(REGION, tool("chat-snapshot", true)).unwrap();
        let temporary = ctl
            .seed_tool(REGION, tool("chat-temporary", false))
            .unwrap();
        World {
            sim,
            recoverable,
            temporary,
        }
    }

    pub fn registry(&self) -> ToolRegistry {
        let mut r = ToolRegistry {
            region: Some(REGION.into()),
            ..ToolRegistry::default()
        };
        r.kinds.insert(
            Kind::Codex,
            KindTools {
                temporary: Some(self.temporary.clone()),
                recoverable: Some(self.recoverable.clone()),
                legacy_snapshot_tools: Vec::new(),
            },
        );
        r
    }

    /// Write the registry into `store` (deploy's job in production).
    pub async fn register<S: AgentStore + snapwake::store::ScheduleStore>(&self, store: &S) {
        let current = store.get_registry().await.unwrap().map_or(0, |r| r.version);
        store.put_registry(&self.registry(), current).await.unwrap();
    }

    pub fn client(&self) -> AgentKitClient {
        client(&self.sim.endpoint())
    }

    /// An asleep agent of `owner`: one Ready snapshot. Answers (agent id, snapshot id).
    pub fn asleep_agent(&self, owner: &str, name: &str) -> (String, String) {
        let agent_id = caller::mint(owner);
        let snapshot = self
            .sim
            .control()
            .seed_snapshot(SeedSnapshot {
                tool_id: self.recoverable.clone(),
                user_session_id: Some(agent_id.clone()),
                session_id: Some(format!("s-old-{}", &agent_id[agent_id.len() - 8..])),
                session_metadata: vec![
                    MetadataEntry::string("Username", owner),
                    MetadataEntry::string("veadk_display_name", name),
                    MetadataEntry::string("veadk_creator_name", owner),
                ],
                ..SeedSnapshot::default()
            })
            .unwrap();
        (agent_id, snapshot)
    }

    /// The record of an asleep agent of `owner` on the recoverable Tool, as its first write
    /// (under [`snapwake::store::Condition::Absent`]) makes it.
    pub fn asleep_record(&self, owner: &str) -> snapwake::store::Changes {
        snapwake::store::Changes {
            state: Some(snapwake::domain::WakeState::Asleep),
            describe: Some(snapwake::domain::Description {
                owner: Some(owner.to_string()),
                tool_id: Some(self.recoverable.clone()),
                region: Some(REGION.into()),
                retention: Some(snapwake::domain::Retention::Recoverable),
                ..snapwake::domain::Description::default()
            }),
            ..snapwake::store::Changes::default()
        }
    }
}

/// The live sessions of `agent_id` (its UserSessionId) in the simulator of `ctl`: their ids.
pub fn live_sessions(ctl: &snapwake_sim::SimControl, agent_id: &str) -> Vec<String> {
    ctl.sessions()
        .into_iter()
        .filter(|s| s.user_session_id.as_deref() == Some(agent_id) && s.is_active())
        .filter_map(|s| s.session_id)
        .collect()
}

/// A client of the simulator at `endpoint` (quick retries).
pub fn client(endpoint: &str) -> AgentKitClient {
    let config = AgentKitConfig {
        endpoint: endpoint.to_string(),
        regions: vec![REGION.into(), "cn-shanghai".into()],
        credentials: CredentialsSource::Static(SimConfig::default().credentials),
        request_timeout: Duration::from_secs(2),
    };
    AgentKitClient::new(&config, SimConfig::default().credentials)
        .unwrap()
        .with_retry_policy(RetryPolicy {
            max_retries: 2,
            base: Duration::from_millis(20),
            max_wait: Duration::from_secs(1),
        })
}

/// Tools of the kinds beyond codex: hermes has only a temporary Tool; openclaw has a temporary
/// Tool and a legacy snapshot Tool, but no recoverable one.
pub struct MoreKinds {
    pub hermes_temporary: String,
    pub openclaw_temporary: String,
    pub openclaw_legacy: String,
}

impl World {
    /// Seed the Tools of [`MoreKinds`] in the simulator.
    pub fn seed_more_kinds(&self) -> MoreKinds {
        let ctl = self.sim.control();
        let tool = |name: &str, tool_type: &str, snapshots: bool| SeedTool {
            name: name.into(),
            tool_type: tool_type.into(),
            enable_snapshot: snapshots,
            ..SeedTool::default()
        };
        MoreKinds {
            hermes_temporary: ctl
                .seed_tool(REGION, tool("hermes-temporary", "HermesEnv", false))
                .unwrap(),
            openclaw_temporary: ctl
                .seed_tool(REGION, tool("openclaw-temporary", "ArkClawEnv", false))
                .unwrap(),
            openclaw_legacy: ctl
                .seed_tool(REGION, tool("openclaw-legacy", "ArkClawEnv", true))
                .unwrap(),
        }
    }

    /// [`World::registry`] plus the Tools of `more`.
    pub fn registry_with(&self, more: &MoreKinds) -> ToolRegistry {
        let mut r = self.registry();
        r.kinds.insert(
            Kind::Hermes,
            KindTools {
                temporary: Some(more.hermes_temporary.clone()),
                ..KindTools::default()
            },
        );
        r.kinds.insert(
            Kind::Openclaw,
            KindTools {
                temporary: Some(more.openclaw_temporary.clone()),
                recoverable: None,
                legacy_snapshot_tools: vec![more.openclaw_legacy.clone()],
            },
        );
        r
    }

    /// Write [`World::registry_with`] into `store`.
    pub async fn register_with<S: AgentStore + snapwake::store::ScheduleStore>(
        &self,
        store: &S,
        more: &MoreKinds,
    ) {
        let current = store.get_registry().await.unwrap().map_or(0, |r| r.version);
        store
            .put_registry(&self.registry_with(more), current)
            .await
            .unwrap();
    }
}

impl World {
    /// `count` more Ready snapshots of `owner`'s agent `agent_id`, created
    /// a second apart before now so the newest stays the one seeded last. Answers their ids.
    pub fn more_snapshots(&self, owner: &str, agent_id: &str, count: usize) -> Vec<String> {
        let base = time::OffsetDateTime::now_utc() - Duration::from_secs(3600 + count as u64);
        let seeds = (0..count)
            .map(|i| SeedSnapshot {
                tool_id: self.recoverable.clone(),
                user_session_id: Some(agent_id.to_string()),
                session_id: Some(format!("s-older-{i}")),
                created_at: Some(base + Duration::from_secs(i as u64)),
                session_metadata: vec![MetadataEntry::string("Username", owner)],
                ..SeedSnapshot::default()
            })
            .collect();
        self.sim.control().seed_snapshots(seeds).unwrap()
    }

    /// A Ready session of `agent_id` on the recoverable Tool. Answers its id.
    pub fn live_session(&self, owner: &str, agent_id: &str) -> String {
        self.sim
            .control()
            .seed_session(snapwake_sim::SeedSession {
                tool_id: self.recoverable.clone(),
                user_session_id: Some(agent_id.to_string()),
                metadata: vec![MetadataEntry::string("Username", owner)],
                ..Default::default()
            })
            .unwrap()
    }

    /// Inject `fault` into the simulator.
    pub fn inject(&self, fault: snapwake_sim::Fault) {
        self.sim.control().inject(fault).unwrap();
    }

    /// How many live sessions of `agent_id` (its UserSessionId) the simulator holds.
    pub fn live_sessions_of(&self, agent_id: &str) -> u64 {
        self.sim.control().counters().live_sessions_of(agent_id)
    }

    /// How many calls of `action` the simulator received (since its counters were last reset).
    pub fn received(&self, action: &str) -> u64 {
        self.sim.control().counters().received(action)
    }

    /// How many AgentKit calls the simulator received, of every action.
    pub fn agentkit_calls(&self) -> u64 {
        let counters = self.sim.control().counters();
        counters.actions.values().map(|a| a.received).sum()
    }

    /// The snapshots the simulator still holds for `agent_id`.
    pub fn snapshots_of(&self, agent_id: &str) -> Vec<String> {
        self.sim
            .control()
            .snapshots()
            .into_iter()
            .filter(|s| s.user_session_id.as_deref() == Some(agent_id))
            .filter_map(|s| s.snapshot_id)
            .collect()
    }
}

impl World {
    /// [`World::start`] with a simulator configured by `config` (its own credentials, say).
    pub async fn start_with(config: SimConfig) -> World {
        World::seeded(Simulator::start(config).await.unwrap())
    }
}

/// AgentKit's rate limits in a test's simulator: as `SNAPWAKE_SIM_RATE_LIMITS` says (CI runs
/// the storm, soak and schedule suites once more with `agentkit`), else the Tool writes only.
pub fn rate_limits() -> RateLimits {
    snapwake_sim::limits_from_env().unwrap_or_else(|e| panic!("{e}"))
}

/// [`client`] signing with `credentials`.
pub fn client_with(endpoint: &str, credentials: snapwake::agentkit::Credentials) -> AgentKitClient {
    let config = AgentKitConfig {
        endpoint: endpoint.to_string(),
        regions: vec![REGION.into(), "cn-shanghai".into()],
        credentials: CredentialsSource::Static(credentials.clone()),
        request_timeout: Duration::from_secs(2),
    };
    AgentKitClient::new(&config, credentials)
        .unwrap()
        .with_retry_policy(RetryPolicy {
            max_retries: 2,
            base: Duration::from_millis(20),
            max_wait: Duration::from_secs(1),
        })
}
