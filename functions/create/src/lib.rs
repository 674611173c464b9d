//! `POST /v1/agents`: create an agent.
//!
//! Body `{"kind", "display_name", "retention"?}`; answers 201 with the agent view, a
//! `Location: /v1/agents/{kind}/{agent_id}` header and the record's `ETag`.
//!
//! # Steps
//!
//! 1. Authenticate (401), read and check the body: malformed JSON, a field of the wrong type,
//!    an unknown field, an unknown kind or retention → 400; a display name that breaks the
//!    rules (trimmed, 1–40 characters, no control characters) → 422; over 16 KiB → 413.
//!    Unknown fields are refused rather than ignored, so a misspelt `retension` cannot quietly
//!    create an agent with the default retention.
//! 2. Resolve the Tool from the registry: the asked retention, else the kind's default
//!    (recoverable when a recoverable Tool is deployed, else temporary). A retention whose Tool
//!    is not deployed → 503 `NOT_CONFIGURED`. Legacy snapshot Tools never receive new agents.
//! 3. Mint the UserSessionId `studio-<safe_owner>-<32 hex>` (identity.md); it is the agent id.
//! 4. Take the agent's lock first ([`snapwake::lock`], docs/wake-protocol.md): the record is
//!    written as `creating` (condition: absent; owner, owner key, display name, creator,
//!    retention, Tool, region, `created_at`), so a crash after CreateSession never leaves an
//!    agent snapwake has no record of, and a delete racing the create is fenced (409) exactly
//!    like one racing a wake. A tombstone found there (a takeover of an agent deleted
//!    meanwhile) → 410 `AGENT_GONE`: nothing is created.
//! 5. `CreateSession` in the registry's region (never with less than one AgentKit request
//!    timeout of budget left: 503 `TRY_AGAIN` instead); only `InvalidResource.NotFound` (the
//!    Tool is not in that region) moves on to the next configured region.
//! 6. `ErrCreateSessionFail`, or an ambiguous failure after the request may have reached
//!    AgentKit (transport error after sending, any 5xx, an unreadable answer) → reconcile:
//!    `ListSessions` filtered by the UserSessionId; an active session is the agent's (201);
//!    none → 502 retryable. A throttle → 429 with `Retry-After` (AgentKit refused it, so
//!    nothing was created). When no session exists, the record is retired (expired at once,
//!    so it reads as absent) rather than left behind as an "unavailable" ghost.
//! 7. Record the session (fenced: session id, its expiry, the region that answered) and give
//!    the lock back as `awake`; answer with the view of the new agent (its session
//!    `starting`, or `awake` once Ready), read back with one GetSession; if that read fails,
//!    the session is shown as `Creating`, the first status of every new session.
//!
//! # Idempotency-Key
//!
//! Optional header, 1–200 characters of `[A-Za-z0-9_.:-]` (else 400), scoped to the owner and
//! kept 24 h in a store document `IDEM#<owner_key>#<key>` / `IDEM` ([`idempotency`]). Body
//! checks and Tool resolution run first and are not recorded (they answer the same way every
//! time); then:
//!
//! - put `running` (fingerprint of the resolved request, the freshly minted UserSessionId, an
//!   attempt token, the start time) with expected version 0;
//! - on a conflict, read the live document: another fingerprint → 422; `done` → replay its
//!   stored answer exactly (status, `Location`, `ETag`, body); `running` and younger than
//!   [`STALE_RUNNING`] → 409 `AGENT_BUSY` with `Retry-After` ("still in progress");
//! - `running` but older than [`STALE_RUNNING`] (its invocation died), or `failed` (a retryable
//!   failure released it) → take it over by CAS on its version, and create **with the
//!   UserSessionId stored in it**, reconciling first: an existing record is adopted, and an
//!   active session with that UserSessionId is adopted instead of calling CreateSession. So
//!   however many attempts a key sees, at most one session exists for it. Two retries taking
//!   over at once race on the CAS; the loser sees a fresh `running` and answers 409.
//! - when the create answers: a success or a 4xx → CAS the document to `done` with the
//!   answer; a 5xx, a 429 or a 409 (the agent's lock is still held by an attempt) → CAS it to
//!   `failed`, so a retry with the same key runs again.
//!   If that CAS fails (someone took over), the answer is still returned.
//!
//! An attempt never works longer than [`CreateSettings::budget`] (default [`CREATE_BUDGET`];
//! API Gateway cuts requests at 30 s), well inside [`STALE_RUNNING`] and the lock's lease: a
//! takeover only ever happens after the first attempt has stopped talking to AgentKit, so a
//! takeover's reconcile sees whatever it created.
//!
//! The fingerprint covers the retention as resolved: a retry that omits `retention` after the
//! default changed (a recoverable Tool was deployed in between) counts as another request.

pub mod idempotency;

use std::time::Duration;

use lambda_http::{Body, Request, Response};
use serde::Deserialize;
use snapwake::agentkit::types::newest_session;
use snapwake::agentkit::types::{
    CreateSession, Filter, GetSession, ListSessions, MetadataEntry, Session,
};
use snapwake::agentkit::{list_all, AgentKit};
use snapwake::deadline::Deadline;
use snapwake::domain::Description;
use snapwake::domain::{AgentKey, AgentRecord, Kind, Retention, WakeState};
use snapwake::error::{Error, Result};
use snapwake::http::edge;
use snapwake::http::request::{self as req, Route};
use snapwake::http::response;
use snapwake::identity::names::METADATA_DISPLAY_NAME_KEY;
use snapwake::identity::IdentityConfig;
use snapwake::identity::{usid, validate_display_name, Caller};
use snapwake::locate;
use snapwake::lock::{
    decide, Acquire, Acquired, AgentLock, Decision, Generation, Held, Intent, LockSettings, Written,
};
use snapwake::registry::RegistryCache;
use snapwake::store::{AgentStore, Changes, StoreError, Within};
use snapwake::timestamp::{now_ms, now_s};
use snapwake::view::{agent_view, AgentFacts, METADATA_CREATOR_KEY, METADATA_OWNER_KEY};

use idempotency::{IdemDoc, State, Stored};

pub const ROUTES: [Route; 1] = [Route {
    method: "POST",
    pattern: "/v1/agents",
}];

/// Longest time one create works by default (AgentKit calls and retries included).
pub const CREATE_BUDGET: Duration = Duration::from_secs(20);
/// By default, a `running` idempotency document older than this belongs to an invocation
/// that died.
pub const STALE_RUNNING: Duration = Duration::from_secs(60);

/// Timing of the create. `budget` must stay well below `stale_running` and the lock's lease
/// (crate docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateSettings {
    /// Longest time one create works; further cut to the Lambda's remaining time.
    pub budget: Duration,
    /// Age after which a `running` idempotency document may be taken over.
    pub stale_running: Duration,
    /// The agent's lock, held as `creating` around CreateSession (lease 30 s: the budget and a
    /// margin, below `stale_running`).
    pub lock: LockSettings,
}

impl Default for CreateSettings {
    fn default() -> Self {
        CreateSettings {
            budget: CREATE_BUDGET,
            stale_running: STALE_RUNNING,
            // Covers the whole budget, and ends well before a stale attempt may be taken over.
            lock: LockSettings::default().with_lease(Duration::from_secs(30)),
        }
    }
}
/// What a 409 for a key still in progress suggests before asking again.
const BUSY_RETRY_AFTER_S: u64 = 2;
/// Rounds of put/inspect on the idempotency document before giving up.
const IDEMPOTENCY_ROUNDS: usize = 4;
/// Pages of ListSessions read when reconciling (one agent has very few sessions).
const RECONCILE_PAGES: usize = 10;

/// The create function's context: ports and settings built once per container.
pub struct Create<S, K> {
    pub store: S,
    pub agentkit: K,
    pub registry: RegistryCache,
    pub identity: IdentityConfig,
    pub settings: CreateSettings,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    kind: String,
    display_name: String,
    #[serde(default)]
    retention: Option<String>,
}

/// A checked request: who creates what, on which Tool.
#[derive(Clone, Debug)]
struct Plan {
    caller: Caller,
    kind: Kind,
    display_name: String,
    retention: Retention,
    tool_id: String,
    /// Regions to try, the registry's first.
    regions: Vec<String>,
}

/// An agent with its session.
struct Created {
    record: AgentRecord,
    session: Session,
}

fn parse_retention(raw: &str) -> Result<Retention> {
    Retention::ALL
        .into_iter()
        .find(|r| r.as_str() == raw)
        .ok_or_else(|| {
            Error::bad_request(format!(
                "unknown retention {raw:?}: expected temporary or recoverable"
            ))
        })
}

impl<S: AgentStore, K: AgentKit> Create<S, K> {
    /// Serve one request; every failure becomes a problem+json response.
    pub async fn handle(&self, request: Request) -> Response<Body> {
        let request_id = req::request_id(&request);
        edge::answer(
            self.create(&request, request_id.as_deref()).await,
            request_id.as_deref(),
        )
    }

    async fn create(&self, request: &Request, request_id: Option<&str>) -> Result<Response<Body>> {
        req::route(&ROUTES, request.method().as_str(), req::path(request))?;
        let caller = Caller::from_request(request, &self.identity)?;
        let idempotency_key = idempotency::key(request)?;
        let body: CreateBody = req::json(request)?;
        let kind = req::parse_kind(&body.kind)?;
        let display_name = validate_display_name(&body.display_name)?;
        let asked = body.retention.as_deref().map(parse_retention).transpose()?;

        let deadline = Deadline::for_request(request, self.settings.budget);
        let registry = self
            .registry
            .get(&Within::new(&self.store, deadline))
            .await?;
        let retention = asked.unwrap_or_else(|| registry.default_retention(kind));
        let tool_id = registry
            .tool(kind, retention)
            .ok_or_else(|| {
                Error::NotConfigured(format!(
                    "no {} Tool is deployed for {kind}",
                    retention.as_str()
                ))
            })?
            .to_string();
        let plan = Plan {
            regions: locate::regions(&registry, &self.agentkit)
                .into_iter()
                .map(str::to_string)
                .collect(),
            caller,
            kind,
            display_name,
            retention,
            tool_id,
        };

        match idempotency_key {
            None => {
                let agent_id = usid::mint(&plan.caller.owner);
                let created = self.create_agent(&plan, &agent_id, false, deadline).await?;
                Ok(self.created_response(&plan, &created))
            }
            Some(key) => {
                self.create_idempotent(&plan, &key, deadline, request_id)
                    .await
            }
        }
    }

    /// The create under an `Idempotency-Key` (crate docs, "Idempotency-Key").
    async fn create_idempotent(
        &self,
        plan: &Plan,
        key: &str,
        deadline: Deadline,
        request_id: Option<&str>,
    ) -> Result<Response<Body>> {
        let pk = idempotency::pk(&plan.caller.owner, key);
        let doc_key = idempotency::document_key(&pk);
        let fingerprint = idempotency::fingerprint(plan.kind, &plan.display_name, plan.retention);
        let attempt = uuid::Uuid::new_v4().simple().to_string();
        let mut agent_id = usid::mint(&plan.caller.owner);
        let mut expected = 0;
        let mut takeover = false;

        for _ in 0..IDEMPOTENCY_ROUNDS {
            let running = IdemDoc::running(&fingerprint, &agent_id, &attempt, now_ms());
            let written = Within::new(&self.store, deadline)
                .put_document(
                    doc_key,
                    &running.to_value(),
                    expected,
                    Some(now_s() + idempotency::KEEP_S),
                )
                .await;
            let current = match written {
                Ok(doc) => {
                    return Ok(self
                        .run_recorded(
                            plan,
                            doc_key,
                            running,
                            doc.version,
                            takeover,
                            deadline,
                            request_id,
                        )
                        .await)
                }
                Err(StoreError::DocumentConflict { current }) => current,
                Err(e) => return Err(e.into()),
            };
            let Some(current) = current else {
                // The document expired between our reads: start afresh (keeping the id is
                // harmless, and reconciling is then still right).
                expected = 0;
                continue;
            };
            let stored = IdemDoc::from_value(&current.value)?;
            if stored.fingerprint != fingerprint {
                return Err(Error::unprocessable(
                    "this Idempotency-Key was used with a different request body",
                ));
            }
            if stored.attempt == attempt && stored.state == State::Running {
                // Our own write, retried by the SDK after a lost answer.
                return Ok(self
                    .run_recorded(
                        plan,
                        doc_key,
                        stored,
                        current.version,
                        takeover,
                        deadline,
                        request_id,
                    )
                    .await);
            }
            match stored.state {
                State::Done => {
                    return stored.answer().map(|a| a.to_response()).ok_or_else(|| {
                        Error::Internal("a done idempotency document has no answer".into())
                    })
                }
                State::Running
                    if now_ms().saturating_sub(stored.started_at_ms)
                        < self.settings.stale_running.as_millis() as u64 =>
                {
                    return Err(busy());
                }
                // A dead attempt, or a released one: take over its UserSessionId.
                State::Running | State::Failed => {
                    tracing::info!(user_session_id = %stored.user_session_id, state = ?stored.state, "taking over an idempotent create");
                    agent_id = stored.user_session_id;
                    expected = current.version;
                    takeover = true;
                }
            }
        }
        Err(busy())
    }

    /// Run the create whose `running` document is at `version`, then record its answer.
    #[allow(clippy::too_many_arguments)]
    async fn run_recorded(
        &self,
        plan: &Plan,
        doc_key: snapwake::store::DocumentKey<'_>,
        running: IdemDoc,
        version: u64,
        takeover: bool,
        deadline: Deadline,
        request_id: Option<&str>,
    ) -> Response<Body> {
        let outcome = self
            .create_agent(plan, &running.user_session_id, takeover, deadline)
            .await;
        let resp = match outcome {
            Ok(created) => self.created_response(plan, &created),
            Err(err) => edge::problem(&err, request_id),
        };
        let answer = Stored::capture(&resp);
        let finished = running.finished(&answer);
        // The answer is recorded even when the create used up its budget (the store's grace).
        if let Err(e) = Within::new(&self.store, deadline)
            .put_document(
                doc_key,
                &finished.to_value(),
                version,
                Some(now_s() + idempotency::KEEP_S),
            )
            .await
        {
            // The answer stands; a retry either replays it or (after a takeover) reconciles to
            // the same agent.
            tracing::warn!(error = %e, "could not record the idempotent answer");
        }
        answer.to_response()
    }

    /// Create agent `agent_id` for `plan` under the agent's lock: take its record as
    /// `creating`, then CreateSession, then record the session (fenced). With `takeover`, an
    /// earlier attempt may have created it already: its record is taken over and an active
    /// session adopted; a tombstone (the agent was deleted meanwhile) is 410, never a second
    /// life.
    async fn create_agent(
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

        let metadata = vec![
            MetadataEntry::string(METADATA_OWNER_KEY, &plan.caller.owner),
            MetadataEntry::string(METADATA_DISPLAY_NAME_KEY, &plan.display_name),
            MetadataEntry::string(METADATA_CREATOR_KEY, &plan.caller.display_name),
        ];
        let request = CreateSession::new(&plan.tool_id, agent_id, metadata);
        for region in &plan.regions {
            match self.agentkit.call(region, &request, deadline).await {
                Ok(out) => {
                    tracing::info!(agent = %key, session_id = %out.session_id, region = %region, "session created");
                    let session = self
                        .read_session(plan, agent_id, &out.session_id, region, deadline)
                        .await;
                    return self.record_created(&lock, held, session, region).await;
                }
                Err(e) if e.is_not_found() => continue,
                Err(e) if e.outcome_unknown() => {
                    tracing::warn!(agent = %key, error = %e, "CreateSession may have half-succeeded; reconciling");
                    let found = self
                        .find_session(plan, agent_id, std::slice::from_ref(region), deadline)
                        .await?;
                    return match found {
                        Some((session, region)) => {
                            tracing::info!(agent = %key, "reconciled: the session exists");
                            self.record_created(&lock, held, session, &region).await
                        }
                        // The listing is AgentKit's word that nothing was created
                        // (agentkit.md): the record goes, and a retry with the same
                        // Idempotency-Key starts afresh with the same UserSessionId.
                        None => {
                            self.retire(&lock, &mut held).await;
                            Err(e.into())
                        }
                    };
                }
                Err(e) => {
                    self.retire(&lock, &mut held).await;
                    return Err(e.into());
                }
            }
        }
        self.retire(&lock, &mut held).await;
        Err(Error::NotConfigured(format!(
            "the {} {} Tool was not found in any configured region",
            plan.kind,
            plan.retention.as_str()
        )))
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
                } => {
                    return Err(Error::AgentBusy {
                        detail: state.holder_detail().into(),
                        retry_after_s,
                    })
                }
                Decision::Acquire(c) => c,
                other => {
                    return Err(Error::Internal(format!(
                        "create got a wake decision: {other:?}"
                    )))
                }
            };
            if let Some(r) = &seen {
                let ours = r.owner.as_deref() == Some(plan.caller.owner.as_str())
                    && r.tool_id.as_deref() == Some(plan.tool_id.as_str());
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
                            .and_then(|r| r.created_at.clone())
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

    /// The newest active session of `agent_id` on the plan's Tool, trying `regions` in order
    /// (a region where the Tool does not exist is skipped).
    async fn find_session(
        &self,
        plan: &Plan,
        agent_id: &str,
        regions: &[String],
        deadline: Deadline,
    ) -> Result<Option<(Session, String)>> {
        for region in regions {
            let request = ListSessions {
                tool_id: plan.tool_id.clone(),
                filters: Some(vec![Filter::one("UserSessionId", agent_id)]),
                ..ListSessions::default()
            };
            match list_all(&self.agentkit, region, request, RECONCILE_PAGES, deadline).await {
                Ok(sessions) => {
                    // Trust but verify the service's filter.
                    let active = sessions.into_iter().filter(|s| {
                        s.is_active() && s.user_session_id.as_deref() == Some(agent_id)
                    });
                    return Ok(newest_session(active).map(|s| (s, region.clone())));
                }
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(None)
    }

    /// The new session as AgentKit describes it; if that read fails, what CreateSession said
    /// (a new session starts as `Creating`).
    async fn read_session(
        &self,
        plan: &Plan,
        agent_id: &str,
        session_id: &str,
        region: &str,
        deadline: Deadline,
    ) -> Session {
        let request = GetSession {
            tool_id: plan.tool_id.clone(),
            session_id: session_id.to_string(),
        };
        match self.agentkit.call(region, &request, deadline).await {
            Ok(session) if session.session_id.is_some() => session,
            outcome => {
                if let Err(e) = outcome {
                    tracing::warn!(session_id, error = %e, "could not read the new session");
                }
                Session {
                    session_id: Some(session_id.to_string()),
                    user_session_id: Some(agent_id.to_string()),
                    status: Some("Creating".into()),
                    ..Session::default()
                }
            }
        }
    }

    /// 201 with the view, `Location` and `ETag`.
    fn created_response(&self, plan: &Plan, created: &Created) -> Response<Body> {
        let record = &created.record;
        let view = agent_view(
            &AgentFacts {
                key: &record.key,
                record: Some(record),
                sessions: std::slice::from_ref(&created.session),
                snapshots: &[],
                retention: plan.retention,
            },
            now_ms(),
            &self.settings.lock,
        );
        let resp = response::with_etag(response::json(201, &view), record);
        response::with_location(resp, &record.key)
    }
}

fn busy() -> Error {
    Error::AgentBusy {
        detail: "a request with this Idempotency-Key is still in progress".into(),
        retry_after_s: BUSY_RETRY_AFTER_S,
    }
}
