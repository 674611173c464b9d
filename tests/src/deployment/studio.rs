//! What a studio does, week after week, from one seed: its people (each with a time zone, an
//! hour they arrive and one they leave, and a few agents), what they do with their agents
//! through the day, the schedules some of them set (short days and days longer than a
//! session), an owner now and then offboarded, and AgentKit's bad hours. Drawn minute by
//! minute, so that the same seed draws the same weeks.

use snapwake::domain::{AgentKey, Kind};

use super::model::ScheduleDef;

/// A person of the studio.
#[derive(Clone, Debug)]
pub struct Person {
    pub name: String,
    /// Their zone, for the schedules they write.
    pub timezone: &'static str,
    /// Their offset from UTC in minutes (habits only; schedules use the zone).
    pub offset_min: i64,
    /// When they usually arrive and leave (local minute of the day).
    pub arrive: u32,
    pub leave: u32,
    /// Whether they set schedules on their agents.
    pub schedules: bool,
    /// How many agents they start with.
    pub agents: usize,
    /// Whether they also have an agent an earlier Studio made (`studio2-`).
    pub legacy: bool,
}

const ZONES: [(&str, i64); 4] = [
    ("Europe/Berlin", 60),
    ("America/New_York", -300),
    ("Asia/Shanghai", 480),
    ("UTC", 0),
];

const NAMES: [&str; 16] = [
    "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory",
    "niaj", "olivia", "peggy", "rupert", "sybil",
];

/// The studio's people, drawn from `rng`.
pub fn people(rng: &mut fastrand::Rng, count: usize) -> Vec<Person> {
    (0..count)
        .map(|i| {
            let (timezone, offset_min) = ZONES[rng.usize(..ZONES.len())];
            let base = NAMES[i % NAMES.len()];
            let name = if i < NAMES.len() {
                base.to_string()
            } else {
                format!("{base}{}", i / NAMES.len())
            };
            Person {
                name,
                timezone,
                offset_min,
                arrive: rng.u32(7 * 60..10 * 60),
                leave: rng.u32(16 * 60 + 30..20 * 60),
                schedules: rng.f64() < 0.4,
                agents: rng.usize(1..=4),
                legacy: rng.f64() < 0.3,
            }
        })
        .collect()
}

/// A schedule a person may write: a short day, an office day, a day longer than a session,
/// mornings only.
pub fn a_schedule(rng: &mut fastrand::Rng, timezone: &str) -> ScheduleDef {
    let days = if rng.f64() < 0.8 { "1-5" } else { "*" };
    let (wake, sleep) = match rng.usize(..4) {
        0 => (format!("30 8 * * {days}"), Some(format!("0 12 * * {days}"))),
        1 => (format!("0 9 * * {days}"), Some(format!("0 18 * * {days}"))),
        2 => (format!("30 8 * * {days}"), Some(format!("0 19 * * {days}"))),
        _ => (format!("45 7 * * {days}"), None),
    };
    ScheduleDef {
        timezone: timezone.to_string(),
        wake: Some(wake),
        sleep,
    }
}

/// Something a person does.
#[derive(Clone, Debug)]
pub enum Act {
    Wake {
        agent: AgentKey,
        tabs: usize,
    },
    Sleep {
        agent: AgentKey,
    },
    Keepalive {
        agent: AgentKey,
    },
    Create {
        kind: Kind,
        recoverable: bool,
    },
    Delete {
        agent: AgentKey,
    },
    DeleteSnapshot {
        agent: AgentKey,
    },
    Schedule {
        agent: AgentKey,
        def: Option<ScheduleDef>,
    },
    List,
}

/// What `person` does in the minute `minute_of_week` (0: Monday 00:00 UTC), given their
/// agents (and whether each has a schedule): each act with the second of the minute it
/// happens at. An agent with a schedule is mostly left to it: one act in ten touches it.
pub fn minute_of(
    rng: &mut fastrand::Rng,
    person: &Person,
    all: &[(AgentKey, bool)],
    minute_of_week: u64,
    day_off: bool,
) -> Vec<(u64, Act)> {
    let touch_scheduled = rng.f64() < 0.1;
    let agents: Vec<AgentKey> = all
        .iter()
        .filter(|(_, scheduled)| touch_scheduled || !scheduled)
        .map(|(k, _)| k.clone())
        .collect();
    let local = (minute_of_week as i64 + person.offset_min).rem_euclid(7 * 1440) as u64;
    let (day, minute) = (local / 1440, (local % 1440) as u32);
    let weekday = day < 5;
    let at_work = weekday && !day_off && minute >= person.arrive && minute < person.leave;
    let mut acts = Vec::new();
    let pick = |rng: &mut fastrand::Rng| agents.get(rng.usize(..agents.len().max(1))).cloned();
    if weekday && !day_off && minute == person.arrive {
        let n = rng.usize(1..=2).min(agents.len());
        for agent in agents.iter().take(n) {
            let tabs = if rng.f64() < 0.3 { rng.usize(2..=4) } else { 1 };
            acts.push((
                rng.u64(0..60),
                Act::Wake {
                    agent: agent.clone(),
                    tabs,
                },
            ));
        }
    } else if weekday && !day_off && minute == person.leave {
        for agent in &agents {
            if rng.f64() < 0.5 {
                acts.push((
                    rng.u64(0..60),
                    Act::Sleep {
                        agent: agent.clone(),
                    },
                ));
            }
        }
    } else if at_work && rng.f64() < 1.0 / 45.0 {
        let Some(agent) = pick(rng) else {
            if all.is_empty() {
                return vec![(
                    rng.u64(0..60),
                    Act::Create {
                        kind: Kind::Codex,
                        recoverable: true,
                    },
                )];
            }
            return acts;
        };
        let second = rng.u64(0..60);
        let roll = rng.f64();
        let act = if roll < 0.25 {
            Act::List
        } else if roll < 0.45 {
            Act::Keepalive { agent }
        } else if roll < 0.62 {
            Act::Wake {
                agent,
                tabs: rng.usize(1..=2),
            }
        } else if roll < 0.74 {
            Act::Sleep { agent }
        } else if roll < 0.79 {
            Act::DeleteSnapshot { agent }
        } else if roll < 0.84 {
            let kind = Kind::ALL[rng.usize(..Kind::ALL.len())];
            Act::Create {
                kind,
                recoverable: rng.f64() < 0.8,
            }
        } else if roll < 0.86 {
            Act::Delete { agent }
        } else if roll < 0.93 && person.schedules {
            let def = (rng.f64() < 0.8).then(|| a_schedule(rng, person.timezone));
            Act::Schedule { agent, def }
        } else {
            return acts;
        };
        acts.push((second, act));
    } else if !weekday && rng.f64() < 1.0 / (60.0 * 24.0) {
        // A weekend visit.
        if let Some(agent) = pick(rng) {
            acts.push((rng.u64(0..60), Act::Wake { agent, tabs: 1 }));
        }
    }
    acts
}
