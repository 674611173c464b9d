//! What watches a deploy run as it goes: the CLI's progress bars, the function's log.

use super::report::EntryReport;

pub trait Progress: Send + Sync {
    fn planned(&self, _entry: &EntryReport) {}
    fn step(&self, _key: &str, _step: &str) {}
    /// An entry is done (any status).
    fn finished(&self, _entry: &EntryReport) {}
}

pub struct NoProgress;
impl Progress for NoProgress {}
