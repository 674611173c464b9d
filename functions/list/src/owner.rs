//! One owner's agents (the caller's, or the one an admin names with `owner=<id>`).
//!
//! Two ways to find the asleep ones, one answer:
//!
//! - **index** (once a full index sync has covered every snapshot Tool asked about): the
//!   owner's records from the owner index (both owner keys: one query each), their snapshots
//!   as the records summarise them — kept current by every snapwake write, the minute refresh
//!   and the hourly sweep — so the list costs no AgentKit call per agent (the answer's `as_of`
//!   says how fresh they are; a wake reads the agent live anyway);
//! - **scan** (before that): every snapshot of every snapshot Tool, kept when its
//!   UserSessionId belongs to the owner (as the reference Studio did), so no agent is missing
//!   while the index is not yet trusted. The records still come from the owner index, to show
//!   wakes in flight and failures.
//!
//! Both add the live sessions: one `Username`-filtered ListSessions per Tool of every kind
//! (temporary and recoverable), each session kept only when its UserSessionId belongs to the
//! owner (metadata is free text; the id is the proof).

use snapwake::agentkit::port::AGENT_SESSION_PAGES;
use snapwake::agentkit::types::{ListSessionSnapshots, Session, Snapshot, MAX_PAGE_SIZE};
use snapwake::agentkit::{AgentKit, Pager};
use snapwake::domain::{AgentKey, AgentRecord, Kind, Retention, ToolRegistry, WakeState};
use snapwake::error::Result;
use snapwake::identity::user_session_id;
use snapwake::identity::{belongs_to, owner_keys};
use snapwake::index_sync::agent_of;
use snapwake::invocation::Deadline;
use snapwake::locate::regions;
use snapwake::store::AgentStore;

use crate::gather::{list_on_tool, retention_of, sessions_of_owner, tools_of, Collected, Missing};

/// Most agents one list answers with.
pub const MAX_AGENTS: usize = 1000;
/// Pages of a snapshot Tool the scan reads (100 snapshots each).
const SCAN_PAGES: usize = 2000;
/// Owner-index pages read per owner key (of [`MAX_AGENTS`] records each). Tombstones and
/// ended temporary agents stay in the index for a while without being listed, so more than
/// one page may be needed to find 1000 live agents; an owner with more records than this is
/// answered `truncated`.
const INDEX_PAGES: usize = 10;

/// How the asleep agents are found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    Index,
    Scan,
}

/// What is known about `owner`'s agents of `kinds`; `true` when the owner index held more
/// records than one list reads.
pub async fn collect<S: AgentStore, K: AgentKit>(
    store: &S,
    agentkit: &K,
    registry: &ToolRegistry,
    owner: &str,
    kinds: &[Kind],
    path: Path,
    deadline: Deadline,
) -> Result<(Collected, bool)> {
    let regions: Vec<String> = regions(registry, agentkit)
        .into_iter()
        .map(str::to_string)
        .collect();
    let [current, legacy] = owner_keys(owner);
    let (a, b) = futures::join!(
        owner_records(store, &current),
        owner_records(store, &legacy)
    );
    let ((a, more_a), (b, more_b)) = (a?, b?);
    let truncated = more_a || more_b;
    let mut c = Collected::default();
    for record in a.into_iter().chain(b) {
        if kinds.contains(&record.key.kind) {
            c.records.insert(record.key.clone(), record);
        }
    }

    let sessions = live_sessions(agentkit, registry, &regions, owner, kinds, deadline);
    match path {
        Path::Index => {
            let asleep: Vec<(AgentKey, Vec<Snapshot>)> = c
                .records
                .values()
                .filter(|r| r.state != WakeState::Gone && !r.snapshots.is_empty())
                .filter(|r| r.description.retention != Some(Retention::Temporary))
                .map(|r| (r.key.clone(), snapwake::view::record_snapshots(r)))
                .collect();
            merge_sessions(&mut c, sessions.await);
            for (key, snaps) in asleep {
                c.add_snapshots(key, snaps);
            }
            recorded_sessions(&mut c);
        }
        Path::Scan => {
            let scan = scan_snapshots(agentkit, registry, &regions, owner, kinds, deadline);
            let (sessions, (found, missing)) = futures::join!(sessions, scan);
            merge_sessions(&mut c, sessions);
            for (key, snaps) in found {
                c.add_snapshots(key, snaps);
            }
            c.missing.extend(missing);
            recorded_sessions(&mut c);
        }
    }
    Ok((c, truncated))
}

/// Every record under `owner_key` (up to [`INDEX_PAGES`] pages), and whether more remain.
/// Usually one query: only an owner with over [`MAX_AGENTS`] records needs a second.
async fn owner_records<S: AgentStore>(
    store: &S,
    owner_key: &str,
) -> Result<(Vec<AgentRecord>, bool)> {
    let mut records = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..INDEX_PAGES {
        let page = store
            .query_owner(owner_key, MAX_AGENTS as u32, cursor.as_deref())
            .await?;
        records.extend(page.records);
        let live = records
            .iter()
            .filter(|r| r.state != WakeState::Gone)
            .count();
        match page.cursor {
            Some(next) if live <= MAX_AGENTS => cursor = Some(next),
            // More candidates than a list holds: the rest would only be cut off.
            Some(_) => return Ok((records, true)),
            None => return Ok((records, false)),
        }
    }
    Ok((records, cursor.is_some()))
}

/// The sessions the records say are live that no owner listing found: a session resumed from
/// a snapshot without metadata carries no `Username` (an earlier Studio's agent), so the
/// owner's filtered listing cannot see it. The record is as fresh as the last write of a
/// wake, a keepalive or the refresh, and knows when the session expires.
fn recorded_sessions(c: &mut Collected) {
    let now = snapwake::ambient::now_ms();
    let unseen: Vec<(AgentKey, Retention, Session)> = c
        .records
        .values()
        .filter(|r| {
            !c.sessions
                .get(&r.key)
                .is_some_and(|s| s.iter().any(Session::is_active))
        })
        .filter_map(|r| {
            let session = snapwake::view::recorded_session(r, now)?;
            let retention = r.description.retention.unwrap_or(Retention::Recoverable);
            Some((r.key.clone(), retention, session))
        })
        .collect();
    for (key, retention, session) in unseen {
        c.add_sessions(key, retention, vec![session]);
    }
}

type Found = Vec<(AgentKey, Retention, Vec<Session>)>;

fn merge_sessions(c: &mut Collected, (found, missing): (Found, Vec<Missing>)) {
    for (key, retention, sessions) in found {
        c.add_sessions(key, retention, sessions);
    }
    c.missing.extend(missing);
}

/// The owner's sessions on every Tool of `kinds`, one filtered listing per Tool.
async fn live_sessions<K: AgentKit>(
    agentkit: &K,
    registry: &ToolRegistry,
    regions: &[String],
    owner: &str,
    kinds: &[Kind],
    deadline: Deadline,
) -> (Found, Vec<Missing>) {
    let tools = tools_of(registry, kinds, true);
    let answers = futures::future::join_all(tools.iter().map(|(kind, tool)| async move {
        let request = sessions_of_owner(tool, owner);
        (
            *kind,
            tool,
            list_on_tool(agentkit, regions, request, AGENT_SESSION_PAGES, deadline).await,
        )
    }))
    .await;
    let mut found: Found = Vec::new();
    let mut missing = Vec::new();
    for (kind, tool, answer) in answers {
        match answer {
            Ok((_, sessions)) => {
                let retention = retention_of(registry, kind, tool);
                for s in sessions {
                    let Some(usid) = s.user_session_id.as_deref() else {
                        continue;
                    };
                    if user_session_id(usid).is_none() || !belongs_to(usid, owner) {
                        continue;
                    }
                    found.push((AgentKey::new(kind, usid), retention, vec![s]));
                }
            }
            Err((region, e)) => missing.push(Missing::new(kind, tool, region.as_deref(), &e)),
        }
    }
    (found, missing)
}

/// Every snapshot of the snapshot Tools of `kinds` that belongs to `owner`, by agent.
async fn scan_snapshots<K: AgentKit>(
    agentkit: &K,
    registry: &ToolRegistry,
    regions: &[String],
    owner: &str,
    kinds: &[Kind],
    deadline: Deadline,
) -> (Vec<(AgentKey, Vec<Snapshot>)>, Vec<Missing>) {
    let mut found: Vec<(AgentKey, Vec<Snapshot>)> = Vec::new();
    let mut missing = Vec::new();
    for (kind, tool) in tools_of(registry, kinds, false) {
        match scan_tool(agentkit, regions, kind, &tool, owner, deadline).await {
            Ok(mut agents) => found.append(&mut agents),
            Err(m) => missing.push(m),
        }
    }
    (found, missing)
}

async fn scan_tool<K: AgentKit>(
    agentkit: &K,
    regions: &[String],
    kind: Kind,
    tool: &str,
    owner: &str,
    deadline: Deadline,
) -> std::result::Result<Vec<(AgentKey, Vec<Snapshot>)>, Missing> {
    let mut last = None;
    'regions: for region in regions {
        let request = ListSessionSnapshots {
            tool_id: tool.to_string(),
            max_results: Some(MAX_PAGE_SIZE),
            ..ListSessionSnapshots::default()
        };
        let mut pager = Pager::new(agentkit, region, request, SCAN_PAGES);
        let mut by_agent: std::collections::BTreeMap<AgentKey, Vec<Snapshot>> = Default::default();
        let mut first = true;
        loop {
            match pager.next_page(deadline).await {
                Ok(Some(page)) => {
                    first = false;
                    for s in page {
                        let owned = s
                            .user_session_id
                            .as_deref()
                            .is_some_and(|u| belongs_to(u, owner));
                        if let Some(key) = agent_of(kind, &s).filter(|_| owned) {
                            by_agent.entry(key).or_default().push(s);
                        }
                    }
                }
                Ok(None) => return Ok(by_agent.into_iter().collect()),
                Err(e) if first && e.is_not_found() => {
                    last = Some(e);
                    continue 'regions;
                }
                Err(e) => return Err(Missing::new(kind, tool, Some(region), &e)),
            }
        }
    }
    let e = last.unwrap_or(snapwake::agentkit::AgentKitError::NotFound {
        action: "ListSessionSnapshots",
        message: "no region configured".into(),
    });
    Err(Missing::new(kind, tool, None, &e))
}
