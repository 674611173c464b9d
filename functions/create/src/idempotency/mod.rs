//! Optional header, 1–200 characters of `[A-Za-z0-9_.:-]` (else 400), scoped to the owner and
//! kept 24 h in a store document `IDEM#<owner_key>#<key>` / `IDEM` ([`document`]). Body
//! checks and Tool resolution run first and are not recorded (they answer the same way every
//! time); then:
//!
//! - put `running` (fingerprint of the resolved request, the freshly minted UserSessionId, an
//!   attempt token, the start time) with expected version 0. A put whose answer was lost
//!   (`Unavailable`) is settled by a consistent read: our attempt token there → it landed, go
//!   on; the document as it was → it did not, put again; the read failing too → 503
//!   `STORE_UNAVAILABLE` (retryable), with the document possibly ours and `running`;
//! - on a conflict, read the live document: another fingerprint → 422; `done` → replay its
//!   stored answer exactly (status, `Location`, `ETag`, body); `running`, younger than
//!   [`STALE_RUNNING`], and its agent record exists → 409 `AGENT_BUSY` with `Retry-After`
//!   ("still in progress");
//! - `running`, young, but **no agent record** (consistent read) → its attempt never got past
//!   its first step (typically: its own document write answered `Unavailable` and it gave up
//!   with a 503), or is just about to take the agent's lock: take the document over at once,
//!   as below, rather than answering 409 for a minute. It is safe because the agent's lock,
//!   not this document, guards CreateSession: if the first attempt is in fact alive, whichever
//!   of the two takes the lock second gets 409, and an unsettled CreateSession is never
//!   repeated (crate::agent);
//! - `running` but older than [`STALE_RUNNING`] (its invocation died), or `failed` (a retryable
//!   failure released it) → take it over by CAS on its version, and create **with the
//!   UserSessionId stored in it**, reconciling first: an existing record is adopted, and an
//!   active session with that UserSessionId is adopted instead of calling CreateSession. So
//!   however many attempts a key sees, at most one session exists for it. Two retries taking
//!   over at once race on the CAS; the loser sees a fresh `running` and answers 409.
//! - when the create answers: a success or a 4xx → CAS the document to `done` with the
//!   answer; a 5xx, a 429, a 409 (the agent's lock is still held by an attempt) or a 202 (its
//!   CreateSession is unsettled) → CAS it to `failed`, so a retry with the same key runs
//!   again (and, inside the unsettled window, only lists: crate::agent).
//!   If that CAS fails (someone took over), the answer is still returned.
//!
//! An attempt never works longer than [`CreateSettings::budget`] (default [`CREATE_BUDGET`];
//! API Gateway cuts requests at 30 s), well inside [`STALE_RUNNING`] and the lock's lease: a
//! takeover only ever happens after the first attempt has stopped talking to AgentKit, so a
//! takeover's reconcile sees whatever it created.
//!
//! The fingerprint covers the retention as resolved: a retry that omits `retention` after the
//! default changed (a recoverable Tool was deployed in between) counts as another request.

mod document;

pub(crate) use document::key;
use document::{IdemDoc, State, Stored};

use lambda_http::{Body, Response};
use snapwake::agentkit::AgentKit;
use snapwake::ambient::{now_ms, now_s};
use snapwake::domain::AgentKey;
use snapwake::error::{Error, Result};
use snapwake::http::edge;
use snapwake::identity::caller;
use snapwake::invocation::Deadline;
use snapwake::store::{AgentStore, DocumentKey, StoreError, Within};

use crate::plan::Plan;
use crate::Create;

/// What a 409 for a key still in progress suggests before asking again.
const BUSY_RETRY_AFTER_S: u64 = 2;
/// Rounds of put/inspect on the idempotency document before giving up.
const IDEMPOTENCY_ROUNDS: usize = 4;

/// The attempt that owns a key: its `running` document at `version`.
struct Attempt<'k> {
    doc_key: DocumentKey<'k>,
    running: IdemDoc,
    version: u64,
    /// Whether it took over an earlier attempt (which may have created the agent already).
    takeover: bool,
}

impl<S: AgentStore, K: AgentKit> Create<S, K> {
    /// The create under an `Idempotency-Key` (module docs).
    pub(crate) async fn create_idempotent(
        &self,
        plan: &Plan,
        key: &str,
        deadline: Deadline,
        request_id: Option<&str>,
    ) -> Result<Response<Body>> {
        let pk = document::pk(&plan.caller.owner, key);
        let doc_key = document::document_key(&pk);
        let fingerprint = document::fingerprint(plan.kind, &plan.display_name, plan.retention);
        let attempt = snapwake::ambient::fresh_hex();
        let mut agent_id = caller::mint(&plan.caller.owner);
        let mut expected = 0;
        let mut takeover = false;

        for _ in 0..IDEMPOTENCY_ROUNDS {
            let running = IdemDoc::running(&fingerprint, &agent_id, &attempt, now_ms());
            let written = Within::new(&self.store, deadline)
                .put_document(
                    doc_key,
                    &running.to_value(),
                    expected,
                    Some(now_s() + document::KEEP_S),
                )
                .await;
            let current = match written {
                Ok(doc) => {
                    let attempt = Attempt {
                        doc_key,
                        running,
                        version: doc.version,
                        takeover,
                    };
                    return Ok(self.run_recorded(plan, attempt, deadline, request_id).await);
                }
                Err(StoreError::DocumentConflict { current }) => current,
                // The write may have landed with its answer lost: the document decides. Ours
                // (our attempt token) → carry on; unchanged → write again; unreadable too →
                // 503, and a retry recognises a document whose owner never got further.
                Err(StoreError::Unavailable(e)) => {
                    tracing::warn!(error = %e, "the idempotency write was ambiguous; re-reading");
                    let doc = Within::new(&self.store, deadline)
                        .get_document(doc_key)
                        .await?;
                    match doc {
                        Some(doc) if doc.version != expected => Some(Box::new(doc)),
                        // Our write did not land: the document is as we saw it (or absent).
                        _ => continue,
                    }
                }
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
                let attempt = Attempt {
                    doc_key,
                    running: stored,
                    version: current.version,
                    takeover,
                };
                return Ok(self.run_recorded(plan, attempt, deadline, request_id).await);
            }
            match stored.state {
                State::Done => {
                    return stored.answer().map(|a| a.to_response()).ok_or_else(|| {
                        Error::Internal("a done idempotency document has no answer".into())
                    })
                }
                State::Running
                    if now_ms().saturating_sub(stored.started_at_ms)
                        < self.settings.stale_running.as_millis() as u64
                        && self.got_past_the_document(plan, &stored, deadline).await? =>
                {
                    return Err(busy());
                }
                // A dead attempt, one that never got past its document, or a released one:
                // take over its UserSessionId.
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

    /// Whether the attempt of a young `running` document got past writing it: its agent record
    /// exists (consistent read). Taking the agent's lock is an attempt's second step, so with
    /// no record it either gave up after its first write (the store failed it: it answered
    /// 503) or is about to take the lock — and then the lock decides: whichever of the two
    /// takes it second is turned away (409), and neither sends CreateSession beside the other.
    async fn got_past_the_document(
        &self,
        plan: &Plan,
        stored: &IdemDoc,
        deadline: Deadline,
    ) -> Result<bool> {
        let key = AgentKey::new(plan.kind, &stored.user_session_id);
        let record = Within::new(&self.store, deadline).get(&key).await?;
        Ok(record.is_some())
    }

    /// Run the create whose `running` document is at `version`, then record its answer.
    async fn run_recorded(
        &self,
        plan: &Plan,
        attempt: Attempt<'_>,
        deadline: Deadline,
        request_id: Option<&str>,
    ) -> Response<Body> {
        let Attempt {
            doc_key,
            running,
            version,
            takeover,
        } = attempt;
        let outcome = self
            .create_agent(plan, &running.user_session_id, takeover, deadline)
            .await;
        let resp = match outcome {
            Ok(outcome) => self.answer(plan, &outcome),
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
                Some(now_s() + document::KEEP_S),
            )
            .await
        {
            // The answer stands; a retry either replays it or (after a takeover) reconciles to
            // the same agent.
            tracing::warn!(error = %e, "could not record the idempotent answer");
        }
        answer.to_response()
    }
}

fn busy() -> Error {
    Error::AgentBusy {
        detail: "a request with this Idempotency-Key is still in progress".into(),
        retry_after_s: BUSY_RETRY_AFTER_S,
    }
}
