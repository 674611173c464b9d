//! The invariants of the simulated deployment, checked as the run goes (docs/testing.md, "One
//! simulated deployment"). Each answers the first violation it finds, in words a reader of the
//! trace can follow.

use std::collections::BTreeMap;

use snapwake::domain::{AgentKey, Trigger, WakeState};
use snapwake::identity::belongs_to;
use snapwake::store::RecordChange;

use super::model::{is_resting, unannounced, Announced, Model, LONGEST_LEAD_MS};
use super::world::Deployment;

/// How long after its owner's offboarding was accepted an invocation admitted just before may
/// still send AgentKit what it was admitted for: the longest a request or an event runs
/// before it sends its one action (a request's 28 s, and the clocks' margin).
pub const ADMITTED_FOR_MS: u64 = 30_000;

/// How late after its minute a scheduled wake may be Ready, faults and all (a consumer stopped
/// and its lease lapsed, throttles, a slow table).
pub const WAKE_GRACE_MS: u64 = 5 * 60_000;

/// How long a state change may wait for the bus (it refuses some; every refusal is tried
/// again, in order).
pub const ANNOUNCED_WITHIN_MS: u64 = 10 * 60_000;

/// What AgentKit shows of one agent now.
#[derive(Clone, Debug, Default)]
pub struct Truth {
    /// Its active sessions: id, and whether it is usable (Ready).
    pub live: Vec<(String, bool)>,
    /// Its snapshots that are Ready.
    pub ready_snapshots: usize,
    /// Its snapshots of any status.
    pub snapshots: usize,
}

/// AgentKit's sessions and snapshots, per UserSessionId.
pub fn truth(d: &Deployment) -> BTreeMap<String, Truth> {
    let mut all: BTreeMap<String, Truth> = BTreeMap::new();
    for s in d.sim.sessions() {
        let (Some(usid), true) = (s.user_session_id.clone(), s.is_active()) else {
            continue;
        };
        let id = s.session_id.clone().unwrap_or_default();
        all.entry(usid).or_default().live.push((id, s.is_usable()));
    }
    for s in d.sim.snapshots() {
        let Some(usid) = s.user_session_id.clone() else {
            continue;
        };
        let t = all.entry(usid).or_default();
        t.snapshots += 1;
        if s.is_wakeable() {
            t.ready_snapshots += 1;
        }
    }
    all
}

/// Never two live sessions for one agent; and every session seen is noted (when first seen).
pub fn sessions(
    model: &mut Model,
    truth: &BTreeMap<String, Truth>,
    now: u64,
) -> Result<(), String> {
    for (usid, t) in truth {
        if t.live.len() > 1 {
            return Err(format!(
                "{usid} has {} live sessions: {:?}",
                t.live.len(),
                t.live
            ));
        }
        for (id, _) in &t.live {
            model
                .sessions_seen
                .entry(usid.clone())
                .or_default()
                .entry(id.clone())
                .or_insert(now);
        }
    }
    Ok(())
}

/// No Resume or CreateSession for a deleted agent, nor for an owner whose offboarding was
/// accepted (beyond what was admitted just before). Resumes without a definite answer are
/// noted: their wake may wait out the readiness timeout before it tries again.
pub fn calls(model: &mut Model, d: &Deployment) -> Result<(), String> {
    let calls = d.calls_since(model.calls_checked);
    model.calls_checked += calls.len();
    if calls.is_empty() {
        return Ok(());
    }
    for s in d.sim.snapshots() {
        if let (Some(id), Some(usid)) = (s.snapshot_id, s.user_session_id) {
            model.snapshot_agent.insert(id, usid);
        }
    }
    for call in calls {
        let usid = match call.action.as_str() {
            "ResumeSessionFromSnapshot" => {
                let snapshot = call.body["SnapshotId"].as_str().unwrap_or_default();
                model.snapshot_agent.get(snapshot).cloned()
            }
            "CreateSession" => call.body["UserSessionId"].as_str().map(str::to_string),
            _ => continue,
        };
        let Some(usid) = usid else { continue };
        if call.action == "ResumeSessionFromSnapshot" && call.status.is_none_or(|s| s >= 500) {
            model
                .ambiguous_resumes
                .entry(usid.clone())
                .or_default()
                .push(call.at_ms);
        }
        let Some(agent) = model.by_usid(&usid) else {
            continue;
        };
        if let Some(deleted) = agent.deleted_ms.filter(|t| *t < call.at_ms) {
            return Err(format!(
                "{} sent for {usid} at {}, after its delete answered 204 at {}",
                call.action,
                at(call.at_ms),
                at(deleted)
            ));
        }
        let accepted = model
            .offboarding_of(&agent.owner)
            .and_then(|o| o.accepted_ms)
            .filter(|t| t + ADMITTED_FOR_MS < call.at_ms);
        if let Some(accepted) = accepted {
            return Err(format!(
                "{} sent for {usid} at {}, after {}'s offboarding was accepted at {}",
                call.action,
                at(call.at_ms),
                agent.owner,
                at(accepted)
            ));
        }
    }
    Ok(())
}

/// The table's stream: who acquired each generation, which writes are state changes and the
/// trigger each must be announced with, and no state change left unannounced.
pub fn stream(
    model: &mut Model,
    d: &Deployment,
    changes: &[RecordChange],
    now: u64,
) -> Result<(), String> {
    for change in changes {
        let Some(new) = &change.new else { continue };
        let seq: u64 = change.sequence.parse().unwrap_or(0);
        let landed = d.table.take_landed(seq);
        let old = change.old.as_ref();
        if old.is_some_and(|o| o.version == new.version) {
            continue;
        }
        let acquired = old.map_or(new.fence > 0, |o| new.fence > o.fence);
        model.note_written_ahead(old, new, acquired);
        if let (true, Some(l)) = (acquired, &landed) {
            // A takeover of a lapsed change of the same kind carries that change on, the doing
            // of what started it (docs/events.md, "Triggers").
            let carried = old
                .filter(|o| {
                    o.state == new.state
                        && matches!(
                            o.state,
                            WakeState::Waking
                                | WakeState::Sleeping
                                | WakeState::Creating
                                | WakeState::Deleting
                        )
                })
                .and_then(|o| model.acquired_by.get(&(new.key.clone(), o.fence)).copied());
            model
                .acquired_by
                .insert((new.key.clone(), new.fence), carried.unwrap_or(l.trigger));
        }
        let line = format!(
            "v{} {:?} fence {} lease {} session {:?} by {:?}",
            new.version,
            new.state,
            new.fence,
            new.lease_until_ms,
            new.session_id,
            landed.as_ref().map(|l| (l.trigger, l.under_generation))
        );
        let history = model.history.entry(new.key.clone()).or_default();
        history.push_back(format!("{} {line}", at(now)));
        if history.len() > 12 {
            history.pop_front();
        }
        // With what set off its last announced change (an awake snapwake only learned of is
        // AgentKit's).
        let announced_by = new
            .announced
            .map(|a| a.trigger)
            .or_else(|| model.idle_seen.get(&new.key).and_then(|seen| seen.2));
        model
            .idle_seen
            .insert(new.key.clone(), (new.state, new.idle_at_ms, announced_by));
        let was = model.resting.get(&new.key).copied();
        if is_resting(new.state) {
            model.resting.insert(new.key.clone(), new.state);
        }
        let Some(announced) = new.announced else {
            if let Some(what) = unannounced(was, old.map(|o| o.state), new.state) {
                let live: Vec<_> = d
                    .sim
                    .sessions()
                    .into_iter()
                    .filter(|s| s.user_session_id.as_deref() == Some(new.key.agent_id.as_str()))
                    .map(|s| (s.session_id, s.status))
                    .collect();
                return Err(format!(
                    "{} went {what} at version {} without an announcement ({:?} → {:?}, \
                     rested {was:?}; written by {:?}; AgentKit: {live:?}); its record: {:#?}",
                    new.key,
                    new.version,
                    old.map(|o| (o.state, o.version, o.session_id.clone())),
                    (new.state, new.session_id.clone(), new.error.clone()),
                    landed.as_ref().map(|l| (l.trigger, l.under_generation)),
                    model.history.get(&new.key),
                ));
            }
            continue;
        };
        let expected = match &landed {
            _ if announced.trigger == Trigger::Agentkit => Trigger::Agentkit,
            Some(l) if l.under_generation => model
                .acquired_by
                .get(&(new.key.clone(), new.fence))
                .copied()
                .unwrap_or(l.trigger),
            Some(l) => l.trigger,
            None => announced.trigger,
        };
        model.unpublished.insert(
            (new.key.clone(), new.version),
            Announced {
                at_ms: now,
                expected,
            },
        );
    }
    Ok(())
}

/// The bus: every event of a state change, with the trigger that started it, each agent's in
/// the order of its versions; none left behind for long.
pub fn bus(model: &mut Model, d: &Deployment, seen: &mut usize, now: u64) -> Result<(), String> {
    let fresh: Vec<_> = {
        let published = d.bus.published.lock().unwrap_or_else(|p| p.into_inner());
        published
            .get(*seen..)
            .map(<[_]>::to_vec)
            .unwrap_or_default()
    };
    *seen += fresh.len();
    for event in &fresh {
        let key = AgentKey::new(event.detail.kind, event.detail.agent_id.clone());
        let version: u64 = event
            .detail
            .change_id
            .rsplit('/')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let trigger = event.detail.trigger;
        if let Some(before) = model.published.get(&(key.clone(), version)) {
            if *before != trigger {
                return Err(format!(
                    "{} announced twice, as {before:?} and {trigger:?}",
                    event.detail.change_id
                ));
            }
            continue;
        }
        let Some(announced) = model.unpublished.remove(&(key.clone(), version)) else {
            return Err(format!(
                "{} announced, but no such change was written",
                event.detail.change_id
            ));
        };
        if announced.expected != trigger {
            return Err(format!(
                "{} ({}) announced with trigger {trigger:?}; {:?} started it; its record: {:#?}",
                event.detail.change_id,
                event.detail_type,
                announced.expected,
                model.history.get(&key),
            ));
        }
        if model
            .last_published
            .get(&key)
            .is_some_and(|last| *last > version)
        {
            return Err(format!(
                "{} announced after a later version of {key}",
                event.detail.change_id
            ));
        }
        model.last_published.insert(key.clone(), version);
        model.published.insert((key, version), trigger);
    }
    if let Some(((key, version), a)) = model
        .unpublished
        .iter()
        .find(|(_, a)| a.at_ms + ANNOUNCED_WITHIN_MS < now)
    {
        return Err(format!(
            "{key}/{version}, written at {}, never announced",
            at(a.at_ms)
        ));
    }
    Ok(())
}

/// The progress of every offboarding the studio asked for, as the table keeps it (read
/// without faults).
pub async fn progress(
    people: &super::people::People,
) -> Result<Vec<(String, snapwake::offboarding::Progress)>, String> {
    let owners: Vec<String> = {
        let model = people.model.lock().unwrap_or_else(|p| p.into_inner());
        model.owners.keys().cloned().collect()
    };
    let mut out = Vec::new();
    for owner in owners {
        let read = snapwake::offboarding::progress(&*people.deployment.table.memory, &owner).await;
        match read {
            Ok(Some(p)) => out.push((owner, p)),
            Ok(None) => {}
            Err(e) => return Err(format!("reading {owner}'s offboarding: {e}")),
        }
    }
    Ok(out)
}

/// Every offboarding that says it is finished left nothing of its owner in AgentKit.
pub fn offboardings(
    model: &mut Model,
    progress: &[(String, snapwake::offboarding::Progress)],
    truth: &BTreeMap<String, Truth>,
    now: u64,
) -> Result<(), String> {
    for (owner, progress) in progress {
        let o = model.owners.entry(owner.clone()).or_default();
        o.accepted_ms.get_or_insert(progress.started_at_ms);
        if !progress.is_finished() {
            continue;
        }
        o.finished_ms.get_or_insert(now);
        for (usid, t) in truth {
            if belongs_to(usid, owner) && (!t.live.is_empty() || t.snapshots > 0) {
                return Err(format!(
                    "{owner}'s offboarding is finished, but AgentKit still has {usid}: {} live \
                     sessions, {} snapshots",
                    t.live.len(),
                    t.snapshots
                ));
            }
        }
    }
    Ok(())
}

/// Every scheduled day kept: an agent with a wake and a sleep schedule is awake from its wake
/// (a grace for faults) to the minute before its sleep, and asleep after its sleep, unless a
/// person acted on it, the schedule changed, or AgentKit was down meanwhile.
pub fn windows(model: &mut Model, truth: &BTreeMap<String, Truth>, now: u64) -> Result<(), String> {
    let agents: Vec<_> = model
        .agents
        .values()
        .filter(|a| a.recoverable && a.delete_asked_ms.is_none())
        .filter_map(|a| {
            let (since, def) = a.schedule_at(now)?;
            Some((a.clone(), since, def.clone()))
        })
        .collect();
    for (a, since, def) in agents {
        if model.offboarding_of(&a.owner).is_some() {
            continue;
        }
        let t = truth.get(&a.key.agent_id).cloned().unwrap_or_default();
        let awake = t.live.iter().any(|(_, ready)| *ready);
        let days = model.windows(
            &a.key,
            since,
            &def,
            now.saturating_sub(2 * 86_400_000),
            now + 86_400_000,
        );
        for (i, (wake, sleep)) in days.iter().copied().enumerate() {
            if wake > now {
                break;
            }
            let start = wake.saturating_sub(LONGEST_LEAD_MS);
            let clean = since <= start
                && !a.schedule_changed_within(since, now)
                && !a.person_acted_within(start, now)
                && !model.outage_within(start, now);
            if !clean {
                continue;
            }
            let ambiguous = model
                .ambiguous_resumes
                .get(&a.key.agent_id)
                .is_some_and(|sent| sent.iter().any(|s| *s >= start && *s <= now));
            // An unknown Resume is waited out (the readiness timeout) before another is sent.
            let grace = if ambiguous {
                WAKE_GRACE_MS + 360_000
            } else {
                WAKE_GRACE_MS
            };
            if now >= wake + grace && now + 60_000 <= sleep && !awake {
                return Err(format!(
                    "{} is not awake at {} inside its scheduled day {}–{} ({def:?}); AgentKit: \
                     {t:?}; its record: {:#?}",
                    a.key,
                    at(now),
                    at(wake),
                    at(sleep),
                    model.history.get(&a.key),
                ));
            }
            let next_wake = days.get(i + 1).map(|w| w.0);
            let before_next = next_wake.is_none_or(|w| now + LONGEST_LEAD_MS < w);
            if now >= sleep + WAKE_GRACE_MS && before_next && !t.live.is_empty() {
                return Err(format!(
                    "{} is still awake at {}, after its scheduled sleep at {} ({def:?}); \
                     AgentKit: {t:?}; its record: {:#?}",
                    a.key,
                    at(now),
                    at(sleep),
                    model.history.get(&a.key),
                ));
            }
            if now >= sleep + WAKE_GRACE_MS && now < sleep + WAKE_GRACE_MS + 60_000 {
                model.days_kept += 1;
            }
        }
    }
    Ok(())
}

/// Each scheduled occurrence acted on once: within a window nobody else touched, the agent
/// got at most one new session.
pub fn once(model: &mut Model, now: u64) -> Result<(), String> {
    let agents: Vec<_> = model
        .agents
        .values()
        .filter_map(|a| {
            let (since, def) = a.schedule_at(now)?;
            Some((a.clone(), since, def.clone()))
        })
        .collect();
    for (a, since, def) in agents {
        let days = model.windows(&a.key, since, &def, now.saturating_sub(2 * 86_400_000), now);
        let Some(seen) = model.sessions_seen.get(&a.key.agent_id) else {
            continue;
        };
        for (wake, sleep) in days {
            let start = wake.saturating_sub(LONGEST_LEAD_MS);
            let end = sleep.min(now);
            if since > start
                || a.person_acted_within(start, end)
                || a.schedule_changed_within(since, end)
            {
                continue;
            }
            let new: Vec<&String> = seen
                .iter()
                .filter(|(_, first)| **first >= start && **first <= end)
                .map(|(id, _)| id)
                .collect();
            if new.len() > 1 {
                return Err(format!(
                    "{}'s scheduled day {}–{} started {} sessions: {new:?}",
                    a.key,
                    at(wake),
                    at(sleep),
                    new.len()
                ));
            }
        }
    }
    Ok(())
}

/// An instant, for messages.
pub fn at(ms: u64) -> String {
    snapwake::ambient::format_ms(ms)
}
