//! Reading a big snapshot Tool several pages at once (docs/operations.md, *At a million
//! snapshots*). A `NextToken` listing is one page after another: a million snapshots are
//! 10,000 pages, 2,000 s at 200 ms a call, longer than a Lambda may run. AgentKit's listing
//! filters on creation time (`CreateTimeAfter`, `CreateTimeBefore`), so the time range is cut
//! into slices and the slices are read side by side, each through the deployment's AgentKit
//! budget (the calls take their slots like any other, so more slices never means more than
//! the budget allows).
//!
//! Where the snapshots lie in time is not known beforehand (an old deployment, a burst last
//! night), so the slices are found by **bisection**: a slice whose first page says there is
//! more, and that is still wider than [`NARROWEST_S`], is cut in two and both halves are read;
//! one that is not, is paged through. Dense stretches end up cut fine and empty ones cost one
//! call each; the first page of a cut slice is one call spent to learn where to cut. Once
//! [`SliceSettings::max_slices`] are made, slices are paged through whatever their size.
//!
//! Whether the bounds are inclusive is not documented, so each request reaches a second past
//! its slice on both sides and the snapshots are de-duplicated by id: a snapshot on a boundary
//! is read twice, never missed. Times are whole seconds, as AgentKit writes `CreatedAt`.

use std::collections::{HashSet, VecDeque};

use futures::stream::FuturesUnordered;
use futures::StreamExt;

use crate::agentkit::types::{ListSessionSnapshots, Snapshot, MAX_PAGE_SIZE};
use crate::agentkit::{AgentKit, AgentKitError};
use crate::deadline::Deadline;
use crate::timestamp::format_ms;

/// No slice is cut narrower than this: a second's snapshots are one slice, paged through.
pub const NARROWEST_S: u64 = 4;

/// The earliest time a listing with no lower bound reads from (before AgentKit existed).
pub const ORIGIN_S: u64 = 1_577_836_800; // 2020-01-01T00:00:00Z

/// How far ahead of this machine's clock a listing reads: AgentKit's clock (the simulator's
/// in tests, weeks ahead) may date a snapshot later than this machine's `now`.
const HORIZON: u64 = 10 * 365 * 24 * 3600;

/// The upper bound of a read "up to now": [`HORIZON`] past this machine's clock.
pub fn horizon_s() -> u64 {
    crate::timestamp::now_ms() / 1000 + HORIZON
}

/// How a Tool is read in slices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceSettings {
    /// Pages requested at once.
    pub concurrency: usize,
    /// Most slices one read makes.
    pub max_slices: usize,
    /// Most pages one read makes (a listing longer than this is an error, not a Lambda's
    /// whole budget).
    pub max_pages: usize,
}

impl Default for SliceSettings {
    fn default() -> Self {
        SliceSettings {
            concurrency: 8,
            max_slices: 256,
            // A million snapshots, with room for the cuts.
            max_pages: 12_000,
        }
    }
}

/// What a sliced read found.
#[derive(Clone, Debug, Default)]
pub struct SlicedRead {
    /// Every snapshot created in the range, once.
    pub snapshots: Vec<Snapshot>,
    /// Pages requested.
    pub calls: u64,
    /// Slices the range ended up cut into.
    pub slices: usize,
}

/// A stretch of creation time, `(after, up_to]` in epoch seconds.
#[derive(Clone, Copy, Debug)]
struct Slice {
    after: u64,
    up_to: u64,
}

impl Slice {
    fn request(&self, tool_id: &str, next_token: Option<String>) -> ListSessionSnapshots {
        ListSessionSnapshots {
            tool_id: tool_id.to_string(),
            max_results: Some(MAX_PAGE_SIZE),
            next_token,
            // A second of overlap each way: the bounds' inclusiveness is undocumented.
            create_time_after: Some(format_ms(self.after.saturating_sub(1) * 1000)),
            create_time_before: Some(format_ms((self.up_to + 1) * 1000)),
            ..ListSessionSnapshots::default()
        }
    }

    fn halves(&self) -> Option<(Slice, Slice)> {
        let width = self.up_to.saturating_sub(self.after);
        (width >= NARROWEST_S).then(|| {
            let mid = self.after + width / 2;
            (
                Slice {
                    after: self.after,
                    up_to: mid,
                },
                Slice {
                    after: mid,
                    up_to: self.up_to,
                },
            )
        })
    }
}

/// One page to ask for: a slice's first (it may be cut after it) or a later one.
struct Ask {
    slice: Slice,
    next_token: Option<String>,
}

/// Every snapshot of `tool_id` in `region` created after `after_s` (none: since
/// [`ORIGIN_S`]) and up to `up_to_s` (epoch seconds), read in slices side by side.
pub async fn snapshots_between<K: AgentKit>(
    agentkit: &K,
    region: &str,
    tool_id: &str,
    (after_s, up_to_s): (Option<u64>, u64),
    settings: SliceSettings,
    deadline: Deadline,
) -> Result<SlicedRead, AgentKitError> {
    let whole = Slice {
        after: after_s.unwrap_or(ORIGIN_S),
        up_to: up_to_s,
    };
    let mut asks = VecDeque::from([Ask {
        slice: whole,
        next_token: None,
    }]);
    let mut in_flight = FuturesUnordered::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut read = SlicedRead {
        slices: 1,
        ..SlicedRead::default()
    };
    let concurrency = settings.concurrency.max(1);
    loop {
        while in_flight.len() < concurrency {
            let Some(ask) = asks.pop_front() else { break };
            if read.calls as usize >= settings.max_pages {
                return Err(AgentKitError::InvalidResponse {
                    action: "ListSessionSnapshots",
                    detail: format!("listing has more than {} pages", settings.max_pages),
                });
            }
            read.calls += 1;
            let request = ask.slice.request(tool_id, ask.next_token.clone());
            in_flight.push(async move {
                let page = agentkit.call(region, &request, deadline).await;
                (ask, page)
            });
        }
        let Some((ask, page)) = in_flight.next().await else {
            break;
        };
        let page = page?;
        for snapshot in page.snapshots {
            let fresh = match snapshot.snapshot_id.as_deref() {
                Some(id) => seen.insert(id.to_string()),
                None => true,
            };
            if fresh {
                read.snapshots.push(snapshot);
            }
        }
        let Some(token) = page.next_token.filter(|t| !t.is_empty()) else {
            continue;
        };
        if token == ask.next_token.as_deref().unwrap_or_default() {
            return Err(AgentKitError::InvalidResponse {
                action: "ListSessionSnapshots",
                detail: "NextToken repeated: the listing would loop".into(),
            });
        }
        let first_page = ask.next_token.is_none();
        match ask.slice.halves() {
            Some((older, newer)) if first_page && read.slices < settings.max_slices => {
                // Cut: the page just read is kept (the halves read it again, and the ids
                // de-duplicate), its token dropped.
                read.slices += 1;
                asks.push_back(Ask {
                    slice: older,
                    next_token: None,
                });
                asks.push_back(Ask {
                    slice: newer,
                    next_token: None,
                });
            }
            _ => asks.push_back(Ask {
                slice: ask.slice,
                next_token: Some(token),
            }),
        }
    }
    Ok(read)
}
