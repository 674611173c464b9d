//! What watches a deploy run as it goes ([`Progress`]): the CLI's progress bars, the
//! function's log.

use super::report::EntryReport;

/// Observes a run as it goes (the CLI draws progress bars; the function logs).
pub trait Progress: Send + Sync {
    /// The plan of an entry is known.
    fn planned(&self, _entry: &EntryReport) {}
    /// An entry starts a step.
    fn step(&self, _key: &str, _step: &str) {}
    /// An entry is done (any status).
    fn finished(&self, _entry: &EntryReport) {}
}

/// Observes nothing.
pub struct NoProgress;
impl Progress for NoProgress {}
