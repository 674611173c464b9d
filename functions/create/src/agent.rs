//! One agent created under its lock: the record is taken as `creating` before AgentKit is
//! asked for anything (so a crash never leaves a session snapwake has no record of, and a
//! delete racing the create is fenced like one racing a wake), the session recorded (fenced)
//! once it exists, and the record retired when it certainly does not.
//!
//! **A CreateSession whose answer was lost may take effect later** (a timeout, a 5xx, a bare
//! 503, `ErrCreateSessionFail`). So the attempt is in the record before CreateSession is sent
//! (`create_sent_at`, a fenced write), and until `create_sent_at` + the unsettled window (the
//! readiness timeout, 360 s) nobody sends a second CreateSession for the agent:
//!
//! - the attempt that lost the answer lists the agent's sessions (UserSessionId filter); none
//!   shown is no proof, so it keeps the agent `creating` with its lease to the end of the
//!   window, `poll_until_ms` = 0 (its request only answers from here on), and answers 202
//!   ([`Outcome::Unsettled`]);
//! - every later caller with the agent's id (an Idempotency-Key retry) that finds the agent so
//!   held once that request has ended lists again: a session found is adopted (recorded by a
//!   CAS on the version seen: 201), none is 202 again. A caller that acquires the agent after a
//!   holder died (its short lease lapsed inside the window) does the same under the lock;
//! - once the window is over, the lease lapses with it, and an empty listing is AgentKit's
//!   word: the next attempt may send CreateSession again (same UserSessionId).
//!
//! An unsettled record that nobody asks about again (a create without an Idempotency-Key whose
//! session never appeared) expires with its window rather than staying behind as an empty
//! agent; if its session did appear, the agent is still one AgentKit lists by owner (a record
//! is not needed for that), and the first wake or delete writes a new record.

use snapwake::agentkit::types::Session;
use snapwake::agentkit::AgentKit;
use snapwake::ambient::{now_ms, now_s};
use snapwake::domain::{AgentKey, AgentRecord, Description, WakeState};
use snapwake::error::{Error, Result};
use snapwake::identity::caller;
use snapwake::invocation::Deadline;
use snapwake::lock::{
    decide, Acquire, Acquired, AgentLock, Decision, Generation, Held, Intent, Written,
};
use snapwake::offboarding::admit;
use snapwake::store::Within;
use snapwake::store::{AgentStore, Changes};

use crate::plan::Plan;
use crate::session::Started;
use crate::Create;

/// An agent with its session.
pub(crate) struct Created {
    pub record: AgentRecord,
    pub session: Session,
}

/// What a create came to.
#[allow(clippy::large_enum_variant)] // returned once per request, consumed at once
pub(crate) enum Outcome {
    /// The agent and its session (201).
    Created(Created),
    /// A CreateSession's answer was lost and its session has not shown up yet; the record
    /// holds the attempt (`create_sent_at`) and nobody sends another inside the window (202).
    Unsettled(AgentRecord),
}

impl<S: AgentStore, K: AgentKit> Create<S, K> {
    /// Create agent `agent_id` for `plan` under the agent's lock: take its record as
    /// `creating`, then CreateSession, then record the session (fenced). With `takeover`, an
    /// earlier attempt may have created it already: its record is taken over and an active
    /// session adopted; a tombstone (the agent was deleted meanwhile) is 410, never a second
    /// life; an earlier CreateSession still unsettled is reconciled, never repeated (module
    /// docs).
    pub(crate) async fn create_agent(
        &self,
        plan: &Plan,
        agent_id: &str,
        takeover: bool,
        deadline: Deadline,
    ) -> Result<Outcome> {
        let key = AgentKey::new(plan.kind, agent_id);
        let store = Within::new(&self.store, deadline);
        // An owner being offboarded gets no new agent: everything of theirs is on the way out.
        admit(&store, &key).await?;
        let lock = AgentLock::new(store, &self.settings.lock);
        let first_region = plan
            .regions
            .first()
            .cloned()
            .ok_or_else(|| Error::NotConfigured("no AgentKit region is configured".into()))?;
        let seen = if takeover {
            lock.read(&key).await?
        } else {
            None
        };
        if let Some(held_unsettled) = seen.as_ref().filter(|r| self.awaits_reconcile(r)) {
            return self
                .reconcile_unsettled(&lock, plan, held_unsettled, deadline)
                .await;
        }
        let mut held = self.take(&lock, plan, &key, &first_region, seen).await?;

        if takeover || held.before.is_some() {
            match self
                .find_session(plan, agent_id, &plan.regions, deadline)
                .await
            {
                Ok(Some((session, region))) => {
                    tracing::info!(agent = %key, "adopted the session of an earlier attempt");
                    return self.record_created(&lock, held, session, &region).await;
                }
                Ok(None) => {}
                // Unsettled either way: held below until its window ends.
                Err(e) if self.unsettled_since(held.before.as_ref()).is_some() => {
                    tracing::warn!(agent = %key, error = %e, "could not list the sessions of an unsettled create");
                }
                // Whether a session exists is not known: the record stays as it is (its short
                // lease lapses), and nothing is sent.
                Err(e) => return Err(e),
            }
        }
        // An earlier CreateSession of this agent may still take effect: wait it out.
        if let Some(sent_at) = self.unsettled_since(held.before.as_ref()) {
            return self.hold_unsettled(&lock, held, sent_at).await;
        }
        if deadline.remaining() < self.agentkit.request_timeout() {
            self.retire(&lock, &mut held).await;
            return Err(Error::no_time_to("create the agent"));
        }

        // The attempt is in the record before CreateSession is sent.
        let sent_at = now_ms();
        let marked = Changes {
            create_sent_at_ms: Some(Some(sent_at)),
            ..Changes::default()
        };
        match lock.write(&mut held, marked).await {
            Ok(Written::Done(_)) => {}
            Ok(Written::Lost(_)) => return Err(lost_while_creating()),
            Err(e) => {
                // Nothing was sent: clear the marker if the store lets us.
                self.retire(&lock, &mut held).await;
                return Err(e.into());
            }
        }
        match self.start_session(plan, &key, deadline).await? {
            Started::Session { session, region } => {
                self.record_created(&lock, held, session, &region).await
            }
            // The record goes, and a retry with the same Idempotency-Key starts afresh with
            // the same UserSessionId.
            Started::Nothing(err) => {
                self.retire(&lock, &mut held).await;
                Err(err)
            }
            Started::Unsettled => self.hold_unsettled(&lock, held, sent_at).await,
        }
    }

    /// When the CreateSession `record` holds was sent, if it may still take effect (its window
    /// is open).
    fn unsettled_since(&self, record: Option<&AgentRecord>) -> Option<u64> {
        let sent_at = record?.create_sent_at_ms?;
        let window = self.settings.unsettled_window.as_millis() as u64;
        (now_ms() < sent_at.saturating_add(window)).then_some(sent_at)
    }

    /// Whether `record` is an agent held for an unsettled CreateSession whose holder's request
    /// has ended: anyone may then look for the session and record it. (The lease outlives the
    /// window by the skew margin; until it lapses this still answers 202, not 409.)
    fn awaits_reconcile(&self, record: &AgentRecord) -> bool {
        let now = now_ms();
        let settings = &self.settings.lock;
        record.state == WakeState::Creating
            && record.create_sent_at_ms.is_some()
            && settings.is_held(record, now)
            && !settings.lease_holds(record.poll_until_ms, now)
    }

    /// Keep the agent held as `creating` until the end of the unsettled window (so no delete,
    /// wake or second create acts beside a session that may still appear), let whoever asks
    /// next look for the session at once, and answer 202. The record expires with the window
    /// unless somebody records a session or acquires it before.
    async fn hold_unsettled(
        &self,
        lock: &AgentLock<'_, S>,
        mut held: Held,
        sent_at: u64,
    ) -> Result<Outcome> {
        let window_ends = sent_at + self.settings.unsettled_window.as_millis() as u64;
        let changes = Changes {
            lease_until_ms: Some(window_ends),
            // This request only answers from here on: the next caller may look at once.
            poll_until_ms: Some(0),
            create_sent_at_ms: Some(Some(sent_at)),
            expires_at: Some(Some(window_ends.div_ceil(1000) as i64)),
            ..Changes::default()
        };
        tracing::warn!(agent = %held.key, "CreateSession unsettled: no session shows yet; holding the agent until its window ends");
        match lock.write(&mut held, changes).await {
            Ok(Written::Done(record)) => Ok(Outcome::Unsettled(record)),
            Ok(Written::Lost(_)) => Err(lost_while_creating()),
            // The marker is in the record already; the short acquire lease lapses and the next
            // caller reconciles under the lock.
            Err(e) => {
                tracing::warn!(agent = %held.key, error = %e, "could not extend the hold of an unsettled create");
                Ok(Outcome::Unsettled(held.record))
            }
        }
    }

    /// Look for the session of an unsettled CreateSession `seen` holds (its holder's request
    /// has ended): found → record it by a CAS on the version seen (201); not yet → 202.
    async fn reconcile_unsettled(
        &self,
        lock: &AgentLock<'_, S>,
        plan: &Plan,
        seen: &AgentRecord,
        deadline: Deadline,
    ) -> Result<Outcome> {
        if !is_ours(seen, plan) {
            return Err(Error::Internal(format!(
                "agent record {} already exists for someone else",
                seen.key
            )));
        }
        let agent_id = seen.key.agent_id.as_str();
        let (session, region) = match self
            .find_session(plan, agent_id, &plan.regions, deadline)
            .await
        {
            Ok(Some(found)) => found,
            Ok(None) => return Ok(Outcome::Unsettled(seen.clone())),
            Err(e) => {
                tracing::warn!(agent = %seen.key, error = %e, "could not list the sessions of an unsettled create");
                return Ok(Outcome::Unsettled(seen.clone()));
            }
        };
        tracing::info!(agent = %seen.key, "the unsettled CreateSession took effect; recording its session");
        let mut changes = created_changes(&session, &region);
        changes.state = Some(WakeState::Awake);
        changes.holder = Some(None);
        changes.lease_until_ms = Some(0);
        changes.poll_until_ms = Some(0);
        // Idle from now, as a create it settled itself (the long run's seed 1004 found one with
        // no idle time: awake until AgentKit's eight hours).
        changes.idle_at_ms = Some(self.settings.idle.idle_at(seen, now_ms()));
        // The create is done, whoever found its session: announced as the create's doing
        // (the simulated deployment's seed 1000 found it unannounced).
        changes.announce = Some(snapwake::invocation::announcement(
            snapwake::domain::Announce::Created,
        ));
        let changes = snapwake::lock::agent::on_behalf_of(seen, changes);
        match lock.write_seen(seen, changes).await? {
            Written::Done(record) => Ok(Outcome::Created(Created { record, session })),
            // Somebody else recorded that very session first.
            Written::Lost(Some(record))
                if record.state == WakeState::Awake && record.session_id == session.session_id =>
            {
                Ok(Outcome::Created(Created { record, session }))
            }
            Written::Lost(_) => Err(lost_while_creating()),
        }
    }

    /// Take the new agent's record as `creating` (a new generation). A record already there
    /// is this agent's own only when it names this owner and Tool (an earlier attempt with the
    /// same Idempotency-Key); anything else is a UserSessionId collision that cannot happen
    /// with 122 random bits, and is refused.
    async fn take(
        &self,
        lock: &AgentLock<'_, S>,
        plan: &Plan,
        key: &AgentKey,
        region: &str,
        mut seen: Option<AgentRecord>,
    ) -> Result<Held> {
        for _ in 0..self.settings.lock.max_rounds.max(1) {
            let condition = match decide(seen.as_ref(), now_ms(), Intent::Create, lock.settings()) {
                Decision::Gone => return Err(Error::AgentGone),
                Decision::Busy {
                    state,
                    retry_after_s,
                } => return Err(Error::held_by(state, retry_after_s)),
                Decision::Acquire(c) => c,
                other => {
                    return Err(Error::Internal(format!(
                        "create got a wake decision: {other:?}"
                    )))
                }
            };
            if let Some(r) = &seen {
                if !is_ours(r, plan) {
                    return Err(Error::Internal(format!(
                        "agent record {key} already exists for someone else"
                    )));
                }
            }
            let how = Acquire {
                state: WakeState::Creating,
                generation: Generation::New,
                lease: self.settings.lock.lease,
                describe: Some(Description {
                    owner: Some(plan.caller.owner.clone()),
                    owner_key: caller::UserSessionId::parse(&key.agent_id).owner_key(),
                    display_name: Some(plan.display_name.clone()),
                    created_by: Some(plan.caller.display_name.clone()),
                    retention: Some(plan.retention),
                    tool_id: Some(plan.tool_id.clone()),
                    region: Some(region.to_string()),
                    // An earlier attempt's record keeps its place in the owner's list.
                    created_at: Some(
                        seen.as_ref()
                            .and_then(|r| r.description.created_at.clone())
                            .unwrap_or_else(snapwake::ambient::now),
                    ),
                }),
                poll_until_ms: None,
            };
            match lock.acquire(key, &condition, seen.as_ref(), &how).await? {
                Acquired::Held(held) => return Ok(*held),
                Acquired::Lost(current) => seen = current,
            }
        }
        Err(Error::AgentBusy {
            detail: "too many concurrent changes to the agent; retry".into(),
            retry_after_s: 1,
        })
    }

    /// Record the agent's session and give the lock back: the agent is awake. It does not
    /// count as verified: the first resume asks AgentKit once.
    async fn record_created(
        &self,
        lock: &AgentLock<'_, S>,
        mut held: Held,
        session: Session,
        region: &str,
    ) -> Result<Outcome> {
        let mut changes = created_changes(&session, region);
        changes.announce = Some(snapwake::invocation::announcement(
            snapwake::domain::Announce::Created,
        ));
        // Created is used: idle an idle time from now (docs/idle.md).
        changes.idle_at_ms = Some(self.settings.idle.idle_at(&held.record, now_ms()));
        match lock.release(&mut held, WakeState::Awake, changes).await? {
            Written::Done(record) => Ok(Outcome::Created(Created { record, session })),
            // Our lease ran out and somebody else (a delete) took the agent over.
            Written::Lost(_) => Err(lost_while_creating()),
        }
    }

    /// Give back a record whose agent certainly has no session, expired at once so it reads as
    /// absent instead of showing an agent that never started. Best effort.
    async fn retire(&self, lock: &AgentLock<'_, S>, held: &mut Held) {
        let changes = Changes {
            expires_at: Some(Some(now_s() - 1)),
            create_sent_at_ms: Some(None),
            ..Changes::default()
        };
        if let Err(e) = lock.release(held, WakeState::Asleep, changes).await {
            tracing::warn!(agent = %held.key, error = %e, "could not retire the record of a failed create");
        }
    }
}

/// Whether an existing record is this create's own agent: it names this owner and Tool (an
/// earlier attempt with the same Idempotency-Key). Anything else is a UserSessionId collision
/// that cannot happen with 122 random bits, and is refused.
fn is_ours(record: &AgentRecord, plan: &Plan) -> bool {
    record.description.owner.as_deref() == Some(plan.caller.owner.as_str())
        && record.description.tool_id.as_deref() == Some(plan.tool_id.as_str())
}

/// What recording the agent's session writes: the session, its expiry, the region that
/// answered; the create is settled.
fn created_changes(session: &Session, region: &str) -> Changes {
    Changes {
        session_id: Some(session.session_id.clone()),
        session_expire_at: Some(session.expire_at.clone()),
        session_created_at: Some(session.created_at.clone()),
        create_sent_at_ms: Some(None),
        expires_at: Some(None),
        describe: Some(Description {
            region: Some(region.to_string()),
            ..Description::default()
        }),
        ..Changes::default()
    }
}

fn lost_while_creating() -> Error {
    Error::AgentBusy {
        detail: "the agent changed while it was being created; retry".into(),
        retry_after_s: 1,
    }
}
