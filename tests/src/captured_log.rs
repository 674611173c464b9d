//! [`CapturedLog`]: a `tracing` writer into memory, for the tests that read what the functions
//! log (the canary, the request ids on every line, the credentials re-read).

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// A `tracing` writer into a shared buffer; clones write to the same one.
#[derive(Clone, Default)]
pub struct CapturedLog(Arc<Mutex<Vec<u8>>>);

impl Write for CapturedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CapturedLog {
    fn bytes(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        // A test that panicked while writing leaves the buffer as it was: still readable.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }

    /// How many bytes were written so far (a mark for [`CapturedLog::since`]).
    pub fn len(&self) -> usize {
        self.bytes().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The lines written since the buffer was `from` long, each a JSON object.
    pub fn since(&self, from: usize) -> Vec<Value> {
        let bytes = self.bytes()[from..].to_vec();
        String::from_utf8(bytes)
            .expect("UTF-8 lines")
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    }

    /// What `work` answers, and every line logged from its start to its end.
    pub async fn around<T>(&self, work: impl std::future::Future<Output = T>) -> (T, Vec<Value>) {
        let start = self.len();
        let answer = work.await;
        (answer, self.since(start))
    }
}
