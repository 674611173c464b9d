//! A minute of the studio's people, the checks at the end of every minute, the faults the
//! world brings, and the quiet hours at the end, after which everything must have converged.

use std::sync::Arc;
use std::time::Duration;

use snapwake::domain::AgentKey;
use snapwake_sim::Fault;

use super::{inject, instant, Faults, Report, Run, MINUTE, WEEK_MINUTES};
use crate::deployment::invocation::TableFaults;
use crate::deployment::people::People;
use crate::deployment::studio::{self, Act};
use crate::deployment::views::{self, Stability};
use crate::deployment::{checks, idle, usage};

/// How long the world is quiet at the end of a run (no faults, no people): time for every
/// offboarding to finish and every event to be announced.
const QUIET_MINUTES: u64 = 120;

impl Run {
    pub(super) fn note(&self, people: &People, line: String) {
        people
            .trace
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .note(line);
    }

    /// `owner`'s agents, in the order the studio got them (their ids are random; the order of
    /// the studio's choices must not be), and whether each has a schedule now.
    fn agents_of(people: &People, owner: &str, now: u64) -> Vec<(AgentKey, bool)> {
        let model = people.model.lock().unwrap_or_else(|p| p.into_inner());
        let mut mine: Vec<(usize, AgentKey, bool)> = model
            .agents
            .values()
            .filter(|a| a.owner == owner && a.delete_asked_ms.is_none())
            .map(|a| (a.order, a.key.clone(), a.schedule_at(now).is_some()))
            .collect();
        mine.sort_by_key(|(order, _, _)| *order);
        mine.into_iter().map(|(_, k, s)| (k, s)).collect()
    }

    /// What the people do this minute, each act in a task of its own at its second.
    pub(super) async fn people_minute(&mut self, people: &Arc<People>, minute: u64, t0: u64) {
        if minute.is_multiple_of(1440) {
            self.days_off = self.people.iter().map(|_| self.rng.f64() < 0.05).collect();
        }
        let minute_of_week = minute % WEEK_MINUTES;
        for (i, person) in self.people.clone().iter().enumerate() {
            let left = people
                .model
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .offboarding_of(&person.name)
                .is_some();
            if left {
                continue;
            }
            let agents = Self::agents_of(people, &person.name, t0);
            let day_off = self.days_off.get(i).copied().unwrap_or(false);
            for (second, act) in
                studio::minute_of(&mut self.rng, person, &agents, minute_of_week, day_off)
            {
                self.report.acts += 1;
                if let Act::Create { .. } = act {
                    self.created += 1;
                }
                let (p, owner, n) = (people.clone(), person.name.clone(), self.created);
                let at = t0 + 30_000 + second * 500;
                tokio::spawn(async move {
                    tokio::time::sleep_until(instant(at)).await;
                    act_out(&p, &owner, act, n).await;
                });
            }
        }
    }

    /// The checks at `now`, the end of a minute (with the views every hour).
    pub(super) async fn check(
        &mut self,
        people: &Arc<People>,
        stability: &mut Stability,
        now: u64,
        views_too: bool,
    ) -> Result<(), String> {
        let d = &people.deployment;
        let changes = d.relay().await;
        let truth = checks::truth(d);
        let progress = checks::progress(people).await?;
        {
            let mut model = people.model.lock().unwrap_or_else(|p| p.into_inner());
            checks::stream(&mut model, d, &changes, now)?;
            checks::bus(&mut model, d, &mut self.seen_events, now)?;
            checks::sessions(&mut model, &truth, now)?;
            checks::calls(&mut model, d)?;
            checks::offboardings(&mut model, &progress, &truth, now)?;
            checks::windows(&mut model, &truth, now)?;
            idle::kept(&mut model, &truth, now, self.settings.idle_minutes)?;
            if now % (10 * MINUTE) < MINUTE {
                checks::once(&mut model, now)?;
            }
            let alive = model
                .agents
                .values()
                .filter(|a| a.delete_asked_ms.is_none())
                .count();
            self.report.agent_weeks += alive as f64 / WEEK_MINUTES as f64;
        }
        // Usage equals the events' count: hourly, and at the last check.
        if views_too || now % (60 * MINUTE) < MINUTE {
            usage::equals_events(d, now).await?;
        }
        stability.update(&truth, now);
        if views_too {
            views::check(people, stability, now).await?;
        }
        Ok(())
    }

    /// The world's faults, at their usual rates (also after an outage ends).
    pub(super) fn faults_on(&mut self, people: &People) {
        let d = &people.deployment;
        d.sim.clear_faults();
        // Latency: most calls quick, some slow, a few very slow.
        inject(d, Fault::latency(None, 20));
        inject(d, Fault::latency(None, 400).rate(0.05));
        inject(d, Fault::latency(None, 4_000).rate(0.005));
        // Refusals before acting, and answers lost after AgentKit acted.
        inject(
            d,
            Fault::error(None, "Throttling", 429)
                .retry_after(1)
                .rate(0.01),
        );
        inject(d, Fault::bare(None, 503).rate(0.004));
        inject(d, Fault::bare(None, 503).after_apply().rate(0.004));
        // Actions AgentKit applies seconds after their answer was lost.
        for action in [
            "ResumeSessionFromSnapshot",
            "CreateSession",
            "CreateSessionSnapshot",
            "DeleteSession",
        ] {
            let late = Fault::error(Some(action), "InternalError", 500)
                .apply_after(Duration::from_secs(20));
            inject(d, late.rate(0.004));
        }
        d.table.set_faults(TableFaults {
            lose_write_answers: 0.003,
            fail_before: 0.003,
        });
        people
            .fates
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .stop_rate = 0.01;
        d.bus.refuse(0.02, self.settings.seed ^ 0xb05);
        d.kill_announce(0.05, self.settings.seed ^ 0xa11);
    }

    /// Everything quiet: no fault, no person. Time for what was left to converge, then the
    /// last checks: every offboarding finished, every state change announced.
    pub(super) async fn cool_down(
        &mut self,
        people: &Arc<People>,
        stability: &mut Stability,
    ) -> Result<(), String> {
        let d = people.deployment.clone();
        d.sim.clear_faults();
        d.table.set_faults(TableFaults::default());
        people
            .fates
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .stop_rate = 0.0;
        d.bus.refuse(0.0, 0);
        d.kill_announce(0.0, 0);
        self.note(people, "quiet from here".into());
        let first = self.settings.weeks * WEEK_MINUTES;
        let mut outage = None;
        let faults = std::mem::replace(&mut self.settings.faults, Faults::Off);
        for minute in first..first + QUIET_MINUTES {
            let t0 = self.start_ms + 60 * MINUTE + minute * MINUTE;
            self.deployment_minute(people, minute, t0, &mut outage)
                .await;
            // An offboarding whose event never got through is redriven from its dead letters.
            if minute == first + 30 {
                self.redrive(people).await;
            }
            tokio::time::sleep_until(instant(t0 + 59_000)).await;
            self.check(
                people,
                stability,
                t0 + 59_000,
                minute == first + QUIET_MINUTES - 1,
            )
            .await?;
        }
        self.settings.faults = faults;
        let unfinished: Vec<(String, u64)> = {
            let model = people.model.lock().unwrap_or_else(|p| p.into_inner());
            model
                .owners
                .iter()
                .filter(|(_, o)| o.finished_ms.is_none())
                .map(|(owner, o)| (owner.clone(), o.asked_ms))
                .collect()
        };
        if let Some((owner, asked_ms)) = unfinished.first() {
            // What the table says of it: its progress, and whether the sweep would find it.
            let table = &*d.table.memory;
            let progress = snapwake::offboarding::progress(table, owner).await;
            let pending = snapwake::offboarding::pending(table).await;
            return Err(format!(
                "{owner}'s offboarding never finished (asked {}); its progress: {progress:?}; \
                 pending: {pending:?}",
                checks::at(*asked_ms)
            ));
        }
        let model = people.model.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(((key, version), _)) = model.unpublished.iter().next() {
            return Err(format!("{key}/{version} was never announced"));
        }
        Ok(())
    }

    /// Offboarding events not accepted yet, handled again (an operator's redrive).
    async fn redrive(&mut self, people: &Arc<People>) {
        let pending: Vec<String> = {
            let model = people.model.lock().unwrap_or_else(|p| p.into_inner());
            model
                .owners
                .iter()
                .filter(|(_, o)| o.accepted_ms.is_none())
                .map(|(owner, _)| owner.clone())
                .collect()
        };
        for owner in pending {
            self.note(people, format!("{owner}'s offboarding redriven"));
            let deadline = snapwake::invocation::Deadline::after(super::OFFBOARD_BUDGET);
            let _ = people
                .deployment
                .api
                .delete
                .offboard(&owner, deadline, false, &snapwake_delete::Quiet)
                .await;
        }
    }

    /// The report of the run.
    pub(super) fn finish(mut self, people: &People) -> Report {
        let d = &people.deployment;
        let counters = d.sim.counters();
        self.report.resumes = counters.received("ResumeSessionFromSnapshot");
        self.report.agentkit_calls = d
            .transport
            .calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len() as u64;
        self.report.agentkit_faults = counters.faults_fired;
        self.report.agentkit_faults_by_kind = counters.faults_by_kind.clone();
        self.report.rate_limited = counters.throttled;
        (self.report.table_failed, self.report.table_answers_lost) = d.table.faults_made();
        self.report.stopped = people
            .fates
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .stopped;
        self.report.events = d
            .bus
            .published
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len() as u64;
        self.report.bus_refusals = d.bus.refusals();
        self.report.scheduled_days = people
            .model
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .days_kept;
        self.report
    }
}

/// One act of `owner`.
async fn act_out(p: &People, owner: &str, act: Act, n: u64) {
    match act {
        Act::Wake { agent, tabs } => p.wake(owner, &agent, tabs).await,
        Act::Sleep { agent } => p.sleep(owner, &agent).await,
        Act::Keepalive { agent } => p.keepalive(owner, &agent).await,
        Act::Create { kind, recoverable } => {
            p.create(owner, kind, recoverable, n).await;
        }
        Act::Delete { agent } => p.delete(owner, &agent).await,
        Act::DeleteSnapshot { agent } => p.delete_snapshot(owner, &agent).await,
        Act::Schedule { agent, def } => p.schedule(owner, &agent, def).await,
        Act::List => {
            let (status, _, _) = p
                .once(crate::request(
                    "GET",
                    "/v1/agents",
                    crate::Who::User(owner),
                    None,
                ))
                .await;
            p.trace
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .note(format!("{owner} listed their agents: {status}"));
        }
    }
}
