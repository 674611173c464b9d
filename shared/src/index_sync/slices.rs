//! Reading a big snapshot Tool several pages at once (docs/operations.md, *At a million
//! snapshots*): a `NextToken` listing, one page after another, is too slow for a Lambda, so the
//! creation-time range is cut into slices read side by side, each call within the AgentKit budget.
//!
//! Slices are found by bisection: a slice whose first page says there is more, and that is wider
//! than [`NARROWEST_S`], is cut in [`PIECES`] and the pieces are read; any other is paged through.
//!
//! Whether the time bounds are inclusive is not documented: a slice `(after, up_to]` (whole
//! seconds) is asked with `CreateTimeAfter = after` and `CreateTimeBefore = up_to + 1 s`, whole
//! under either reading. Snapshots are de-duplicated by id.

use std::collections::{HashSet, VecDeque};

use futures::stream::FuturesUnordered;
use futures::StreamExt;

use crate::agentkit::types::{ListSessionSnapshots, Snapshot, MAX_PAGE_SIZE};
use crate::agentkit::{AgentKit, AgentKitError};
use crate::ambient::format_ms;
use crate::invocation::Deadline;

/// No slice is cut narrower than this: a second's snapshots are one slice, paged through.
pub const NARROWEST_S: u64 = 4;

/// The earliest time a listing with no lower bound reads from (before AgentKit existed).
pub const ORIGIN_S: u64 = 1_577_836_800; // 2020-01-01T00:00:00Z

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceSettings {
    pub concurrency: usize,
    pub max_slices: usize,
    /// Most pages one read makes: a longer listing is an error, not a Lambda's whole budget.
    pub max_pages: usize,
}

impl Default for SliceSettings {
    fn default() -> Self {
        SliceSettings {
            concurrency: 8,
            max_slices: 64,
            // A million snapshots, with room for the cuts.
            max_pages: 12_000,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct SlicedRead {
    /// Every snapshot created in the range, once.
    pub snapshots: Vec<Snapshot>,
    pub calls: u64,
    pub slices: usize,
}

/// A stretch of creation time, `(after, up_to]` in epoch seconds; [`OPEN`]: no upper bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slice {
    after: u64,
    up_to: u64,
}

/// A slice with no upper bound: AgentKit's clock may be ahead of this machine's, so "up to now"
/// would miss what it dates later.
const OPEN: u64 = u64::MAX;

/// How far past the newest snapshot seen an open slice is cut: snapshots being made now are
/// dated within seconds of it, and a wider margin spends the first cuts on empty future.
const AHEAD_S: u64 = 60;

/// A slice that has more than a page is cut in this many: fewer rounds one after the other
/// than halving, for a few more calls on stretches that turn out empty.
const PIECES: u64 = 4;

impl Slice {
    fn request(&self, tool_id: &str, next_token: Option<String>) -> ListSessionSnapshots {
        ListSessionSnapshots {
            tool_id: tool_id.to_string(),
            max_results: Some(MAX_PAGE_SIZE),
            next_token,
            create_time_after: Some(format_ms(self.after * 1000)),
            create_time_before: (self.up_to != OPEN).then(|| format_ms((self.up_to + 1) * 1000)),
            ..ListSessionSnapshots::default()
        }
    }

    /// The slice cut in [`PIECES`] (`None`: as narrow as slices go). An open slice is first cut
    /// [`AHEAD_S`] past `newest`, following an AgentKit clock ahead of ours; the rest stays open.
    fn pieces(&self, newest: u64) -> Option<Vec<Slice>> {
        if self.up_to == OPEN {
            let cut = self.after.max(newest) + AHEAD_S;
            let mut out = Slice {
                after: self.after,
                up_to: cut,
            }
            .pieces(newest)
            .unwrap_or_else(|| {
                vec![Slice {
                    after: self.after,
                    up_to: cut,
                }]
            });
            out.push(Slice {
                after: cut,
                up_to: OPEN,
            });
            return Some(out);
        }
        let width = self.up_to.saturating_sub(self.after);
        (width >= NARROWEST_S).then(|| {
            let step = width.div_ceil(PIECES);
            (0..PIECES)
                .map(|i| Slice {
                    after: self.after + i * step,
                    up_to: (self.after + (i + 1) * step).min(self.up_to),
                })
                .filter(|s| s.up_to > s.after)
                .collect()
        })
    }
}

/// The slices a read starts from: one for a range reaching back a few days or less (a quiet
/// refresh: one call); else cuts where snapshots tend to be (the last hour, the two before, the
/// four before those, ...) and after `now`, asked at once instead of twenty rounds of halving.
fn first_slices(whole: Slice, now: u64) -> Vec<Slice> {
    const HOUR: u64 = 3600;
    if now.saturating_sub(whole.after) <= GEOMETRIC_FROM_S {
        return vec![whole];
    }
    let mut cuts = vec![now.min(whole.up_to)];
    let mut back = HOUR;
    while now.saturating_sub(back) > whole.after {
        // A range that ends before now is cut only within itself.
        if now - back < whole.up_to {
            cuts.push(now - back);
        }
        back *= 2;
    }
    cuts.push(whole.after);
    cuts.reverse();
    let mut slices: Vec<Slice> = cuts
        .windows(2)
        .map(|w| Slice {
            after: w[0],
            up_to: w[1],
        })
        .collect();
    if whole.up_to > now {
        slices.push(Slice {
            after: now,
            up_to: whole.up_to,
        });
    }
    slices
}

const GEOMETRIC_FROM_S: u64 = 3 * 24 * 3600;

/// One page to ask for: a slice's first (it may be cut after it) or a later one.
struct Ask {
    slice: Slice,
    next_token: Option<String>,
}

/// Every snapshot of `tool_id` in `region` created in `(after_s, up_to_s]` (epoch seconds; none:
/// since [`ORIGIN_S`], whenever), read in slices side by side.
pub async fn snapshots_between<K: AgentKit>(
    agentkit: &K,
    region: &str,
    tool_id: &str,
    (after_s, up_to_s): (Option<u64>, Option<u64>),
    settings: SliceSettings,
    deadline: Deadline,
) -> Result<SlicedRead, AgentKitError> {
    let whole = Slice {
        after: after_s.unwrap_or(ORIGIN_S),
        up_to: up_to_s.unwrap_or(OPEN),
    };
    let now = crate::ambient::now_ms() / 1000;
    let first = first_slices(whole, now);
    let mut asks: VecDeque<Ask> = first
        .iter()
        .map(|&slice| Ask {
            slice,
            next_token: None,
        })
        .collect();
    let mut in_flight = FuturesUnordered::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut read = SlicedRead {
        slices: first.len(),
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
        let newest = page
            .snapshots
            .iter()
            .filter_map(|s| s.created_at.as_deref().and_then(crate::ambient::epoch_ms))
            .max()
            .map_or(now, |ms| now.max(ms / 1000));
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
        match ask.slice.pieces(newest) {
            Some(pieces) if first_page && read.slices < settings.max_slices => {
                // Cut: the page just read is kept (the pieces read it again, and the ids
                // de-duplicate), its token dropped.
                read.slices += pieces.len() - 1;
                asks.extend(pieces.into_iter().map(|slice| Ask {
                    slice,
                    next_token: None,
                }));
            }
            _ => asks.push_back(Ask {
                slice: ask.slice,
                next_token: Some(token),
            }),
        }
    }
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wide_range_starts_cut_back_from_now_and_a_narrow_one_whole() {
        let now = 1_800_000_000;
        let narrow = Slice {
            after: now - 600,
            up_to: OPEN,
        };
        assert_eq!(first_slices(narrow, now), vec![narrow]);
        // Cut: up to a minute past now in four, the rest open.
        let pieces = narrow.pieces(now).unwrap();
        assert_eq!(pieces.len(), 5, "{pieces:?}");
        assert_eq!(
            pieces[4],
            Slice {
                after: now + AHEAD_S,
                up_to: OPEN
            }
        );
        for w in pieces.windows(2) {
            assert_eq!(w[0].up_to, w[1].after);
        }
        let wide = Slice {
            after: ORIGIN_S,
            up_to: OPEN,
        };
        let slices = first_slices(wide, now);
        // Contiguous, covering the range, the last hour one slice, the future one more.
        assert_eq!(slices[0].after, wide.after);
        assert_eq!(slices[slices.len() - 1].up_to, wide.up_to);
        for w in slices.windows(2) {
            assert_eq!(w[0].up_to, w[1].after);
        }
        assert!(slices.contains(&Slice {
            after: now - 3600,
            up_to: now
        }));
        assert!(slices.len() < 20, "{}", slices.len());

        // A range that ended days ago: cut only within itself, never past its end.
        let past = Slice {
            after: now - 40 * 24 * 3600,
            up_to: now - 5 * 24 * 3600,
        };
        let slices = first_slices(past, now);
        assert_eq!(slices[0].after, past.after);
        assert_eq!(slices[slices.len() - 1].up_to, past.up_to);
        for w in slices.windows(2) {
            assert_eq!(w[0].up_to, w[1].after);
        }
        assert!(slices.iter().all(|s| s.after < s.up_to), "{slices:?}");
    }
}
