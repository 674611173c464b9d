//! Reading a big snapshot Tool several pages at once (docs/operations.md, *At a million
//! snapshots*). A `NextToken` listing is one page after another: a million snapshots are
//! 10,000 pages, 2,000 s at 200 ms a call, longer than a Lambda may run. AgentKit's listing
//! filters on creation time (`CreateTimeAfter`, `CreateTimeBefore`), so the time range is cut
//! into slices and the slices are read side by side, each through the deployment's AgentKit
//! budget (the calls take their slots like any other, so more slices never means more than
//! the budget allows).
//!
//! Where the snapshots lie in time is not known beforehand (an old deployment, a burst last
//! night). A wide range starts cut where they tend to be (the last hour, the two before, the
//! four before those...: [`first_slices`]); then the slices are found by **bisection**: a slice whose first page says there is
//! more, and that is still wider than [`NARROWEST_S`], is cut in four and the pieces are read;
//! one that is not, is paged through. Dense stretches end up cut fine and empty ones cost one
//! call each; the first page of a cut slice is one call spent to learn where to cut. Once
//! [`SliceSettings::max_slices`] are made, slices are paged through whatever their size.
//!
//! Whether the bounds are inclusive is not documented. A slice `(after, up_to]` (whole seconds,
//! as AgentKit writes `CreatedAt`) is asked for with `CreateTimeAfter = after` and
//! `CreateTimeBefore = up_to + 1 s`, which reads the whole slice under either reading: read as
//! exclusive, exactly its seconds; read as inclusive, a second more on each side. A snapshot
//! whose `CreatedAt` hides a fraction of a second (shown `:05`, made at `:05.3`) is read by
//! both slices that touch second 5, never by neither. The snapshots are de-duplicated by id.
//! An earlier version reached a second further back as well: slices cut down to a second then
//! read each second twice (docs/operations.md).

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
            max_slices: 64,
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

/// A stretch of creation time, `(after, up_to]` in epoch seconds; [`OPEN`]: no upper bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slice {
    after: u64,
    up_to: u64,
}

/// A slice with no upper bound: AgentKit's clock may be ahead of this machine's (the
/// simulator's, in tests, by weeks), so "up to now" would miss what it dates later.
const OPEN: u64 = u64::MAX;

/// How far past the newest snapshot seen an open slice is cut. Snapshots being made now are
/// dated within seconds of it; a wide margin would spend the first cuts on empty future (an
/// hour of it once made a minute's burst four levels of cutting deep).
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
            // Whole under either reading of the bounds (the module's comment).
            create_time_after: Some(format_ms(self.after * 1000)),
            create_time_before: (self.up_to != OPEN).then(|| format_ms((self.up_to + 1) * 1000)),
            ..ListSessionSnapshots::default()
        }
    }

    /// The slice cut in [`PIECES`], or `None` when it is as narrow as slices go. An open
    /// slice is first cut [`AHEAD_S`] past `newest` (the later of this machine's now and the
    /// newest snapshot its first page showed, so an AgentKit clock ahead of ours is followed,
    /// not cut an hour at a time): what lies beyond is one open slice, what lies before is
    /// cut in pieces.
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

/// The slices a read starts from. A range reaching back a few days or less is one slice (a
/// quiet refresh: one call). A wider one is cut where snapshots tend to be: the last hour, the two
/// before it, the four before those, and so on back to its start, and what lies after `now`
/// (AgentKit's clock may be ahead). Halving a range of years down to where a deployment's
/// snapshots lie would take some twenty rounds one after the other; these slices are all
/// asked at once, and only those with more than a page are cut further.
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

/// Ranges reaching further back than this start from [`first_slices`]' cuts.
const GEOMETRIC_FROM_S: u64 = 3 * 24 * 3600;

/// One page to ask for: a slice's first (it may be cut after it) or a later one.
struct Ask {
    slice: Slice,
    next_token: Option<String>,
}

/// Every snapshot of `tool_id` in `region` created after `after_s` (none: since
/// [`ORIGIN_S`]) and up to `up_to_s` (epoch seconds; none: whenever), read in slices side by
/// side.
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
    let now = crate::timestamp::now_ms() / 1000;
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
            .filter_map(|s| s.created_at.as_deref().and_then(crate::timestamp::epoch_ms))
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
