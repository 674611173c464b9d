//! `snapwake serve`: the whole HTTP API in one process, through the same handler code the
//! Lambda functions run.
//!
//! Embedded defaults: the in-memory store and the AgentKit simulator (with a Tool per kind and
//! retention). Real parts by configuration: `SNAPWAKE_TABLE` (+ `AWS_ENDPOINT_URL`) for
//! DynamoDB, `AGENTKIT_ENDPOINT` + Volcengine credentials for AgentKit. Local identity comes
//! from `X-Snapwake-User` / `X-Snapwake-Admin: 1` (see [`adapter`]). One log line per request;
//! Ctrl-C shuts down cleanly.

mod adapter;
mod app;
mod args;
mod console;
mod demo;
mod description;
mod changes;
mod events;
mod local_only;

use snapwake::fanout::{DueChannel, Fanout};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use snapwake::agentkit::{AgentKit, AgentKitClient};
use snapwake::agentkit::{AgentKitConfig, CredentialsSource};
use snapwake::config::Config;
use snapwake::events::recorded::Recorded;
use snapwake::identity::IdentityConfig;
use snapwake::invocation::Deadline;
use snapwake::locate::RegistryCache;
use snapwake::store::memory::{FeedReader, MemoryStore};
use snapwake::store::{AgentStore, BudgetStore, ChangeSource, ScheduleStore, UsageStore};
use snapwake::wake::WakeSettings;
use snapwake_create::{Create, CreateSettings};
use snapwake_delete::{Delete, DeleteSettings};
use snapwake_delete::{Quiet, SweepSettings};
use snapwake_list::{List, ListSettings};
use snapwake_resume::Resume;
use snapwake_sim::{RunningSim, SimConfig, Simulator};

use crate::error::CliError;
use app::App;
use args::idle_policy;
pub use args::ServeArgs;

/// What the server runs on, resolved from the environment.
struct Parts {
    config: Config,
    /// The embedded simulator, when `AGENTKIT_ENDPOINT` is not set (kept alive here).
    sim: Option<RunningSim>,
}

/// How often the local server refreshes the owner index (with the sweep on).
const REFRESH_EVERY: Duration = Duration::from_secs(60);

/// Where `serve --demo` sends the Open action of an awake agent, unless `SNAPWAKE_OPEN_URL`
/// says otherwise.
const DEMO_OPEN_URL: &str = "https://studio.example/agents/{kind}/{agent_id}?session={session_id}";

/// How many state-change events `GET /v1/events` shows.
const EVENTS_KEPT: usize = 100;
/// How often the table's changes are read (a Lambda event source mapping polls a stream's
/// shards about four times a second).
const STREAM_POLL: Duration = Duration::from_millis(250);

/// The longest one tick of the local server works (a deployed tick has its Lambda's time).
const TICK_BUDGET: Duration = Duration::from_secs(50);
/// How long one due occurrence of the queue may work: the deployed resume function's timeout.
const DUE_BUDGET: Duration = Duration::from_secs(29);

/// The longest one sweep of the local server runs before it checkpoints.
const SWEEP_BUDGET: Duration = Duration::from_secs(120);
/// Due occurrences worked at once in process (deployed: 10 invocations × 10 messages).
const SERVE_CONSUMERS: usize = 20;

pub fn run(args: ServeArgs) -> Result<(), CliError> {
    snapwake::bootstrap::init_tracing();
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(serve(args))
}

async fn serve(args: ServeArgs) -> Result<(), CliError> {
    let parts = parts(&args).await?;
    match parts.config.table.clone() {
        Some(table) => {
            let (store, stream) = changes::dynamo(&table).await?;
            run_with(args, parts, Arc::new(store), stream).await
        }
        None => {
            // The memory store's change feed stands in for the stream.
            let store = Arc::new(MemoryStore::new());
            let feed = FeedReader::new(store.clone());
            run_with(args, parts, store, feed).await
        }
    }
}

async fn parts(args: &ServeArgs) -> Result<Parts, CliError> {
    if std::env::var_os("AGENTKIT_ENDPOINT").is_some() {
        let config = Config::from_env().map_err(|e| CliError::Usage(e.to_string()))?;
        return Ok(Parts { config, sim: None });
    }
    let sim = Simulator::start(SimConfig {
        session_ready_delay: Duration::from_millis(args.session_ready_delay_ms),
        ..SimConfig::default()
    })
    .await?;
    sim.control()
        .set_snapshot_ready_delay(Duration::from_millis(args.snapshot_ready_delay_ms));
    args.agentkit.apply(&sim.control());
    // The embedded simulator's own credentials; everything else from the environment.
    let endpoint = sim.endpoint();
    let credentials = SimConfig::default().credentials;
    let config = Config::from_lookup(|name| match name {
        "AGENTKIT_ENDPOINT" => Some(endpoint.clone()),
        "VOLCENGINE_ACCESS_KEY" => Some(credentials.access_key_id.clone()),
        "VOLCENGINE_SECRET_KEY" => Some(credentials.secret_access_key().to_string()),
        "VOLCENGINE_SESSION_TOKEN" | "AGENTKIT_CREDENTIALS_SECRET" => None,
        other => std::env::var(other).ok(),
    })
    .map_err(|e| CliError::Usage(e.to_string()))?;
    // The budget assumes the limits of the AgentKit it talks to: the embedded simulator's,
    // unless the environment says otherwise.
    let mut config = config;
    if std::env::var_os("SNAPWAKE_AGENTKIT_LIMITS").is_none() {
        let limits = sim.control().rate_limits();
        config.budget = (!limits.0.is_empty()).then(|| snapwake::budget::BudgetSettings {
            limits,
            ..snapwake::budget::BudgetSettings::default()
        });
    }
    Ok(Parts {
        config,
        sim: Some(sim),
    })
}

async fn run_with<S: AgentStore + ScheduleStore + BudgetStore + UsageStore + 'static>(
    args: ServeArgs,
    parts: Parts,
    store: Arc<S>,
    changes: impl ChangeSource + 'static,
) -> Result<(), CliError> {
    // State-change events, derived from the table's changes as the deployed announce function
    // derives them, are printed and kept for GET /v1/events (docs/events.md).
    let events = Arc::new(Recorded::new(EVENTS_KEPT, true));
    tokio::spawn(snapwake::events::follow(
        changes,
        store.clone(),
        events.clone(),
        STREAM_POLL,
    ));
    let agentkit = agentkit(&parts.config.agentkit).await?;
    let agentkit = Arc::new(snapwake::bootstrap::within_budget(
        agentkit,
        &parts.config,
        store.clone(),
    ));
    let mut seeded = false;
    if let Some(sim) = &parts.sim {
        let registry = demo::seed_tools(&sim.control()).map_err(CliError::Usage)?;
        let current = store
            .get_registry()
            .await
            .ok()
            .flatten()
            .map_or(0, |r| r.version);
        store
            .put_registry(&registry, current)
            .await
            .map_err(|e| CliError::Usage(format!("cannot write the registry: {e}")))?;
        if args.demo {
            demo::seed_agents(&sim.control()).map_err(CliError::Usage)?;
            seeded = true;
        }
    } else if args.demo {
        eprintln!(
            "note: --demo seeds only the embedded simulator; AGENTKIT_ENDPOINT is set, so \
             nothing was seeded"
        );
    }
    // Under --demo the agents' Open action points at an example studio page unless the
    // environment names one (docs/console.md).
    let open_url = parts.config.open_url.clone().or_else(|| {
        args.demo
            .then(|| snapwake::domain::OpenUrl::parse(DEMO_OPEN_URL).ok())
            .flatten()
    });
    let identity = local_identity(&parts.config.identity);
    let registry = || RegistryCache::new(parts.config.tool_overrides.clone());
    let app = Arc::new(App {
        list: List::new(
            store.clone(),
            agentkit.clone(),
            registry(),
            identity.clone(),
            ListSettings {
                lock: parts.config.wake.lock.clone(),
                cursor_key: parts.config.cursor_key.clone(),
                open_url: open_url.clone(),
                prices: parts.config.prices.clone(),
            },
        ),
        delete: Delete {
            store: store.clone(),
            agentkit: agentkit.clone(),
            registry: registry(),
            identity: identity.clone(),
            settings: DeleteSettings {
                sweep: SweepSettings {
                    policy: parts.config.retention.into(),
                    ..SweepSettings::default()
                },
                ..DeleteSettings::default()
            },
        },
        create: Create {
            store: store.clone(),
            agentkit: agentkit.clone(),
            registry: registry(),
            identity: identity.clone(),
            settings: CreateSettings {
                open_url: open_url.clone(),
                idle: idle_policy(&args, &parts.config),
                ..CreateSettings::default()
            },
        },
        resume: Resume {
            store: store.clone(),
            agentkit: agentkit.clone(),
            registry: registry(),
            identity: identity.clone(),
            wake: WakeSettings {
                open_url,
                idle: idle_policy(&args, &parts.config),
                ..parts.config.wake.clone()
            },
            schedules: parts.config.schedules.clone(),
            // The deployed path, in process: the tick hands due occurrences to a queue that
            // the consumer below works (docs/schedules.md, "Fan-out"), with fewer at once than
            // deployed: here they share one machine with the people it serves.
            fanout: Fanout::Channel(DueChannel::new()),
        },
    });

    // The index and the retention are kept as in production: the sweep runs once now (which
    // is also what lets one owner's list trust the owner index) and then on its schedule.
    let swept = app
        .delete
        .sweep(Deadline::after(SWEEP_BUDGET), false, &Quiet)
        .await;
    let sweep_note = match &swept {
        Ok(r) => format!(
            "sweep: {} agents indexed, {} snapshots pruned{}",
            r.counts.indexed,
            r.counts.pruned,
            if r.completed { "" } else { " (checkpointed)" }
        ),
        Err(e) => format!("sweep failed: {e}"),
    };
    if !args.sweep_every.is_zero() {
        let sweeper = app.clone();
        let every = args.sweep_every;
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                if let Err(e) = sweeper
                    .delete
                    .sweep(Deadline::after(SWEEP_BUDGET), false, &Quiet)
                    .await
                {
                    tracing::warn!(error = %e, "scheduled sweep failed");
                }
                if let Err(e) = sweeper
                    .delete
                    .finish_offboardings(Deadline::after(SWEEP_BUDGET))
                    .await
                {
                    tracing::warn!(error = %e, "finishing offboardings failed");
                }
            }
        });
        // The index refresh, every minute as deployed (docs/operations.md, "Index freshness").
        let refresher = app.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(REFRESH_EVERY);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                if let Err(e) = refresher
                    .delete
                    .refresh(Deadline::after(REFRESH_EVERY))
                    .await
                {
                    tracing::warn!(error = %e, "index refresh failed");
                }
            }
        });
    }

    // The fan-out queue's consumer, as the event source mapping is deployed: each due
    // occurrence worked by the resume function, a bounded number at once.
    if let Fanout::Channel(queue) = &app.resume.fanout {
        let queue = queue.clone();
        let consumer = app.clone();
        tokio::spawn(async move {
            queue
                .consume(SERVE_CONSUMERS, |due| {
                    let consumer = consumer.clone();
                    async move {
                        consumer
                            .resume
                            .due(&due, Deadline::after(DUE_BUDGET))
                            .await
                            .is_ok()
                    }
                })
                .await;
        });
    }

    // The schedules' tick, as deployed (docs/schedules.md): at the start of every minute, of
    // the embedded simulator's time when there is one (moving AgentKit's clock moves the
    // schedules' too). A shorter `--tick-every` ticks that often, each at the minute it falls in.
    if !args.tick_every.is_zero() {
        let ticker = app.clone();
        let sim_clock = parts.sim.as_ref().map(|s| s.control());
        let every = args.tick_every;
        let clock = move || match &sim_clock {
            Some(control) => {
                u64::try_from(control.now().unix_timestamp_nanos() / 1_000_000).unwrap_or_default()
            }
            None => snapwake::ambient::now_ms(),
        };
        tokio::spawn(async move {
            loop {
                let now_ms = clock();
                let next_ms = if every >= Duration::from_secs(60) {
                    (now_ms / 60_000 + 1) * 60_000
                } else {
                    now_ms + every.as_millis() as u64
                };
                tokio::time::sleep(Duration::from_millis(next_ms - now_ms)).await;
                let now_ms = clock();
                // The minute, as EventBridge Scheduler's `scheduled-time` would say it.
                let minute_ms = now_ms - now_ms % 60_000;
                let tick = ticker.resume.tick(minute_ms, Deadline::after(TICK_BUDGET));
                if let Err(e) = tick.await {
                    tracing::warn!(error = %e, "schedule tick failed");
                }
            }
        });
    }

    let addr = SocketAddr::from(([127, 0, 0, 1], args.port));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let router = axum::Router::new()
        .route("/v1/openapi.json", axum::routing::get(description::serve))
        .merge(console::router(console::local_config(
            seeded,
            parts.config.wake.max_ttl.as_secs(),
        )))
        .route(
            "/v1/events",
            axum::routing::get({
                let identity = identity.clone();
                move |uri: Uri, headers: HeaderMap| {
                    events::last(events.clone(), identity.clone(), uri, headers)
                }
            }),
        )
        .fallback(handle::<S, AgentKitClient>)
        .with_state(app)
        .layer(axum::middleware::from_fn(local_only::loopback_host_only));
    println!(
        "snapwake serving on http://{} (store: {}, AgentKit: {}{}; {}{})",
        listener.local_addr()?,
        if parts.config.table.is_some() {
            "DynamoDB"
        } else {
            "in memory"
        },
        parts.sim.as_ref().map_or_else(
            || parts.config.agentkit.endpoint.clone(),
            |s| format!("simulator at {}", s.endpoint())
        ),
        if seeded { ", demo agents seeded" } else { "" },
        sweep_note,
        if args.sweep_every.is_zero() {
            String::new()
        } else {
            format!(
                ", then every {}",
                humantime::format_duration(args.sweep_every)
            )
        },
    );
    if let Some(warning) = local_only::exposure_warning(
        parts.config.table.as_deref(),
        std::env::var("AWS_ENDPOINT_URL").ok().as_deref(),
        parts
            .sim
            .is_none()
            .then_some(parts.config.agentkit.endpoint.as_str()),
    ) {
        eprintln!("\n{}\n{warning}\n{}\n", "!".repeat(78), "!".repeat(78));
        tracing::warn!("{warning}");
    }
    std::io::Write::flush(&mut std::io::stdout())?;
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        })
        .await?;
    if let Some(sim) = parts.sim {
        sim.shutdown().await;
    }
    eprintln!("snapwake stopped");
    Ok(())
}

async fn agentkit(config: &AgentKitConfig) -> Result<AgentKitClient, CliError> {
    match &config.credentials {
        CredentialsSource::Static(c) => AgentKitClient::new(config, c.clone()),
        CredentialsSource::SecretsExtension { .. } => AgentKitClient::from_config(config).await,
    }
    .map_err(|e| CliError::Usage(e.to_string()))
}

/// The configured identity, plus the local admin group `X-Snapwake-Admin: 1` maps to.
fn local_identity(config: &IdentityConfig) -> IdentityConfig {
    let mut identity = config.clone();
    identity
        .admin_groups
        .push(adapter::LOCAL_ADMIN_GROUP.into());
    identity
}

async fn handle<S: AgentStore + ScheduleStore + UsageStore + 'static, K: AgentKit>(
    State(app): State<Arc<App<Arc<S>, Arc<K>>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    let started = Instant::now();
    let request_id = uuid::Uuid::new_v4().simple().to_string();
    let event = adapter::event(&method, &uri, &headers, &body, &request_id);
    let response = match adapter::lambda_request(&event) {
        Ok(request) => app.handle(request).await,
        Err(e) => snapwake::Error::bad_request(format!("unreadable request: {e}"))
            .into_response(Some(&request_id)),
    };
    tracing::info!(
        request_id,
        method = %method,
        path = uri.path(),
        status = response.status().as_u16(),
        ms = started.elapsed().as_millis() as u64,
        "request"
    );
    adapter::axum_response(response)
}
