//! The lock on one agent record. A store call that timed out or answered 5xx is *ambiguous*: it may
//! have landed, so it is sent again, then decided by a consistent read.

use std::time::Duration;

use super::settings::LockSettings;
use crate::domain::Description;
use crate::domain::{AgentKey, AgentRecord, WakeState};
use crate::invocation::Deadline;
use crate::store::{AgentStore, Changes, Condition, StoreError, Within};
use crate::timestamp::now_ms;

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
        let me = crate::ids::fresh_hex();
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
                .then_some(Some(crate::timestamp::now_s() - 1)),
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
            poller: Some(Some(crate::ids::fresh_hex())),
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
            Some(crate::events::announcement(Announce::Asleep))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Announce, Trigger};

    #[test]
    fn an_end_is_announced_after_an_awake_rest_or_any_lapsed_change_never_after_a_rest_asleep() {
        let awake = announced_end(Some(WakeState::Awake));
        assert_eq!(awake.map(|a| a.trigger), Some(Trigger::Agentkit));
        for lapsed in [
            WakeState::Waking,
            WakeState::Sleeping,
            WakeState::Creating,
            WakeState::Deleting,
        ] {
            let said = announced_end(Some(lapsed)).map(|a| a.what);
            assert_eq!(said, Some(Announce::Asleep), "{lapsed:?}");
        }
        for rest in [
            None,
            Some(WakeState::Asleep),
            Some(WakeState::Failed),
            Some(WakeState::Gone),
        ] {
            assert!(announced_end(rest).is_none(), "{rest:?}");
        }
    }
}
