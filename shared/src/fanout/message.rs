//! What the tick hands the queue ([`DueOccurrence`]), and why a hand-over may fail.

use serde::{Deserialize, Serialize};

use crate::domain::{AgentKey, AgentRecord, ScheduleRecord};
use crate::schedule::DueLead;

/// One due occurrence of one schedule, as a tick found it (or as its consumer follows it up).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DueOccurrence {
    pub agent: AgentKey,
    /// The tick's time (epoch ms): the consumer decides as of it, as the tick would have.
    pub tick_ms: u64,
    /// Not to be delivered before this (epoch ms): a follow-up, or an idle agent handed over
    /// ahead of its place in the line ([`in_line`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before_ms: Option<u64>,
    /// The schedule's next occurrences when the tick read it: which occurrence this is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleep_ms: Option<u64>,
    /// The schedule item's version the tick read.
    pub version: u64,
    /// How early its wake starts.
    pub lead: DueLead,
    /// Not a schedule's occurrence: an awake agent the tick found idle, to put to sleep
    /// (docs/idle.md). `version` is then the agent record's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub idle: bool,
}

impl DueOccurrence {
    /// The message for `record` (which has a key) due at the tick of `tick_ms`.
    pub fn of(record: &ScheduleRecord, tick_ms: u64, lead: DueLead) -> Option<DueOccurrence> {
        Some(DueOccurrence {
            agent: record.key.clone()?,
            tick_ms,
            wake_ms: record.next_wake_ms,
            sleep_ms: record.next_sleep_ms,
            version: record.version,
            lead,
            not_before_ms: None,
            idle: false,
        })
    }

    /// The message for `record`, an awake agent idle at the tick of `tick_ms`.
    pub fn idle(record: &AgentRecord, tick_ms: u64) -> DueOccurrence {
        DueOccurrence {
            agent: record.key.clone(),
            tick_ms,
            not_before_ms: None,
            wake_ms: None,
            sleep_ms: None,
            version: record.version,
            lead: DueLead::default(),
            idle: true,
        }
    }

    /// The same occurrence to look at again after `wait`, delivered no sooner.
    pub fn follow_up(&self, wait: std::time::Duration) -> DueOccurrence {
        let wait_ms = wait.as_millis() as u64;
        DueOccurrence {
            tick_ms: self.tick_ms + wait_ms,
            not_before_ms: Some(crate::ambient::now_ms() + wait_ms),
            ..self.clone()
        }
    }

    /// How long from now it is to be delivered (a follow-up's wait; none for a tick's).
    pub fn delay(&self) -> std::time::Duration {
        let now = crate::ambient::now_ms();
        let at = self.not_before_ms.unwrap_or(0);
        std::time::Duration::from_millis(at.saturating_sub(now))
    }
}

/// `messages` delivered `per_second` from `now_ms` on, in order: the first at once, each next
/// one `1 / per_second` later. A burst handed over at once would wait in line at the queue's
/// consumers for the same AgentKit slots, ahead of the follow-ups that finish what the first
/// ones started (docs/idle.md, "Everyone at once").
pub fn in_line(messages: &mut [DueOccurrence], per_second: u32, now_ms: u64) {
    let per_second = u64::from(per_second.max(1));
    for (place, message) in (0u64..).zip(messages.iter_mut()) {
        if place > 0 {
            message.not_before_ms = Some(now_ms + place * 1000 / per_second);
        }
    }
}

/// Why occurrences were not handed over. The tick fails, and the next one sends them again.
#[derive(Debug, thiserror::Error)]
pub enum FanoutError {
    #[error("the due-occurrence queue refused {refused} of {sent} messages: {reason}")]
    Refused {
        refused: usize,
        sent: usize,
        reason: String,
    },
    #[error("the due-occurrence queue could not be reached: {0}")]
    Unreachable(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Kind;

    #[test]
    fn a_message_reads_back_as_written_and_a_follow_up_waits_for_its_time() {
        let a = DueOccurrence {
            agent: AgentKey::new(Kind::Codex, "a"),
            tick_ms: 60_000,
            wake_ms: Some(1),
            sleep_ms: None,
            version: 7,
            lead: DueLead::default(),
            not_before_ms: None,
            idle: false,
        };
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<DueOccurrence>(&text).unwrap(), a);
        assert!(a.delay().is_zero(), "a tick's: at once");
        let later = a.follow_up(std::time::Duration::from_secs(5));
        assert!(later.delay() > std::time::Duration::from_secs(4));
        assert_eq!(later.tick_ms, 65_000, "decided as of the tick and the wait");
        let text = serde_json::to_string(&later).unwrap();
        assert_eq!(serde_json::from_str::<DueOccurrence>(&text).unwrap(), later);
    }

    #[test]
    fn messages_in_line_are_delivered_at_the_pace_asked_the_first_at_once() {
        let idle = |id: &str| DueOccurrence {
            agent: AgentKey::new(Kind::Codex, id),
            tick_ms: 60_000,
            wake_ms: None,
            sleep_ms: None,
            version: 3,
            lead: DueLead::default(),
            not_before_ms: None,
            idle: true,
        };
        let mut messages: Vec<DueOccurrence> = ["a", "b", "c", "d"].map(idle).into();
        in_line(&mut messages, 4, 1_000_000);
        let at: Vec<Option<u64>> = messages.iter().map(|m| m.not_before_ms).collect();
        assert_eq!(
            at,
            [None, Some(1_000_250), Some(1_000_500), Some(1_000_750)]
        );
        assert!(
            messages.iter().all(|m| m.tick_ms == 60_000),
            "decided as of the tick"
        );
        // No pace is read as one a second, not as a division by zero.
        in_line(&mut messages, 0, 0);
        assert_eq!(messages[3].not_before_ms, Some(3_000));
    }
}
