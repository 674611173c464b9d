//! What the record alone says a deleter may do, before any AgentKit call: a pure rule, so
//! it is tested at fixed instants.

use snapwake::ambient::now_ms;
use snapwake::domain::{AgentRecord, WakeState};
use snapwake::error::Error;
use snapwake::lock::{self, Intent, LockSettings};
use snapwake::store::{Changes, Condition};

/// What the record says a deleter may do, before any AgentKit call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The agent is deleted already: answer as done.
    Gone,
    /// Acquire under this condition.
    Acquire(Condition),
}

/// Decide from the record seen: a tombstone is done; an `If-Match` naming another version
/// is 412; a live lease of a wake, a create or another delete is 409; anything else may be
/// acquired ([`lock::decide`]).
pub fn decide(
    settings: &LockSettings,
    seen: Option<&AgentRecord>,
    if_match: Option<u64>,
) -> Result<Decision, Error> {
    if seen.is_some_and(|r| r.state == WakeState::Gone) {
        return Ok(Decision::Gone);
    }
    let version = seen.map_or(0, |r| r.version);
    if let Some(given) = if_match {
        if given != version {
            return Err(Error::PreconditionFailed {
                given: given.to_string(),
            });
        }
    }
    match lock::decide(seen, now_ms(), Intent::Delete, settings) {
        lock::Decision::Gone => Ok(Decision::Gone),
        lock::Decision::Acquire(c) => Ok(Decision::Acquire(c)),
        lock::Decision::Busy {
            state,
            retry_after_s,
        } => Err(Error::held_by(state, retry_after_s)),
        // A delete is never told to join, trust or verify; whatever else, a CAS decides.
        _ => Ok(Decision::Acquire(Condition::Version(version))),
    }
}

/// How an agent rests once a snapshot delete (or a failed delete) hands it back: the state
/// and what the give-back writes besides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Resting {
    pub state: WakeState,
    pub changes: Changes,
}

/// The state an agent rests in once a snapshot delete hands it back: what it was. A wake, a
/// sleep or a create whose lease lapsed (its holder died) is handed back as it was left, its
/// lease ended, for the next caller to take over and finish: the delete does not know whether
/// its session started or ended, and saying `asleep` of an agent whose wake did start it would
/// leave it awake unannounced (the next wake adopts it either way, never resuming twice). A
/// delete that lapsed kept the generation it found, so the record still names the session the
/// agent rested with: awake while that session's expiry has not passed, asleep otherwise, and
/// then its end on AgentKit's clock is announced and the session forgotten, as a wake that
/// finds it ended does (docs/events.md; the simulated deployment found a keepalive's hour run
/// out under a chain of lapsed deletes, the agent handed back asleep with no event).
pub(super) fn resting(seen: Option<&AgentRecord>, now_ms: u64) -> Resting {
    let kept = |state| Resting {
        state,
        changes: Changes::default(),
    };
    match seen.map(|r| r.state) {
        Some(
            s @ (WakeState::Asleep
            | WakeState::Awake
            | WakeState::Failed
            | WakeState::Waking
            | WakeState::Sleeping
            | WakeState::Creating),
        ) => kept(s),
        Some(WakeState::Deleting) => {
            let recorded = seen.and_then(|r| {
                let expires = r
                    .session_expire_at
                    .as_deref()
                    .and_then(snapwake::ambient::epoch_ms);
                r.session_id.as_ref().map(|_| expires)
            });
            match recorded {
                Some(expires) if expires.is_none_or(|t| t > now_ms) => kept(WakeState::Awake),
                // It rested awake under the lapsed deletes, and its session has ended.
                Some(_) => Resting {
                    state: WakeState::Asleep,
                    changes: lock::agent::forget_session(Changes {
                        announce: lock::agent::announced_end(Some(WakeState::Awake)),
                        ..Changes::default()
                    }),
                },
                None => kept(WakeState::Asleep),
            }
        }
        _ => kept(WakeState::Asleep),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use snapwake::domain::{AgentKey, Announce, Kind, Trigger};

    fn deleting(expire_at: &str) -> AgentRecord {
        let mut r = AgentRecord::absent(AgentKey::new(Kind::Codex, "a"));
        r.state = WakeState::Deleting;
        r.session_id = Some("s-1".into());
        r.session_expire_at = Some(expire_at.into());
        r
    }

    #[test]
    fn a_lapsed_delete_hands_back_awake_until_the_session_expires_then_announces_its_end() {
        let expiry = "2027-08-04T14:58:36Z";
        let at = snapwake::ambient::epoch_ms(expiry).unwrap();
        let before = resting(Some(&deleting(expiry)), at - 1);
        assert_eq!(before.state, WakeState::Awake);
        assert_eq!(before.changes, Changes::default(), "nothing learned");

        let after = resting(Some(&deleting(expiry)), at + 1);
        assert_eq!(after.state, WakeState::Asleep);
        let announced = after.changes.announce.expect("its end is announced");
        assert_eq!(
            (announced.what, announced.trigger),
            (Announce::Asleep, Trigger::Agentkit)
        );
        assert_eq!(
            after.changes.session_id,
            Some(None),
            "the ended session forgotten"
        );
    }

    #[test]
    fn a_resting_state_is_handed_back_as_it_was_with_nothing_announced() {
        let mut r = deleting("2027-08-04T14:58:36Z");
        r.state = WakeState::Asleep;
        let rest = resting(Some(&r), u64::MAX / 2);
        assert_eq!(rest.state, WakeState::Asleep);
        assert_eq!(rest.changes.announce, None);
    }
}
