//! What the tick, or the consumer of a due occurrence, did with one schedule.

use std::time::Duration;

use snapwake::domain::{Action, Kind};

/// How late a follow-up may be before the tick sends its occurrence again itself: a minute, the
/// tick's own period.
pub(crate) const FOLLOW_UP_LATE_MS: u64 = 60_000;

/// What the tick did with one schedule.
pub(crate) enum Handled {
    Idle,
    /// Finished with an occurrence; a wake it started and saw reached tells how long its kind
    /// took to be Ready.
    Settled {
        ready: Option<(Kind, u64)>,
    },
    /// Acted on an occurrence just come due; `follow_up`: how soon its consumer looks again.
    Acted {
        action: Action,
        follow_up: Option<Duration>,
    },
    /// Carried on an occurrence an earlier tick started; a wake reached now tells how long its
    /// kind took to be Ready; `follow_up`: how soon its consumer looks again.
    Carried {
        ready: Option<(Kind, u64)>,
        follow_up: Option<Duration>,
    },
    Contended,
    Gone,
}
