//! How long a kind's sandbox takes to be Ready after a scheduled wake starts, and the lead a wake
//! starts by (docs/schedules.md, "Ready at the minute"): p95 readiness, budget time, margin.

use serde::{Deserialize, Serialize};

use crate::domain::Kind;
use crate::store::update::{update_document, Step};
use crate::store::{AgentStore, DocumentKey, StoreError};

/// The most recent readinesses kept per kind.
pub const SAMPLES_KEPT: usize = 64;
/// The readiness planned by before any is measured: a minute, paid once, far over a sandbox's.
pub const PRIOR_READINESS_MS: u64 = 60_000;
/// A wake longer than this is not a readiness to plan by (a stuck session, a retried wake).
pub const LONGEST_SAMPLE_MS: u64 = 10 * 60_000;
/// Beyond readiness and budget: the tick's own reads and writes, and the poll that sees Ready.
pub const MARGIN_MS: u64 = 5_000;
/// Resumes sent per wake, as planned: a third of a burst's Resumes refused (429) and sent again.
pub const SENDS_PER_WAKE: (u64, u64) = (3, 2);
/// The ticks come a minute apart: a wake that should start between two starts at the first.
pub const TICK_PERIOD_MS: u64 = 60_000;
/// The longest lead: how far ahead of its time the tick reads the schedules.
pub const LONGEST_LEAD_MS: u64 = 15 * 60_000;

const SK: &str = "READINESS";

/// A kind's measured readinesses, oldest first (`READY#<kind>` / `READINESS`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Readiness {
    pub samples_ms: Vec<u64>,
}

fn pk(kind: Kind) -> String {
    format!("READY#{kind}")
}

impl Readiness {
    /// The 95th percentile of the readinesses kept; `None` with nothing measured.
    pub fn p95(&self) -> Option<u64> {
        let mut sorted = self.samples_ms.clone();
        sorted.sort_unstable();
        let at = (sorted.len() * 95).div_ceil(100).checked_sub(1)?;
        sorted.get(at).copied()
    }

    /// With `samples` added (each capped), only the last [`SAMPLES_KEPT`] kept.
    pub fn with(mut self, samples: &[u64]) -> Self {
        let kept = &mut self.samples_ms;
        kept.extend(samples.iter().map(|s| (*s).min(LONGEST_SAMPLE_MS)));
        kept.drain(..kept.len().saturating_sub(SAMPLES_KEPT));
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

    /// Add `samples` for `kind` (a CAS, retried); a sample lost three races is dropped, more come.
    pub async fn record<S: AgentStore>(
        store: &S,
        kind: Kind,
        samples: &[u64],
    ) -> Result<(), StoreError> {
        let pk = pk(kind);
        let key = DocumentKey { pk: &pk, sk: SK };
        update_document(store, key, 3, |kept: Readiness| {
            Step::<_, ()>::Write(kept.with(samples))
        })
        .await?;
        Ok(())
    }
}

/// How long before its minute a wake starts: readiness, the budget's time for `due_that_minute`
/// wakes (each sent [`SENDS_PER_WAKE`] times) and the margin, rounded to the tick before, capped.
pub fn wake_lead_ms(
    readiness_ms: Option<u64>,
    due_that_minute: usize,
    wakes_per_second: u32,
) -> u64 {
    let readiness = readiness_ms.unwrap_or(PRIOR_READINESS_MS);
    let per_second = u64::from(wakes_per_second.max(1));
    let (sends, per_wake) = SENDS_PER_WAKE;
    let due = (due_that_minute as u64 * sends).div_ceil(per_wake);
    // The consumers send the whole minute through: the sends at the budget's rate.
    let budget = (due * 1000).div_ceil(per_second);
    (readiness + budget + MARGIN_MS + TICK_PERIOD_MS - 1).min(LONGEST_LEAD_MS)
}

/// The lead of one schedule's next wake, carried with the occurrence to whoever acts on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DueLead {
    /// For its kind's readiness and its minute's crowd at the tick.
    pub now_ms: u64,
    /// What a new occurrence of its kind is set with: readiness and margin alone (`None`: unknown).
    pub alone_ms: Option<u64>,
}

impl DueLead {
    /// The lead of `record`'s next wake: never less than the lead its views promised the owner.
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
            wake_lead_ms(None, 1, 36),
            wake_lead_ms(Some(PRIOR_READINESS_MS), 1, 36),
            "nothing measured: the prior"
        );
        // 5 s readiness, 100 wakes (150 sends) at 20 a second (7.5 s), 5 s margin, a tick
        // period less 1 ms.
        assert_eq!(
            wake_lead_ms(Some(5_000), 100, 20),
            5_000 + 7_500 + 5_000 + 59_999
        );
        // 10,000 (15,000 sends) at 20 a second: the consumers work the whole minute through,
        // 1,200 sends each, so twelve minutes and a half.
        assert_eq!(
            wake_lead_ms(Some(6_000), 10_000, 20),
            6_000 + 750_000 + 5_000 + 59_999
        );
        // Past 15 minutes: capped.
        assert_eq!(wake_lead_ms(Some(6_000), 20_000, 20), LONGEST_LEAD_MS);
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
            version: 1,
            ..crate::domain::ScheduleRecord::default()
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
    fn an_earlier_document_reads_as_its_samples_to_the_tick() {
        let old: Readiness = serde_json::from_value(serde_json::json!({
            "samples_ms": [60_000, 61_000],
            "seen_ms": [4_000],
        }))
        .expect("an older document");
        assert_eq!(old.p95(), Some(61_000));
        assert_eq!(
            serde_json::to_value(old.with(&[5_000])).ok(),
            Some(serde_json::json!({"samples_ms": [60_000, 61_000, 5_000]}))
        );
    }
}
