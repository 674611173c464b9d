//! One agent created under its lock: the record is taken as `creating` before AgentKit is
//! asked for anything (so a crash never leaves a session snapwake has no record of, and a
//! delete racing the create is fenced like one racing a wake), the session recorded (fenced)
//! once it exists, and the record retired when it certainly does not.

use snapwake::agentkit::types::Session;
use snapwake::agentkit::AgentKit;
use snapwake::deadline::Deadline;
use snapwake::domain::{AgentKey, AgentRecord, Description, WakeState};
use snapwake::error::{Error, Result};
use snapwake::identity::usid;
use snapwake::lock::{
    decide, Acquire, Acquired, AgentLock, Decision, Generation, Held, Intent, Written,
};
use snapwake::store::{AgentStore, Changes};
use snapwake::timestamp::{now_ms, now_s};

use crate::plan::Plan;
use crate::session::Started;
use crate::Create;

/// An agent with its session.
pub(crate) struct Created {
    pub record: AgentRecord,
    pub session: Session,
}

impl<S: AgentStore, K: AgentKit> Create<S, K> {
    /// Create agent `agent_id` for `plan` under the agent's lock: take its record as
    /// `creating`, then CreateSession, then record the session (fenced). With `takeover`, an
    /// earlier attempt may have created it already: its record is taken over and an active
    /// session adopted; a tombstone (the agent was deleted meanwhile) is 410, never a second
    /// life.
    pub(crate) async fn create_agent(
        &self,
        plan: &Plan,
        agent_id: &str,
        takeover: bool,
        deadline: Deadline,
    ) -> Result<Created> {
        let key = AgentKey::new(plan.kind, agent_id);
        let lock = AgentLock::new(&self.store, &self.settings.lock, deadline);
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
        let mut held = self.take(&lock, plan, &key, &first_region, seen).await?;

        if takeover || held.before.is_some() {
            if let Some((session, region)) = self
                .find_session(plan, agent_id, &plan.regions, deadline)
                .await?
            {
                tracing::info!(agent = %key, "adopted the session of an earlier attempt");
                return self.record_created(&lock, held, session, &region).await;
            }
        }
        if deadline.remaining() < self.agentkit.request_timeout() {
            self.retire(&lock, &mut held).await;
            return Err(Error::Deferred {
                detail: "not enough time left in this request to create the agent safely; retry"
                    .into(),
                retry_after_s: 1,
            });
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
                let ours = r.description.owner.as_deref() == Some(plan.caller.owner.as_str())
                    && r.description.tool_id.as_deref() == Some(plan.tool_id.as_str());
                if !ours {
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
                    owner_key: usid::UserSessionId::parse(&key.agent_id).owner_key(),
                    display_name: Some(plan.display_name.clone()),
                    created_by: Some(plan.caller.display_name.clone()),
                    retention: Some(plan.retention),
                    tool_id: Some(plan.tool_id.clone()),
                    region: Some(region.to_string()),
                    // An earlier attempt's record keeps its place in the owner's list.
                    created_at: Some(
                        seen.as_ref()
                            .and_then(|r| r.description.created_at.clone())
                            .unwrap_or_else(snapwake::timestamp::now),
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
    ) -> Result<Created> {
        let changes = Changes {
            session_id: Some(session.session_id.clone()),
            session_expire_at: Some(session.expire_at.clone()),
            describe: Some(Description {
                region: Some(region.to_string()),
                ..Description::default()
            }),
            ..Changes::default()
        };
        match lock.release(&mut held, WakeState::Awake, changes).await? {
            Written::Done(record) => Ok(Created { record, session }),
            // Our lease ran out and somebody else (a delete) took the agent over.
            Written::Lost(_) => Err(Error::AgentBusy {
                detail: "the agent changed while it was being created; retry".into(),
                retry_after_s: 1,
            }),
        }
    }

    /// Give back a record whose agent certainly has no session, expired at once so it reads as
    /// absent instead of showing an agent that never started. Best effort.
    async fn retire(&self, lock: &AgentLock<'_, S>, held: &mut Held) {
        let changes = Changes {
            expires_at: Some(Some(now_s() - 1)),
            ..Changes::default()
        };
        if let Err(e) = lock.release(held, WakeState::Asleep, changes).await {
            tracing::warn!(agent = %held.key, error = %e, "could not retire the record of a failed create");
        }
    }
}
