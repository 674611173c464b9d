//! Views agree with AgentKit within one refresh, and nothing snapwake made is lost track of:
//! each owner's list (and an admin's list of everyone) read as they read it, against what
//! AgentKit shows, for agents whose state in AgentKit has held still for two minutes.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;
use snapwake::store::AgentStore;

use super::checks::{at, Truth};
use super::people::People;
use crate::Who;

/// How long AgentKit's state of an agent must have held for its views to show it: the refresh
/// runs every minute, and a change may land just after one.
pub const SETTLED_MS: u64 = 2 * 60_000;

/// What AgentKit's state of an agent is, coarsely.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    Awake,
    Starting,
    Asleep,
    Nothing,
}

impl Shown {
    pub fn of(t: &Truth) -> Shown {
        if t.live.iter().any(|(_, ready)| *ready) {
            Shown::Awake
        } else if !t.live.is_empty() {
            Shown::Starting
        } else if t.ready_snapshots > 0 {
            Shown::Asleep
        } else {
            Shown::Nothing
        }
    }
}

/// Since when each agent has shown what it shows (updated every minute).
#[derive(Default)]
pub struct Stability {
    since: HashMap<String, (Shown, u64)>,
}

impl Stability {
    pub fn update(&mut self, truth: &BTreeMap<String, Truth>, now: u64) {
        for (usid, t) in truth {
            let shown = Shown::of(t);
            let entry = self.since.entry(usid.clone()).or_insert((shown, now));
            if entry.0 != shown {
                *entry = (shown, now);
            }
        }
        for (usid, entry) in self.since.iter_mut() {
            if !truth.contains_key(usid) && entry.0 != Shown::Nothing {
                *entry = (Shown::Nothing, now);
            }
        }
    }

    /// What `usid` has shown for at least [`SETTLED_MS`], if it has held still so long.
    pub fn settled(&self, usid: &str, now: u64) -> Option<Shown> {
        let (shown, since) = self.since.get(usid)?;
        (since + SETTLED_MS <= now).then_some(*shown)
    }
}

/// Every owner's list, and an admin's list of everyone.
pub async fn check(people: &People, stability: &Stability, now: u64) -> Result<(), String> {
    let (owners, agents) = {
        let model = people.model.lock().unwrap_or_else(|p| p.into_inner());
        let owners: Vec<String> = model
            .agents
            .values()
            .map(|a| a.owner.clone())
            .filter(|o| model.offboarding_of(o).is_none())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        (owners, model.agents.clone())
    };
    for owner in &owners {
        let Some(listed) = people.list(Who::User(owner), &[]).await else {
            continue;
        };
        let by_id: HashMap<&str, &Value> = listed
            .iter()
            .filter_map(|v| v["agent_id"].as_str().map(|id| (id, v)))
            .collect();
        for a in agents.values().filter(|a| &a.owner == owner) {
            let usid = a.key.agent_id.as_str();
            let shows = stability.settled(usid, now);
            let exists = shows.is_some_and(|s| s != Shown::Nothing);
            let old = a.known_ms + SETTLED_MS <= now;
            if a.delete_asked_ms.is_some() || !old {
                continue;
            }
            let Some(view) = by_id.get(usid) else {
                // Shown so for two minutes, and still now (not changed during the check).
                if exists && shows == Some(shown_now(people, usid)) {
                    let history = people
                        .model
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .history
                        .get(&a.key)
                        .cloned();
                    let listed: Vec<&str> = by_id.keys().copied().collect();
                    return Err(format!(
                        "{owner}'s list lost {} (AgentKit shows {shows:?}); its record: \
                         {history:#?}; the list: {listed:?}",
                        a.key
                    ));
                }
                continue;
            };
            if a.legacy && view["owner"].as_str() != Some(owner) {
                return Err(format!(
                    "{owner}'s legacy agent {} lists with owner {}",
                    a.key, view["owner"]
                ));
            }
            agrees(people, view, shows, now).await?;
        }
    }
    // An admin's page of everyone names the owner of a legacy agent its owner has acted on
    // (the fingerprint alone names nobody: it is proven only by who asks).
    if let Some(everyone) = people
        .list(Who::Admin("root"), &[("owner", "*"), ("limit", "100")])
        .await
    {
        for view in &everyone {
            let Some(a) = view["agent_id"]
                .as_str()
                .and_then(|id| agents.values().find(|a| a.key.agent_id == id))
            else {
                continue;
            };
            let acted = !a.person_wakes.is_empty() || !a.person_sleeps.is_empty();
            if a.legacy
                && acted
                && a.delete_asked_ms.is_none()
                && view["owner"].as_str() != Some(a.owner.as_str())
            {
                return Err(format!(
                    "an admin's list shows legacy {} with owner {}",
                    a.key, view["owner"]
                ));
            }
        }
    }
    Ok(())
}

/// One view against what AgentKit has shown for two minutes.
async fn agrees(
    people: &People,
    view: &Value,
    shows: Option<Shown>,
    now: u64,
) -> Result<(), String> {
    let id = view["agent_id"].as_str().unwrap_or_default();
    let state = view["state"].as_str().unwrap_or_default();
    if !view["session"].is_null() && view["session"]["created_at"].is_null() {
        return Err(format!(
            "{id}'s view has a session without created_at: {}",
            view["session"]
        ));
    }
    // A change during the check itself (a session expiring at that very second) is not the
    // view's fault.
    if shows.is_some_and(|s| s != shown_now(people, id)) {
        return Ok(());
    }
    let kind = view["kind"].as_str().unwrap_or_default();
    let key =
        snapwake::domain::AgentKey::new(kind.parse().unwrap_or(snapwake::domain::Kind::Codex), id);
    let record = people
        .deployment
        .table
        .memory
        .get(&key)
        .await
        .ok()
        .flatten();
    // The record moved on while the check ran (a person's sleep settling in the check's very
    // second: the list showed it `sleeping`, the version before): not the view's fault either.
    // A view that lags a record written earlier is still checked.
    let etag = view["etag"]
        .as_str()
        .and_then(|e| e.trim_matches('"').parse::<u64>().ok());
    if let (Some(seen), Some(r)) = (etag, record.as_ref()) {
        let written_ms = r
            .updated_at
            .as_deref()
            .and_then(snapwake::ambient::epoch_ms)
            .unwrap_or(0);
        if seen != r.version && written_ms + 1_000 >= now {
            return Ok(());
        }
    }
    let held = record.as_ref().is_some_and(|r| {
        r.state.is_held() && snapwake::lock::LockSettings::default().lease_is_live(r, now)
    });
    // A change in flight (a wake, a sleep, a delete) shows as such.
    let wrong = !held
        && match shows {
            Some(Shown::Awake) => state != "awake",
            Some(Shown::Asleep) => state != "asleep",
            _ => false,
        };
    if wrong {
        let sessions: Vec<_> = people
            .deployment
            .sim
            .sessions()
            .into_iter()
            .filter(|s| s.user_session_id.as_deref() == Some(id))
            .map(|s| (s.session_id, s.status, s.expire_at, s.metadata.len()))
            .collect();
        return Err(format!(
            "at {} {id}'s view says {state}, AgentKit has shown {shows:?} for two minutes \
             (record: {:?}; AgentKit: {sessions:?}; view: {view})",
            at(now),
            record.map(|r| (
                r.state,
                r.version,
                r.session_id,
                r.session_expire_at,
                r.updated_at
            )),
        ));
    }
    Ok(())
}

/// What AgentKit shows of `usid` at this very moment.
fn shown_now(people: &People, usid: &str) -> Shown {
    let mut truth = Truth::default();
    for s in people.deployment.sim.sessions() {
        if s.user_session_id.as_deref() == Some(usid) && s.is_active() {
            truth
                .live
                .push((s.session_id.clone().unwrap_or_default(), s.is_usable()));
        }
    }
    truth.ready_snapshots = people
        .deployment
        .sim
        .snapshots()
        .iter()
        .filter(|s| s.user_session_id.as_deref() == Some(usid) && s.is_wakeable())
        .count();
    Shown::of(&truth)
}
