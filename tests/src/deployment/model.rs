//! The reference model: what the studio did and what snapwake must therefore have done, kept
//! from the studio's side (its requests and their answers) and from what the deployment's
//! parts show (AgentKit's sessions and calls, the table's stream, the bus). The invariants
//! themselves are checked in `checks.rs`, as the run goes.
//!
//! The model never asks snapwake what should be: what a schedule wants is worked out from its
//! cron text here, who started a change from the write that acquired its generation.

use std::collections::{BTreeMap, HashMap};

use snapwake::domain::{Action, AgentKey, Kind, Trigger, WakeState};
use snapwake::schedule::{Plan, ScheduleBody};

/// How long before a scheduled wake's minute it may be started (the longest lead).
pub const LONGEST_LEAD_MS: u64 = snapwake::schedule::readiness::LONGEST_LEAD_MS;

/// A schedule as a person set it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleDef {
    pub timezone: String,
    pub wake: Option<String>,
    pub sleep: Option<String>,
}

impl ScheduleDef {
    pub fn body(&self) -> ScheduleBody {
        ScheduleBody {
            timezone: Some(self.timezone.clone()),
            wake: self.wake.clone(),
            sleep: self.sleep.clone(),
        }
    }

    /// Its awake windows (a wake's instant, the first sleep after it) from `from_ms` to
    /// `until_ms`; a wake without a sleep schedule has no window to keep.
    pub fn windows(&self, from_ms: u64, until_ms: u64) -> Vec<(u64, u64)> {
        let Ok(plan) = Plan::check(&self.body()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut after = from_ms;
        while let Some(wake) = plan.next(Action::Wake, after) {
            if wake > until_ms {
                break;
            }
            let Some(sleep) = plan.next(Action::Sleep, wake) else {
                break;
            };
            out.push((wake, sleep));
            after = wake;
        }
        out
    }
}

/// One agent, as the studio knows it.
#[derive(Clone, Debug)]
pub struct AgentFacts {
    pub key: AgentKey,
    /// The order the studio got it in (ids are random: this keeps the studio's choices the
    /// same for one seed).
    pub order: usize,
    pub owner: String,
    /// Keeps a snapshot when it sleeps (a scheduled sleep needs one).
    pub recoverable: bool,
    /// A `studio2-` agent an earlier Studio made.
    pub legacy: bool,
    /// Since when snapwake must know it (its create answered, or the seed made).
    pub known_ms: u64,
    /// When its owner asked to delete it, and when that was answered 204.
    pub delete_asked_ms: Option<u64>,
    pub deleted_ms: Option<u64>,
    /// The schedule in force from each instant on (`None`: none).
    pub schedules: Vec<(u64, Option<ScheduleDef>)>,
    /// When a person asked it to sleep, or to wake (each request's start).
    pub person_sleeps: Vec<u64>,
    pub person_wakes: Vec<u64>,
    /// When a person kept it alive (use, to idle sleep, as a wake is).
    pub person_keepalives: Vec<u64>,
}

impl AgentFacts {
    /// The schedule in force at `at_ms`, and since when.
    pub fn schedule_at(&self, at_ms: u64) -> Option<(u64, &ScheduleDef)> {
        let (since, def) = self
            .schedules
            .iter()
            .rev()
            .find(|(from, _)| *from <= at_ms)?;
        def.as_ref().map(|d| (*since, d))
    }

    /// Whether the schedule changed in `(from, to]`.
    pub fn schedule_changed_within(&self, from: u64, to: u64) -> bool {
        self.schedules.iter().any(|(at, _)| *at > from && *at <= to)
    }

    /// When a person last used it (created, woke or kept it alive: idle sleep counts from then).
    pub fn last_used_ms(&self) -> u64 {
        let last = |v: &Vec<u64>| v.last().copied().unwrap_or(0);
        self.known_ms
            .max(last(&self.person_wakes))
            .max(last(&self.person_keepalives))
    }

    /// Whether a person asked anything of its state in `[from, to]`: a sleep, a wake, a delete.
    pub fn person_acted_within(&self, from: u64, to: u64) -> bool {
        let within = |t: &u64| *t >= from && *t <= to;
        self.person_sleeps.iter().any(within)
            || self.person_wakes.iter().any(within)
            || self.delete_asked_ms.is_some_and(|t| t <= to)
    }
}

/// One owner's offboarding as the deployment accepted it (its progress first written).
#[derive(Clone, Debug, Default)]
pub struct Offboarding {
    pub asked_ms: u64,
    pub accepted_ms: Option<u64>,
    pub finished_ms: Option<u64>,
}

/// A state change the table's stream carried, not yet seen on the bus.
#[derive(Clone, Debug)]
pub struct Announced {
    pub at_ms: u64,
    pub expected: Trigger,
}

/// What the model knows.
#[derive(Default)]
pub struct Model {
    pub agents: BTreeMap<AgentKey, AgentFacts>,
    pub owners: BTreeMap<String, Offboarding>,
    /// The last writes of each agent's record, for a violation's message.
    pub history: HashMap<AgentKey, std::collections::VecDeque<String>>,
    /// Each agent's record as the stream last said, for idle sleep's check: its state, idle
    /// time, and what set off its last announced change.
    pub idle_seen: HashMap<AgentKey, (snapwake::domain::WakeState, Option<u64>, Option<Trigger>)>,
    /// The state each agent last rested in (asleep, awake, failed, gone), as the stream said.
    pub resting: HashMap<AgentKey, snapwake::domain::WakeState>,
    /// Who acquired each generation of each agent (its fence): what set off the change it
    /// carries out.
    pub acquired_by: HashMap<(AgentKey, u64), Trigger>,
    /// State changes written and not yet published, by (agent, version).
    pub unpublished: BTreeMap<(AgentKey, u64), Announced>,
    /// Every change published, by (agent, version): the trigger it named.
    pub published: HashMap<(AgentKey, u64), Trigger>,
    /// The last version published for the first time, per agent (the order of the bus).
    pub last_published: HashMap<AgentKey, u64>,
    /// Which agent each snapshot is of (its UserSessionId), as last seen.
    pub snapshot_agent: HashMap<String, String>,
    /// AgentKit calls checked so far.
    pub calls_checked: usize,
    /// Sessions seen per agent: id and when first seen.
    pub sessions_seen: HashMap<String, BTreeMap<String, u64>>,
    /// Windows of time when AgentKit was down for the studio's listings or every call.
    pub outages: Vec<(u64, u64)>,
    /// Resumes that got no definite answer, per agent (UserSessionId): when sent.
    pub ambiguous_resumes: HashMap<String, Vec<u64>>,
    /// Each agent's scheduled days under the schedule in force since an instant, worked out
    /// once up to [`Model::horizon_ms`].
    windows: HashMap<(AgentKey, u64), Vec<(u64, u64)>>,
    /// The end of the run: how far ahead scheduled days are worked out.
    pub horizon_ms: u64,
    /// Scheduled days that ended with their invariants checked.
    pub days_kept: u64,
}

impl Model {
    /// A wake taken over (`acquired`) after its holder wrote ahead that a Resume was going
    /// out: the protocol cannot know whether it went (the holder may have stopped just before
    /// the call), so it waits that Resume out as one whose answer was lost. Long run, seed 1035.
    pub(super) fn note_written_ahead(
        &mut self,
        old: Option<&snapwake::domain::AgentRecord>,
        new: &snapwake::domain::AgentRecord,
        acquired: bool,
    ) {
        if let Some(sent) = old
            .filter(|o| acquired && o.state == WakeState::Waking)
            .and_then(|o| o.resume_sent_at_ms)
        {
            self.ambiguous_resumes
                .entry(new.key.agent_id.clone())
                .or_default()
                .push(sent);
        }
    }

    pub fn agent(&mut self, key: &AgentKey) -> Option<&mut AgentFacts> {
        self.agents.get_mut(key)
    }

    /// A new agent the studio made (or found made).
    #[allow(clippy::too_many_arguments)]
    pub fn add_agent(
        &mut self,
        kind: Kind,
        agent_id: &str,
        owner: &str,
        recoverable: bool,
        legacy: bool,
        known_ms: u64,
    ) {
        let key = AgentKey::new(kind, agent_id);
        let order = self.agents.len();
        self.agents.entry(key.clone()).or_insert(AgentFacts {
            key,
            order,
            owner: owner.to_string(),
            recoverable,
            legacy,
            known_ms,
            delete_asked_ms: None,
            deleted_ms: None,
            schedules: Vec::new(),
            person_sleeps: Vec::new(),
            person_wakes: Vec::new(),
            person_keepalives: Vec::new(),
        });
    }

    /// `key`'s scheduled days (a wake, and the sleep after it) under `def`, in force since
    /// `since`, that began after `from` and before `to`.
    pub fn windows(
        &mut self,
        key: &AgentKey,
        since: u64,
        def: &ScheduleDef,
        from: u64,
        to: u64,
    ) -> Vec<(u64, u64)> {
        let horizon = self.horizon_ms;
        let all = self
            .windows
            .entry((key.clone(), since))
            .or_insert_with(|| def.windows(since.saturating_sub(2 * 86_400_000), horizon));
        all.iter()
            .copied()
            .filter(|(w, _)| *w >= from && *w <= to)
            .collect()
    }

    /// Whether AgentKit was down at any time within `[from, to]`.
    pub fn outage_within(&self, from: u64, to: u64) -> bool {
        self.outages.iter().any(|(a, b)| *a <= to && *b >= from)
    }

    /// The agent whose UserSessionId is `usid`, if the studio knows it.
    pub fn by_usid(&self, usid: &str) -> Option<&AgentFacts> {
        self.agents.values().find(|a| a.key.agent_id == usid)
    }

    /// The owner's offboarding, if one was asked for.
    pub fn offboarding_of(&self, owner: &str) -> Option<&Offboarding> {
        self.owners.get(owner)
    }
}

/// A state the agent rests in between changes.
pub(super) fn is_resting(state: WakeState) -> bool {
    use WakeState::*;
    matches!(state, Asleep | Awake | Failed | Gone)
}

/// The state change a write made, if it is one a watcher must be told of: the agent woke,
/// fell asleep, was deleted (from the state it last rested in), or a wake failed.
pub(super) fn unannounced(
    rested: Option<WakeState>,
    old: Option<WakeState>,
    new: WakeState,
) -> Option<&'static str> {
    use WakeState::*;
    let rested = rested.unwrap_or(Asleep);
    match (rested, old.unwrap_or(Asleep), new) {
        (Gone, _, _) => None,
        (Asleep | Failed, _, Awake) => Some("awake"),
        (Awake, _, Asleep) => Some("asleep"),
        (_, Waking, Failed) => Some("wake_failed"),
        (_, _, Gone) => Some("deleted"),
        _ => None,
    }
}
