//! The run: a studio's weeks, minute by minute, as the deployment's schedules and its people
//! drive it, and the model's checks at the end of every minute.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use snapwake::domain::Kind;
use snapwake::identity::caller;
use snapwake::invocation::Deadline;
use snapwake_sim::{Fault, SeedSnapshot, SimConfig};
use time::OffsetDateTime;

use super::checks;
use super::invocation::Invocation;
use super::model::Model;
use super::people::{Fates, People};
use super::studio::{self, Person};
use super::trace::Trace;
use super::views::Stability;
use super::world::*;

/// How hard the world is on the deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Faults {
    /// Nothing fails (a run to read, not to test).
    Off,
    /// What production sees on a bad week: every kind of fault, at rates, and AgentKit down
    /// for a while now and then.
    On,
}

/// One run.
#[derive(Clone, Debug)]
pub struct Settings {
    pub seed: u64,
    pub people: usize,
    pub weeks: u64,
    pub faults: Faults,
    /// The deployment's idle time in minutes (docs/idle.md); 0: idle sleep off.
    pub idle_minutes: u32,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub seed: u64,
    /// Agents times the weeks each was alive.
    pub agent_weeks: f64,
    pub acts: u64,
    pub resumes: u64,
    pub agentkit_calls: u64,
    /// AgentKit calls answered an injected error.
    pub agentkit_faults: u64,
    /// AgentKit's injected faults by sort (the simulator's `faults_by_kind`).
    pub agentkit_faults_by_kind: std::collections::BTreeMap<String, u64>,
    /// Calls refused by AgentKit's own account-wide rate limits.
    pub rate_limited: u64,
    pub outages: u64,
    /// Table calls failed before they were made.
    pub table_failed: u64,
    /// Table writes that landed and whose answer was lost.
    pub table_answers_lost: u64,
    pub stopped: u64,
    pub offboardings: u64,
    pub events: u64,
    pub bus_refusals: u64,
    /// Scheduled days (a wake and its sleep) checked kept from end to end.
    pub scheduled_days: u64,
}

impl Report {
    /// Add `other`'s counts to these (the long run's totals).
    pub fn add(&mut self, other: &Report) {
        self.agent_weeks += other.agent_weeks;
        self.acts += other.acts;
        self.resumes += other.resumes;
        self.agentkit_calls += other.agentkit_calls;
        self.agentkit_faults += other.agentkit_faults;
        for (kind, count) in &other.agentkit_faults_by_kind {
            *self
                .agentkit_faults_by_kind
                .entry(kind.clone())
                .or_default() += count;
        }
        self.rate_limited += other.rate_limited;
        self.outages += other.outages;
        self.table_failed += other.table_failed;
        self.table_answers_lost += other.table_answers_lost;
        self.stopped += other.stopped;
        self.offboardings += other.offboardings;
        self.events += other.events;
        self.bus_refusals += other.bus_refusals;
        self.scheduled_days += other.scheduled_days;
    }
}

/// A violated invariant: what, when, and what happened just before.
#[derive(Clone, Debug)]
pub struct Failure {
    pub seed: u64,
    pub violation: String,
    pub trace: Vec<String>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "seed {}: {}", self.seed, self.violation)?;
        writeln!(f, "the last of what happened:")?;
        for line in &self.trace {
            writeln!(f, "  {line}")?;
        }
        write!(
            f,
            "replay: SNAPWAKE_SIM_SEED={} cargo test -p snapwake-tests --test deployment -- --ignored replay",
            self.seed
        )
    }
}

/// Run `settings` on a thread and a runtime of its own (one thread, its clock paused: the
/// simulation's). The thread's stack is large: every function's futures, unoptimised, nest
/// deep on the one thread that runs them all.
pub fn run(settings: &Settings) -> Result<Report, Failure> {
    let settings = settings.clone();
    std::thread::Builder::new()
        .name(format!("simulation-{}", settings.seed))
        .stack_size(256 * 1024 * 1024)
        .spawn(move || {
            // Every function runs on this thread: the ids it makes and its retries' jitter are
            // drawn from the seed too, so the seed replays the run (snapwake::ambient).
            snapwake::ambient::seed_this_thread(settings.seed);
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .start_paused(true)
                .build()
                .expect("a runtime");
            let logs = super::logs::Logs::default();
            let _logging = logs.install();
            runtime
                .block_on(Run::new(&settings).go())
                .map_err(|mut failure| {
                    // What snapwake itself logged of what the violation names.
                    let named = super::logs::named_in(&failure.violation);
                    let named: Vec<&str> = named.iter().map(String::as_str).collect();
                    let said = logs.mentioning(&named, 40);
                    if !said.is_empty() {
                        failure.trace.push("what snapwake logged of them:".into());
                        failure.trace.extend(said);
                    }
                    failure
                })
        })
        .expect("a thread")
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

const MINUTE: u64 = 60_000;
const WEEK_MINUTES: u64 = 7 * 1440;
/// The simulated weeks begin on a Monday.
const MONDAY: i64 = 1_795_392_000; // 2026-11-23T00:00:00Z

struct Run {
    settings: Settings,
    start_ms: u64,
    rng: fastrand::Rng,
    people: Vec<Person>,
    /// Who takes today off.
    days_off: Vec<bool>,
    created: u64,
    seen_events: usize,
    report: Report,
}

impl Run {
    fn new(settings: &Settings) -> Run {
        let mut rng = fastrand::Rng::with_seed(settings.seed);
        let people = studio::people(&mut rng, settings.people);
        // Each seed starts on another Monday within a year, so that daylight-saving changes
        // fall on different days of the run.
        let monday = MONDAY + 7 * 86_400 * (settings.seed % 52) as i64;
        Run {
            start_ms: monday as u64 * 1000,
            days_off: vec![false; people.len()],
            people,
            rng,
            created: 0,
            seen_events: 0,
            report: Report {
                seed: settings.seed,
                ..Report::default()
            },
            settings: settings.clone(),
        }
    }

    async fn go(mut self) -> Result<Report, Failure> {
        let start =
            OffsetDateTime::from_unix_timestamp((self.start_ms / 1000) as i64).expect("a Monday");
        snapwake::ambient::simulate_from(start);
        fastrand::seed(self.settings.seed);
        let sim_config = SimConfig {
            session_ready_delay: Duration::from_secs(self.rng.u64(5..60)),
            ..SimConfig::default()
        };
        let deployment = Arc::new(
            Deployment::new(sim_config, self.settings.seed).with_idle(self.settings.idle_minutes),
        );
        deployment
            .sim
            .set_snapshot_ready_delay(Duration::from_secs(self.rng.u64(2..20)));
        let trace = Arc::new(Mutex::new(Trace::default()));
        let people = Arc::new(People {
            deployment: deployment.clone(),
            model: Arc::new(Mutex::new(Model::default())),
            fates: Arc::new(Mutex::new(Fates {
                rng: fastrand::Rng::with_seed(self.settings.seed ^ 0xfa7e),
                stop_rate: 0.0,
                stopped: 0,
            })),
            trace: trace.clone(),
        });
        let seed = self.settings.seed;
        let failed = |violation: String| Failure {
            seed,
            violation,
            trace: trace.lock().unwrap_or_else(|p| p.into_inner()).lines(),
        };
        self.set_up(&people).await.map_err(failed)?;
        tokio::spawn(consume(people.clone()));
        if self.settings.faults == Faults::On {
            self.faults_on(&people);
        }
        let mut stability = Stability::default();
        let total = self.settings.weeks * WEEK_MINUTES;
        people
            .model
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .horizon_ms = self.start_ms + (total + 2 * 1440) * MINUTE;
        let mut outage: Option<(u64, u64)> = None;
        for minute in 0..total {
            let t0 = self.start_ms + 60 * MINUTE + minute * MINUTE;
            self.deployment_minute(&people, minute, t0, &mut outage)
                .await;
            self.people_minute(&people, minute, t0).await;
            tokio::time::sleep_until(instant(t0 + 59_000)).await;
            self.check(&people, &mut stability, t0 + 59_000, minute % 60 == 30)
                .await
                .map_err(failed)?;
        }
        self.cool_down(&people, &mut stability)
            .await
            .map_err(failed)?;
        Ok(self.finish(&people))
    }

    /// The Tools deployed from nothing, the studio's agents made: some through the API, some
    /// found in AgentKit (an earlier Studio's `studio2-` agents among them).
    async fn set_up(&mut self, people: &Arc<People>) -> Result<(), String> {
        let d = &people.deployment;
        let report = d
            .deploy_tools()
            .await
            .map_err(|e| format!("the first deploy failed: {e}"))?;
        people
            .trace
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .note(format!("deployed: {} writes", report.writes));
        let registry = snapwake::store::AgentStore::get_registry(&*d.table.memory)
            .await
            .ok()
            .flatten()
            .ok_or("no registry after the deploy")?;
        for person in self.people.clone().iter() {
            for n in 0..person.agents {
                let kind = Kind::ALL[self.rng.usize(..Kind::ALL.len())];
                let recoverable = self.rng.f64() < 0.85;
                self.created += 1;
                if let Some(key) = people
                    .create(&person.name, kind, recoverable, self.created)
                    .await
                {
                    if person.schedules && recoverable && n == 0 {
                        let def = studio::a_schedule(&mut self.rng, person.timezone);
                        people.schedule(&person.name, &key, Some(def)).await;
                    }
                }
            }
            if person.legacy {
                let tool = registry
                    .tool(Kind::Codex, snapwake::domain::Retention::Recoverable)
                    .ok_or("no recoverable codex Tool")?;
                let name = data_encoding::BASE64URL_NOPAD
                    .encode(format!("{}'s old agent", person.name).as_bytes());
                let id = format!(
                    "studio2-{}-{:016x}-{name}",
                    caller::fingerprint(&person.name),
                    self.rng.u64(..)
                );
                // As the SDK's Snapshot shape has it: no metadata at all.
                d.sim
                    .seed_snapshot(SeedSnapshot {
                        tool_id: tool.to_string(),
                        user_session_id: Some(id.clone()),
                        ..SeedSnapshot::default()
                    })
                    .map_err(|e| e.to_string())?;
                let now = snapwake::ambient::now_ms();
                people
                    .model
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .add_agent(Kind::Codex, &id, &person.name, true, true, now);
            }
        }
        Ok(())
    }

    /// What the deployment's schedules do this minute: the tick at its start, the refresh,
    /// the hourly sweep (and what offboardings left), the daily deploy, AgentKit's bad hours.
    async fn deployment_minute(
        &mut self,
        people: &Arc<People>,
        minute: u64,
        t0: u64,
        outage: &mut Option<(u64, u64)>,
    ) {
        let d = &people.deployment;
        tokio::time::sleep_until(instant(t0)).await;
        if self.settings.faults == Faults::On {
            if let Some((_, ends)) = *outage {
                if t0 >= ends {
                    *outage = None;
                    self.faults_on(people);
                    self.note(people, "AgentKit is back".into());
                }
            } else if self.rng.f64() < 1.5 / WEEK_MINUTES as f64 {
                let ends = t0 + self.rng.u64(5..30) * MINUTE;
                *outage = Some((t0, ends));
                self.report.outages += 1;
                let everything = self.rng.bool();
                let actions: &[&str] = if everything {
                    &[]
                } else {
                    &["ListSessions", "ListSessionSnapshots"]
                };
                if actions.is_empty() {
                    inject(d, Fault::error(None, "ServiceUnavailable", 503));
                } else {
                    for a in actions {
                        inject(d, Fault::error(Some(a), "ServiceUnavailable", 503));
                    }
                }
                people
                    .model
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .outages
                    .push((t0, ends + 2 * MINUTE));
                self.note(
                    people,
                    format!(
                        "AgentKit down ({}) until {}",
                        if everything { "every call" } else { "listings" },
                        checks::at(ends)
                    ),
                );
                // An owner leaves while AgentKit cannot list: their offboarding must not end early.
                if self.rng.f64() < 0.3 {
                    self.offboard_someone(people, t0 + 3_000).await;
                }
            }
        }
        spawn_invocation(people, "tick", {
            let d = d.clone();
            async move {
                d.api
                    .resume
                    .tick(t0, Deadline::after(TICK_BUDGET))
                    .await
                    .map(|_| ())
            }
        });
        spawn_invocation(people, "refresh", {
            let d = d.clone();
            async move {
                tokio::time::sleep(Duration::from_secs(7)).await;
                d.api
                    .delete
                    .refresh(Deadline::after(REFRESH_BUDGET))
                    .await
                    .map(|_| ())
            }
        });
        if minute.is_multiple_of(60) {
            spawn_invocation(people, "sweep", {
                let d = d.clone();
                async move {
                    tokio::time::sleep(Duration::from_secs(20)).await;
                    let deadline = Deadline::after(SWEEP_BUDGET);
                    d.api
                        .delete
                        .sweep(deadline, false, &snapwake_delete::Quiet)
                        .await?;
                    d.api.delete.finish_offboardings(deadline).await.map(|_| ())
                }
            });
        }
        if minute % 1440 == 180 {
            spawn_invocation(people, "deploy", {
                let d = d.clone();
                async move { d.deploy_tools().await.map(|_| ()) }
            });
        }
        // Now and then an owner leaves the studio.
        if self.settings.faults == Faults::On && self.rng.f64() < 0.25 / WEEK_MINUTES as f64 {
            let at = t0 + self.rng.u64(0..59_000);
            self.offboard_someone(people, at).await;
        }
    }
}

/// The instant of epoch `ms` on the simulation's clock.
fn instant(ms: u64) -> tokio::time::Instant {
    let now = snapwake::ambient::now_ms();
    tokio::time::Instant::now() + Duration::from_millis(ms.saturating_sub(now))
}

fn inject(d: &Deployment, fault: Fault) {
    d.sim.inject(fault).expect("a valid fault");
}

/// One invocation of a function in a task of its own, its fate drawn now.
fn spawn_invocation<F, E>(people: &Arc<People>, name: &'static str, work: F)
where
    F: std::future::Future<Output = Result<(), E>> + Send + 'static,
    E: std::fmt::Display,
{
    let fate = people
        .fates
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .next();
    let invocation = Invocation::new(name, fate);
    let trace = people.trace.clone();
    tokio::spawn(async move {
        match invocation.run(work).await {
            None => trace
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .note(format!("{name} stopped")),
            Some(Err(e)) => trace
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .note(format!("{name} failed: {e}")),
            Some(Ok(())) => {}
        }
    });
}

/// The queue's consumer, as its event source mapping runs it: each message one invocation,
/// which may be stopped (the next tick then sends its occurrence again).
async fn consume(people: Arc<People>) {
    let queue = people.deployment.queue();
    queue
        .consume(snapwake::fanout::AT_ONCE, |due| {
            let people = people.clone();
            async move {
                let fate = people
                    .fates
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .next();
                let invocation = Invocation::new("consumer", fate);
                let d = people.deployment.clone();
                let work = async move {
                    d.api
                        .resume
                        .due(&due, Deadline::after(CONSUMER_BUDGET))
                        .await
                        .is_ok()
                };
                invocation.run(work).await.unwrap_or(false)
            }
        })
        .await;
}

mod leaving;
mod minute;
