//! Bringing one agent's record up to what a Tool's listing says of it: only what is
//! missing, by conditional writes, and never under a held lock.

use std::collections::HashMap;

use futures::StreamExt;

use super::listing::{Seen, ToolListing};
use super::status::MAX_ROUNDS;
use crate::agentkit::types::metadata_value;
use crate::ambient::now_ms;
use crate::ambient::sort_key;
use crate::domain::Description;
use crate::domain::{AgentKey, AgentRecord, Retention, WakeState};
use crate::identity::caller::METADATA_DISPLAY_NAME_KEY;
use crate::identity::user_session_id;
use crate::identity::{belongs_to, UserSessionId};
use crate::invocation::Deadline;
use crate::lock::LockSettings;
use crate::store::{AgentStore, Changes, Condition, StoreError, GET_MANY_KEYS};
use crate::view::{snapshot_views, METADATA_CREATOR_KEY, METADATA_OWNER_KEY};

const WRITE_CONCURRENCY: usize = 16;

/// The descriptive fields a Tool's listing says an agent should have.
pub(super) fn wanted(key: &AgentKey, listing: &ToolListing, seen: &Seen) -> Description {
    let parsed = user_session_id(&key.agent_id).map(UserSessionId::parse);
    let legacy_name = parsed
        .as_ref()
        .and_then(UserSessionId::legacy_name)
        .filter(|n| !n.trim().is_empty())
        .map(str::to_string);
    let mut dated: Vec<(i128, &[crate::agentkit::types::MetadataEntry])> = seen
        .snapshots
        .iter()
        .map(|s| {
            (
                sort_key(s.created_at.as_deref()),
                s.session_metadata.as_slice(),
            )
        })
        .chain(
            seen.sessions
                .iter()
                .map(|s| (sort_key(s.created_at.as_deref()), s.metadata.as_slice())),
        )
        .collect();
    dated.sort_by_key(|(t, _)| std::cmp::Reverse(*t));
    let name = dated.iter().find_map(|(_, m)| {
        metadata_value(m, METADATA_DISPLAY_NAME_KEY)
            .filter(|n| !n.trim().is_empty())
            .map(str::to_string)
    });
    let created_by = dated.iter().find_map(|(_, m)| {
        metadata_value(m, METADATA_CREATOR_KEY)
            .filter(|c| !c.trim().is_empty())
            .map(str::to_string)
    });
    let owner = dated.iter().find_map(|(_, m)| {
        metadata_value(m, METADATA_OWNER_KEY)
            .filter(|o| user_session_id(&key.agent_id).is_some_and(|id| belongs_to(id, o)))
            .map(str::to_string)
    });
    // The oldest thing seen: stable, so the owner index's sort key is too.
    let oldest = seen
        .snapshots
        .iter()
        .map(|s| s.created_at.as_deref())
        .chain(seen.sessions.iter().map(|s| s.created_at.as_deref()))
        .flatten()
        .min_by_key(|t| sort_key(Some(t)))
        .map(str::to_string);
    Description {
        owner,
        owner_key: parsed.as_ref().and_then(UserSessionId::owner_key),
        display_name: name.or(legacy_name),
        created_by,
        retention: Some(listing.retention),
        tool_id: Some(listing.tool_id.clone()),
        region: Some(listing.region.clone()),
        created_at: oldest,
    }
}

/// The fields of `want` that `record` lacks (`None`: nothing to write).
pub(super) fn missing(record: &AgentRecord, want: &Description) -> Option<Description> {
    fn fill<T: Clone>(have: &Option<T>, want: &Option<T>) -> Option<T> {
        if have.is_none() {
            want.clone()
        } else {
            None
        }
    }
    let d = Description {
        owner: fill(&record.description.owner, &want.owner),
        owner_key: fill(&record.description.owner_key, &want.owner_key),
        display_name: fill(&record.description.display_name, &want.display_name),
        created_by: fill(&record.description.created_by, &want.created_by),
        retention: fill(&record.description.retention, &want.retention),
        tool_id: fill(&record.description.tool_id, &want.tool_id),
        region: fill(&record.description.region, &want.region),
        created_at: fill(&record.description.created_at, &want.created_at),
    };
    (d != Description::default()).then_some(d)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upsert {
    Written,
    Unchanged,
    Failed,
    OutOfTime,
}

/// The changes that bring `current` up to what `listing` says of the agent (`None`: nothing).
pub(super) fn changes_for(
    current: Option<&AgentRecord>,
    key: &AgentKey,
    listing: &ToolListing,
    seen: &Seen,
    lock: &LockSettings,
) -> Option<Changes> {
    let want = wanted(key, listing, seen);
    if let Some(r) = current {
        // Deleted or being deleted: not ours to describe; a lock holder's writes keep it current.
        if r.state == WakeState::Gone || lock.is_held(r, now_ms()) {
            return None;
        }
    }
    let mut changes = Changes {
        describe: match current {
            None => Some(want),
            Some(r) => missing(r, &want),
        },
        ..Changes::default()
    };
    // A wake, sleep or delete that wrote the record after the listing began knows the agent
    // better than the listing does: then only what the record lacks is filled in. Records keep
    // whole seconds, so the listing's own second counts as after.
    let newer = current
        .and_then(|r| r.updated_at.as_deref())
        .and_then(crate::ambient::epoch_ms)
        .is_some_and(|at| at + 1000 > listing.listed_at_ms);
    if listing.retention == Retention::Recoverable {
        let summaries = if listing.partial {
            merged(current, &seen.snapshots, newer)
        } else {
            snapshot_views(&seen.snapshots)
        };
        let differ = current.map_or(!summaries.is_empty(), |r| {
            if newer && !listing.partial {
                r.snapshots.is_empty() && !summaries.is_empty()
            } else {
                r.snapshots != summaries
            }
        });
        if differ {
            changes.snapshots = Some(summaries);
        }
    }
    if newer {
        return (changes != Changes::default()).then_some(changes);
    }
    let live = crate::agentkit::types::newest_session(seen.sessions.iter().cloned());
    // The awake session ended by AgentKit's clock: what it kept is the agent's state now.
    if let Some(kept) = current
        .filter(|_| live.is_none())
        .and_then(|r| ended_session(r, listing, seen))
    {
        learned_end(&mut changes, Some(kept));
        return Some(changes);
    }
    // A live session of an agent at rest: the index says it is awake. Learned of an agent not
    // awake (asleep, failed, or with no live record: a create held until its window ended and
    // its record expired, whose session did start), it is announced as AgentKit's doing, as a
    // learned end is (docs/events.md; the simulated deployment found one unannounced: seed
    // 1018).
    if let Some(live) = live {
        let at_rest = current.is_none_or(|r| {
            matches!(
                r.state,
                WakeState::Asleep | WakeState::Failed | WakeState::Awake
            )
        });
        let recorded = current.and_then(|r| r.session_id.as_deref());
        if at_rest && recorded != live.session_id.as_deref() {
            changes.state = Some(WakeState::Awake);
            changes.session_id = Some(live.session_id.clone());
            changes.session_expire_at = Some(live.expire_at.clone());
            changes.session_created_at = Some(live.created_at.clone());
            changes.verified_at_ms = Some(0);
            if current.is_none_or(|r| r.state != WakeState::Awake) {
                changes.announce = Some(crate::domain::Announcement {
                    what: crate::domain::Announce::Awake,
                    trigger: crate::domain::Trigger::Agentkit,
                });
            }
        }
    }
    (changes != Changes::default()).then_some(changes)
}

/// What AgentKit kept of the session `record` says is awake, once the listing shows it over
/// (docs/events.md, "What snapwake learns"): its settled snapshot. A full listing shows a session
/// over by its absence; a partial one only by AgentKit's `Expired` snapshot, since a snapshot
/// someone took of a running session does not end it.
fn ended_session<'a>(
    record: &AgentRecord,
    listing: &ToolListing,
    seen: &'a Seen,
) -> Option<&'a crate::agentkit::types::Snapshot> {
    if record.state != WakeState::Awake || listing.retention != Retention::Recoverable {
        return None;
    }
    let session = record.session_id.as_deref()?;
    let kept = seen
        .snapshots
        .iter()
        .filter(|s| s.session_id.as_deref() == Some(session))
        .max_by_key(|s| sort_key(s.created_at.as_deref()))?;
    let over = if listing.partial {
        kept.reason
            .as_deref()
            .is_some_and(|r| r.eq_ignore_ascii_case(crate::domain::REASON_EXPIRED))
    } else {
        !seen
            .sessions
            .iter()
            .any(|s| s.session_id.as_deref() == Some(session))
    };
    let settled = matches!(
        crate::domain::SnapshotPhase::of(kept.status.as_deref()),
        crate::domain::SnapshotPhase::Ready | crate::domain::SnapshotPhase::Failed
    );
    (over && settled).then_some(kept)
}

/// Record that AgentKit ended the session, keeping `kept`: asleep if it saved the workspace, else
/// failed (`None`: a temporary Tool keeps nothing); announced with trigger `agentkit`.
pub(crate) fn learned_end(changes: &mut Changes, kept: Option<&crate::agentkit::types::Snapshot>) {
    use crate::domain::{failure, Announce, Announcement, SnapshotPhase, Trigger};
    let saved =
        kept.is_some_and(|k| SnapshotPhase::of(k.status.as_deref()) == SnapshotPhase::Ready);
    changes.state = Some(if saved {
        WakeState::Asleep
    } else {
        WakeState::Failed
    });
    *changes = crate::lock::agent::forget_session(std::mem::take(changes));
    if !saved {
        changes.snapshot_id = Some(None);
        let why = match kept {
            Some(kept) => format!(
                "AgentKit ended session {} at its expiry and its snapshot {} failed",
                kept.session_id.as_deref().unwrap_or("?"),
                kept.snapshot_id.as_deref().unwrap_or("?")
            ),
            None => "AgentKit ended the session at its expiry; a temporary agent keeps no \
                     snapshot"
                .to_string(),
        };
        changes.error = Some(Some(failure::recorded_failure(
            failure::SESSION_EXPIRED,
            &why,
        )));
    }
    changes.announce = Some(Announcement {
        what: if saved {
            Announce::Asleep
        } else {
            Announce::WakeFailed
        },
        trigger: Trigger::Agentkit,
    });
}

/// A partial listing's snapshots laid over what `current` summarises, unless the record was
/// written after the listing began (`newer`): that write knows better, and may have deleted a
/// snapshot the listing still shows.
fn merged(
    current: Option<&AgentRecord>,
    listed: &[crate::agentkit::types::Snapshot],
    newer: bool,
) -> Vec<crate::domain::SnapshotView> {
    if newer {
        if let Some(r) = current {
            return r.snapshots.clone();
        }
    }
    let mut all: Vec<crate::agentkit::types::Snapshot> = current
        .map(crate::view::record_snapshots)
        .unwrap_or_default();
    for s in listed {
        let id = s.snapshot_id.as_deref();
        match all
            .iter_mut()
            .find(|have| have.snapshot_id.as_deref() == id)
        {
            Some(have) => *have = s.clone(),
            None => all.push(s.clone()),
        }
    }
    snapshot_views(&all)
}

/// Bring `key`'s record up to what `listing` says of it.
pub async fn index_agent<S: AgentStore>(
    store: &S,
    key: &AgentKey,
    listing: &ToolListing,
    seen: &Seen,
) -> Upsert {
    match store.get(key).await {
        Ok(current) => index_from(store, key, listing, seen, current).await,
        Err(e) => {
            tracing::warn!(agent = %key, error = %e, "index sync: cannot read record");
            Upsert::Failed
        }
    }
}

/// [`index_agent`] for many agents of `listing`'s Tool: records read [`GET_MANY_KEYS`] a
/// request, only changes written, `WRITE_CONCURRENCY` at once; past `deadline`, the rest are
/// [`Upsert::OutOfTime`]. Outcomes come in no particular order.
pub async fn index_many<S: AgentStore>(
    store: &S,
    listing: &ToolListing,
    agents: &[(AgentKey, Seen)],
    deadline: Deadline,
) -> Vec<Upsert> {
    let mut outcomes = Vec::with_capacity(agents.len());
    for chunk in agents.chunks(GET_MANY_KEYS) {
        if deadline.is_past() {
            outcomes.extend(chunk.iter().map(|_| Upsert::OutOfTime));
            continue;
        }
        let keys: Vec<AgentKey> = chunk.iter().map(|(key, _)| key.clone()).collect();
        let mut current: HashMap<AgentKey, AgentRecord> = match store.get_many(&keys).await {
            Ok(records) => records.into_iter().map(|r| (r.key.clone(), r)).collect(),
            Err(e) => {
                tracing::warn!(agents = keys.len(), error = %e, "index sync: cannot read records");
                outcomes.extend(chunk.iter().map(|_| Upsert::Failed));
                continue;
            }
        };
        // The futures made first, then run: a closure in the stream would make the compiler
        // lose that the whole is `Send` (for every lifetime of the tuples it borrows).
        let mut pending = Vec::with_capacity(chunk.len());
        for (key, seen) in chunk {
            pending.push(index_from(store, key, listing, seen, current.remove(key)));
        }
        let indexed: Vec<Upsert> = futures::stream::iter(pending)
            .buffer_unordered(WRITE_CONCURRENCY)
            .collect()
            .await;
        outcomes.extend(indexed);
    }
    outcomes
}

/// [`index_agent`] from `current`, the record as just read.
async fn index_from<S: AgentStore>(
    store: &S,
    key: &AgentKey,
    listing: &ToolListing,
    seen: &Seen,
    mut current: Option<AgentRecord>,
) -> Upsert {
    let lock = LockSettings::default();
    for _ in 0..MAX_ROUNDS {
        let Some(changes) = changes_for(current.as_ref(), key, listing, seen, &lock) else {
            return Upsert::Unchanged;
        };
        let condition = match &current {
            None => Condition::Absent,
            Some(r) => Condition::Version(r.version),
        };
        match store.update(key, &condition, &changes).await {
            Ok(_) => return Upsert::Written,
            Err(StoreError::ConditionFailed { current: c }) => current = c.map(|b| *b),
            Err(e) => {
                tracing::warn!(agent = %key, error = %e, "index sync: cannot write record");
                return Upsert::Failed;
            }
        }
    }
    Upsert::Failed
}

/// Index one agent [`crate::locate::locate`] found: the record a sync would write.
pub async fn index_located<S: AgentStore>(
    store: &S,
    key: &AgentKey,
    found: &crate::locate::Located,
) -> Upsert {
    let listing = ToolListing {
        kind: key.kind,
        tool_id: found.tool_id.clone(),
        region: found.region.clone(),
        retention: found.retention,
        snapshots: Vec::new(),
        sessions: Vec::new(),
        listed_at_ms: now_ms(),
        partial: false,
    };
    let seen = Seen {
        snapshots: found.snapshots.clone(),
        sessions: found.sessions.clone(),
    };
    index_agent(store, key, &listing, &seen).await
}
