//! The winner's path of a sleep (docs/wake-protocol.md, "Sleep now"), numbered below. The session
//! is ended only by the poll of a Ready snapshot this very sleep asked for.

use crate::agentkit::types::{CreateSessionSnapshot, ListSessionSnapshots, Session, Snapshot};
use crate::agentkit::{list_all, AgentKit, AgentKitError};
use crate::ambient::now_ms;
use crate::domain::{AgentRecord, Retention, WakeState};
use crate::error::Error;
use crate::invocation::Deadline;
use crate::locate::questions::active_session;
use crate::locate::snapshots;
use crate::locate::Home;
use crate::locate::{own_snapshots, session};
use crate::lock::agent::{Polled, Settler};
use crate::lock::{Held, Written};
use crate::store::{AgentStore, Changes};

use super::{SleepOutcome, Sleeping};

impl<S: AgentStore, K: AgentKit> Sleeping<'_, '_, S, K> {
    pub(super) async fn hold(&self, mut held: Held) -> Result<SleepOutcome, Error> {
        let deadline = self.driver.deadline();
        let key = &self.target.key;
        let agents = self.agents;

        // 1. Where the agent lives.
        let home = match self.driver.locate(agents.agentkit, &mut held).await {
            Ok(Some(w)) => w.home,
            Ok(None) => return Err(Error::AgentNotFound),
            Err(e) => return Err(self.give_back(&mut held, e).await),
        };
        if home.retention == Retention::Temporary {
            let err = Error::NotSleepable(
                "a temporary agent keeps no snapshot: it cannot be put to sleep, only deleted"
                    .into(),
            );
            return Err(self.give_back(&mut held, err).await);
        }

        // 2. The live session.
        let recorded = held.record.session_id.as_deref();
        let live = match active_session(agents.agentkit, &home, key, recorded, deadline).await {
            Ok(Some(live)) => live,
            Ok(None) => return self.asleep_already(held, &home).await,
            Err(e) => return Err(self.give_back(&mut held, e.into()).await),
        };
        // An undocumented status: neither snapshotted nor ended on its own.
        if live.phase() == crate::domain::SessionPhase::Unknown {
            let err = Error::unknown_status("session", live.status.as_deref());
            return Err(self.give_back(&mut held, err).await);
        }
        let session_id = live.session_id.clone().unwrap_or_default();

        // 3. Time for one whole AgentKit request by the deadline (not the wait), or none is sent.
        if deadline.remaining() < agents.agentkit.request_timeout() {
            let err = Error::no_time_to("snapshot the agent");
            return Err(self.give_back_awake(&mut held, &live, err).await);
        }
        // 4. Snapshot: a new one, whatever an earlier (lapsed) attempt asked for.
        let request = CreateSessionSnapshot {
            session_id: session_id.clone(),
            tool_id: home.tool_id.clone(),
        };
        let sent_at_ms = now_ms();
        let snapshot_id = match agents.agentkit.call(&home.region, &request, deadline).await {
            Ok(r) if !r.snapshot_id.is_empty() => r.snapshot_id,
            Err(e) if !e.outcome_unknown() => return self.refused(held, &home, &live, e).await,
            // No SnapshotId, or the answer was lost: the snapshot it took, if one shows up.
            answer => {
                let err = answer.err().unwrap_or(AgentKitError::InvalidResponse {
                    action: "CreateSessionSnapshot",
                    detail: "no SnapshotId".into(),
                });
                let found = self.after_unknown(&home, &session_id, sent_at_ms, err);
                match found.await {
                    Ok(id) => id,
                    Err(e) => return Err(self.give_back_awake(&mut held, &live, e).await),
                }
            }
        };

        // 5. Name the snapshot (and its session) before waiting for it; nobody else asks meanwhile.
        let asking = now_ms() + agents.agentkit.request_timeout().as_millis() as u64;
        let changes = Changes {
            session_id: Some(Some(session_id)),
            session_expire_at: live.expire_at.clone().map(Some),
            session_created_at: live.created_at.clone().map(Some),
            snapshot_id: Some(Some(snapshot_id)),
            lease_until_ms: Some(
                self.driver
                    .lease_until(now_ms(), agents.settings.snapshot_timeout),
            ),
            poll_until_ms: Some(self.driver.wait().epoch_ms().max(asking)),
            awaited_since_ms: Some(sent_at_ms),
            describe: Some(home.description()),
            ..Changes::default()
        };
        let record = match self.driver.lock.write(&mut held, changes).await? {
            Written::Done(r) => r,
            // Taken over after our lease ran out: theirs to finish.
            Written::Lost(r) => {
                return Err(Error::AgentBusy {
                    detail: format!(
                        "another operation took the agent over ({})",
                        r.map_or("gone", |r| r.state.as_str())
                    ),
                    retry_after_s: 1,
                })
            }
        };

        // 6. Wait for the snapshot, then end the session.
        let holder = Settler::Holder(&mut held);
        let (progress, wait) = (self.progress(), self.driver.wait());
        let polled = self
            .driver
            .poll(&progress, holder, &home, record, None, wait);
        Ok(match polled.await? {
            Polled::Settled { record, .. } => SleepOutcome::Asleep {
                record,
                slept: true,
            },
            Polled::Pending(record) => SleepOutcome::Sleeping { record },
        })
    }

    /// The newest snapshot of `session_id`, in progress or Ready, taken since `sent_at_ms`.
    async fn taken_since(
        &self,
        home: &Home,
        session_id: &str,
        sent_at_ms: u64,
        deadline: Deadline,
    ) -> Result<Option<Snapshot>, AgentKitError> {
        let request = ListSessionSnapshots {
            tool_id: home.tool_id.clone(),
            session_id: Some(session_id.to_string()),
            ..ListSessionSnapshots::default()
        };
        let pages = crate::agentkit::port::AGENT_SNAPSHOT_PAGES;
        let listing = list_all(self.agents.agentkit, &home.region, request, pages, deadline);
        let listing = listing.await?;
        let skew = self.agents.settings.lock.skew_margin;
        let created = |s: &Snapshot| crate::ambient::sort_key(s.created_at.as_deref());
        let newest = own_snapshots(&listing, &self.target.key)
            .into_iter()
            .filter(|s| {
                s.session_id.as_deref() == Some(session_id)
                    && (s.is_wakeable() || s.is_in_progress())
                    && taken_since_ms(s, sent_at_ms, skew)
            })
            .min_by_key(|s| std::cmp::Reverse(created(s)));
        Ok(newest)
    }

    /// A CreateSessionSnapshot whose answer was lost: the snapshot it took, if one shows up.
    async fn after_unknown(
        &self,
        home: &Home,
        session_id: &str,
        sent_at_ms: u64,
        err: AgentKitError,
    ) -> Result<String, Error> {
        let deadline = self.driver.deadline();
        let key = &self.target.key;
        tracing::warn!(agent = %key, error = %err, "CreateSessionSnapshot may have acted; looking for its snapshot");
        // A failed listing is asked again while the wait lasts: giving up costs a second snapshot.
        let mut backoff = self.agents.settings.polling();
        let why = loop {
            let taken = self.taken_since(home, session_id, sent_at_ms, deadline);
            match taken.await {
                Ok(Some(s)) => return Ok(s.snapshot_id.unwrap_or_default()),
                Ok(None) => break err.to_string(),
                Err(e) => {
                    tracing::info!(agent = %key, error = %e, "listing the session's snapshots failed; asking again");
                    let room = self.agents.agentkit.request_timeout();
                    if !backoff.wait(self.driver.wait(), room).await {
                        break e.to_string();
                    }
                }
            }
        };
        Err(Error::SleepFailed(format!(
            "the snapshot could not be confirmed ({why}); the agent is still awake"
        )))
    }

    /// Refused: asleep if the session ended; not sleepable if the Tool refuses; else awake.
    async fn refused(
        &self,
        mut held: Held,
        home: &Home,
        live: &Session,
        err: AgentKitError,
    ) -> Result<SleepOutcome, Error> {
        let id = live.session_id.as_deref().unwrap_or_default();
        if let Ok(now) = session(self.agents.agentkit, home, id, self.driver.deadline()).await {
            if !now.as_ref().is_some_and(Session::is_active) {
                return self.asleep_already(held, home).await;
            }
        }
        let mapped = if err.code() == Some("OperationDenied") {
            Error::NotSleepable("the agent's Tool does not keep snapshots".into())
        } else {
            Error::AgentKit(err)
        };
        Err(self.give_back_awake(&mut held, live, mapped).await)
    }

    /// No live session: the agent rests asleep, and this call slept nothing.
    async fn asleep_already(&self, mut held: Held, home: &Home) -> Result<SleepOutcome, Error> {
        tracing::info!(agent = %held.key, "sleep: no live session; the agent is asleep already");
        // What the agent has to wake from, for the record's summaries (and so the answer).
        let listed = snapshots(
            self.agents.agentkit,
            home,
            &held.key,
            self.driver.deadline(),
        )
        .await;
        let summaries = match listed {
            Ok(listing) => Some(crate::view::snapshot_views(&own_snapshots(
                &listing, &held.key,
            ))),
            Err(e) => {
                tracing::info!(agent = %held.key, error = %e, "sleep: could not list the agent's snapshots");
                None
            }
        };
        // Not asleep as far as a watcher knew (awake, or a change taken over): announce the end.
        let announce = crate::lock::agent::announced_end(held.before.as_ref().map(|b| b.state));
        let changes = crate::lock::agent::forget_session(Changes {
            // The snapshot field the acquire cleared is the last one known: put it back.
            snapshot_id: Some(held.before.as_ref().and_then(|b| b.snapshot_id.clone())),
            snapshots: summaries,
            describe: Some(home.description()),
            announce,
            ..Changes::default()
        });
        // Unconfirmed: the record as this write makes it, never the acquire's `sleeping` one.
        let shown = Changes {
            state: Some(WakeState::Asleep),
            ..crate::lock::agent::let_go(changes.clone())
        }
        .apply(held.record.clone());
        let record = self
            .driver
            .give_back(&mut held, WakeState::Asleep, changes)
            .await;
        Ok(SleepOutcome::Asleep {
            record: record.unwrap_or(AgentRecord {
                version: 0,
                ..shown
            }),
            slept: false,
        })
    }

    /// Give the lock back awake, with the live session recorded, and hand back `err`.
    async fn give_back_awake(&self, held: &mut Held, live: &Session, err: Error) -> Error {
        let changes = Changes {
            session_id: Some(live.session_id.clone()),
            session_expire_at: Some(live.expire_at.clone()),
            session_created_at: Some(live.created_at.clone()),
            verified_at_ms: Some(if live.is_usable() { now_ms() } else { 0 }),
            error: Some(matches!(err, Error::SleepFailed(_)).then(|| err.to_string())),
            // Awake again: an idle sleep is tried again an idle time later, not each minute.
            idle_at_ms: Some(self.agents.settings.idle.idle_at(&held.record, now_ms())),
            ..Changes::default()
        };
        self.driver.give_back(held, WakeState::Awake, changes).await;
        err
    }

    /// Give the lock back as the agent rested before (a lapsed change as it was left: `asleep`
    /// could hide an awake agent), and hand back `err`.
    async fn give_back(&self, held: &mut Held, err: Error) -> Error {
        let state = match held.before.as_ref().map(|b| b.state) {
            Some(
                s @ (WakeState::Awake
                | WakeState::Waking
                | WakeState::Sleeping
                | WakeState::Creating),
            ) => s,
            _ => WakeState::Asleep,
        };
        let changes = Changes {
            snapshot_id: Some(held.before.as_ref().and_then(|b| b.snapshot_id.clone())),
            ..Changes::default()
        };
        self.driver.give_back(held, state, changes).await;
        err
    }
}

/// Whether `snapshot` was taken since `sent_at_ms` (give or take a second and the skew margin).
fn taken_since_ms(snapshot: &Snapshot, sent_at_ms: u64, skew: std::time::Duration) -> bool {
    let margin = skew.as_millis() as u64 + 1000;
    crate::ambient::sort_key(snapshot.created_at.as_deref())
        >= i128::from(sent_at_ms.saturating_sub(margin)) * 1_000_000
}

#[cfg(test)]
mod tests;
