//! Usage as an invariant of the simulated deployment (docs/usage.md, docs/testing.md): for
//! every agent the stream's consumer has caught up with, what the table holds — the day rows plus what each
//! record's mark has open — equals, agent by agent and day by day to the second, the count
//! made from the published events alone (`crate::usage_count`). The rows are written through
//! the table's faults (answers lost, calls refused), so a change added twice or lost shows.

use std::collections::BTreeMap;

use snapwake::domain::usage::Tally;
use snapwake::domain::AgentKey;
use snapwake::store::{AgentStore, UsageStore};

use super::Deployment;

/// Days read at most: the simulation runs weeks.
const DAYS_READ: u64 = 400;

/// The usage the table holds and the events' count, compared at `now_ms`.
pub(crate) async fn equals_events(d: &Deployment, now_ms: u64) -> Result<(), String> {
    // An agent with a change still to be consumed (the bus refused it, or it was written since
    // the relay) is compared once it has been.
    let unrelayed = d.unrelayed();
    let now_s = now_ms / 1000;
    let today = now_s / 86_400;
    let memory = &d.table.memory;
    let rows = memory
        .usage_rows(today.saturating_sub(DAYS_READ), today, None)
        .await
        .map_err(|e| format!("usage rows: {e}"))?;
    let mut records = Vec::new();
    let mut after = None;
    loop {
        let page = memory
            .scan_agents(None, 1000, after.as_ref())
            .await
            .map_err(|e| format!("records: {e}"))?;
        records.extend(page.records);
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let mut kept: BTreeMap<(AgentKey, u64), Tally> = BTreeMap::new();
    for part in snapwake::usage::report::parts(&rows, &records, now_s) {
        kept.entry((part.agent, part.day))
            .or_default()
            .add(&part.tally);
    }
    let published = d
        .bus
        .published
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let counted = crate::usage_count::count(&published, now_s);
    let zero = Tally::default();
    let keys: std::collections::BTreeSet<&(AgentKey, u64)> =
        kept.keys().chain(counted.keys()).collect();
    for key in keys.into_iter().filter(|k| !unrelayed.contains(&k.0)) {
        let (k, c) = (
            kept.get(key).unwrap_or(&zero),
            counted.get(key).unwrap_or(&zero),
        );
        if k != c {
            return Err(format!(
                "usage of {} on day {}: the table holds {k:?}, the events count {c:?}",
                key.0, key.1
            ));
        }
    }
    Ok(())
}
