//! The state of one simulator, shared by its HTTP routes and every [`SimControl`] clone:
//! what never changes after start (regions, the token key), the clock, the credentials (a
//! test may rotate them), and everything else behind one lock.
//!
//! [`SimControl`]: crate::SimControl

use std::sync::{Mutex, MutexGuard, RwLock};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use time::OffsetDateTime;

use crate::clock::Clock;
use crate::config::SimConfig;
use crate::counters::Counters;
use crate::faults::Faults;
use crate::limits::Limiter;
use crate::pagination::Tokens;
use crate::state::World;
use snapwake::agentkit::Credentials;

/// Everything behind one lock (never held across an `.await`).
/// An action answered with an error now and carried out later (`Fault::apply_after`).
pub(crate) struct Late {
    pub(crate) due: OffsetDateTime,
    pub(crate) action: &'static str,
    pub(crate) region: String,
    pub(crate) body: Vec<u8>,
}

pub(crate) struct Inner {
    pub(crate) world: World,
    /// Actions still to be carried out late, in the order they were answered.
    pub(crate) late: Vec<Late>,
    pub(crate) faults: Faults,
    pub(crate) fault_rng: StdRng,
    pub(crate) limiter: Limiter,
    /// Only the recorded parts; the derived ones are filled in when read.
    pub(crate) counters: Counters,
}

pub(crate) struct Shared {
    /// The only credentials whose signatures verify; replaced when a test rotates the key.
    credentials: RwLock<Credentials>,
    pub(crate) regions: Vec<String>,
    pub(crate) clock: Clock,
    pub(crate) tokens: Tokens,
    inner: Mutex<Inner>,
}

impl Shared {
    /// A fresh world for `cfg`, with a random token key (tokens of another simulator fail).
    pub(crate) fn new(cfg: &SimConfig) -> Self {
        let key: [u8; 32] = rand::thread_rng().gen();
        Shared {
            credentials: RwLock::new(cfg.credentials.clone()),
            regions: cfg.regions.clone(),
            clock: Clock::default(),
            tokens: Tokens::new(key),
            inner: Mutex::new(Inner {
                world: {
                    let mut w = World::new(cfg.seed, cfg.session_ready_delay, cfg.tool_ready_delay);
                    w.expiry_snapshot_delay = cfg.expiry_snapshot_delay;
                    w
                },
                late: Vec::new(),
                faults: Faults::default(),
                fault_rng: StdRng::seed_from_u64(cfg.seed ^ 0x5eed_fa17),
                limiter: Limiter::new(cfg.rate_limits.clone()),
                counters: Counters::default(),
            }),
        }
    }

    /// Lock, apply due lifecycles, and run `f` with the simulated now.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Inner, OffsetDateTime) -> R) -> R {
        let mut inner = self.lock();
        let now = self.clock.now();
        inner.world.tick(now);
        self.apply_late(&mut inner, now);
        f(&mut inner, now)
    }

    /// Carry out every late action due by `now`, at its due time, as if it had just arrived.
    fn apply_late(&self, inner: &mut Inner, now: OffsetDateTime) {
        while let Some(i) = inner.late.iter().position(|l| l.due <= now) {
            let late = inner.late.remove(i);
            let cx = crate::actions::Ctx {
                region: &late.region,
                now: late.due,
                tokens: &self.tokens,
            };
            let outcome = crate::actions::run(late.action, &mut inner.world, &cx, &late.body);
            tracing::debug!(
                action = late.action,
                applied = outcome.is_ok(),
                "sim: a late action was carried out"
            );
            if outcome.is_ok() {
                *inner
                    .counters
                    .late_applied
                    .entry(late.action.to_string())
                    .or_insert(0) += 1;
            }
        }
    }

    /// The credentials requests must be signed with now.
    pub(crate) fn credentials(&self) -> Credentials {
        self.credentials
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Rotate: from now on only `credentials` verify, as when a key is replaced at Volcengine.
    pub(crate) fn set_credentials(&self, credentials: Credentials) {
        *self.credentials.write().unwrap_or_else(|p| p.into_inner()) = credentials;
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves a consistent-enough world for a test double.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}
