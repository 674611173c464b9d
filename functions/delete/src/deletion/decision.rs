//! What the record alone says a deleter may do, before any AgentKit call: a pure rule, so
//! it is tested at fixed instants.

use super::*;

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

/// The state an agent rests in once a snapshot delete hands it back: what it was. A wake, a
/// sleep or a create whose lease lapsed (its holder died) is handed back as it was left, its
/// lease ended, for the next caller to take over and finish: the delete does not know whether
/// its session started or ended, and saying `asleep` of an agent whose wake did start it would
/// leave it awake unannounced (the next wake adopts it either way, never resuming twice). A
/// delete that lapsed kept the generation it found, so the record still names the session the
/// agent rested with: awake while that session's expiry has not passed, asleep otherwise.
pub(super) fn resting(seen: Option<&AgentRecord>, now_ms: u64) -> WakeState {
    match seen.map(|r| r.state) {
        Some(
            s @ (WakeState::Asleep
            | WakeState::Awake
            | WakeState::Failed
            | WakeState::Waking
            | WakeState::Sleeping
            | WakeState::Creating),
        ) => s,
        Some(WakeState::Deleting) => {
            let recorded = seen.and_then(|r| {
                let expires = r
                    .session_expire_at
                    .as_deref()
                    .and_then(snapwake::timestamp::epoch_ms);
                r.session_id.as_ref().map(|_| expires)
            });
            match recorded {
                Some(expires) if expires.is_none_or(|t| t > now_ms) => WakeState::Awake,
                _ => WakeState::Asleep,
            }
        }
        _ => WakeState::Asleep,
    }
}
