//! Part 1's write sites: how each write of wake, delete, create and sleep looks (its condition
//! and changes), the [`Flow`] that reaches it, and the table [`SITES`] of every site.

use super::faulty_store::*;
use super::*;

// ---------------------------------------------------------------------------------------------
// The write sites, as their writes look (wake/, sleep/, lock/agent.rs, deletion/,
// create's lib.rs)

pub(crate) fn fenced(c: &Condition) -> bool {
    matches!(c, Condition::Held { .. })
}

pub(crate) fn cas(c: &Condition) -> bool {
    matches!(c, Condition::Version(_))
}

/// Acquire as `waking` (a CAS, a new holder, fence + 1).
pub(crate) fn wake_acquire(_: &Condition, ch: &Changes) -> bool {
    ch.bump_fence && ch.state == Some(WakeState::Waking)
}

/// `resume_sent_at` written (fenced) before Resume is sent.
pub(crate) fn resume_sent(c: &Condition, ch: &Changes) -> bool {
    fenced(c) && matches!(ch.resume_sent_at_ms, Some(Some(_)))
}

/// The SessionId recorded (fenced) right after Resume answered.
pub(crate) fn session_recorded(c: &Condition, ch: &Changes) -> bool {
    fenced(c) && ch.state.is_none() && matches!(ch.session_id, Some(Some(_)))
}

/// The holder completes the wake (fenced; the SessionId was recorded before).
pub(crate) fn complete(c: &Condition, ch: &Changes) -> bool {
    fenced(c) && ch.state == Some(WakeState::Awake) && ch.session_id.is_none()
}

/// A poller completes a wake by anyone (`state = waking AND fence AND session_id`).
pub(crate) fn complete_by_anyone(c: &Condition, ch: &Changes) -> bool {
    matches!(c, Condition::WakingWith { .. }) && ch.state == Some(WakeState::Awake)
}

/// A short poll lease: a CAS on the version seen that sets `poll_until_ms` alone.
pub(crate) fn poll_lease(c: &Condition, ch: &Changes) -> bool {
    cas(c)
        && ch.poll_until_ms.is_some_and(|t| t > 0)
        && ch.state.is_none()
        && !ch.bump_fence
        && ch.session_id.is_none()
        && ch.verified_at_ms.is_none()
}

/// The verification of an awake record (a CAS on the version seen).
pub(crate) fn verified(c: &Condition, ch: &Changes) -> bool {
    cas(c) && ch.state.is_none() && ch.verified_at_ms.is_some_and(|t| t > 0)
}

/// The holder records a failed wake (fenced).
pub(crate) fn fail(c: &Condition, ch: &Changes) -> bool {
    fenced(c) && ch.state == Some(WakeState::Failed)
}

/// Acquire as `deleting`.
pub(crate) fn delete_acquire(_: &Condition, ch: &Changes) -> bool {
    ch.bump_fence && ch.state == Some(WakeState::Deleting)
}

/// A snapshot delete hands the agent back in the state it rested in (a bare release).
pub(crate) fn restore(c: &Condition, ch: &Changes) -> bool {
    fenced(c)
        && ch.holder == Some(None)
        && matches!(
            ch.state,
            Some(WakeState::Asleep | WakeState::Awake | WakeState::Failed)
        )
        && ch.resume_sent_at_ms.is_none()
        && ch.session_id.is_none()
        && ch.expires_at.is_none()
        && ch.error.is_none()
        && ch.describe.is_none()
}

/// An agent delete writes the tombstone.
pub(crate) fn tombstone(c: &Condition, ch: &Changes) -> bool {
    fenced(c) && ch.state == Some(WakeState::Gone)
}

/// Acquire as `creating`.
pub(crate) fn create_acquire(_: &Condition, ch: &Changes) -> bool {
    ch.bump_fence && ch.state == Some(WakeState::Creating)
}

/// Create records the new session and gives the lock back awake.
pub(crate) fn create_record(c: &Condition, ch: &Changes) -> bool {
    fenced(c) && ch.state == Some(WakeState::Awake) && matches!(ch.session_id, Some(Some(_)))
}

/// The attempt marked in the record before CreateSession is sent.
pub(crate) fn create_sent(c: &Condition, ch: &Changes) -> bool {
    fenced(c) && matches!(ch.create_sent_at_ms, Some(Some(_))) && ch.lease_until_ms.is_none()
}

/// An unsettled CreateSession: the agent held until its window ends.
pub(crate) fn create_unsettled(c: &Condition, ch: &Changes) -> bool {
    fenced(c) && matches!(ch.create_sent_at_ms, Some(Some(_))) && ch.lease_until_ms.is_some()
}

/// A record whose agent has no session is retired (expired at once).
pub(crate) fn retire(c: &Condition, ch: &Changes) -> bool {
    fenced(c) && matches!(ch.expires_at, Some(Some(t)) if t <= now_s())
}

/// After an unknown Resume the holder found no session yet: it hands polling over (fenced),
/// its lease extended to the readiness timeout of that Resume.
pub(crate) fn hand_over(c: &Condition, ch: &Changes) -> bool {
    fenced(c)
        && ch.poll_until_ms == Some(0)
        && ch.state.is_none()
        && ch.lease_until_ms.is_some()
        && ch.describe.is_none()
        && ch.session_id.is_none()
}

/// A poller found the session of an unknown Resume and records it (a CAS on the version seen).
pub(crate) fn poller_records(c: &Condition, ch: &Changes) -> bool {
    cas(c) && ch.state.is_none() && matches!(ch.session_id, Some(Some(_)))
}

/// Acquire as `sleeping` (a CAS, a new holder, fence + 1).
pub(crate) fn sleep_acquire(_: &Condition, ch: &Changes) -> bool {
    ch.bump_fence && ch.state == Some(WakeState::Sleeping)
}

/// The holder names the snapshot it took (or adopted) and the session, before waiting for it
/// (fenced).
pub(crate) fn snapshot_named(c: &Condition, ch: &Changes) -> bool {
    fenced(c) && ch.state.is_none() && matches!(ch.snapshot_id, Some(Some(_)))
}

/// The holder writes `asleep` once the snapshot is Ready and the session ended (fenced, with
/// the summaries and the error cleared: not the release of an agent that was asleep already,
/// which leaves the error alone).
pub(crate) fn asleep_by_holder(c: &Condition, ch: &Changes) -> bool {
    fenced(c)
        && ch.state == Some(WakeState::Asleep)
        && ch.snapshots.is_some()
        && ch.error == Some(None)
}

/// Whoever carries a sleep on writes `asleep` by anyone (`state = sleeping AND fence AND
/// snapshot_id`).
pub(crate) fn asleep_by_anyone(c: &Condition, ch: &Changes) -> bool {
    matches!(c, Condition::SleepingWith { .. }) && ch.state == Some(WakeState::Asleep)
}

/// The holder gives a sleep whose snapshot failed back `awake`, with the reason (fenced).
pub(crate) fn sleep_failed_by_holder(c: &Condition, ch: &Changes) -> bool {
    fenced(c) && ch.state == Some(WakeState::Awake) && matches!(ch.error, Some(Some(_)))
}

/// How a site is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Resume an asleep agent (the session is Ready at once).
    Wake,
    /// Resume an asleep agent whose resumed session is gone at the first poll (AgentKit
    /// answers NotFound once): the wake fails (502), the next resume adopts the session.
    WakeFailing,
    /// Resume an agent whose session takes longer than one request: the holder answers 202,
    /// a later caller takes the poll lease over and completes by anyone.
    WakeSlow,
    /// Resume an agent whose Resume answers a bare 503 after AgentKit acted, and whose
    /// holder cannot list sessions afterwards: it hands polling over (202); a later caller
    /// finds the session under a poll lease, records it and completes by anyone.
    WakeUnknown,
    /// Wake an agent, then resume it again once its record is no longer fresh: one caller
    /// checks the session under a poll lease and records the verification.
    Verify,
    /// Delete one of an asleep agent's two snapshots, then wake it from the other.
    DeleteSnapshot,
    /// Delete an awake agent: its session, all its snapshots, then the tombstone.
    DeleteAgent,
    /// Create an agent (with an Idempotency-Key, retried with the same key).
    Create,
    /// Create an agent whose first CreateSession fails for sure (a 4xx): the record is
    /// retired, the retry with the same key creates it.
    CreateFails,
    /// Create an agent whose first CreateSession answers `ErrCreateSessionFail` with nothing
    /// created: 202 while its (short) unsettled window lasts, nothing sent again inside it,
    /// then the retry with the same key creates it.
    CreateUnsettled,
    /// Wake an agent, then put it to sleep (the snapshot is Ready within the request), then
    /// wake it again.
    Sleep,
    /// Put an agent to sleep whose snapshot takes longer than one request (a short wait):
    /// the holder answers 202, a second caller takes the poll lease, ends the session and
    /// writes `asleep` by anyone.
    SleepSlow,
    /// Put an agent to sleep whose snapshot ends `Failed`: 502, the agent awake, its session
    /// untouched; then a good snapshot puts it to sleep.
    SleepFailing,
}

pub(crate) const WAKES: &[Flow] = &[
    Flow::Wake,
    Flow::WakeFailing,
    Flow::WakeSlow,
    Flow::WakeUnknown,
    Flow::Verify,
];
pub(crate) const DELETES: &[Flow] = &[Flow::DeleteSnapshot, Flow::DeleteAgent];
pub(crate) const CREATES: &[Flow] = &[Flow::Create, Flow::CreateFails, Flow::CreateUnsettled];
pub(crate) const SLEEPS: &[Flow] = &[Flow::Sleep, Flow::SleepSlow, Flow::SleepFailing];

pub(crate) struct Site {
    pub(crate) name: &'static str,
    pub(crate) flow: Flow,
    pub(crate) recognise: Recognise,
}

pub(crate) const fn site(name: &'static str, flow: Flow, recognise: Recognise) -> Site {
    Site {
        name,
        flow,
        recognise,
    }
}

/// Every write site, and the flow that reaches it.
pub(crate) static SITES: &[Site] = &[
    site("wake: acquire", Flow::Wake, wake_acquire),
    site(
        "wake: resume_sent_at before Resume",
        Flow::Wake,
        resume_sent,
    ),
    site("wake: record the SessionId", Flow::Wake, session_recorded),
    site("wake: complete (holder)", Flow::Wake, complete),
    site("wake: fail (holder)", Flow::WakeFailing, fail),
    site(
        "wake: acquire after a failed wake",
        Flow::WakeFailing,
        wake_acquire,
    ),
    site("wake: poll lease of a joiner", Flow::WakeSlow, poll_lease),
    site(
        "wake: complete by anyone",
        Flow::WakeSlow,
        complete_by_anyone,
    ),
    site(
        "wake: hand polling over (unknown)",
        Flow::WakeUnknown,
        hand_over,
    ),
    site(
        "wake: poll lease (unknown Resume)",
        Flow::WakeUnknown,
        poll_lease,
    ),
    site(
        "wake: poller records the session",
        Flow::WakeUnknown,
        poller_records,
    ),
    site(
        "wake: complete by anyone (unknown)",
        Flow::WakeUnknown,
        complete_by_anyone,
    ),
    site("wake: poll lease to verify", Flow::Verify, poll_lease),
    site("wake: verification", Flow::Verify, verified),
    site(
        "delete snapshot: acquire",
        Flow::DeleteSnapshot,
        delete_acquire,
    ),
    site("delete snapshot: restore", Flow::DeleteSnapshot, restore),
    site("delete agent: acquire", Flow::DeleteAgent, delete_acquire),
    site("delete agent: tombstone", Flow::DeleteAgent, tombstone),
    site("create: acquire", Flow::Create, create_acquire),
    site(
        "create: create_sent_at before CreateSession",
        Flow::Create,
        create_sent,
    ),
    site(
        "create: hold an unsettled create",
        Flow::CreateUnsettled,
        create_unsettled,
    ),
    site("create: record the session", Flow::Create, create_record),
    site("create: retire", Flow::CreateFails, retire),
    site("sleep: acquire", Flow::Sleep, sleep_acquire),
    site("sleep: name the snapshot", Flow::Sleep, snapshot_named),
    site("sleep: asleep (holder)", Flow::Sleep, asleep_by_holder),
    site("sleep: poll lease of a joiner", Flow::SleepSlow, poll_lease),
    site("sleep: asleep by anyone", Flow::SleepSlow, asleep_by_anyone),
    site(
        "sleep: fail (holder)",
        Flow::SleepFailing,
        sleep_failed_by_holder,
    ),
];
