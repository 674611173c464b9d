//! The wake protocol (wake-protocol.md): wake an asleep agent exactly once however many callers
//! ask at the same moment, survive a caller dying at any step, and never lose a snapshot.
//!
//! The agent record in the store is a lease-based lock with a fence:
//!
//! - **decide** from a consistent read: a live `waking` lease means somebody is already waking
//!   the agent, so *join* it instead of acquiring; `awake` is checked against AgentKit;
//!   anything else (asleep, failed, missing, an expired lease) may be *acquired*.
//! - **acquire** is a CAS on the version seen (or on absence). A loser gets the winner's record
//!   back in the same round trip and decides again with it — it joins.
//! - the winner **reconciles before it resumes**: a session recorded by an earlier holder, or
//!   any active session with the agent's UserSessionId, is adopted. A holder that died between
//!   ResumeSessionFromSnapshot and recording its SessionId is covered here.
//! - it **records the SessionId at once** (fenced write; lease extended to the readiness
//!   timeout), so a holder that dies after this point is recovered by polling, never by a
//!   second resume.
//! - everybody **waits** within their own request budget; whoever sees the recorded session
//!   Ready may complete (the holder fenced, joiners complete-by-anyone). A failed session is
//!   recorded as `failed` — the snapshot is never touched, the agent stays wakeable.
//!
//! There are no heartbeats: Lambda freezes between invocations. The lease covers exactly what
//! one invocation does; the recorded SessionId makes the rest recoverable. A lease is expired
//! only once `lease_until_ms + skew margin < now`, so clocks a little apart never let two
//! holders overlap.

use std::time::Duration;

use crate::agentkit::types::{
    Filter, GetSession, ListSessionSnapshots, ListSessions, ResumeSessionFromSnapshot, Session,
    Snapshot,
};
use crate::agentkit::{list_all, AgentKit, AgentKitError};
use crate::deadline::Deadline;
use crate::domain::{AgentKey, AgentRecord, WakeState};
use crate::error::Error;
use crate::store::{now_ms, AgentStore, Changes, Condition, Description, StoreError};

/// Timings of the protocol. Defaults are the specification's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WakeSettings {
    /// Lease taken by an acquire: covers reconcile and resume.
    pub lease: Duration,
    /// Lease once the SessionId is recorded: how long a session may take to become Ready
    /// (`SNAPWAKE_READY_TIMEOUT_S`, default 360 s).
    pub ready_timeout: Duration,
    /// How long one request waits for readiness (`SNAPWAKE_WAIT_S`, default 20 s), further
    /// bounded by the caller's deadline.
    pub wait: Duration,
    /// A lease counts as expired only this long after its end.
    pub skew_margin: Duration,
    /// Readiness polling starts at `poll_min` and backs off to `poll_max`.
    pub poll_min: Duration,
    pub poll_max: Duration,
    /// How many times a caller decides again after losing a CAS before it gives up.
    pub max_rounds: u32,
}

impl Default for WakeSettings {
    fn default() -> Self {
        WakeSettings {
            lease: Duration::from_secs(60),
            ready_timeout: Duration::from_secs(360),
            wait: Duration::from_secs(20),
            skew_margin: Duration::from_secs(2),
            poll_min: Duration::from_millis(500),
            poll_max: Duration::from_secs(2),
            max_rounds: 5,
        }
    }
}

impl WakeSettings {
    /// Whether `record`'s lease still holds at `now_ms`.
    pub fn lease_is_live(&self, record: &AgentRecord, now_ms: u64) -> bool {
        record.lease_until_ms + self.skew_margin.as_millis() as u64 >= now_ms
    }

    /// Seconds a caller turned away by a live lease should wait before asking again.
    pub fn retry_after_s(&self, record: &AgentRecord, now_ms: u64) -> u64 {
        let left_ms = record.lease_until_ms.saturating_sub(now_ms);
        (left_ms / 1000).clamp(1, 5)
    }
}

/// What to wake, resolved by the caller (the resume handler) beforehand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WakeTarget {
    pub key: AgentKey,
    /// The snapshot Tool the agent lives on, and its region.
    pub tool_id: String,
    pub region: String,
    /// The agent's UserSessionId, when it has one (`snapshot-<id>` agents do not): the key of
    /// reconciliation by ListSessions.
    pub user_session_id: Option<String>,
    /// The snapshot the caller asked for; default the newest Ready one.
    pub snapshot_id: Option<String>,
    /// The agent's snapshots when the caller already listed them; else the winner lists them.
    pub snapshots: Option<Vec<Snapshot>>,
    /// Descriptive fields written with the acquire (owner key, display name, Tool, ...).
    pub describe: Option<Description>,
}

/// How a wake ended for this caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WakeOutcome {
    /// A live session: `resumed` when this call or a concurrent one woke it, `false` when it
    /// was already awake.
    Awake {
        session: Session,
        resumed: bool,
        record: AgentRecord,
    },
    /// Still waking at the end of this caller's budget; a later call continues from the
    /// recorded session.
    Waking { record: AgentRecord },
}

enum Decision {
    Gone,
    Busy(u64),
    Join(AgentRecord),
    CheckAwake(AgentRecord),
    Acquire(Option<AgentRecord>),
}

/// The wake lock over a store and AgentKit.
pub struct WakeLock<'a, S, K> {
    store: &'a S,
    agentkit: &'a K,
    settings: &'a WakeSettings,
}

impl<'a, S: AgentStore, K: AgentKit> WakeLock<'a, S, K> {
    pub fn new(store: &'a S, agentkit: &'a K, settings: &'a WakeSettings) -> Self {
        WakeLock {
            store,
            agentkit,
            settings,
        }
    }

    fn decide(&self, record: Option<AgentRecord>) -> Decision {
        let Some(r) = record else {
            return Decision::Acquire(None);
        };
        let now = now_ms();
        let live = self.settings.lease_is_live(&r, now);
        match r.state {
            WakeState::Gone => Decision::Gone,
            WakeState::Deleting if live => Decision::Busy(self.settings.retry_after_s(&r, now)),
            WakeState::Waking if live => Decision::Join(r),
            WakeState::Awake => Decision::CheckAwake(r),
            _ => Decision::Acquire(Some(r)),
        }
    }

    /// Ensure `target` is awake, waiting at most until `deadline`.
    pub async fn wake(
        &self,
        target: &WakeTarget,
        deadline: Deadline,
    ) -> Result<WakeOutcome, Error> {
        let record = self.store.get(&target.key).await?;
        self.wake_from(target, record, deadline).await
    }

    /// As [`WakeLock::wake`], deciding from a record the caller has just read consistently
    /// (the resume handler reads it to authorise; reading twice would cost a call per wake).
    pub async fn wake_from(
        &self,
        target: &WakeTarget,
        mut record: Option<AgentRecord>,
        deadline: Deadline,
    ) -> Result<WakeOutcome, Error> {
        let mut rounds = 0;
        loop {
            match self.decide(record) {
                Decision::Gone => return Err(Error::AgentGone),
                Decision::Busy(retry_after_s) => {
                    return Err(Error::AgentBusy {
                        detail: "a delete holds the agent".into(),
                        retry_after_s,
                    })
                }
                Decision::Join(r) => match self.join(target, r, deadline).await? {
                    Joined::Done(outcome) => return Ok(outcome),
                    Joined::DecideAgain(r) => record = r,
                },
                Decision::CheckAwake(r) => match self.live_session(target, &r, deadline).await? {
                    Some(session) => {
                        return Ok(WakeOutcome::Awake {
                            session,
                            resumed: false,
                            record: r,
                        })
                    }
                    None => match self.acquire(target, Some(r)).await? {
                        Acquired::Held(r, me) => {
                            return self.hold(target, r, &me, rounds == 0, deadline).await
                        }
                        Acquired::Lost(r) => record = r,
                    },
                },
                Decision::Acquire(r) => match self.acquire(target, r).await? {
                    Acquired::Held(r, me) => {
                        return self.hold(target, r, &me, rounds == 0, deadline).await
                    }
                    Acquired::Lost(r) => record = r,
                },
            }
            rounds += 1;
            if rounds >= self.settings.max_rounds {
                return Err(Error::AgentBusy {
                    detail: "too many concurrent changes to the agent; retry".into(),
                    retry_after_s: 1,
                });
            }
        }
    }

    /// The recorded session of an `awake` record, if AgentKit still has it active.
    async fn live_session(
        &self,
        target: &WakeTarget,
        record: &AgentRecord,
        deadline: Deadline,
    ) -> Result<Option<Session>, Error> {
        let Some(session_id) = record.session_id.as_deref() else {
            return Ok(None);
        };
        match self.get_session(target, session_id, deadline).await? {
            Some(s) if s.is_active() => Ok(Some(s)),
            _ => Ok(None),
        }
    }

    async fn get_session(
        &self,
        target: &WakeTarget,
        session_id: &str,
        deadline: Deadline,
    ) -> Result<Option<Session>, Error> {
        let req = GetSession {
            tool_id: target.tool_id.clone(),
            session_id: session_id.to_string(),
        };
        match self.agentkit.call(&target.region, &req, deadline).await {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn acquire(
        &self,
        target: &WakeTarget,
        seen: Option<AgentRecord>,
    ) -> Result<Acquired, Error> {
        let me = uuid::Uuid::new_v4().simple().to_string();
        let condition = match &seen {
            None => Condition::Absent,
            Some(r) => Condition::Version(r.version),
        };
        let changes = Changes {
            state: Some(WakeState::Waking),
            holder: Some(Some(me.clone())),
            bump_fence: true,
            lease_until_ms: Some(now_ms() + self.settings.lease.as_millis() as u64),
            error: Some(None),
            expires_at: Some(None),
            describe: target.describe.clone(),
            ..Changes::default()
        };
        match self.store.update(&target.key, &condition, &changes).await {
            Ok(r) => Ok(Acquired::Held(r, me)),
            // The SDK may have retried a write that had landed: our own token in the "current"
            // record means we won.
            Err(StoreError::ConditionFailed {
                current: Some(current),
            }) if current.holder.as_deref() == Some(me.as_str()) => {
                Ok(Acquired::Held(*current, me))
            }
            Err(StoreError::ConditionFailed { current }) => Ok(Acquired::Lost(current.map(|b| *b))),
            Err(StoreError::Unavailable(why)) => {
                // Ambiguous: the write may have landed. Only the holder token tells.
                tracing::warn!(agent = %target.key, %why, "acquire was ambiguous; re-reading");
                let now = self.store.get(&target.key).await?;
                match now {
                    Some(r) if r.holder.as_deref() == Some(me.as_str()) => {
                        Ok(Acquired::Held(r, me))
                    }
                    other => Ok(Acquired::Lost(other)),
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// A fenced write by the holder. `Ok(None)`: the lock was lost (another caller took over
    /// after our lease expired); the caller must not act as holder any more.
    async fn fenced(
        &self,
        target: &WakeTarget,
        me: &str,
        fence: u64,
        changes: Changes,
    ) -> Result<Option<AgentRecord>, Error> {
        let condition = Condition::Held {
            holder: me.to_string(),
            fence,
        };
        match self.store.update(&target.key, &condition, &changes).await {
            Ok(r) => Ok(Some(r)),
            Err(StoreError::ConditionFailed { .. }) => Ok(None),
            Err(StoreError::Unavailable(why)) => {
                tracing::warn!(agent = %target.key, %why, "fenced write was ambiguous; re-reading");
                let now = self.store.get(&target.key).await?;
                Ok(now.filter(|r| r.holder.as_deref() == Some(me) && r.fence == fence))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The winner's path: reconcile, resume if needed, record, wait, complete.
    ///
    /// `listing_is_current`: the acquire's CAS held on the version read before the caller
    /// listed `target.snapshots`, so no delete can have happened since the listing. After a
    /// lost round the record has changed (a snapshot delete may have come and gone), and the
    /// listing is read again rather than resuming a snapshot that may no longer exist.
    async fn hold(
        &self,
        target: &WakeTarget,
        record: AgentRecord,
        me: &str,
        listing_is_current: bool,
        deadline: Deadline,
    ) -> Result<WakeOutcome, Error> {
        let fence = record.fence;
        let adopted = match self.reconcile(target, &record, deadline).await {
            Ok(a) => a,
            Err(e) => return Err(self.fail(target, me, fence, e).await),
        };
        let resumed = adopted.is_none();
        let (session_id, snapshot_id) = match adopted {
            Some(s) => (s.session_id.unwrap_or_default(), record.snapshot_id.clone()),
            None => {
                let snapshot = match self
                    .pick_snapshot(target, listing_is_current, deadline)
                    .await
                {
                    Ok(Some(s)) => s,
                    Ok(None) => {
                        self.release(target, me, fence).await?;
                        return Err(Error::NotWakeable(match &target.snapshot_id {
                            Some(id) => format!("snapshot {id} is not Ready or does not exist"),
                            None => {
                                "the agent has neither a live session nor a Ready snapshot".into()
                            }
                        }));
                    }
                    Err(e) => return Err(self.fail(target, me, fence, e).await),
                };
                let req = ResumeSessionFromSnapshot::new(&target.tool_id, &snapshot);
                match self.agentkit.call(&target.region, &req, deadline).await {
                    Ok(r) if !r.session_id.is_empty() => (r.session_id, Some(snapshot)),
                    Ok(_) => {
                        let e = Error::WakeFailed("AgentKit answered no SessionId".into());
                        return Err(self.fail(target, me, fence, e).await);
                    }
                    Err(e) => return Err(self.fail(target, me, fence, e.into()).await),
                }
            }
        };
        tracing::info!(agent = %target.key, session_id, resumed, "wake: session recorded");

        // Record the SessionId before anything else can go wrong.
        let recorded = self
            .fenced(
                target,
                me,
                fence,
                Changes {
                    session_id: Some(Some(session_id.clone())),
                    snapshot_id: Some(snapshot_id),
                    lease_until_ms: Some(now_ms() + self.settings.ready_timeout.as_millis() as u64),
                    ..Changes::default()
                },
            )
            .await?;
        let Some(record) = recorded else {
            // Our lease lapsed and somebody else holds the agent now: follow them.
            let current = self.store.get(&target.key).await?;
            return match current {
                Some(r) => match self.join(target, r, deadline).await? {
                    Joined::Done(o) => Ok(o),
                    Joined::DecideAgain(r) => Ok(WakeOutcome::Waking {
                        record: r.unwrap_or_else(|| AgentRecord::absent(target.key.clone())),
                    }),
                },
                None => Err(Error::WakeFailed("the wake lock was lost".into())),
            };
        };
        self.wait_ready(target, record, Some(me), resumed, deadline)
            .await
    }

    /// An active session of this agent, adopted instead of resuming a second one.
    async fn reconcile(
        &self,
        target: &WakeTarget,
        record: &AgentRecord,
        deadline: Deadline,
    ) -> Result<Option<Session>, Error> {
        if let Some(id) = record.session_id.as_deref() {
            if let Some(s) = self.get_session(target, id, deadline).await? {
                if s.is_active() {
                    return Ok(Some(s));
                }
            }
        }
        let Some(usid) = target.user_session_id.as_deref() else {
            return Ok(None);
        };
        let req = ListSessions {
            tool_id: target.tool_id.clone(),
            filters: Some(vec![Filter::one("UserSessionId", usid)]),
            ..ListSessions::default()
        };
        let sessions = list_all(self.agentkit, &target.region, req, 10, deadline).await?;
        Ok(newest_session(sessions.into_iter().filter(|s| {
            s.is_active() && s.user_session_id.as_deref() == Some(usid)
        })))
    }

    /// The snapshot to resume: the named one if Ready, else the newest Ready one. The caller's
    /// listing is used only while it is current (a `snapshot-<id>` agent, found by a scan and
    /// not listable by UserSessionId, always uses it).
    async fn pick_snapshot(
        &self,
        target: &WakeTarget,
        listing_is_current: bool,
        deadline: Deadline,
    ) -> Result<Option<String>, Error> {
        let cached = target
            .snapshots
            .as_ref()
            .filter(|_| listing_is_current || target.user_session_id.is_none());
        let snapshots = match cached {
            Some(s) => s.clone(),
            None => {
                let Some(usid) = target.user_session_id.as_deref() else {
                    return Ok(None);
                };
                let req = ListSessionSnapshots {
                    tool_id: target.tool_id.clone(),
                    user_session_id: Some(usid.to_string()),
                    ..ListSessionSnapshots::default()
                };
                list_all(self.agentkit, &target.region, req, 20, deadline).await?
            }
        };
        let mut ready: Vec<&Snapshot> = snapshots.iter().filter(|s| s.is_wakeable()).collect();
        if let Some(want) = target.snapshot_id.as_deref() {
            return Ok(ready
                .into_iter()
                .find(|s| s.snapshot_id.as_deref() == Some(want))
                .map(|_| want.to_string()));
        }
        ready.sort_by_key(|s| {
            std::cmp::Reverse(crate::timestamp::sort_key(s.created_at.as_deref()))
        });
        Ok(ready.first().and_then(|s| s.snapshot_id.clone()))
    }

    /// Record a failed wake (the snapshot untouched) and hand back the error to answer.
    async fn fail(&self, target: &WakeTarget, me: &str, fence: u64, err: Error) -> Error {
        let reason = match &err {
            Error::AgentKit(e) => e.to_string(),
            other => other.to_string(),
        };
        tracing::warn!(agent = %target.key, %reason, "wake failed");
        let changes = Changes {
            state: Some(WakeState::Failed),
            holder: Some(None),
            lease_until_ms: Some(0),
            error: Some(Some(reason)),
            ..Changes::default()
        };
        if let Err(e) = self.fenced(target, me, fence, changes).await {
            tracing::warn!(agent = %target.key, error = %e, "could not record the failed wake");
        }
        match err {
            Error::AgentKit(AgentKitError::NotFound { .. }) => {
                Error::WakeFailed("AgentKit no longer has the session or snapshot".into())
            }
            other => other,
        }
    }

    /// Give the lock back without a wake (nothing to wake).
    async fn release(&self, target: &WakeTarget, me: &str, fence: u64) -> Result<(), Error> {
        self.fenced(
            target,
            me,
            fence,
            Changes {
                state: Some(WakeState::Asleep),
                holder: Some(None),
                lease_until_ms: Some(0),
                ..Changes::default()
            },
        )
        .await?;
        Ok(())
    }

    /// Poll the recorded session until it is Ready, it ends, or the deadline comes.
    async fn wait_ready(
        &self,
        target: &WakeTarget,
        record: AgentRecord,
        me: Option<&str>,
        resumed: bool,
        deadline: Deadline,
    ) -> Result<WakeOutcome, Error> {
        let Some(session_id) = record.session_id.clone() else {
            return Ok(WakeOutcome::Waking { record });
        };
        let mut pause = self.settings.poll_min;
        loop {
            let session = self.get_session(target, &session_id, deadline).await?;
            match session {
                Some(s) if s.is_usable() => {
                    let record = self.complete(target, &record, me).await?;
                    return Ok(WakeOutcome::Awake {
                        session: s,
                        resumed,
                        record,
                    });
                }
                Some(s) if s.is_active() => {}
                ended => {
                    let status = ended
                        .and_then(|s| s.status)
                        .unwrap_or_else(|| "gone".into());
                    let err = Error::WakeFailed(format!("the resumed session ended ({status})"));
                    return Err(match me {
                        Some(me) => self.fail(target, me, record.fence, err).await,
                        None => err,
                    });
                }
            }
            if !deadline.allows(pause) {
                return Ok(WakeOutcome::Waking { record });
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 3 / 2).min(self.settings.poll_max);
        }
    }

    /// Mark the agent awake: fenced for the holder, complete-by-anyone for the others. Losing
    /// that race is fine: someone else completed the same session.
    async fn complete(
        &self,
        target: &WakeTarget,
        record: &AgentRecord,
        me: Option<&str>,
    ) -> Result<AgentRecord, Error> {
        let changes = Changes {
            state: Some(WakeState::Awake),
            holder: Some(None),
            lease_until_ms: Some(0),
            error: Some(None),
            ..Changes::default()
        };
        let condition = match me {
            Some(me) => Condition::Held {
                holder: me.to_string(),
                fence: record.fence,
            },
            None => Condition::WakingWith {
                fence: record.fence,
                session_id: record.session_id.clone().unwrap_or_default(),
            },
        };
        match self.store.update(&target.key, &condition, &changes).await {
            Ok(r) => Ok(r),
            Err(StoreError::ConditionFailed { current }) => {
                Ok(current.map(|b| *b).unwrap_or_else(|| record.clone()))
            }
            Err(StoreError::Unavailable(_)) => Ok(self
                .store
                .get(&target.key)
                .await?
                .unwrap_or_else(|| record.clone())),
            Err(e) => Err(e.into()),
        }
    }

    /// Wait on somebody else's wake.
    async fn join(
        &self,
        target: &WakeTarget,
        mut record: AgentRecord,
        deadline: Deadline,
    ) -> Result<Joined, Error> {
        let joined_fence = record.fence;
        let mut pause = self.settings.poll_min;
        loop {
            if record.session_id.is_some() && record.state == WakeState::Waking {
                return match self
                    .wait_ready(target, record.clone(), None, true, deadline)
                    .await
                {
                    Ok(o) => Ok(Joined::Done(o)),
                    // The holder records the failure; a joiner reports it the same way.
                    Err(e) => Err(e),
                };
            }
            if !deadline.allows(pause) {
                return Ok(Joined::Done(WakeOutcome::Waking { record }));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 3 / 2).min(self.settings.poll_max);
            let Some(now) = self.store.get(&target.key).await? else {
                return Ok(Joined::DecideAgain(None));
            };
            let live = self.settings.lease_is_live(&now, now_ms());
            match now.state {
                WakeState::Waking if live => record = now,
                WakeState::Awake => {
                    return match self.live_session(target, &now, deadline).await? {
                        Some(session) => Ok(Joined::Done(WakeOutcome::Awake {
                            session,
                            resumed: true,
                            record: now,
                        })),
                        None => Ok(Joined::DecideAgain(Some(now))),
                    }
                }
                WakeState::Failed if now.fence == joined_fence => {
                    return Err(Error::WakeFailed(
                        now.error.unwrap_or_else(|| "the wake failed".into()),
                    ))
                }
                _ => return Ok(Joined::DecideAgain(Some(now))),
            }
        }
    }
}

enum Acquired {
    Held(AgentRecord, String),
    Lost(Option<AgentRecord>),
}

enum Joined {
    Done(WakeOutcome),
    DecideAgain(Option<AgentRecord>),
}

/// The most recently created session of an iterator.
pub fn newest_session(sessions: impl Iterator<Item = Session>) -> Option<Session> {
    sessions.max_by_key(|s| crate::timestamp::sort_key(s.created_at.as_deref()))
}
