//! Fault injection: make chosen actions slow, fail, or fail after doing their work.
//!
//! Faults are checked in the order they were added, after the signature and the throttle.
//! Every matching fault that fires adds its latency; the first firing fault that carries an
//! error decides the answer and later faults are not consulted (so a `next` fault further down
//! keeps its count). A fault fires on its next `n` matching calls, at a rate (with the
//! simulator's seeded RNG, so a run is repeatable for one seed and one order of calls), or
//! always. With `after_apply`, the action is carried out and its answer replaced by the error:
//! a half-succeeded CreateSession, or a lost response; its latency then comes *after* the
//! action (AgentKit acted at once, the answer was late), so a client timeout shorter than the
//! latency models "timed out after AgentKit acted". With `apply_after_ms` the action is not
//! carried out now at all but that much later on the simulated clock (applied by the next call
//! after it is due): an answer lost now, an action AgentKit applies seconds later. A *bare*
//! error has no envelope and no code: a gateway's 503 page, which says nothing of whether the
//! action ran. A fault `naming` some text fires only on calls whose request names it (a
//! snapshot, a session, a Tool): one agent's calls, or a fleet's, and not the rest.

use rand::rngs::StdRng;
use rand::Rng;
use serde::{Deserialize, Serialize};

use super::error::SimError;

/// When a fault fires.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// On the next `n` matching calls, then the fault is removed.
    Next(u32),
    /// On each matching call with this probability (0..=1).
    Rate(f64),
    /// On every matching call until cleared.
    Always,
}

/// The error a fault answers with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultError {
    /// AgentKit error code, e.g. `ServiceUnavailable`, `Throttling`, `ErrCreateSessionFail`
    /// (empty for a bare error).
    #[serde(default)]
    pub code: String,
    /// HTTP status, e.g. 503.
    pub status: u16,
    /// `Retry-After` seconds to send, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// No envelope, no code: just the status and a plain-text body.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bare: bool,
}

/// One injected fault. JSON (control surface):
/// `{"action":"CreateSession","error":{"code":"ErrCreateSessionFail","status":500},
///   "after_apply":true,"latency_ms":0,"trigger":{"next":1}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fault {
    /// The action it applies to (e.g. `ResumeSessionFromSnapshot`); `None` = every action.
    #[serde(default)]
    pub action: Option<String>,
    /// The error to answer; `None` = latency only.
    #[serde(default)]
    pub error: Option<FaultError>,
    /// Extra latency before the action runs, in milliseconds.
    #[serde(default)]
    pub latency_ms: u64,
    /// When it fires.
    pub trigger: Trigger,
    /// Carry the action out, then answer the error.
    #[serde(default)]
    pub after_apply: bool,
    /// Answer the error (after `latency_ms`) without acting now, and carry the action out this
    /// many milliseconds later on the simulated clock: an answer lost, the action applied late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply_after_ms: Option<u64>,
    /// Only calls whose request (its body or query) contains this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub naming: Option<String>,
}

impl Fault {
    /// A fault answering `code` with HTTP `status` on every call of `action` (narrow it with
    /// [`Fault::next`] or [`Fault::rate`]).
    pub fn error(action: Option<&str>, code: &str, status: u16) -> Self {
        Fault {
            action: action.map(str::to_string),
            error: Some(FaultError {
                code: code.into(),
                status,
                retry_after: None,
                bare: false,
            }),
            latency_ms: 0,
            trigger: Trigger::Always,
            after_apply: false,
            apply_after_ms: None,
            naming: None,
        }
    }

    /// A fault answering a bare HTTP `status` (no envelope, no error code) on every call of
    /// `action`, e.g. a gateway's 503.
    pub fn bare(action: Option<&str>, status: u16) -> Self {
        let mut f = Fault::error(action, "", status);
        if let Some(e) = f.error.as_mut() {
            e.bare = true;
        }
        f
    }

    /// A latency-only fault of `ms` milliseconds on every call of `action`.
    pub fn latency(action: Option<&str>, ms: u64) -> Self {
        Fault {
            action: action.map(str::to_string),
            error: None,
            latency_ms: ms,
            trigger: Trigger::Always,
            after_apply: false,
            apply_after_ms: None,
            naming: None,
        }
    }

    /// Fire on the next `n` matching calls only.
    pub fn next(mut self, n: u32) -> Self {
        self.trigger = Trigger::Next(n);
        self
    }

    /// Fire with probability `p` per matching call.
    pub fn rate(mut self, p: f64) -> Self {
        self.trigger = Trigger::Rate(p);
        self
    }

    /// Carry the action out, then answer the error.
    pub fn after_apply(mut self) -> Self {
        self.after_apply = true;
        self
    }

    /// Answer the error now and carry the action out `by` later (simulated time): a
    /// CreateSession, Resume, DeleteSession or CreateSessionSnapshot whose answer was lost and
    /// which AgentKit applies seconds after.
    pub fn apply_after(mut self, by: std::time::Duration) -> Self {
        self.after_apply = false;
        self.apply_after_ms = Some(u64::try_from(by.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// Send `Retry-After: secs` with the error.
    pub fn retry_after(mut self, secs: u64) -> Self {
        if let Some(e) = self.error.as_mut() {
            e.retry_after = Some(secs);
        }
        self
    }

    /// Fire only on calls whose request contains `text` (a snapshot's id, say).
    pub fn naming(mut self, text: &str) -> Self {
        self.naming = Some(text.to_string());
        self
    }

    /// Add `ms` of latency.
    pub fn with_latency(mut self, ms: u64) -> Self {
        self.latency_ms = ms;
        self
    }

    /// Refuse nonsense (a rate outside 0..=1, a status that is not an error).
    pub(crate) fn validate(&self) -> Result<(), SimError> {
        if let Trigger::Rate(p) = self.trigger {
            if !(0.0..=1.0).contains(&p) {
                return Err(SimError::invalid("fault rate must be within 0..=1"));
            }
        }
        if self.apply_after_ms.is_some() && (self.error.is_none() || self.after_apply) {
            return Err(SimError::invalid(
                "apply_after_ms needs an error and excludes after_apply",
            ));
        }
        if let Some(e) = &self.error {
            if !(400..=599).contains(&e.status) || (e.code.is_empty() && !e.bare) {
                return Err(SimError::invalid(
                    "fault error needs a 4xx/5xx status and a code (unless bare)",
                ));
            }
        }
        Ok(())
    }
}

/// What the faults decided for one call.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    pub(crate) latency_ms: u64,
    pub(crate) error: Option<SimError>,
    pub(crate) after_apply: bool,
    pub(crate) apply_after_ms: Option<u64>,
}

impl Verdict {
    /// What sort of fault this call meets, as counted (`Counters::faults_by_kind`): `None`
    /// when it meets none, or only latency under a second.
    pub(crate) fn kind(&self) -> Option<&'static str> {
        Some(match &self.error {
            None if self.latency_ms >= 1_000 => "latency >= 1 s",
            None => return None,
            Some(e) if e.status == 429 => "429",
            Some(_) if self.after_apply => "error after acting",
            Some(_) if self.apply_after_ms.is_some() => "error, acted on later",
            Some(_) => "error before acting",
        })
    }
}

/// The faults in force.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    list: Vec<Fault>,
}

impl Faults {
    pub(crate) fn add(&mut self, f: Fault) {
        self.list.push(f);
    }

    pub(crate) fn clear(&mut self) {
        self.list.clear();
    }

    pub(crate) fn list(&self) -> Vec<Fault> {
        self.list.clone()
    }

    /// Decide the faults of one call of `action`, its request `request` (body and query).
    pub(crate) fn decide(&mut self, action: &str, request: &str, rng: &mut StdRng) -> Verdict {
        let mut v = Verdict::default();
        for f in self.list.iter_mut() {
            if f.action.as_deref().is_some_and(|a| a != action) {
                continue;
            }
            if f.naming.as_deref().is_some_and(|t| !request.contains(t)) {
                continue;
            }
            let fires = match &mut f.trigger {
                Trigger::Next(0) => false,
                Trigger::Next(n) => {
                    *n -= 1;
                    true
                }
                Trigger::Rate(p) => rng.gen_bool(p.clamp(0.0, 1.0)),
                Trigger::Always => true,
            };
            if !fires {
                continue;
            }
            v.latency_ms = v.latency_ms.saturating_add(f.latency_ms);
            if let Some(e) = &f.error {
                v.error = Some(SimError {
                    status: e.status,
                    code: e.code.clone(),
                    message: "injected fault".into(),
                    retry_after: e.retry_after,
                    bare: e.bare,
                });
                v.after_apply = f.after_apply;
                v.apply_after_ms = f.apply_after_ms;
                break;
            }
        }
        self.list.retain(|f| f.trigger != Trigger::Next(0));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn next_n_fires_n_times_then_goes_away() {
        let mut fs = Faults::default();
        let mut rng = StdRng::seed_from_u64(1);
        fs.add(Fault::error(Some("GetTool"), "ServiceUnavailable", 503).next(2));
        assert!(fs.decide("GetSession", "", &mut rng).error.is_none());
        assert_eq!(
            fs.decide("GetTool", "", &mut rng).error.unwrap().status,
            503
        );
        assert!(fs.decide("GetTool", "", &mut rng).error.is_some());
        assert!(fs.decide("GetTool", "", &mut rng).error.is_none());
        assert!(fs.list().is_empty());
    }

    #[test]
    fn a_fault_naming_a_snapshot_fires_on_its_calls_only() {
        let mut fs = Faults::default();
        let mut rng = StdRng::seed_from_u64(1);
        fs.add(Fault::error(None, "Throttling", 429).naming("snap-fleet"));
        let resume = |snapshot: &str| format!(r#"{{"SnapshotId":"{snapshot}"}}?Action=Resume"#);
        let fleet = fs.decide(
            "ResumeSessionFromSnapshot",
            &resume("snap-fleet-1"),
            &mut rng,
        );
        assert_eq!(fleet.error.map(|e| e.status), Some(429));
        let other = fs.decide("ResumeSessionFromSnapshot", &resume("snap-alice"), &mut rng);
        assert!(other.error.is_none());
    }

    #[test]
    fn rate_is_repeatable_for_a_seed() {
        let run = |seed| {
            let mut fs = Faults::default();
            let mut rng = StdRng::seed_from_u64(seed);
            fs.add(Fault::error(None, "Throttling", 429).rate(0.3));
            (0..1000)
                .map(|_| fs.decide("ListSessions", "", &mut rng).error.is_some())
                .collect::<Vec<_>>()
        };
        let a = run(9);
        assert_eq!(a, run(9));
        let hits = a.iter().filter(|h| **h).count();
        assert!((230..370).contains(&hits), "{hits}");
    }
}
