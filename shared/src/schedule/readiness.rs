//! How long a kind's sandbox takes to be Ready once the tick starts its wake, as the ticks have
//! measured it, and the lead a scheduled wake starts by (docs/schedules.md, "Ready at the
//! minute").
//!
//! Measured once it can be: from a kind's first reached occurrence on, the tick starts its wakes
//! early by the 95th percentile of the last [`SAMPLES_KEPT`] readinesses, plus the time the
//! deployment's AgentKit budget needs for every wake due in that minute, plus a margin,
//! rounded to the tick before. Before anything is measured (a deployment's first morning is a
//! morning too) the readiness planned by is a conservative prior, [`PRIOR_READINESS_MS`].

use serde::{Deserialize, Serialize};

use crate::domain::Kind;
use crate::store::update::{update_document, Step};
use crate::store::{AgentStore, DocumentKey, StoreError};

/// The most recent readinesses kept per kind.
pub const SAMPLES_KEPT: usize = 64;
/// The readiness a kind is planned by before any of its wakes was measured: a minute. A
/// sandbox is Ready in seconds (the local simulator's 1.5 s; sandbox services boot in under
/// one), so a minute is many times over what a kind is expected to take: its first morning's
/// wakes are paid for a minute early, once, where starting them at their minute had a fleet
/// awake minutes late. A kind slower than that is late only until its first wake is measured.
pub const PRIOR_READINESS_MS: u64 = 60_000;
/// A wake that took longer than this is not a readiness to plan by (a stuck session, a wake
/// retried a tick later).
pub const LONGEST_SAMPLE_MS: u64 = 10 * 60_000;
/// Beyond the readiness and the budget's time: the tick's own reads and writes, the poll that
/// sees the session Ready.
pub const MARGIN_MS: u64 = 5_000;
/// Resumes sent per wake, as planned: AgentKit may refuse (429) some of a burst's Resumes
/// whatever the budget's pace, and each refused one is sent again within the same budget.
/// Planned for a third refused: with 30% of Resumes throttled, 300 wakes planned at one send
/// each started 40 s too late to be Ready by their minute (`cli/tests/fleet_serve.rs`).
pub const SENDS_PER_WAKE: (u64, u64) = (3, 2);
/// The ticks come a minute apart: a wake that should start between two starts at the first.
pub const TICK_PERIOD_MS: u64 = 60_000;
/// The longest lead: how far ahead of its time the tick reads the schedules.
pub const LONGEST_LEAD_MS: u64 = 15 * 60_000;
/// The part of its minute one tick spends starting wakes: the resume function's 29 s, less
/// reading what is due and writing what it did. More wakes than a tick starts in this long
/// take the next tick too.
pub const TICK_WORK_MS: u64 = 25_000;

const SK: &str = "READINESS";

/// A kind's measured readinesses, oldest first (`READY#<kind>` / `READINESS`, a document).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Readiness {
    /// To the tick: a wake the tick started, seen reached by a later tick (an upper bound).
    pub samples_ms: Vec<u64>,
    /// Closer: a wake a queue consumer started, seen reached by its follow-up (which looks
    /// again after half of what the wake has taken so far, 2 to 15 s: at most that over).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen_ms: Vec<u64>,
}

fn pk(kind: Kind) -> String {
    format!("READY#{kind}")
}

impl Readiness {
    /// The 95th percentile of the readinesses seen by follow-ups, or while there are none, of
    /// those measured to the tick; `None` with nothing measured.
    pub fn p95(&self) -> Option<u64> {
        let samples = if self.seen_ms.is_empty() {
            &self.samples_ms
        } else {
            &self.seen_ms
        };
        let mut sorted = samples.clone();
        sorted.sort_unstable();
        let at = (sorted.len() * 95).div_ceil(100).checked_sub(1)?;
        sorted.get(at).copied()
    }

    /// These readinesses with `samples` (to the tick) added, only the last [`SAMPLES_KEPT`] kept.
    pub fn with(mut self, samples: &[u64]) -> Self {
        keep(&mut self.samples_ms, samples);
        self
    }

    /// These readinesses with `samples` seen by follow-ups added.
    pub fn with_seen(mut self, samples: &[u64]) -> Self {
        keep(&mut self.seen_ms, samples);
        self
    }

    /// The readinesses measured for `kind`.
    pub async fn read<S: AgentStore>(store: &S, kind: Kind) -> Result<Readiness, StoreError> {
        let pk = pk(kind);
        let doc = store.get_document(DocumentKey { pk: &pk, sk: SK }).await?;
        Ok(doc
            .and_then(|d| serde_json::from_value(d.value).ok())
            .unwrap_or_default())
    }

    /// Add `samples` (to the tick) to what is kept for `kind`.
    pub async fn record<S: AgentStore>(
        store: &S,
        kind: Kind,
        samples: &[u64],
    ) -> Result<(), StoreError> {
        Self::update(store, kind, |kept| kept.with(samples)).await
    }

    /// Change what is kept for `kind` by `change` (a compare-and-set, tried again on a race):
    /// [`Readiness::with`] for samples to the tick, [`Readiness::with_seen`] for those seen.
    pub async fn update<S: AgentStore>(
        store: &S,
        kind: Kind,
        change: impl Fn(Readiness) -> Readiness,
    ) -> Result<(), StoreError> {
        let pk = pk(kind);
        let key = DocumentKey { pk: &pk, sk: SK };
        // Lost three times to other writers, the samples are dropped: the next ones come soon.
        update_document(store, key, 3, |kept| Step::<_, ()>::Write(change(kept))).await?;
        Ok(())
    }
}

/// `samples` added to `kept`, each at most [`LONGEST_SAMPLE_MS`], only the last
/// [`SAMPLES_KEPT`] kept.
fn keep(kept: &mut Vec<u64>, samples: &[u64]) {
    kept.extend(samples.iter().map(|s| (*s).min(LONGEST_SAMPLE_MS)));
    let over = kept.len().saturating_sub(SAMPLES_KEPT);
    kept.drain(..over);
}

/// Readinesses the queue's consumers saw in this process and not yet kept: each sees a few
/// wakes reached, and a write per wake to the kind's one document would have a hundred
/// consumers racing for it. They keep what they saw at most every [`Self::EVERY`]
/// ([`Readiness::with_seen`]).
#[derive(Debug, Default)]
pub struct Measured {
    held: std::sync::Mutex<Pending>,
}

/// Samples per kind, and when they were last written.
#[derive(Debug, Default)]
struct Pending {
    samples: std::collections::HashMap<Kind, Vec<u64>>,
    written: Option<tokio::time::Instant>,
}

impl Measured {
    /// How often one process writes what it measured.
    pub const EVERY: std::time::Duration = std::time::Duration::from_secs(10);

    fn held(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A readiness seen by a follow-up.
    pub fn add(&self, kind: Kind, ms: u64) {
        self.held().samples.entry(kind).or_default().push(ms);
    }

    /// What to keep now: everything held, if the last write was [`Self::EVERY`] ago.
    pub fn take_due(&self) -> Vec<(Kind, Vec<u64>)> {
        let mut held = self.held();
        if held.samples.is_empty()
            || held
                .written
                .is_some_and(|at| at.elapsed() < Measured::EVERY)
        {
            return Vec::new();
        }
        held.written = Some(tokio::time::Instant::now());
        held.samples.drain().collect()
    }
}

/// Who starts the wakes a tick finds due, which decides how many one minute can start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Starting {
    /// The tick itself, inside its invocation: [`TICK_WORK_MS`] of each minute.
    ByTick,
    /// The fan-out queue's consumers, the whole minute through (docs/schedules.md, "Fan-out").
    Queued,
}

/// How long before its minute a wake starts: the readiness (nothing measured: the
/// [`PRIOR_READINESS_MS`]), the time `due_that_minute` wakes take at `wakes_per_second`, each sent
/// [`SENDS_PER_WAKE`] times (started by the
/// tick, a whole tick period for every [`TICK_WORK_MS`] of them: one tick starts no more;
/// queued, the consumers work every minute through), and the margin, rounded up by a tick
/// period less a millisecond (so that the tick before the start starts it, not the one after),
/// at most [`LONGEST_LEAD_MS`].
pub fn wake_lead_ms(
    readiness_ms: Option<u64>,
    due_that_minute: usize,
    wakes_per_second: u32,
    starting: Starting,
) -> u64 {
    let readiness = readiness_ms.unwrap_or(PRIOR_READINESS_MS);
    let per_second = u64::from(wakes_per_second.max(1));
    let work_ms = match starting {
        Starting::ByTick => TICK_WORK_MS,
        Starting::Queued => TICK_PERIOD_MS,
    };
    let per_tick = (per_second * work_ms / 1000).max(1);
    let (sends, per_wake) = SENDS_PER_WAKE;
    let due = (due_that_minute as u64 * sends).div_ceil(per_wake);
    let budget = (due / per_tick) * TICK_PERIOD_MS + ((due % per_tick) * 1000).div_ceil(per_second);
    (readiness + budget + MARGIN_MS + TICK_PERIOD_MS - 1).min(LONGEST_LEAD_MS)
}

/// The lead of one schedule's next wake, as the tick that found it due worked it out: carried
/// with the occurrence to whoever acts on it (the tick itself, or the queue's consumer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DueLead {
    /// For its kind's readiness and its minute's crowd at the tick.
    pub now_ms: u64,
    /// What a new occurrence of its kind is set with: its readiness and the margin alone
    /// (`None`: not measured).
    pub alone_ms: Option<u64>,
}

impl DueLead {
    /// The lead of `record`'s next wake: never less than the lead kept with the occurrence,
    /// which its views promised the owner.
    pub fn of(&self, record: &crate::domain::ScheduleRecord) -> u64 {
        if record.next_wake_ms.is_none() {
            return 0;
        }
        self.now_ms
            .max(record.next_wake_lead_ms.unwrap_or(0))
            .min(LONGEST_LEAD_MS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_95th_percentile_of_the_last_samples() {
        assert_eq!(Readiness::default().p95(), None);
        let one = Readiness::default().with(&[4_000]);
        assert_eq!(one.p95(), Some(4_000));
        let many = Readiness::default().with(&(1..=100).map(|i| i * 100).collect::<Vec<_>>());
        // Only the last 64 (3,700 … 10,000) are kept; their 95th percentile is the 61st.
        assert_eq!(many.samples_ms.len(), SAMPLES_KEPT);
        assert_eq!(many.samples_ms[0], 3_700);
        assert_eq!(many.p95(), Some(9_700));
        // A stuck session counts as the longest readiness planned for, not an hour.
        let stuck = Readiness::default().with(&[3_600_000]);
        assert_eq!(stuck.p95(), Some(LONGEST_SAMPLE_MS));
    }

    #[test]
    fn the_lead_covers_readiness_the_budget_and_the_tick_before() {
        assert_eq!(
            wake_lead_ms(None, 1, 36, Starting::ByTick),
            wake_lead_ms(Some(PRIOR_READINESS_MS), 1, 36, Starting::ByTick),
            "nothing measured: the prior"
        );
        // 5 s readiness, 100 wakes (150 sends) at 20 a second (7.5 s), 5 s margin, a tick
        // period less 1 ms.
        assert_eq!(
            wake_lead_ms(Some(5_000), 100, 20, Starting::ByTick),
            5_000 + 7_500 + 5_000 + 59_999
        );
        // 1,000 (1,500 sends) at 36 a second: one tick sends 900 (25 s), the next the other
        // 600 (16.7 s).
        assert_eq!(
            wake_lead_ms(Some(6_000), 1_000, 36, Starting::ByTick),
            6_000 + 60_000 + 16_667 + 5_000 + 59_999
        );
        // 5,000 (7,500 sends): eight ticks of 900, and 300 more.
        assert_eq!(
            wake_lead_ms(Some(6_000), 5_000, 36, Starting::ByTick),
            6_000 + 8 * 60_000 + 8_334 + 5_000 + 59_999
        );
        // Past 15 minutes: capped.
        assert_eq!(
            wake_lead_ms(Some(6_000), 10_000, 36, Starting::ByTick),
            LONGEST_LEAD_MS
        );
        assert_eq!(
            wake_lead_ms(Some(6_000), 6_000, 40, Starting::ByTick),
            6_000 + 9 * 60_000 + 5_000 + 59_999
        );
    }

    #[test]
    fn queued_wakes_take_the_whole_minute() {
        // 10,000 (15,000 sends) at 20 a second through the queue: 750 s, not 15,000 / 500
        // tick windows of 25 s.
        assert_eq!(
            wake_lead_ms(Some(6_000), 10_000, 20, Starting::Queued),
            6_000 + 750_000 + 5_000 + 59_999
        );
        // Started by the tick, the same fleet takes the longest lead.
        assert_eq!(
            wake_lead_ms(Some(6_000), 10_000, 20, Starting::ByTick),
            LONGEST_LEAD_MS
        );
    }

    #[test]
    fn a_due_lead_never_undercuts_the_lead_kept_with_the_occurrence() {
        let lead = DueLead {
            now_ms: 60_000,
            alone_ms: Some(70_000),
        };
        let mut record = crate::domain::ScheduleRecord {
            key: None,
            timezone: "UTC".into(),
            wake: Some("30 8 * * *".into()),
            sleep: None,
            next_wake_ms: None,
            next_sleep_ms: None,
            next_wake_lead_ms: None,
            keep_ms: None,
            open: None,
            last: None,
            version: 1,
            updated_at: None,
        };
        assert_eq!(lead.of(&record), 0, "no wake: no lead");
        record.next_wake_ms = Some(1);
        assert_eq!(lead.of(&record), 60_000);
        record.next_wake_lead_ms = Some(120_000);
        assert_eq!(lead.of(&record), 120_000);
        record.next_wake_lead_ms = Some(LONGEST_LEAD_MS * 2);
        assert_eq!(lead.of(&record), LONGEST_LEAD_MS);
    }

    #[test]
    fn readinesses_seen_to_the_second_are_planned_by_once_there_are_any() {
        let ticks = Readiness::default().with(&[60_000; 10]);
        assert_eq!(ticks.p95(), Some(60_000));
        let seen = ticks.with_seen(&[4_000, 5_000]);
        assert_eq!(seen.p95(), Some(5_000));
        assert_eq!(seen.samples_ms.len(), 10, "the ticks' kept beside");
        let many = Readiness::default().with_seen(&[3_600_000; 100]);
        assert_eq!(many.seen_ms.len(), SAMPLES_KEPT);
        assert_eq!(many.p95(), Some(LONGEST_SAMPLE_MS));
        // A document written before readinesses were seen reads as none seen, and one with
        // none seen is written as before.
        let old: Readiness = serde_json::from_value(serde_json::json!({"samples_ms": [1]}))
            .expect("an older document");
        assert!(old.seen_ms.is_empty());
        assert_eq!(
            serde_json::to_value(&old).ok(),
            Some(serde_json::json!({"samples_ms": [1]}))
        );
    }

    #[test]
    fn measured_samples_are_kept_at_most_every_ten_seconds() {
        let measured = Measured::default();
        assert!(measured.take_due().is_empty(), "nothing measured");
        measured.add(Kind::Codex, 4_000);
        measured.add(Kind::Codex, 5_000);
        assert_eq!(measured.take_due(), vec![(Kind::Codex, vec![4_000, 5_000])]);
        measured.add(Kind::Codex, 6_000);
        assert!(measured.take_due().is_empty(), "written a moment ago");
    }
}
