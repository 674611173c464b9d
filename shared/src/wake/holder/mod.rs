//! The winner's path (docs/wake-protocol.md, "A wake, step by step"), numbered as there. Every step
//! after the acquire is a fenced write, so a holder stopped anywhere leaves a record the next
//! caller finishes without a second Resume. Steps 2 and 4 are in `before_resume.rs`.

mod before_resume;

use std::ops::ControlFlow;

use std::time::Duration;

use crate::agentkit::types::metadata_value;
use crate::agentkit::types::{ResumeSessionFromSnapshot, Session, Snapshot};
use crate::agentkit::AgentKit;
use crate::domain::failure::{recorded_code, SESSION_STUCK};
use crate::domain::{AgentRecord, Description};
use crate::domain::{Retention, SessionPhase, WakeState};
use crate::error::Error;
use crate::identity::names::METADATA_DISPLAY_NAME_KEY;
use crate::locate::Home;
use crate::locate::{own_snapshots, session};
use crate::lock::agent::{Polled, Settler};
use crate::lock::{Held, Written};
use crate::store::{AgentStore, Changes};
use crate::timestamp::now_ms;
use crate::view::METADATA_CREATOR_KEY;

use super::{failed, WakeOutcome, Waking};

use before_resume::{asleep_at, nothing_woken, snapshot_metadata, Picked};

/// What the holder knows when it starts polling a recorded session.
pub(super) struct Recorded {
    pub session_id: String,
    pub snapshot_id: Option<String>,
    /// As last seen (an adopted session), so the first poll is not repeated.
    pub seen: Option<Session>,
    /// This wake started it (or a concurrent, earlier holder of this wake did).
    pub resumed: bool,
}

impl<S: AgentStore, K: AgentKit> Waking<'_, '_, S, K> {
    /// Hold the agent through its wake. `session_ended`: the previous session is known ended.
    pub(super) async fn hold(
        &self,
        mut held: Held,
        session_ended: bool,
    ) -> Result<WakeOutcome, Error> {
        let deadline = self.driver.deadline();
        let key = &self.target.key;
        let agents = self.agents;

        // 1. Where the agent lives.
        let (home, mut listed) = match self.driver.locate(agents.agentkit, &mut held).await {
            Ok(Some(w)) => (w.home, w.snapshots),
            Ok(None) => return Err(Error::AgentNotFound),
            Err(e) => return Err(self.fail(&mut held, e, None).await),
        };

        // 2. Reconcile before resuming.
        let before = held.before.clone();
        let previous = before
            .as_ref()
            .filter(|b| {
                !session_ended && b.description.tool_id.as_deref() == Some(home.tool_id.as_str())
            })
            .and_then(|b| b.session_id.clone());
        let mut adopted = None;
        if let Some(previous) = previous {
            match session(agents.agentkit, &home, &previous, deadline).await {
                Ok(Some(s)) => match s.phase() {
                    SessionPhase::Ended => {}
                    SessionPhase::Unknown => {
                        let err = Error::unknown_status("session", s.status.as_deref());
                        return Err(self.fail(&mut held, err, Some(&previous)).await);
                    }
                    SessionPhase::Starting if was_stuck(before.as_ref()) => {
                        // Stuck: end it if a wake said so already, else say so.
                        let ended = if before.as_ref().is_some_and(said_stuck) {
                            self.end_stuck(&home, &previous, deadline).await
                        } else {
                            Err(Error::SessionStuck(format!(
                                "session {previous} was still starting after the readiness timeout"
                            )))
                        };
                        if let Err(e) = ended {
                            return Err(self.fail(&mut held, e, Some(&previous)).await);
                        }
                    }
                    SessionPhase::Starting | SessionPhase::Usable => adopted = Some(s),
                },
                Ok(None) => {}
                Err(e) => return self.interrupted(held, e.into()).await,
            }
        }
        if adopted.is_none() {
            let metadata = snapshot_metadata(
                listed.as_deref().unwrap_or_default(),
                before.as_ref().and_then(|b| b.snapshot_id.as_deref()),
            );
            let sent = held.record.resume_sent_at_ms;
            adopted = match self.find_started(&home, sent, &metadata, deadline).await {
                Ok(found) => found,
                Err(e) => return self.interrupted(held, e).await,
            };
        }
        if let Some(s) = adopted {
            // Started by a wake in flight (a dead holder, an unknown Resume): it counts as woken.
            let resumed = before
                .as_ref()
                .is_some_and(|b| b.state == WakeState::Waking || b.resume_sent_at_ms.is_some());
            tracing::info!(agent = %key, resumed, "wake: adopted a live session");
            let recorded = Recorded {
                session_id: s.session_id.clone().unwrap_or_default(),
                snapshot_id: before.as_ref().and_then(|b| b.snapshot_id.clone()),
                seen: Some(s),
                resumed,
            };
            let snapshots = listed.unwrap_or_default();
            return self.record_and_poll(held, &home, recorded, snapshots).await;
        }

        // 3. A Resume somebody sent, outcome unknown: wait it out rather than double it.
        if let Some(sent) = held.record.resume_sent_at_ms {
            let until = sent + agents.settings.ready_timeout.as_millis() as u64;
            if now_ms() < until {
                tracing::info!(agent = %key, "wake: an earlier Resume is unaccounted for; waiting for it");
                let changes = Changes {
                    lease_until_ms: Some(until),
                    poll_until_ms: Some(0),
                    describe: Some(home.description()),
                    ..Changes::default()
                };
                return match self.driver.lock.write(&mut held, changes).await? {
                    Written::Done(r) => Ok(WakeOutcome::Waking { record: r }),
                    Written::Lost(r) => self.follow(r).await,
                };
            }
        }

        // 4. Which snapshot.
        if home.retention == Retention::Temporary {
            // An ended session the record still said awake: announce that end as AgentKit's.
            if before.as_ref().is_some_and(|b| b.state == WakeState::Awake) {
                let mut changes = asleep_at(&home);
                crate::index_sync::learned_end(&mut changes, None);
                let state = changes.state.take().unwrap_or(WakeState::Failed);
                self.driver.give_back(&mut held, state, changes).await;
            } else {
                self.give_back(&mut held, &home).await;
            }
            return Err(Error::NotWakeable(
                "a temporary agent cannot be woken once its session has ended".into(),
            ));
        }
        // Boxed: a large future (listings and choices live across awaits).
        let picked =
            Box::pin(self.pick_snapshot(&mut held, &home, before.as_ref(), listed.take())).await?;
        let (snapshot, listing) = match picked {
            Picked::Snapshot { snapshot, listing } => (snapshot, listing),
            Picked::Waiting(record) => return Ok(WakeOutcome::Waking { record }),
            Picked::Lost(record) => return self.follow(record).await,
        };
        let snapshot_id = snapshot.snapshot_id.clone().unwrap_or_default();

        // 5. Time for one whole AgentKit request by the deadline (not the wait), or none is sent.
        if deadline.remaining() < agents.agentkit.request_timeout() {
            self.give_back(&mut held, &home).await;
            return Err(Error::no_time_to("wake the agent"));
        }

        // 6. Say a Resume is on its way before it is; an unfollowed marker holds nobody long.
        let sent_at = now_ms();
        let changes = Changes {
            // The listing is current (taken under the lock): the index's copy of it.
            snapshots: Some(crate::view::snapshot_views(&own_snapshots(&listing, key))),
            resume_sent_at_ms: Some(Some(sent_at)),
            snapshot_id: Some(Some(snapshot_id.clone())),
            lease_until_ms: Some(self.driver.lease_until(sent_at, agents.settings.lock.lease)),
            poll_until_ms: Some(deadline.epoch_ms()),
            error: Some(None),
            describe: Some(described(&held.record, &home, &snapshot)),
            ..Changes::default()
        };
        match self.driver.lock.write(&mut held, changes).await {
            Ok(Written::Done(_)) => {}
            Ok(Written::Lost(r)) => return self.follow(r).await,
            // Maybe landed, no Resume sent: take the marker back, lest anyone wait it out.
            Err(e) => {
                tracing::warn!(agent = %key, error = %e, "could not confirm the Resume marker; taking it back");
                self.give_back(&mut held, &home).await;
                return Err(e.into());
            }
        }

        // 7. Resume, retries included, within the marker's window (after it, another resumes).
        let request = ResumeSessionFromSnapshot::new(&home.tool_id, &snapshot_id);
        crate::metrics::emit(crate::metrics::Record::of("wake").count("ResumesSent", 1));
        let since_sent = Duration::from_millis(now_ms().saturating_sub(sent_at));
        let window = agents.settings.ready_timeout.saturating_sub(since_sent);
        let within = deadline.min_after(window.saturating_sub(agents.settings.lock.skew_margin));
        let answer = agents.agentkit.call(&home.region, &request, within).await;
        let session_id = match answer {
            Ok(r) if !r.session_id.is_empty() => r.session_id,
            Ok(_) => {
                tracing::warn!(agent = %key, "Resume answered no SessionId; its outcome is unknown");
                return self.unknown_resume(held, &home, &listing).await;
            }
            Err(e) if e.is_not_found() => {
                tracing::info!(agent = %key, %snapshot_id, "the snapshot vanished before Resume");
                self.give_back(&mut held, &home).await;
                return Err(Error::NotWakeable(format!(
                    "snapshot {snapshot_id} no longer exists"
                )));
            }
            Err(e) if e.outcome_unknown() => {
                tracing::warn!(agent = %key, error = %e, "Resume may have acted; its outcome is unknown");
                return self.unknown_resume(held, &home, &listing).await;
            }
            Err(e) => return Err(self.fail(&mut held, e.into(), None).await),
        };
        tracing::info!(agent = %key, %session_id, "wake: resumed");
        if self.target.user_session_id().is_none() {
            // Nothing in AgentKit says whose this session is: the claim does.
            let claimed = crate::locate::claims::claim(&agents.store, &home, &session_id, key);
            if let Err(e) = claimed.await {
                tracing::warn!(agent = %key, error = %e, "could not claim the resumed session");
            }
        }
        let recorded = Recorded {
            session_id,
            snapshot_id: Some(snapshot_id),
            seen: None,
            resumed: true,
        };
        self.record_and_poll(held, &home, recorded, listing).await
    }

    /// Record the session (lease to the readiness timeout), then poll it until Ready.
    pub(super) async fn record_and_poll(
        &self,
        mut held: Held,
        home: &Home,
        recorded: Recorded,
        snapshots: Vec<Snapshot>,
    ) -> Result<WakeOutcome, Error> {
        let wait = self.driver.wait();
        let now = now_ms();
        let asking = self.agents.agentkit.request_timeout().as_millis() as u64;
        let changes = Changes {
            session_id: Some(Some(recorded.session_id.clone())),
            snapshot_id: Some(recorded.snapshot_id.clone()),
            resume_sent_at_ms: Some(None),
            lease_until_ms: Some(
                self.driver
                    .lease_until(now, self.agents.settings.ready_timeout),
            ),
            poll_until_ms: Some(wait.epoch_ms().max(now + asking)),
            awaited_since_ms: Some(now),
            describe: Some(home.description()),
            ..Changes::default()
        };
        let record = match self.driver.lock.write(&mut held, changes).await? {
            Written::Done(r) => r,
            Written::Lost(r) => return self.follow(r).await,
        };
        let holder = Settler::Holder(&mut held);
        let polled = self
            .driver
            .poll(self, holder, home, record, recorded.seen, wait);
        Ok(match polled.await? {
            Polled::Settled { record, seen } => WakeOutcome::Awake {
                session: seen,
                resumed: recorded.resumed,
                record,
                snapshots,
            },
            Polled::Pending(record) => WakeOutcome::Waking { record },
        })
    }

    /// A Resume of unknown outcome: keep the lock; adopt a session that shows up at once.
    pub(super) async fn unknown_resume(
        &self,
        held: Held,
        home: &Home,
        listing: &[Snapshot],
    ) -> Result<WakeOutcome, Error> {
        let metadata = snapshot_metadata(listing, held.record.snapshot_id.as_deref());
        let sent = held.record.resume_sent_at_ms;
        let found = self
            .find_started(home, sent, &metadata, self.driver.deadline())
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(agent = %held.key, error = %e, "could not reconcile an unknown Resume yet");
                None
            });
        if let Some(s) = found {
            let recorded = Recorded {
                session_id: s.session_id.clone().unwrap_or_default(),
                snapshot_id: held.record.snapshot_id.clone(),
                seen: Some(s),
                resumed: true,
            };
            let snapshots = listing.to_vec();
            return self.record_and_poll(held, home, recorded, snapshots).await;
        }
        self.hand_over(held).await
    }

    /// Keep the lock with the Resume unaccounted for; the next poller looks for its session (202).
    pub(super) async fn hand_over(&self, mut held: Held) -> Result<WakeOutcome, Error> {
        // The record already names the Tool (the marker did), so pollers know where to look.
        let sent = held.record.resume_sent_at_ms.unwrap_or_else(now_ms);
        let changes = Changes {
            poll_until_ms: Some(0),
            lease_until_ms: Some(
                self.driver
                    .lease_until(sent, self.agents.settings.ready_timeout),
            ),
            ..Changes::default()
        };
        match self.driver.lock.write(&mut held, changes).await {
            Ok(Written::Done(r)) => Ok(WakeOutcome::Waking { record: r }),
            Ok(Written::Lost(r)) => self.follow(r).await,
            Err(e) => {
                tracing::warn!(agent = %held.key, error = %e, "could not hand polling over");
                Ok(WakeOutcome::Waking {
                    record: held.record,
                })
            }
        }
    }

    /// The lock was lost to a takeover: follow the new holder.
    async fn follow(&self, record: Option<AgentRecord>) -> Result<WakeOutcome, Error> {
        let Some(record) = record else {
            return Err(Error::AgentNotFound);
        };
        Ok(match self.watch(record, true).await? {
            ControlFlow::Break(outcome) => outcome,
            ControlFlow::Continue(r) => WakeOutcome::Waking {
                record: self.driver.seen(r),
            },
        })
    }

    /// Record a failed wake (`failed`) and hand back the error to answer.
    async fn fail(&self, held: &mut Held, err: Error, session_id: Option<&str>) -> Error {
        tracing::warn!(agent = %held.key, reason = %err, "wake failed");
        let changes = failed(err.code(), &err, session_id);
        self.driver
            .give_back(held, WakeState::Failed, changes)
            .await;
        err
    }

    /// Give the lock back with nothing woken ([`nothing_woken`]).
    async fn give_back(&self, held: &mut Held, home: &Home) {
        let (state, changes) = nothing_woken(held.before.as_ref(), home);
        self.driver.give_back(held, state, changes).await;
    }
}

/// Where the agent lives, plus its snapshot's names when the record has none (first met asleep).
fn described(record: &AgentRecord, home: &Home, snapshot: &Snapshot) -> Description {
    let lacking = |recorded: &Option<String>, key: &str| match recorded {
        Some(_) => None,
        None => metadata_value(&snapshot.session_metadata, key).map(str::to_string),
    };
    Description {
        display_name: lacking(&record.description.display_name, METADATA_DISPLAY_NAME_KEY),
        created_by: lacking(&record.description.created_by, METADATA_CREATOR_KEY),
        ..home.description()
    }
}

/// The previous generation's session should be ready by now: a lapsed wake, or one said stuck.
fn was_stuck(before: Option<&AgentRecord>) -> bool {
    before.is_some_and(|b| {
        b.state == WakeState::Waking || (b.state == WakeState::Failed && said_stuck(b))
    })
}

/// A wake already recorded this session stuck.
fn said_stuck(record: &AgentRecord) -> bool {
    record.error.as_deref().and_then(recorded_code) == Some(SESSION_STUCK)
}
