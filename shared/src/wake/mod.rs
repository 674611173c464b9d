//! The wake protocol (docs/wake-protocol.md): wake an agent
//! exactly once however many callers ask at the same moment, on its first day and on every
//! day after, and survive a caller dying (or an answer getting lost) at any step without a
//! second Resume or a lost snapshot.
//!
//! Every caller reads the record and [`decide`]s (the lock module's pure rule):
//!
//! - **acquire** (asleep, failed, missing, an expired lease, an awake record whose session has
//!   expired): the one winner of the CAS holds the agent for a new generation ([`holder`]). It
//!   locates the agent if the record does not say where it lives, reconciles before it
//!   resumes (a session an earlier holder started is adopted), writes `resume_sent_at`
//!   (fenced) before it sends `ResumeSessionFromSnapshot`, records the SessionId at once, and
//!   polls GetSession until the session is Ready or its budget ends.
//! - **join** (a wake in flight): watch the record, not AgentKit ([`watch`]). Only one caller
//!   at a time asks AgentKit about a wake: the holder, or, once the holder's request has
//!   ended, whoever wins a short poll lease on the record; it completes or fails the wake *by
//!   anyone*. So a storm's AgentKit calls do not grow with its callers.
//! - **awake**: trusted as recorded while its session was verified moments ago; otherwise one
//!   caller (the winner of a poll lease) asks GetSession once while the rest wait for its
//!   verdict, and an ended session is woken again, in the same call.
//!
//! Ambiguity is never read as failure: a Resume whose outcome is unknown (a timeout or a 5xx
//! after sending) keeps the lock until the readiness timeout with `resume_sent_at` set and
//! answers 202; whoever comes next reconciles, and nobody sends another Resume before that
//! lease ends. Resume is never sent with less budget left than one AgentKit request timeout.
//!
//! Files: `mod.rs` (this: settings, target, outcome, the decision loop), `holder/` (the
//! winner's path), `watch.rs` (joiners, pollers, verifying an awake record). The AgentKit
//! questions a wake asks, and which snapshot it wakes, live in `crate::locate::sessions`.

mod holder;
mod watch;

use std::time::Duration;

use crate::agentkit::types::{Session, Snapshot};
use crate::agentkit::AgentKit;
use crate::deadline::Budget;
use crate::domain::Description;
use crate::domain::{AgentKey, AgentRecord, ToolRegistry, WakeState};
use crate::error::Error;
use crate::locate::Home;
use crate::lock::LockSettings;
use crate::lock::{decide, Acquire, Acquired, AgentLock, Decision, Generation, Intent};
use crate::sleep::SleepSettings;
use crate::store::AgentStore;
use crate::timestamp::now_ms;

/// Timings of the protocol. Defaults are the specification's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WakeSettings {
    /// The lock: the lease an acquire takes (covers locating, reconciling and sending
    /// Resume), the skew margin, the rounds.
    pub lock: LockSettings,
    /// Lease once a Resume was sent or its SessionId recorded: how long a session may take to
    /// become Ready (`SNAPWAKE_READY_TIMEOUT_S`, default 360 s).
    pub ready_timeout: Duration,
    /// The longest one request waits for readiness (`SNAPWAKE_WAIT_S`, 0–20, default 20 s):
    /// what a `Prefer: wait` may ask for at most. A request without it waits for nothing
    /// (docs/wake-protocol.md, "Short requests").
    pub wait: Duration,
    /// AgentKit is asked about a session booting (or a snapshot being made) every `poll_min`
    /// at first, then less often, up to every `poll_max` ([`crate::deadline::Pace`]).
    pub poll_min: Duration,
    pub poll_max: Duration,
    /// Joiners re-read the record from `watch_min`, backing off to `watch_max`.
    pub watch_min: Duration,
    pub watch_max: Duration,
    /// How long a poll lease (taken once the holder's request ended) lasts.
    pub poll_lease: Duration,
    /// An awake record verified within this is trusted without asking AgentKit (2 s). Short on
    /// purpose: it only has to absorb the stragglers of a storm, whose callers come back one
    /// `Retry-After` (1 s) and their own request's time after their last 202 (with 1 s, the
    /// tail of a 500-caller storm cost three more GetSessions); and every second of it is a
    /// second in which a session AgentKit ended is still reported awake.
    pub verify_fresh: Duration,
    /// Lease of a sleep once its snapshot is taken: how long a snapshot may take to become
    /// Ready before another caller may take the sleep over (default 600 s).
    pub snapshot_timeout: Duration,
    /// The longest `ttl_s` a keepalive may ask for (`SNAPWAKE_MAX_TTL_S`, default 28800 s).
    pub max_ttl: Duration,
    /// How long after the agent's last session expired a wake waits for its snapshot to be
    /// listed at all (`SNAPWAKE_SNAPSHOT_GRACE_S`, default 120 s): AgentKit may list it late.
    pub snapshot_grace: Duration,
    /// How long a newest snapshot may stay `Creating` before a wake gives up on it with
    /// `SNAPSHOT_STUCK` (`SNAPWAKE_SNAPSHOT_TIMEOUT_S`, default 1800 s).
    pub snapshot_stuck_after: Duration,
}

/// The shortest `ttl_s` a keepalive may ask for.
pub const MIN_TTL: Duration = Duration::from_secs(60);

impl Default for WakeSettings {
    fn default() -> Self {
        WakeSettings {
            lock: LockSettings::default(),
            ready_timeout: Duration::from_secs(360),
            wait: Duration::from_secs(20),
            poll_min: Duration::from_millis(250),
            poll_max: Duration::from_secs(2),
            watch_min: Duration::from_millis(250),
            watch_max: Duration::from_secs(1),
            poll_lease: Duration::from_secs(5),
            verify_fresh: Duration::from_secs(2),
            snapshot_timeout: Duration::from_secs(600),
            max_ttl: Duration::from_secs(28_800),
            snapshot_grace: Duration::from_secs(120),
            snapshot_stuck_after: Duration::from_secs(1800),
        }
    }
}

impl WakeSettings {
    /// The timings a sleep of the same agent keeps.
    pub fn sleep(&self) -> SleepSettings {
        SleepSettings {
            lock: self.lock.clone(),
            poll_min: self.poll_min,
            poll_max: self.poll_max,
            watch_min: self.watch_min,
            watch_max: self.watch_max,
            poll_lease: self.poll_lease,
            snapshot_timeout: self.snapshot_timeout,
        }
    }

    /// The back-off of the holder waiting for a snapshot still being made.
    pub fn polling(&self) -> crate::deadline::Backoff {
        crate::deadline::Backoff::new(self.poll_min, self.poll_max)
    }

    /// How often a session booting is asked about, by whoever asks.
    pub fn pace(&self) -> crate::deadline::Pace {
        crate::deadline::Pace {
            min: self.poll_min,
            max: self.poll_max,
        }
    }

    /// The wait of one request: `asked` (a `Prefer: wait`; none: no wait at all), at most
    /// `SNAPWAKE_WAIT_S`.
    pub fn wait_for(&self, asked: Option<Duration>) -> Duration {
        asked.unwrap_or(Duration::ZERO).min(self.wait)
    }

    /// The back-off of watching the record.
    pub fn watching(&self) -> crate::deadline::Backoff {
        crate::deadline::Backoff::new(self.watch_min, self.watch_max)
    }

    fn intent(&self) -> Intent {
        Intent::Wake {
            verify_fresh: self.verify_fresh,
        }
    }
}

/// What to wake, resolved by the caller (the resume handler) beforehand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WakeTarget {
    pub key: AgentKey,
    /// Where the agent lives, when the record says; otherwise the winner locates it (losers
    /// never list anything).
    pub home: Option<Home>,
    /// The snapshot the caller asked for; default the newest Ready one.
    pub snapshot_id: Option<String>,
    /// Descriptive fields written with the acquire (owner, owner key, display name, ...). The
    /// Tool and region are added once known.
    pub describe: Description,
}

impl WakeTarget {
    /// The agent's UserSessionId (`None` for `snapshot-<id>` agents).
    pub fn user_session_id(&self) -> Option<&str> {
        crate::identity::user_session_id(&self.key.agent_id)
    }
}

/// How a wake ended for this caller.
#[allow(clippy::large_enum_variant)] // returned once per request, consumed at once
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WakeOutcome {
    /// A live session: `resumed` when this call or a concurrent one woke it, `false` when it
    /// was already awake.
    Awake {
        session: Session,
        resumed: bool,
        record: AgentRecord,
        /// The agent's snapshots, when this caller listed them (the holder of a wake).
        snapshots: Vec<Snapshot>,
    },
    /// Still waking at the end of this caller's budget; a later call continues from the record.
    Waking { record: AgentRecord },
}

/// One caller's wake of one agent.
pub struct Wake<'a, S, K> {
    store: &'a S,
    agentkit: &'a K,
    registry: &'a ToolRegistry,
    settings: &'a WakeSettings,
}

impl<'a, S: AgentStore, K: AgentKit> Wake<'a, S, K> {
    pub fn new(
        store: &'a S,
        agentkit: &'a K,
        registry: &'a ToolRegistry,
        settings: &'a WakeSettings,
    ) -> Self {
        Wake {
            store,
            agentkit,
            registry,
            settings,
        }
    }

    /// Ensure `target` is awake, deciding from `record` (the caller's consistent read),
    /// waiting on others until `budget.wait` and answering by `budget.work`.
    pub async fn run(
        &self,
        target: &WakeTarget,
        mut record: Option<AgentRecord>,
        budget: Budget,
    ) -> Result<WakeOutcome, Error> {
        let lock = AgentLock::within(self.store, &self.settings.lock, budget);
        let mut joined = false;
        // A wake that failed moments ago is how the wake this caller polls ended (its problem
        // said `Retry-After` that long); one that names another snapshot than the failed
        // wake's asks for something else, and a refusal to try (throttled) is tried again.
        if let Some(r) = record.as_ref() {
            let same = target.snapshot_id.is_none() || target.snapshot_id == r.snapshot_id;
            let kept = crate::domain::failure::OUTCOME_KEPT;
            let recent = LockSettings::written_within(r, kept, now_ms());
            if let (WakeState::Failed, Some(error), true, true) =
                (r.state, r.error.as_ref(), recent, same)
            {
                if crate::domain::failure::is_definite(error) {
                    return Err(Error::WakeFailed(error.clone()));
                }
            }
        }
        for _ in 0..self.settings.lock.max_rounds.max(1) {
            let decision = decide(
                record.as_ref(),
                now_ms(),
                self.settings.intent(),
                &self.settings.lock,
            );
            match decision {
                Decision::Gone => return Err(Error::AgentGone),
                Decision::Busy {
                    state,
                    retry_after_s,
                } => return Err(Error::held_by(state, retry_after_s)),
                Decision::Awake => {
                    let r = record
                        .take()
                        .unwrap_or_else(|| AgentRecord::absent(target.key.clone()));
                    return Ok(from_record(r, joined));
                }
                // A wake in flight is joined; a check of an awake agent, or a sleep, is waited
                // for, and then decided again.
                Decision::Join | Decision::AwaitVerify | Decision::AwaitSleep => {
                    let r = record
                        .take()
                        .unwrap_or_else(|| AgentRecord::absent(target.key.clone()));
                    if decision == Decision::Join && !joined {
                        // A caller that joins a wake in flight is a Resume it did not send.
                        crate::metrics::emit(
                            crate::metrics::Record::of("wake").count("WakesJoined", 1),
                        );
                    }
                    joined |= decision == Decision::Join;
                    match Box::pin(self.watch(&lock, target, r, joined)).await? {
                        watch::Watched::Done(outcome) => return Ok(outcome),
                        watch::Watched::Again(r) => record = r,
                    }
                }
                Decision::Verify => {
                    let r = record
                        .take()
                        .unwrap_or_else(|| AgentRecord::absent(target.key.clone()));
                    match Box::pin(self.verify(&lock, target, r)).await? {
                        watch::Watched::Done(outcome) => return Ok(outcome),
                        watch::Watched::Again(r) => record = r,
                    }
                }
                Decision::Acquire(condition) => {
                    match self
                        .acquire(&lock, target, &condition, record.as_ref())
                        .await?
                    {
                        Acquired::Held(held) => {
                            // Boxed: the holder's path is a large future (debug builds would
                            // otherwise need a deep stack).
                            return Box::pin(self.hold(&lock, target, *held, false)).await;
                        }
                        Acquired::Lost(r) => record = r,
                    }
                }
            }
        }
        Err(Error::AgentBusy {
            detail: "too many concurrent changes to the agent; retry".into(),
            retry_after_s: 1,
        })
    }

    /// Take the agent for a new generation of its wake. Nobody polls before the holder has
    /// recorded a session (it says until when it polls then), so the poll lease starts out
    /// as long as the holder's request.
    async fn acquire(
        &self,
        lock: &AgentLock<'_, S>,
        target: &WakeTarget,
        condition: &crate::store::Condition,
        seen: Option<&AgentRecord>,
    ) -> Result<Acquired, Error> {
        let how = Acquire {
            state: WakeState::Waking,
            generation: Generation::New,
            lease: self.settings.lock.lease,
            describe: Some(target.describe.clone()),
            poll_until_ms: Some(lock.deadline().epoch_ms()),
        };
        Ok(lock.acquire(&target.key, condition, seen, &how).await?)
    }
}

/// An awake outcome answered from the record alone: its session as recorded. The record says
/// the session was seen Ready (the complete of a wake writes `verified_at_ms`).
fn from_record(record: AgentRecord, resumed: bool) -> WakeOutcome {
    let session = Session {
        session_id: record.session_id.clone(),
        user_session_id: crate::identity::user_session_id(&record.key.agent_id).map(str::to_string),
        status: Some("Ready".into()),
        expire_at: record.session_expire_at.clone(),
        ..Session::default()
    };
    WakeOutcome::Awake {
        session,
        resumed,
        record,
        snapshots: Vec::new(),
    }
}
