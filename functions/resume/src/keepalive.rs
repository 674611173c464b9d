//! `POST /v1/agents/{kind}/{agent_id}/keepalive` `{"ttl_s"}`: make the awake agent's session
//! live `ttl_s` more seconds from now (60 ≤ ttl_s ≤ `SNAPWAKE_MAX_TTL_S`).
//!
//! 200 with the agent, its `session.expire_at` moved; 400 for a body that is not
//! `{"ttl_s": <whole number>}`; 422 `INVALID_REQUEST` for a `ttl_s` out of range; 404 not
//! found or not the caller's; 409 while a sleep, a wake, a create or a delete holds the agent;
//! 410 once deleted; 422 `NOT_AWAKE` when it has no live session.
//!
//! No lock is taken (docs/wake-protocol.md): a consistent read shows the agent is not held, and
//! SetSessionTtl only ever moves the expiry of a session that is alive. The record's copy of
//! the expiry follows with a compare-and-swap on the version read; if something else wrote
//! the record meanwhile, that writer's view wins and the next wake re-reads the session.

use std::time::Duration;

use lambda_http::Request;
use serde::{Deserialize, Serialize};
use snapwake::agentkit::types::{Session, SetSessionTtl, Snapshot};
use snapwake::agentkit::AgentKit;
use snapwake::ambient::now_ms;
use snapwake::domain::{AgentKey, AgentRecord, AgentView, ToolRegistry, WakeState};
use snapwake::error::{Error, Result};
use snapwake::http::edge::{self};
use snapwake::invocation::Deadline;
use snapwake::locate::questions::active_session;
use snapwake::locate::snapshots;
use snapwake::locate::Home;
use snapwake::lock::{AgentLock, Written};
use snapwake::store::{AgentStore, Changes, ScheduleStore, Within};
use snapwake::view::record_snapshots;
use snapwake::wake::MIN_TTL;

use crate::Resume;
use crate::{view, with_etag};
use crate::{Named, Reply};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeepaliveBody {
    #[serde(deserialize_with = "whole_seconds")]
    ttl_s: u64,
}

/// A whole number of seconds. JSON has one number type, so `3600.0` is `3600`; a fraction or a
/// negative number is refused (400).
fn whole_seconds<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<u64, D::Error> {
    use serde::de::Error as _;
    let n = serde_json::Number::deserialize(d)?;
    if let Some(whole) = n.as_u64() {
        return Ok(whole);
    }
    match n.as_f64() {
        // Below 2^53 every whole f64 is exact.
        Some(f) if f >= 0.0 && f.fract() == 0.0 && f < 9_007_199_254_740_992.0 => Ok(f as u64),
        _ => Err(D::Error::custom(format!(
            "ttl_s must be a whole number of seconds, not {n}"
        ))),
    }
}

/// A session kept alive: the record as it now says, the session as AgentKit answered, and
/// where the agent lives.
pub(crate) struct Kept {
    pub record: AgentRecord,
    pub session: Session,
    pub home: Home,
}

/// The answer body: the agent view plus the TTL granted.
#[derive(Serialize)]
struct KeptAlive<'a> {
    #[serde(flatten)]
    agent: &'a AgentView,
    ttl_s: u64,
}

impl<S: AgentStore + ScheduleStore, K: AgentKit> Resume<S, K> {
    pub(crate) async fn keepalive(&self, request: &Request, named: Named) -> Reply {
        let body: KeepaliveBody = edge::json_body(request)?;
        let ttl = Duration::from_secs(body.ttl_s);
        if ttl < MIN_TTL || ttl > self.wake.max_ttl {
            return Err(Error::unprocessable(format!(
                "ttl_s must be between {} and {} seconds",
                MIN_TTL.as_secs(),
                self.wake.max_ttl.as_secs()
            )));
        }
        let (addressed, _) = self.admitted(request, named).await?;
        let key = &addressed.key;
        let store = addressed.store;
        let deadline = addressed.budget.work;
        let record = addressed.record.clone();

        // Not while something holds the agent (a sleep is about to end the session; a delete
        // to delete it).
        if let Some(r) = &record {
            let now = now_ms();
            if r.state == WakeState::Gone {
                return Err(Error::AgentGone);
            }
            if self.wake.lock.is_held(r, now) {
                return Err(Error::held_by(
                    r.state,
                    self.wake.lock.retry_after_s(r, now),
                ));
            }
        }

        // Inside a scheduled day, a person's keepalive may end the session before the day's
        // sleep: the day is looked at again in time (docs/schedules.md), and the look is moved
        // before the session's end is, or nothing is sent.
        let expires = now_ms() + body.ttl_s * 1000;
        self.day_kept_until(store, key, expires).await?;
        let kept = self
            .extend(
                store,
                &addressed.registry,
                key,
                record,
                addressed.home.as_ref(),
                body.ttl_s,
                deadline,
            )
            .await?;
        let (mut record, live, home) = (kept.record, kept.session, kept.home);
        // A person keeping it alive is using it (docs/idle.md).
        record = self.used(store, record).await;
        // An agent without a record yet is shown as a read would show it: its Tool's
        // retention, its snapshots as listed.
        record.description.retention = record.description.retention.or(Some(home.retention));
        let snapshots = self.snapshots_for(&record, Some(&home), deadline).await;
        let view = view(
            key,
            &record,
            std::slice::from_ref(&live),
            &snapshots,
            &self.wake,
        );
        Ok(with_etag(
            200,
            &KeptAlive {
                agent: &view,
                ttl_s: body.ttl_s,
            },
            &record,
        ))
    }

    /// Make `key`'s live session last `ttl_s` more seconds from now (SetSessionTtl), and the
    /// record's copy of its expiry follow: the keepalive route's work, and a scheduled day's
    /// (`tick/keep.rs`). The caller has checked that nothing holds the agent.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn extend(
        &self,
        store: Within<'_, S>,
        registry: &ToolRegistry,
        key: &AgentKey,
        record: Option<AgentRecord>,
        home: Option<&Home>,
        ttl_s: u64,
        deadline: Deadline,
    ) -> Result<Kept> {
        let home = snapwake::locate::home_or_locate(
            &self.agentkit,
            registry,
            key,
            record.as_ref(),
            home,
            deadline,
        )
        .await?
        .ok_or(Error::AgentNotFound)?
        .home;
        let recorded = record.as_ref().and_then(|r| r.session_id.as_deref());
        let live = active_session(&self.agentkit, &home, key, recorded, deadline).await?;
        let Some(mut live) = live else {
            return Err(Error::NotAwake(
                "the agent has no live session to keep alive; resume it first".into(),
            ));
        };
        let session_id = live.session_id.clone().unwrap_or_default();
        let set = SetSessionTtl::seconds(&home.tool_id, &session_id, ttl_s);
        let answer = match self.agentkit.call(&home.region, &set, deadline).await {
            Ok(a) => a,
            // The session ended between the look and the call.
            Err(e) if e.is_not_found() => {
                return Err(Error::NotAwake(
                    "the agent's session ended; resume it first".into(),
                ))
            }
            Err(e) => return Err(e.into()),
        };
        live.expire_at = answer.expire_at.clone().or(live.expire_at);
        tracing::info!(agent = %key, ttl_s, "kept alive");
        let record = match record {
            Some(r) => self.remember_expiry(store, r, &live).await,
            None => AgentRecord::absent(key.clone()),
        };
        Ok(Kept {
            record,
            session: live,
            home,
        })
    }

    /// The record's copy of the session and its expiry (a CAS on the version read; losing it
    /// to another writer is fine, see the module docs).
    async fn remember_expiry(
        &self,
        store: Within<'_, S>,
        record: AgentRecord,
        live: &Session,
    ) -> AgentRecord {
        if record.state != WakeState::Awake || record.session_id != live.session_id {
            return record;
        }
        let lock = AgentLock::new(store, &self.wake.lock);
        let changes = Changes {
            session_expire_at: Some(live.expire_at.clone()),
            ..Changes::default()
        };
        match lock.write_seen(&record, changes).await {
            Ok(Written::Done(r)) => r,
            Ok(Written::Lost(_)) => record,
            Err(e) => {
                tracing::warn!(agent = %record.key, error = %e, "could not record the new expiry");
                record
            }
        }
    }
}

impl<S: AgentStore, K: AgentKit> Resume<S, K> {
    /// The agent's snapshots for a single caller's answer (a keepalive): the record's
    /// summaries (kept current by every wake, sleep and sweep), or when it has none yet, a
    /// listing of the agent's Tool. Never for the answers of a storm's joiners.
    pub(crate) async fn snapshots_for(
        &self,
        record: &AgentRecord,
        home: Option<&Home>,
        deadline: Deadline,
    ) -> Vec<Snapshot> {
        if !record.snapshots.is_empty() {
            return record_snapshots(record);
        }
        let Some(home) = home else {
            return Vec::new();
        };
        snapshots(&self.agentkit, home, &record.key, deadline)
            .await
            .unwrap_or_else(|e| {
                tracing::info!(agent = %record.key, error = %e, "could not list the agent's snapshots for the answer");
                Vec::new()
            })
    }
}
