//! An owner leaving the studio: their offboarding event, now and then while AgentKit cannot
//! list, and now and then just after they (or a tab they left open) asked for a new agent.

use std::sync::Arc;
use std::time::Duration;

use snapwake::domain::Kind;
use snapwake::invocation::Deadline;

use super::{instant, Run, OFFBOARD_BUDGET};
use crate::deployment::invocation::Invocation;
use crate::deployment::people::People;

impl Run {
    /// One owner offboarded at `at_ms`: now and then they (or a tab they left open) had just
    /// asked for a new agent.
    pub(super) async fn offboard_someone(&mut self, people: &Arc<People>, at_ms: u64) {
        let model = people.model.clone();
        let candidates: Vec<usize> = (0..self.people.len())
            .filter(|i| {
                model
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .offboarding_of(&self.people[*i].name)
                    .is_none()
            })
            .collect();
        if candidates.len() < 2 {
            return;
        }
        let who = self.people[candidates[self.rng.usize(..candidates.len())]]
            .name
            .clone();
        self.report.offboardings += 1;
        model
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .owners
            .entry(who.clone())
            .or_default()
            .asked_ms = at_ms;
        if self.rng.f64() < 0.5 {
            self.created += 1;
            let (p, n) = (people.clone(), self.created);
            let owner = who.clone();
            let early = at_ms.saturating_sub(self.rng.u64(0..3_000));
            tokio::spawn(async move {
                tokio::time::sleep_until(instant(early)).await;
                p.create(&owner, Kind::Codex, true, n).await;
            });
        }
        let p = people.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(instant(at_ms)).await;
            p.trace
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .note(format!("{who} is offboarded"));
            let d = p.deployment.clone();
            let mut ran = false;
            // EventBridge retries a failed delivery (and the sweep finishes what is left).
            for _ in 0..3 {
                let invocation = Invocation::new(
                    "offboarding",
                    p.fates.lock().unwrap_or_else(|e| e.into_inner()).next(),
                );
                let work = d.api.delete.offboard(
                    &who,
                    Deadline::after(OFFBOARD_BUDGET),
                    false,
                    &snapwake_delete::Quiet,
                );
                if let Some(Ok(_)) = invocation.run(work).await {
                    ran = true;
                    break;
                }
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
            p.trace
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .note(format!("{who}'s offboarding event handled: {ran}"));
        });
    }
}
