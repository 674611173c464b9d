//! Idle sleep's routes (docs/idle.md): what a Studio reports, and what an owner sets.
//!
//! - `POST /v1/agents/{kind}/{agent_id}/activity`: the agent is in use (its person talked to
//!   it, or it is at work on a task). 204. Coalesced: the record is written only when that
//!   moves its idle time by a minute or more, so a Studio may report every message. 422
//!   `NOT_AWAKE` for an agent asleep (wake it instead), 409 while a sleep or a delete holds it;
//!   a wake in flight answers 204 (the wake itself counts as use).
//! - `GET|PUT /v1/agents/{kind}/{agent_id}/idle` `{"minutes": n | null}`: the agent's idle
//!   time (0: never; null: the deployment's). 200 `{"minutes", "deployment_minutes",
//!   "effective_minutes", "idle_sleep_at"}`. A temporary agent keeps no snapshot: turning it
//!   on there is refused (422 `NOT_SLEEPABLE`; docs/idle.md says why).
//!
//! A wake of an agent already awake and a keepalive count as activity too ([`Resume::touch`]).
//! Reading a list or a view does not.

use lambda_http::Request;
use serde::{Deserialize, Serialize};
use snapwake::agentkit::AgentKit;
use snapwake::ambient::{format_ms, now_ms};
use snapwake::domain::idle::MOST_MINUTES;
use snapwake::domain::{AgentKey, AgentRecord, Retention, WakeState};
use snapwake::error::{Error, Result};
use snapwake::http::edge;
use snapwake::store::update::{update, Attempt, Step, Updated};
use snapwake::store::{AgentStore, Changes, Condition, StoreError, Within};

use crate::Resume;
use crate::{Named, Reply};

/// Rounds of read-and-write against other writers of the record before giving up (409).
const ROUNDS: u32 = 3;

/// `PUT …/idle`: the owner's idle time; `null` gives the agent the deployment's.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct IdleBody {
    /// `None`: not sent (it is required: 400); `Some(None)`: null.
    #[serde(default, deserialize_with = "whole_minutes")]
    minutes: Option<Option<u32>>,
}

/// `POST …/activity` takes no fields; anything sent is refused (400) rather than ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ActivityBody {}

/// A whole number of minutes or null. JSON has one number type, so `30.0` is `30`; a fraction,
/// a negative number or one past `u32` is refused (400).
fn whole_minutes<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Option<u32>>, D::Error> {
    use serde::de::Error as _;
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else {
        return Ok(Some(None));
    };
    let whole = n.as_u64().or_else(|| {
        n.as_f64()
            .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f <= f64::from(u32::MAX))
            .map(|f| f as u64)
    });
    match whole.and_then(|w| u32::try_from(w).ok()) {
        Some(minutes) => Ok(Some(Some(minutes))),
        None => Err(D::Error::custom(format!(
            "minutes must be a whole number of minutes or null, not {n}"
        ))),
    }
}

/// What `GET|PUT …/idle` answers.
#[derive(Debug, Serialize)]
struct IdleSetting {
    /// The owner's (0: never); `null`: none set, the deployment's applies.
    minutes: Option<u32>,
    /// The deployment's (0: off).
    deployment_minutes: u32,
    /// The one that applies (0: never put to sleep for idleness).
    effective_minutes: u32,
    /// While awake: when it goes to sleep unless used before.
    idle_sleep_at: Option<String>,
}

impl<S: AgentStore, K: AgentKit> Resume<S, K> {
    /// Activity on `record`, an agent in use now: its idle time moved on, written only when it
    /// moves by a minute or more (so most calls write nothing and read nothing more); a write
    /// lost to another writer is decided again from what it left (`store::update`). Nothing
    /// when idle sleep is off for it. The record as written, if it was.
    pub(crate) async fn touch(
        &self,
        store: Within<'_, S>,
        record: AgentRecord,
    ) -> Result<Option<AgentRecord>> {
        if self.wake.idle.touched(&record, now_ms()).is_none() {
            return Ok(None);
        }
        let key = &record.key;
        self.write_idle(store, key, |r| {
            let at = self.wake.idle.touched(r, now_ms())?;
            Some(Changes {
                idle_at_ms: Some(Some(at)),
                ..Changes::default()
            })
        })
        .await
    }

    /// Write what `change` makes of `key`'s record, as read, under its version; again from what
    /// another writer left, a few rounds. `None` from `change`: nothing to write.
    async fn write_idle(
        &self,
        store: Within<'_, S>,
        key: &AgentKey,
        change: impl Fn(&AgentRecord) -> Option<Changes>,
    ) -> Result<Option<AgentRecord>> {
        let updated = update(
            ROUNDS,
            || store.get(key),
            |current: Option<AgentRecord>| match current {
                Some(r) if r.state == WakeState::Gone => Step::Stop(Err(Error::AgentGone)),
                Some(r) => match change(&r) {
                    Some(changes) => Step::Write((r.version, changes)),
                    None => Step::Stop(Ok(None)),
                },
                None => Step::Stop(Err(Error::AgentNotFound)),
            },
            |(version, changes): (u64, Changes)| async move {
                match store
                    .update(key, &Condition::Version(version), &changes)
                    .await
                {
                    Ok(written) => Ok(Attempt::Written(written)),
                    Err(StoreError::ConditionFailed { current }) => {
                        Ok(Attempt::Lost(Some(current.map(|r| *r))))
                    }
                    Err(e) => Err(e),
                }
            },
        )
        .await?;
        match updated {
            Updated::Written(written) => Ok(Some(written)),
            Updated::Stopped(answer) => answer,
            // Written by others every round: busy for now.
            Updated::KeptChanging => Err(Error::held_by(WakeState::Awake, 1)),
        }
    }

    /// [`Self::touch`] for a route whose answer stands whether or not the use was recorded:
    /// the record as written, else as it was.
    pub(crate) async fn used(&self, store: Within<'_, S>, record: AgentRecord) -> AgentRecord {
        match self.touch(store, record.clone()).await {
            Ok(written) => written.unwrap_or(record),
            Err(e) => {
                tracing::info!(agent = %record.key, error = %e, "activity not recorded");
                record
            }
        }
    }

    pub(crate) async fn activity(&self, request: &Request, named: Named) -> Reply {
        let _: Option<ActivityBody> = edge::optional_json(request)?;
        let addressed = self.address(request, named).await?;
        // No record yet (an agent snapwake has not woken or indexed): nothing to move; its
        // first wake sets it idle.
        let Some(record) = addressed.record else {
            return Ok(edge::no_content());
        };
        match record.state {
            WakeState::Awake => {
                self.touch(addressed.store, record).await?;
            }
            // Its wake sets it idle from when it is awake.
            WakeState::Waking | WakeState::Creating => {}
            WakeState::Gone => return Err(Error::AgentGone),
            WakeState::Asleep | WakeState::Failed => {
                return Err(Error::NotAwake(
                    "the agent is asleep: wake it (resume) first".into(),
                ))
            }
            WakeState::Sleeping | WakeState::Deleting => {
                let now = now_ms();
                return Err(Error::held_by(
                    record.state,
                    self.wake.lock.retry_after_s(&record, now),
                ));
            }
        }
        Ok(edge::no_content())
    }

    pub(crate) async fn get_idle(&self, request: &Request, named: Named) -> Reply {
        let addressed = self.address(request, named).await?;
        let record = addressed.record.ok_or(Error::AgentNotFound)?;
        if record.state == WakeState::Gone {
            return Err(Error::AgentGone);
        }
        Ok(edge::json(200, &self.idle_setting(&record)))
    }

    pub(crate) async fn put_idle(&self, request: &Request, named: Named) -> Reply {
        let body: IdleBody = edge::json_body(request)?;
        let Some(minutes) = body.minutes else {
            return Err(Error::bad_request(
                "minutes is required: a whole number of minutes, 0 for never, or null for the \
                 deployment's",
            ));
        };
        if minutes.is_some_and(|m| m > MOST_MINUTES) {
            return Err(Error::unprocessable(format!(
                "minutes must be between 0 (never) and {MOST_MINUTES}, or null (the deployment's)"
            )));
        }
        let addressed = self.address(request, named).await?;
        let record = addressed.record.ok_or(Error::AgentNotFound)?;
        let temporary = record.description.retention == Some(Retention::Temporary)
            || addressed
                .home
                .as_ref()
                .is_some_and(|h| h.retention == Retention::Temporary);
        if temporary && minutes.is_some_and(|m| m > 0) {
            return Err(Error::NotSleepable(
                "a temporary agent keeps no snapshot: idle sleep would end its session and lose \
                 its work, so it stays off"
                    .into(),
            ));
        }
        let written = self
            .write_idle(addressed.store, &record.key, |r| {
                let mut changed = r.clone();
                changed.idle_minutes = minutes;
                // An awake agent's idle time follows the new setting, counted from now:
                // setting it is its owner's use.
                let idle_at = (r.state == WakeState::Awake)
                    .then(|| self.wake.idle.idle_at(&changed, now_ms()));
                Some(Changes {
                    idle_minutes: Some(minutes),
                    idle_at_ms: idle_at,
                    ..Changes::default()
                })
            })
            .await?
            .unwrap_or(record);
        Ok(edge::json(200, &self.idle_setting(&written)))
    }

    fn idle_setting(&self, record: &AgentRecord) -> IdleSetting {
        let policy = self.wake.idle;
        IdleSetting {
            minutes: record.idle_minutes,
            deployment_minutes: policy.default_minutes,
            effective_minutes: policy.minutes(record.idle_minutes, record.description.retention),
            idle_sleep_at: record
                .idle_at_ms
                .filter(|_| record.state == WakeState::Awake)
                .map(format_ms),
        }
    }
}
