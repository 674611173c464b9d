//! The lock on one agent record, in one file: its primitives (acquire, fenced writes, writes by
//! anyone under a condition, poll leases), its settings ([`LockSettings`]) and the wake
//! protocol's timings ([`WakeSettings`]), the pure [`decide`] of docs/wake-protocol.md ("A wake,
//! step by step") before any AgentKit call, and the steps built on them. A store call that timed
//! out or answered 5xx is *ambiguous*: it may have landed, so it is sent again, then decided by
//! a consistent read.
//!
//! The steps a wake and a sleep take under the lock (docs/wake-protocol.md), each a plain function
//! the change calls in order, so `crate::wake` and `crate::sleep` read top to bottom:
//!
//! - **decide** (`Driver::decide`): the pure [`decide`] of the record read;
//! - **acquire** (`Driver::acquire`): take the agent, the winner's request polling first;
//! - **watch** (`Watch::next`): everyone else reads the record, not AgentKit, until the change
//!   ends or their wait is over (202); one that finds the poller gone wins its **poll lease**;
//! - **poll** (`Driver::poll`): ask AgentKit about the change at the record's pace;
//! - **settle** (`Driver::settle`): write the end under a condition naming exactly that change;
//! - **give back** (`Driver::give_back`): the holder lets go with the state to rest in.
//!
//! One protocol, read top to bottom, so one file over the 500-line rule (`shared/tests/layers.rs`).

use crate::agentkit::AgentKit;
use crate::ambient::now_ms;
use crate::domain::failure::OUTCOME_KEPT;
use crate::domain::{AgentKey, AgentRecord, Description, OpenUrl, ToolRegistry, WakeState};
use crate::error::Error;
use crate::invocation::{Backoff, Budget, Deadline};
use crate::locate::{home_of, home_or_locate, Home, Whereabouts};
use crate::store::{AgentStore, Changes, Condition, StoreError, Within};
use std::time::Duration;

/// Whether an acquire starts a new generation of the wake fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generation {
    /// A wake or a create: the last wake's fields are cleared (still in [`Held::before`]); an
    /// unknown Resume or CreateSession is kept, its outcome owed to the next holder.
    New,
    /// A delete: the agent's session is what it was, and the holder hands it back as it was.
    Keep,
    /// A sleep: the session stays; the snapshot and the last error are cleared.
    Sleep,
}

/// How to take the lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acquire {
    /// The state that says who holds it (`waking`, `deleting`, `creating`).
    pub state: WakeState,
    pub generation: Generation,
    pub lease: Duration,
    /// Descriptive fields to write with the acquire (owner, Tool, ...).
    pub describe: Option<Description>,
    /// Until when the new holder itself polls AgentKit (a wake: until its own deadline).
    pub poll_until_ms: Option<u64>,
}

/// The lock as its holder has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub key: AgentKey,
    /// The record as the holder's last write left it.
    pub record: AgentRecord,
    /// The record the acquire replaced (`None`: there was none).
    pub before: Option<AgentRecord>,
    me: String,
}

impl Held {
    pub fn fence(&self) -> u64 {
        self.record.fence
    }

    fn condition(&self) -> Condition {
        Condition::Held {
            holder: self.me.clone(),
            fence: self.record.fence,
        }
    }
}

#[allow(clippy::large_enum_variant)] // returned once per call, consumed at once
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Acquired {
    Held(Box<Held>),
    /// Somebody else changed the record first: here it is (`None`: absent), decide again.
    Lost(Option<AgentRecord>),
}

/// The outcome of a fenced write or a CAS on a version seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Written {
    Done(AgentRecord),
    /// The condition failed and the record does not show the write: the lock was lost.
    Lost(Option<AgentRecord>),
}

/// The lock over one store, within one caller's deadline.
pub struct AgentLock<'a, S> {
    store: Within<'a, S>,
    settings: &'a LockSettings,
    /// Until when the caller waits on others; never later than the deadline.
    wait: Deadline,
}

impl<'a, S: AgentStore> AgentLock<'a, S> {
    pub fn new(store: Within<'a, S>, settings: &'a LockSettings) -> Self {
        AgentLock {
            wait: store.deadline(),
            store,
            settings,
        }
    }

    /// Wait on others (a session booting, a snapshot, another caller's check) only until `until`.
    pub fn waiting_until(mut self, until: Deadline) -> Self {
        self.wait = until.min(self.store.deadline());
        self
    }

    pub fn settings(&self) -> &LockSettings {
        self.settings
    }

    /// By when the caller answers: every call's timeout comes from it.
    pub fn deadline(&self) -> Deadline {
        self.store.deadline()
    }

    /// Until when the caller may wait on others; already past for a short request.
    pub fn wait(&self) -> Deadline {
        self.wait
    }

    /// The record of `key` (consistent read).
    pub async fn read(&self, key: &AgentKey) -> Result<Option<AgentRecord>, StoreError> {
        self.store.get(key).await
    }

    /// Take the lock of `key` under `condition`. A retried write that landed shows our fresh token.
    pub async fn acquire(
        &self,
        key: &AgentKey,
        condition: &Condition,
        seen: Option<&AgentRecord>,
        how: &Acquire,
    ) -> Result<Acquired, StoreError> {
        let me = crate::ambient::fresh_hex();
        // A takeover of a lapsed change of the same kind carries that change on: it stays the
        // doing of what started it (docs/events.md, "Triggers").
        let started_by = seen
            .filter(|r| r.state == how.state)
            .and_then(|r| r.started_by)
            .unwrap_or_else(crate::invocation::trigger);
        let mut changes = Changes {
            state: Some(how.state),
            holder: Some(Some(me.clone())),
            bump_fence: true,
            lease_until_ms: Some(now_ms() + how.lease.as_millis() as u64),
            expires_at: Some(None),
            describe: how.describe.clone(),
            poll_until_ms: how.poll_until_ms,
            started_by: Some(started_by),
            ..Changes::default()
        };
        if how.generation == Generation::New {
            changes.session_id = Some(None);
            changes.snapshot_id = Some(None);
            changes.session_expire_at = Some(None);
            changes.session_created_at = Some(None);
            changes.verified_at_ms = Some(0);
            changes.error = Some(None);
        }
        if how.generation == Generation::Sleep {
            changes.snapshot_id = Some(None);
            changes.error = Some(None);
        }
        let ours = |r: &AgentRecord| r.holder.as_deref() == Some(me.as_str());
        Ok(match self.settle(key, condition, &changes, ours).await? {
            Written::Done(record) => Acquired::Held(Box::new(Held {
                key: key.clone(),
                record,
                before: seen.cloned(),
                me,
            })),
            Written::Lost(r) => Acquired::Lost(r),
        })
    }

    /// A fenced write by the holder. A failed condition whose record shows the write's fields at
    /// our fence means an earlier attempt landed; otherwise the lock was taken over.
    pub async fn write(&self, held: &mut Held, changes: Changes) -> Result<Written, StoreError> {
        let changes = on_behalf_of(&held.record, changes);
        let condition = held.condition();
        let fence = held.fence();
        let written = self
            .settle(&held.key, &condition, &changes, |r| {
                r.fence == fence && changes.shown_by(r)
            })
            .await?;
        if let Written::Done(r) = &written {
            held.record = r.clone();
        }
        Ok(written)
    }

    pub async fn release(
        &self,
        held: &mut Held,
        state: WakeState,
        changes: Changes,
    ) -> Result<Written, StoreError> {
        let changes = Changes {
            state: Some(state),
            ..let_go(changes)
        };
        self.write(held, changes).await
    }

    /// Give the lock back when nothing of the agent exists anywhere. A record only this acquire
    /// created is retired, so the agent stays a 404, not an empty entry in its owner's list.
    pub async fn give_back_unknown(&self, held: &mut Held) {
        let changes = Changes {
            expires_at: held
                .before
                .is_none()
                .then_some(Some(crate::ambient::now_s() - 1)),
            ..Changes::default()
        };
        if let Err(e) = self.release(held, WakeState::Asleep, changes).await {
            tracing::warn!(agent = %held.key, error = %e, "could not give the lock back");
        }
    }

    /// A write by anyone: it settles that change only (a later acquire bumps the fence).
    pub async fn write_by_anyone(
        &self,
        key: &AgentKey,
        condition: &Condition,
        changes: Changes,
    ) -> Result<Written, StoreError> {
        let (Condition::WakingWith { fence, .. } | Condition::SleepingWith { fence, .. }) =
            condition
        else {
            return Err(StoreError::Corrupt(
                "not a condition of a write by anyone".into(),
            ));
        };
        let landed = |r: &AgentRecord| r.fence == *fence && changes.shown_by(r);
        self.settle(key, condition, &changes, landed).await
    }

    /// A CAS on the version of `seen`: the first writer wins.
    pub async fn write_seen(
        &self,
        seen: &AgentRecord,
        changes: Changes,
    ) -> Result<Written, StoreError> {
        let condition = Condition::Version(seen.version);
        let fence = seen.fence;
        self.settle(&seen.key, &condition, &changes, |r| {
            r.fence == fence && r.version > seen.version && changes.shown_by(r)
        })
        .await
    }

    /// Take the poll lease of `seen` until `until_ms`: the winner alone asks AgentKit. The fresh
    /// `poller` lets two callers that computed the same `until_ms` tell their writes apart.
    pub async fn take_poll_lease(
        &self,
        seen: &AgentRecord,
        until_ms: u64,
    ) -> Result<Written, StoreError> {
        let changes = Changes {
            poll_until_ms: Some(until_ms),
            poller: Some(Some(crate::ambient::fresh_hex())),
            ..Changes::default()
        };
        self.write_seen(seen, changes).await
    }

    /// Hand the poll lease on until `until_ms`; a lost or failed write lets it lapse anyway.
    pub async fn hand_poll_lease_on(&self, seen: &AgentRecord, until_ms: u64) -> AgentRecord {
        let changes = Changes {
            poll_until_ms: Some(until_ms),
            ..Changes::default()
        };
        match self.write_seen(seen, changes).await {
            Ok(Written::Done(r)) => r,
            Ok(Written::Lost(_)) => seen.clone(),
            Err(e) => {
                tracing::info!(agent = %seen.key, error = %e, "could not hand the poll lease on; it lapses by itself");
                seen.clone()
            }
        }
    }

    /// Send a conditional write until it is known to have landed or not (`landed` recognises it).
    async fn settle(
        &self,
        key: &AgentKey,
        condition: &Condition,
        changes: &Changes,
        landed: impl Fn(&AgentRecord) -> bool,
    ) -> Result<Written, StoreError> {
        let mut why = String::new();
        for attempt in 0..self.settings.write_attempts.max(1) {
            match self.store.update(key, condition, changes).await {
                Ok(r) => return Ok(Written::Done(r)),
                Err(StoreError::ConditionFailed { current }) => {
                    let current = current.map(|b| *b);
                    return Ok(match current {
                        Some(r) if landed(&r) => Written::Done(r),
                        other => Written::Lost(other),
                    });
                }
                Err(StoreError::Unavailable(e)) => {
                    tracing::warn!(agent = %key, attempt, error = %e, "a lock write was ambiguous; sending it again");
                    why = e;
                    if self.deadline().is_past() {
                        break;
                    }
                }
                Err(e) => return Err(e),
            }
        }
        // Still ambiguous: the record decides; unchanged, the outcome stays unknown.
        match self.read(key).await? {
            Some(r) if landed(&r) => Ok(Written::Done(r)),
            current if condition.holds(current.as_ref()) => Err(StoreError::Unavailable(why)),
            other => Ok(Written::Lost(other)),
        }
    }
}

/// `changes` with the lock let go: no holder, no lease, no poller.
pub(crate) fn let_go(changes: Changes) -> Changes {
    Changes {
        holder: Some(None),
        lease_until_ms: Some(0),
        poll_until_ms: Some(0),
        poller: Some(None),
        ..changes
    }
}

/// `changes` announced as the doing of what started `record`'s change, whoever writes them.
pub fn on_behalf_of(record: &AgentRecord, mut changes: Changes) -> Changes {
    if let (Some(announced), Some(started_by)) = (changes.announce.as_mut(), record.started_by) {
        if announced.trigger != crate::domain::Trigger::Agentkit {
            announced.trigger = started_by;
        }
    }
    changes
}

/// How a change that found the agent's session ended announces that end (docs/events.md), by the
/// state the agent rested in: after `awake`, on AgentKit's clock; after a lapsed change, as this
/// caller's doing (at worst a repeated `asleep`, never silence); at rest otherwise, nothing.
pub fn announced_end(rested: Option<WakeState>) -> Option<crate::domain::Announcement> {
    use crate::domain::{Announce, Announcement, Trigger};
    match rested? {
        WakeState::Awake => Some(Announcement {
            what: Announce::Asleep,
            trigger: Trigger::Agentkit,
        }),
        WakeState::Waking | WakeState::Sleeping | WakeState::Creating | WakeState::Deleting => {
            Some(crate::invocation::announcement(Announce::Asleep))
        }
        _ => None,
    }
}

/// `changes` with the recorded session forgotten: it is known to have ended.
pub fn forget_session(changes: Changes) -> Changes {
    Changes {
        session_id: Some(None),
        session_expire_at: Some(None),
        session_created_at: Some(None),
        verified_at_ms: Some(0),
        ..changes
    }
}

/// What every user of the lock shares; wake, create, delete and deploy each have their own lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockSettings {
    pub lease: Duration,
    /// A lease counts as expired only this long after its end (docs/wake-protocol.md, "Leases").
    pub skew_margin: Duration,
    /// How many times a caller decides again after losing a CAS before it answers 409.
    pub max_rounds: u32,
    /// How many times an ambiguous fenced write is sent in all.
    pub write_attempts: u32,
}

impl Default for LockSettings {
    fn default() -> Self {
        LockSettings {
            lease: Duration::from_secs(60),
            skew_margin: Duration::from_secs(2),
            max_rounds: 5,
            write_attempts: 3,
        }
    }
}

impl LockSettings {
    pub fn lease_holds(&self, lease_until_ms: u64, now_ms: u64) -> bool {
        lease_until_ms.saturating_add(self.skew_margin.as_millis() as u64) >= now_ms
    }

    /// Whether a poll lease still holds. No skew margin: a poll lease only rations AgentKit calls,
    /// and two pollers cost one call more, never a wrong answer.
    pub fn poll_lease_holds(&self, poll_until_ms: u64, now_ms: u64) -> bool {
        poll_until_ms > now_ms
    }

    /// Whether `record` was written within `kept` of `now_ms`.
    pub fn written_within(record: &AgentRecord, kept: Duration, now_ms: u64) -> bool {
        !kept.is_zero()
            && record
                .updated_at
                .as_deref()
                .and_then(crate::ambient::epoch_ms)
                .is_some_and(|written| now_ms <= written + kept.as_millis() as u64)
    }

    pub fn lease_is_live(&self, record: &AgentRecord, now_ms: u64) -> bool {
        self.lease_holds(record.lease_until_ms, now_ms)
    }

    /// Whether `record` is held by a live lease at `now_ms` (a state that holds the lock).
    pub fn is_held(&self, record: &AgentRecord, now_ms: u64) -> bool {
        record.state.is_held() && self.lease_is_live(record, now_ms)
    }

    /// Seconds a caller turned away by a live lease should wait before asking again.
    pub fn retry_after_s(&self, record: &AgentRecord, now_ms: u64) -> u64 {
        let left_ms = record.lease_until_ms.saturating_sub(now_ms);
        (left_ms / 1000).clamp(1, 5)
    }
}

/// Idle sleep (docs/idle.md), as the deployment runs it: its idle time for agents whose owner set none (0: off, the
/// default until a deployment's Studio reports activity).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdlePolicy {
    pub default_minutes: u32,
}

impl IdlePolicy {
    /// The idle time that applies to an agent: its owner's (0: never), else the deployment's —
    /// but never a temporary agent's unless its owner turned it on, since its work is not kept.
    pub fn minutes(&self, own: Option<u32>, retention: Option<crate::domain::Retention>) -> u32 {
        match own {
            Some(minutes) => minutes,
            None if retention == Some(crate::domain::Retention::Temporary) => 0,
            None => self.default_minutes,
        }
    }

    /// When `record`, used at `used_ms`, becomes idle; `None`: idle sleep is off for it.
    pub fn idle_at(&self, record: &AgentRecord, used_ms: u64) -> Option<u64> {
        let minutes = self.minutes(record.idle_minutes, record.description.retention);
        (minutes > 0).then(|| used_ms + u64::from(minutes) * 60_000)
    }

    /// The idle time to write for activity at `used_ms`: `None` when the record's is recent
    /// enough that the write would change nothing that matters (coalescing), or when the agent
    /// is not awake (activity on an agent asleep moves nothing).
    pub fn touched(&self, record: &AgentRecord, used_ms: u64) -> Option<u64> {
        if record.state != WakeState::Awake {
            return None;
        }
        let next = self.idle_at(record, used_ms)?;
        match record.idle_at_ms {
            Some(kept) if next < kept + crate::domain::idle::COALESCE_MS => None,
            _ => Some(next),
        }
    }
}

/// Timings of the wakes and sleeps carried out under the lock. Defaults are the specification's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WakeSettings {
    /// The lock; its lease covers locating, reconciling and sending Resume.
    pub lock: LockSettings,
    /// Lease once a Resume was sent: a session's time to Ready (`SNAPWAKE_READY_TIMEOUT_S`).
    pub ready_timeout: Duration,
    /// The most a `Prefer: wait` may ask for (`SNAPWAKE_WAIT_S`, 0–20); without it, no wait.
    pub wait: Duration,
    /// AgentKit is asked every `poll_min` at first, backing off to `poll_max`.
    pub poll_min: Duration,
    pub poll_max: Duration,
    /// Joiners re-read the record from `watch_min`, backing off to `watch_max`.
    pub watch_min: Duration,
    pub watch_max: Duration,
    /// How long a poll lease (taken once the holder's request ended) lasts.
    pub poll_lease: Duration,
    /// An awake record verified within this is trusted without asking AgentKit: long enough for a
    /// storm's stragglers; short, as an ended session looks awake as long.
    pub verify_fresh: Duration,
    /// Lease of a sleep once its snapshot is taken: how long it may take to become Ready.
    pub snapshot_timeout: Duration,
    /// The longest `ttl_s` a keepalive may ask for (`SNAPWAKE_MAX_TTL_S`).
    pub max_ttl: Duration,
    /// Wait for an expired session's snapshot to be listed (`SNAPWAKE_SNAPSHOT_GRACE_S`).
    pub snapshot_grace: Duration,
    /// How long a snapshot may stay `Creating` before a wake fails (`SNAPWAKE_SNAPSHOT_TIMEOUT_S`).
    pub snapshot_stuck_after: Duration,
    /// The open link (`SNAPWAKE_OPEN_URL`) an awake agent's answer carries, if any.
    pub open_url: Option<OpenUrl>,
    /// Idle sleep (`SNAPWAKE_IDLE_MINUTES`; off by default): when a wake sets the agent idle.
    pub idle: IdlePolicy,
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
            open_url: None,
            idle: IdlePolicy::default(),
        }
    }
}

impl WakeSettings {
    /// The back-off of the holder waiting for a snapshot still being made.
    pub fn polling(&self) -> crate::invocation::Backoff {
        crate::invocation::Backoff::new(self.poll_min, self.poll_max)
    }

    /// How often a session booting is asked about, by whoever asks.
    pub fn pace(&self) -> crate::invocation::Pace {
        crate::invocation::Pace {
            min: self.poll_min,
            max: self.poll_max,
        }
    }

    /// The wait of one request: `asked` (a `Prefer: wait`), at most `SNAPWAKE_WAIT_S`.
    pub fn wait_for(&self, asked: Option<Duration>) -> Duration {
        asked.unwrap_or(Duration::ZERO).min(self.wait)
    }

    pub fn watching(&self) -> crate::invocation::Backoff {
        crate::invocation::Backoff::new(self.watch_min, self.watch_max)
    }
}

/// What a caller wants of the agent, for [`decide`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    /// Ensure it is awake; an `awake` record verified within `verify_fresh` is trusted.
    Wake { verify_fresh: Duration },
    /// Delete it, or one of its snapshots.
    Delete,
    /// Create it (or take over an earlier attempt at creating it).
    Create,
    /// Put it to sleep now.
    Sleep,
}

/// What the record says a caller may do, before any AgentKit call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Take the lock under this condition.
    Acquire(Condition),
    /// A tombstone: the agent was deleted.
    Gone,
    /// Another operation holds the agent (`state`); ask again in `retry_after_s`.
    Busy {
        state: WakeState,
        retry_after_s: u64,
    },
    /// A wake is in flight: wait on it rather than start another (wake only).
    Join,
    /// Awake, and its session was seen alive moments ago: answer from the record (wake only).
    Awake,
    /// Awake, not verified lately: check the recorded session once (wake only).
    Verify,
    /// Another caller is checking the awake record's session: await its verdict (wake only).
    AwaitVerify,
    /// A sleep holds the agent: a wake waits for it to settle, then decides again.
    AwaitSleep,
}

/// What `record` lets a caller with `intent` do at `now_ms`.
pub fn decide(
    record: Option<&AgentRecord>,
    now_ms: u64,
    intent: Intent,
    settings: &LockSettings,
) -> Decision {
    let Some(r) = record else {
        return Decision::Acquire(Condition::Absent);
    };
    let cas = Decision::Acquire(Condition::Version(r.version));
    if r.state == WakeState::Gone {
        return Decision::Gone;
    }
    if settings.is_held(r, now_ms) {
        return match (intent, r.state) {
            (Intent::Wake { .. }, WakeState::Waking) => Decision::Join,
            (Intent::Wake { .. }, WakeState::Sleeping) => Decision::AwaitSleep,
            (Intent::Sleep, WakeState::Sleeping) => Decision::Join,
            (_, state) => Decision::Busy {
                state,
                retry_after_s: settings.retry_after_s(r, now_ms),
            },
        };
    }
    let Intent::Wake { verify_fresh } = intent else {
        return cas;
    };
    if r.state != WakeState::Awake || r.session_id.is_none() {
        return cas;
    }
    let expired = r
        .session_expire_at
        .as_deref()
        .and_then(crate::ambient::epoch_ms)
        .is_some_and(|t| t <= now_ms);
    if expired {
        return cas;
    }
    if r.verified_at_ms > 0
        && r.verified_at_ms
            .saturating_add(verify_fresh.as_millis() as u64)
            >= now_ms
    {
        return Decision::Awake;
    }
    if settings.poll_lease_holds(r.poll_until_ms, now_ms) {
        return Decision::AwaitVerify;
    }
    Decision::Verify
}

/// What one question to AgentKit about a change in flight came to.
pub(crate) enum Look<T> {
    /// Not done yet: ask again after a pause.
    Pending,
    /// Not for this caller to settle now (nothing to ask yet, or too little time left).
    Later,
    /// Done: settle with `changes`.
    Done { changes: Changes, seen: T },
    /// It will not be done: settle with `changes`, and answer `error`.
    Failed { changes: Changes, error: Error },
}

/// How a change in flight shows in AgentKit: what [`Driver::poll`] asks of a wake or a sleep.
pub(crate) trait Progress<S: AgentStore>: Sync {
    type Seen: Send;
    /// Ask AgentKit once about `record`'s change (unless it was `seen` already).
    async fn look(
        &self,
        driver: &Driver<'_, S>,
        home: &Home,
        record: &AgentRecord,
        seen: Option<Self::Seen>,
    ) -> Look<Self::Seen>;
}

/// Where a poll of a change in flight got to.
#[allow(clippy::large_enum_variant)] // returned once, consumed at once
pub(crate) enum Polled<T> {
    Settled {
        record: AgentRecord,
        seen: T,
    },
    /// Still in flight when the poller stopped: the poll lease handed on.
    Pending(AgentRecord),
}

/// Who settles a change: its holder (fenced) or a poll lease holder (by anyone).
pub(crate) enum Settler<'h> {
    Holder(&'h mut Held),
    Anyone,
}

/// What a watcher of a change in flight is to do next ([`Watch::next`]).
#[allow(clippy::large_enum_variant)] // returned once, consumed at once
pub(crate) enum Step {
    Ended(AgentRecord),
    /// This caller won the gone poller's lease: poll for at most `polling`, then call `next` again.
    Poll {
        record: AgentRecord,
        home: Home,
        polling: Duration,
    },
    /// Awake, its session seen alive moments ago (a wake's answer).
    Awake(AgentRecord),
    /// The caller's wait is over with the change still in flight (202).
    InFlight(AgentRecord),
    /// Nothing to wait for any more: decide again from this record.
    Again(Option<AgentRecord>),
}

/// What the wakes and sleeps of one request (or one agent of a tick) are carried out with.
pub struct Agents<'a, S, K> {
    pub(crate) store: Within<'a, S>,
    pub(crate) agentkit: &'a K,
    pub(crate) registry: &'a ToolRegistry,
    pub(crate) settings: &'a WakeSettings,
}

impl<'a, S: AgentStore, K: AgentKit> Agents<'a, S, K> {
    pub fn new(
        store: Within<'a, S>,
        agentkit: &'a K,
        registry: &'a ToolRegistry,
        settings: &'a WakeSettings,
    ) -> Self {
        Agents {
            store,
            agentkit,
            registry,
            settings,
        }
    }

    /// The driver of one change of `key`, answering by `budget.work`, waiting until `budget.wait`.
    pub(crate) fn driver<'d>(
        &'d self,
        key: &'d AgentKey,
        home: Option<Home>,
        budget: Budget,
    ) -> Driver<'d, S> {
        Driver {
            lock: AgentLock::new(self.store.until(budget.work), &self.settings.lock)
                .waiting_until(budget.wait),
            settings: self.settings,
            key,
            registry: self.registry,
            home: home.map(std::sync::OnceLock::from).unwrap_or_default(),
            ask: self.agentkit.request_timeout(),
        }
    }
}

pub(crate) struct Driver<'a, S> {
    pub lock: AgentLock<'a, S>,
    pub settings: &'a WakeSettings,
    pub key: &'a AgentKey,
    registry: &'a ToolRegistry,
    home: std::sync::OnceLock<Home>,
    /// One AgentKit request's timeout: a poll lease covers at least one call.
    ask: Duration,
}

impl<'a, S: AgentStore> Driver<'a, S> {
    pub fn deadline(&self) -> Deadline {
        self.lock.deadline()
    }

    pub fn wait(&self) -> Deadline {
        self.lock.wait()
    }

    /// How many times a caller decides (a lost CAS, a change that ended) before it answers 409.
    pub fn rounds(&self) -> std::ops::Range<u32> {
        0..self.settings.lock.max_rounds.max(1)
    }

    pub fn too_busy(&self) -> Error {
        Error::AgentBusy {
            detail: "too many concurrent changes to the agent; retry".into(),
            retry_after_s: 1,
        }
    }

    /// `record`, if a change that ended moments ago wrote it: its outcome is owed to its pollers.
    pub fn recent<'r>(&self, record: Option<&'r AgentRecord>) -> Option<&'r AgentRecord> {
        record.filter(|r| LockSettings::written_within(r, OUTCOME_KEPT, now_ms()))
    }

    pub fn decide(&self, record: Option<&AgentRecord>, intent: Intent) -> Decision {
        decide(record, now_ms(), intent, &self.settings.lock)
    }

    pub fn seen(&self, record: Option<AgentRecord>) -> AgentRecord {
        record.unwrap_or_else(|| AgentRecord::absent(self.key.clone()))
    }

    /// Where the agent lives: as known, else as `record` says (and known from then on).
    pub fn home(&self, record: &AgentRecord) -> Option<Home> {
        match self.home.get() {
            Some(home) => Some(home.clone()),
            None => home_of(self.registry, record).map(|h| self.home.get_or_init(|| h).clone()),
        }
    }

    /// Where the agent lives, for its holder: known or located (`None`: nowhere; given back).
    pub async fn locate<K: AgentKit>(
        &self,
        agentkit: &K,
        held: &mut Held,
    ) -> Result<Option<Whereabouts>, Error> {
        let (known, deadline) = (self.home.get(), self.deadline());
        let found = home_or_locate(
            agentkit,
            self.registry,
            self.key,
            Some(&held.record),
            known,
            deadline,
        );
        // Boxed: locating lists the region's Tools and snapshots, a large future.
        let found = Box::pin(found).await?;
        match &found {
            Some(w) => _ = self.home.set(w.home.clone()),
            None => self.lock.give_back_unknown(held).await,
        }
        Ok(found)
    }

    /// A change's lease once sent: never shorter than this caller's wait, lest it pass on mid-poll.
    pub fn lease_until(&self, from_ms: u64, timeout: Duration) -> u64 {
        (from_ms + timeout.as_millis() as u64).max(self.wait().epoch_ms())
    }

    /// Take the agent into `state`. The poll lease starts as long as the holder's request: nobody
    /// polls before it records what it waits for.
    pub async fn acquire(
        &self,
        (state, generation): (WakeState, Generation),
        describe: &Description,
        condition: &Condition,
        seen: Option<&AgentRecord>,
    ) -> Result<Acquired, StoreError> {
        let how = Acquire {
            state,
            generation,
            lease: self.settings.lock.lease,
            describe: Some(describe.clone()),
            poll_until_ms: Some(self.deadline().epoch_ms()),
        };
        self.lock.acquire(self.key, condition, seen, &how).await
    }

    /// Start watching `record` (`joined`: the caller joined its change). Only a check of an awake
    /// record is waited for past the caller's wait: nobody answers 202 for an awake agent.
    pub fn watch(&self, record: AgentRecord, joined: bool, intent: Intent) -> Watch {
        Watch {
            intent,
            joined_fence: joined.then_some(record.fence),
            backoff: self.settings.watching(),
            record: Some(record),
            fresh: true,
            until: self.wait(),
        }
    }

    /// Win the poll lease of `seen`'s change if its poller is gone (`None`: not now).
    async fn take_poll_lease(&self, seen: &AgentRecord) -> Result<Option<Step>, Error> {
        let now = now_ms();
        if self.settings.lock.poll_lease_holds(seen.poll_until_ms, now) || !names_awaited(seen) {
            return Ok(None);
        }
        let Some(home) = self.home(seen) else {
            return Ok(None);
        };
        let polling = self.settings.poll_lease.min(self.wait().remaining());
        let covering = polling.max(self.ask);
        let taken = self
            .lock
            .take_poll_lease(seen, now + covering.as_millis() as u64);
        Ok(match taken.await? {
            Written::Done(record) => Some(Step::Poll {
                record,
                home,
                polling,
            }),
            Written::Lost(_) => None,
        })
    }

    /// Poll `record`'s change at least once, until settled or `until`, then hand the lease on.
    pub async fn poll<P: Progress<S>>(
        &self,
        progress: &P,
        mut settler: Settler<'_>,
        home: &Home,
        record: AgentRecord,
        mut seen: Option<P::Seen>,
        until: Deadline,
    ) -> Result<Polled<P::Seen>, Error> {
        let pace = self.settings.pace();
        loop {
            match progress.look(self, home, &record, seen.take()).await {
                Look::Pending => {}
                Look::Later => break,
                Look::Done { changes, seen } => {
                    let record = self.settle(&mut settler, &record, changes).await;
                    return Ok(Polled::Settled { record, seen });
                }
                Look::Failed { changes, error } => {
                    tracing::warn!(agent = %record.key, %error, "the change failed");
                    self.settle(&mut settler, &record, changes).await;
                    return Err(error);
                }
            }
            let gap = pace.gap(record.awaited_since_ms, now_ms());
            if !until.allows(gap) {
                break;
            }
            tokio::time::sleep(gap).await;
        }
        Ok(Polled::Pending(self.hand_poll_on(&record).await))
    }

    /// Write the end of `record`'s change, letting go; the same end written first by another is as
    /// good. Unconfirmed, the answer shows what this caller saw without a version (no `ETag`).
    pub async fn settle(
        &self,
        settler: &mut Settler<'_>,
        record: &AgentRecord,
        changes: Changes,
    ) -> AgentRecord {
        let changes = super::agent::let_go(changes);
        let written = match settler {
            Settler::Holder(held) => self.lock.write(held, changes.clone()).await,
            Settler::Anyone => {
                let changes = super::agent::on_behalf_of(record, changes.clone());
                let condition = settling(record);
                self.lock
                    .write_by_anyone(&record.key, &condition, changes)
                    .await
            }
        };
        match written {
            Ok(Written::Done(r)) => r,
            Ok(Written::Lost(Some(r)))
                if r.fence == record.fence && changes.state == Some(r.state) =>
            {
                r
            }
            other => {
                if let Err(e) = other {
                    tracing::warn!(agent = %record.key, error = %e, "could not record the end of the change");
                }
                let mut shown = changes.apply(record.clone());
                shown.version = 0;
                shown
            }
        }
    }

    /// Let the next poller in one pause from now: this caller's poll lease covered its own calls.
    pub async fn hand_poll_on(&self, record: &AgentRecord) -> AgentRecord {
        let now = now_ms();
        let gap = self.settings.pace().gap(record.awaited_since_ms, now);
        self.lock
            .hand_poll_lease_on(record, now + gap.as_millis() as u64)
            .await
    }

    /// Give the lock back to rest in `state`. `None`: lost, or failed (logged; the lease lapses).
    pub async fn give_back(
        &self,
        held: &mut Held,
        state: WakeState,
        changes: Changes,
    ) -> Option<AgentRecord> {
        match self.lock.release(held, state, changes).await {
            Ok(Written::Done(r)) => Some(r),
            Ok(Written::Lost(_)) => None,
            Err(e) => {
                tracing::warn!(agent = %held.key, error = %e, "could not give the lock back");
                None
            }
        }
    }
}

/// A watcher's place: the record last read, the change it follows, and its pauses.
pub(crate) struct Watch {
    intent: Intent,
    /// The fence of the change this caller follows (a takeover bumps it).
    joined_fence: Option<u64>,
    backoff: Backoff,
    record: Option<AgentRecord>,
    /// `record` is yet to be looked at (else the next step pauses and reads again).
    fresh: bool,
    until: Deadline,
}

impl Watch {
    pub fn joined(&self) -> bool {
        self.joined_fence.is_some()
    }

    /// Read the record (pausing, but the first time) until it says something for the caller to do.
    pub async fn next<S: AgentStore>(&mut self, driver: &Driver<'_, S>) -> Result<Step, Error> {
        loop {
            if !std::mem::replace(&mut self.fresh, false) {
                if !self.backoff.wait(self.until, Duration::ZERO).await {
                    return Ok(Step::InFlight(driver.seen(self.record.take())));
                }
                self.record = driver.lock.read(driver.key).await?;
            }
            let Some(r) = self.record.clone() else {
                // The record vanished under the change: its holder found nothing of the agent.
                return match self.joined_fence {
                    Some(_) => Err(Error::AgentNotFound),
                    None => Ok(Step::Again(None)),
                };
            };
            if self.joined_fence == Some(r.fence) && !in_flight(&r) {
                return Ok(Step::Ended(r));
            }
            let now = now_ms();
            self.until = driver.wait();
            match decide(Some(&r), now, self.intent, &driver.settings.lock) {
                Decision::Join => {
                    // Follow whichever change is in flight (a takeover bumps the fence).
                    self.joined_fence = Some(r.fence);
                    if let Some(poll) = driver.take_poll_lease(&r).await? {
                        return Ok(poll);
                    }
                }
                Decision::AwaitVerify => {
                    let check_ends =
                        Deadline::after(Duration::from_millis(r.poll_until_ms.saturating_sub(now)));
                    self.until = self.until.max(check_ends.min(driver.deadline()));
                }
                Decision::Awake => return Ok(Step::Awake(r)),
                _ => return Ok(Step::Again(Some(r))),
            }
        }
    }
}

fn in_flight(record: &AgentRecord) -> bool {
    matches!(record.state, WakeState::Waking | WakeState::Sleeping)
}

/// Whether the record names what its change awaits (a session or Resume sent; a snapshot).
fn names_awaited(record: &AgentRecord) -> bool {
    match record.state {
        WakeState::Waking => record.session_id.is_some() || record.resume_sent_at_ms.is_some(),
        WakeState::Sleeping => record.snapshot_id.is_some(),
        _ => false,
    }
}

/// The condition of a write by anyone that settles `record`'s change, and only it.
fn settling(record: &AgentRecord) -> Condition {
    match record.state {
        WakeState::Sleeping => Condition::SleepingWith {
            fence: record.fence,
            snapshot_id: record.snapshot_id.clone().unwrap_or_default(),
        },
        _ => Condition::WakingWith {
            fence: record.fence,
            session_id: record.session_id.clone().unwrap_or_default(),
        },
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod decide_tests;

#[cfg(test)]
mod idle_tests;
