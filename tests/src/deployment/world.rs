//! The simulated deployment itself: every function of snapwake built as its `main` builds it
//! (production settings), over one table (the in-memory store behind [`FaultyTable`]) and one
//! AgentKit (the strict simulator, reached in process through the real client: signing,
//! envelope, retries, the deployment's budget), on the one clock of the simulation.
//!
//! Deployed, EventBridge, SQS and the table's stream drive the functions; here the studio's
//! loop does ([`super::studio`]): the tick at each minute, the refresh each minute, the sweep
//! each hour, the deploy each day, the queue's consumer as messages come, and the stream's
//! changes relayed to the bus after every step.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use snapwake::agentkit::port::{Answered, NoAnswer, Outgoing, Sending, Transport};
use snapwake::agentkit::{AgentKitClient, AgentKitConfig, CredentialsSource};
use snapwake::budget::{AgentKitBudget, BudgetSettings};
use snapwake::domain::StateEvent;
use snapwake::events::{EventError, EventSink};
use snapwake::fanout::{DueChannel, Fanout};
use snapwake::invocation::Deadline;
use snapwake::locate::{RegistryCache, ToolOverrides};
use snapwake::schedule::ScheduleRules;
use snapwake::store::memory::MemoryStore;
use snapwake::store::RecordChange;
use snapwake::wake::WakeSettings;
use snapwake_create::{Create, CreateSettings};
use snapwake_delete::{Delete, DeleteSettings};
use snapwake_deploy::reconcile::{Catalogue, DeployOptions, DeploySettings};
use snapwake_deploy::Deploy;
use snapwake_list::{List, ListSettings};
use snapwake_resume::Resume;
use snapwake_sim::{InProcess, RateLimits, SimConfig, SimControl};

use super::invocation::{FaultyTable, Invocation, Stop, Stoppable};
use crate::{identity, Api, Hooked};

/// The table every function shares.
pub type Table = Arc<FaultyTable>;
/// The AgentKit every function shares: the real client, in process to the simulator, each of
/// its calls a step at which an invocation may be stopped.
pub type Kit = Arc<Hooked<AgentKitClient, Stoppable>>;

/// How the deployed functions are invoked at most: a request's budget is its own (28 s, cut by
/// API Gateway's 30 s), an event's is the function's timeout.
pub const TICK_BUDGET: Duration = Duration::from_secs(28);
pub const CONSUMER_BUDGET: Duration = Duration::from_secs(28);
pub const SWEEP_BUDGET: Duration = Duration::from_secs(600);
pub const REFRESH_BUDGET: Duration = Duration::from_secs(55);
pub const OFFBOARD_BUDGET: Duration = Duration::from_secs(120);
pub const DEPLOY_BUDGET: Duration = Duration::from_secs(300);

/// One AgentKit call as the simulator received it: when, which action, what it asked, and
/// the status it answered (`None`: no answer came back).
#[derive(Clone, Debug)]
pub struct SentCall {
    pub at_ms: u64,
    pub action: String,
    pub body: Value,
    pub status: Option<u16>,
}

/// The transport into the simulator, noting every call that went out.
pub struct Noted {
    inner: InProcess,
    pub calls: Mutex<Vec<SentCall>>,
}

impl Transport for Noted {
    fn send(&self, request: Outgoing) -> Sending<'_> {
        Box::pin(async move {
            let action = request
                .url
                .query_pairs()
                .find(|(k, _)| k == "Action")
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default();
            let body = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            let at_ms = snapwake::ambient::now_ms();
            let answered: Result<Answered, NoAnswer> = self.inner.send(request).await;
            let status = answered.as_ref().ok().map(|a| a.status);
            self.calls
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(SentCall {
                    at_ms,
                    action,
                    body,
                    status,
                });
            answered
        })
    }
}

/// The bus: every event published, in order; it refuses some when told to.
#[derive(Default)]
pub struct Bus {
    pub published: Mutex<Vec<StateEvent>>,
    refusing: Mutex<(f64, Option<fastrand::Rng>)>,
    refused: std::sync::atomic::AtomicU64,
}

impl Bus {
    /// Events refused so far.
    pub fn refusals(&self) -> u64 {
        self.refused.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn refuse(&self, rate: f64, seed: u64) {
        *self.refusing.lock().unwrap_or_else(|p| p.into_inner()) =
            (rate, Some(fastrand::Rng::with_seed(seed)));
    }
}

impl EventSink for Bus {
    async fn publish(&self, event: &StateEvent) -> Result<(), EventError> {
        {
            let mut refusing = self.refusing.lock().unwrap_or_else(|p| p.into_inner());
            let (rate, rng) = &mut *refusing;
            if let Some(rng) = rng {
                if *rate > 0.0 && rng.f64() < *rate {
                    self.refused
                        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    return Err(EventError::Failed("simulated: the bus refused".into()));
                }
            }
        }
        self.published
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(event.clone());
        Ok(())
    }
}

/// Every function of one deployment, and what they run on.
pub struct Deployment {
    pub sim: SimControl,
    pub table: Table,
    pub transport: Arc<Noted>,
    /// The HTTP functions, routed as API Gateway routes them.
    pub api: Api<Table, Kit>,
    pub deploy: Deploy<Table, Kit>,
    pub bus: Bus,
    /// Stream changes read but not yet published (from the first the bus refused).
    pending: Mutex<Vec<RecordChange>>,
    /// The last change read off the stream.
    read_up_to: Mutex<u64>,
    /// How often the announce function is killed while it keeps a batch's usage, and the dice.
    announce_kills: Mutex<(f64, fastrand::Rng)>,
}

/// The simulator's credentials, which the client signs with.
fn credentials() -> snapwake::agentkit::Credentials {
    SimConfig::default().credentials
}

impl Deployment {
    /// A deployment on a simulator of `sim_config` (its AgentKit), with nothing deployed yet.
    pub fn new(sim_config: SimConfig, seed: u64) -> Deployment {
        let sim = SimControl::new(&SimConfig {
            rate_limits: RateLimits::agentkit(),
            seed,
            ..sim_config
        });
        let memory = Arc::new(MemoryStore::new());
        let table: Table = Arc::new(FaultyTable::new(memory, seed ^ 0x7ab1e));
        let transport = Arc::new(Noted {
            inner: InProcess::new(sim.clone()),
            calls: Mutex::new(Vec::new()),
        });
        let config = AgentKitConfig {
            endpoint: "https://open.volcengineapi.com".into(),
            regions: sim.regions().to_vec(),
            credentials: CredentialsSource::Static(credentials()),
            request_timeout: snapwake::agentkit::port::DEFAULT_REQUEST_TIMEOUT,
        };
        let budget = Arc::new(AgentKitBudget::new(
            table.clone(),
            BudgetSettings::default(),
        ));
        let client = |retries: bool| {
            let c = AgentKitClient::new(&config, credentials())
                .expect("a client")
                .with_transport(transport.clone())
                .with_budget(budget.clone());
            let c = if retries {
                c
            } else {
                c.with_retry_policy(snapwake_deploy::reconcile::no_retry_policy())
            };
            Arc::new(Hooked {
                inner: c,
                hook: Stoppable,
            })
        };
        let kit = client(true);
        let registry = || RegistryCache::new(ToolOverrides::default());
        let wake = WakeSettings::default();
        let api = Api {
            list: List::new(
                table.clone(),
                kit.clone(),
                registry(),
                identity(),
                ListSettings {
                    lock: wake.lock.clone(),
                    cursor_key: None,
                    open_url: None,
                    prices: None,
                },
            ),
            create: Create {
                store: table.clone(),
                agentkit: kit.clone(),
                registry: registry(),
                identity: identity(),
                settings: CreateSettings::default(),
            },
            resume: Resume {
                store: table.clone(),
                agentkit: kit.clone(),
                registry: registry(),
                identity: identity(),
                wake,
                schedules: ScheduleRules::default(),
                fanout: Fanout::Channel(DueChannel::new()),
            },
            delete: Delete {
                store: table.clone(),
                agentkit: kit.clone(),
                registry: registry(),
                identity: identity(),
                settings: DeleteSettings::default(),
            },
        };
        Deployment {
            api,
            deploy: Deploy {
                store: table.clone(),
                agentkit: kit.clone(),
                writer: client(false),
                catalogue: Catalogue::default_for(None),
                settings: DeploySettings::default(),
            },
            sim,
            table,
            transport,
            bus: Bus::default(),
            pending: Mutex::new(Vec::new()),
            announce_kills: Mutex::new((0.0, fastrand::Rng::with_seed(seed ^ 0xa11))),
            read_up_to: Mutex::new(0),
        }
    }

    /// The same deployment with idle sleep on at `minutes` (0: off), as `IdleMinutes` sets it
    /// for the create and resume functions.
    pub fn with_idle(mut self, minutes: u32) -> Deployment {
        let idle = snapwake::wake::IdlePolicy {
            default_minutes: minutes,
        };
        self.api.resume.wake.idle = idle;
        self.api.create.settings.idle = idle;
        self
    }

    /// The in-process queue the tick hands due occurrences to.
    pub fn queue(&self) -> DueChannel {
        match &self.api.resume.fanout {
            Fanout::Channel(queue) => queue.clone(),
            _ => unreachable!("the simulated deployment's queue is in process"),
        }
    }

    /// Relay what the table's stream has to the usage rows (through the table's faults) and the
    /// bus, in order, as the announce function does:
    /// from the first change the bus refused, nothing later goes out before it. Answers the
    /// changes read off the stream this time (for the model), published or not.
    pub async fn relay(&self) -> Vec<RecordChange> {
        let read = {
            let mut up_to = self.read_up_to.lock().unwrap_or_else(|p| p.into_inner());
            let fresh = self.table.memory.changes_after(*up_to, usize::MAX);
            if let Some(last) = fresh.last() {
                *up_to = last.sequence.parse().unwrap_or(*up_to);
            }
            fresh
        };
        let mut pending =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        pending.extend(read.iter().cloned());
        // The announce function runs as an invocation: the table's faults reach its usage
        // writes, and now and then it is killed at one of them (a write landed or not), as a
        // Lambda dies; the mapping then hands the whole batch over again.
        let stop = {
            let mut kills = self
                .announce_kills
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let (rate, rng) = &mut *kills;
            (*rate > 0.0 && rng.f64() < *rate).then(|| Stop {
                at_call: rng.u32(1..=6),
                after_landing: rng.bool(),
            })
        };
        let consumed = Invocation::new("announce", stop)
            .run(snapwake::events::consume(
                &pending,
                &self.table,
                &self.bus,
                Deadline::after(Duration::from_secs(60)),
            ))
            .await;
        let Some(relayed) = consumed else {
            *self.pending.lock().unwrap_or_else(|p| p.into_inner()) = pending;
            return read;
        };
        if let Some(at) = relayed.failed_at {
            let done = pending.iter().take_while(|c| c.sequence != at).count();
            pending.drain(..done);
            *self.pending.lock().unwrap_or_else(|p| p.into_inner()) = pending;
        }
        read
    }

    /// Kill the announce function while it keeps usage at `rate` of its batches.
    pub fn kill_announce(&self, rate: f64, seed: u64) {
        *self
            .announce_kills
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = (rate, fastrand::Rng::with_seed(seed));
    }

    /// The agents with a change not consumed yet (its usage kept, its event published): one
    /// the bus refused and those after it, and what was written since the last relay.
    pub fn unrelayed(&self) -> std::collections::HashSet<snapwake::domain::AgentKey> {
        let up_to = *self.read_up_to.lock().unwrap_or_else(|p| p.into_inner());
        let pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending
            .iter()
            .cloned()
            .chain(self.table.memory.changes_after(up_to, usize::MAX))
            .filter_map(|c| c.new.or(c.old).map(|r| r.key))
            .collect()
    }

    /// A deploy of the catalogue, as its daily schedule runs it.
    pub async fn deploy_tools(
        &self,
    ) -> Result<snapwake_deploy::reconcile::Report, snapwake::Error> {
        self.deploy
            .run(DeployOptions::default(), Deadline::after(DEPLOY_BUDGET))
            .await
    }

    /// AgentKit calls made since `from` (an index into the noted calls).
    pub fn calls_since(&self, from: usize) -> Vec<SentCall> {
        let calls = self
            .transport
            .calls
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        calls.get(from..).map(<[_]>::to_vec).unwrap_or_default()
    }
}
