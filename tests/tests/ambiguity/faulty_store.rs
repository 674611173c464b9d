//! Part 1's faulty store: [`FaultyStore`] wraps the DynamoDB adapter and, armed for one write
//! site, makes that write land but lose its answer or time out without landing ([`Mode`]).

use super::*;

// ---------------------------------------------------------------------------------------------
// The faulty store

/// What an armed fault does to the write it recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The write is applied, then its answer is lost (`Unavailable` instead of the record).
    LandLoseAnswer,
    /// The write times out (a short wait) and is not applied.
    TimeoutNoLand,
}

pub(crate) const MODES: [Mode; 2] = [Mode::LandLoseAnswer, Mode::TimeoutNoLand];

/// How long a write that "times out" takes to fail.
pub(crate) const TIMEOUT: Duration = Duration::from_millis(200);

/// Recognises one write site by the write's condition and changes.
pub(crate) type Recognise = fn(&Condition, &Changes) -> bool;

pub(crate) struct Armed {
    pub(crate) recognise: Recognise,
    pub(crate) mode: Mode,
    pub(crate) left: u32,
}

/// The DynamoDB adapter with one armed fault on `update`; reads and documents pass through,
/// unless told to fail agent reads once a fault has fired.
pub(crate) struct FaultyStore {
    pub(crate) inner: DynamoStore,
    pub(crate) armed: Mutex<Option<Armed>>,
    pub(crate) fired: AtomicU32,
    reads_fail: std::sync::atomic::AtomicBool,
}

impl FaultyStore {
    pub(crate) fn new(inner: DynamoStore) -> Self {
        FaultyStore {
            inner,
            armed: Mutex::new(None),
            fired: AtomicU32::new(0),
            reads_fail: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Fire `mode` on the next `times` writes `recognise` matches.
    pub(crate) fn arm(&self, recognise: Recognise, mode: Mode, times: u32) {
        *self.armed.lock().unwrap() = Some(Armed {
            recognise,
            mode,
            left: times,
        });
    }

    pub(crate) fn disarm(&self) {
        *self.armed.lock().unwrap() = None;
    }

    /// With `fail`, every agent read after the first fault has fired fails (the write's
    /// outcome cannot be read back either).
    pub(crate) fn fail_reads_after_fault(&self, fail: bool) {
        self.reads_fail.store(fail, Ordering::SeqCst);
    }

    pub(crate) fn fired(&self) -> u32 {
        self.fired.load(Ordering::SeqCst)
    }

    /// Whether this write is hit, and how (the fault disarms itself once spent).
    pub(crate) fn hit(&self, condition: &Condition, changes: &Changes) -> Option<Mode> {
        let mut armed = self.armed.lock().unwrap();
        let a = armed.as_mut()?;
        if !(a.recognise)(condition, changes) {
            return None;
        }
        let mode = a.mode;
        a.left -= 1;
        if a.left == 0 {
            *armed = None;
        }
        self.fired.fetch_add(1, Ordering::SeqCst);
        Some(mode)
    }
}

impl Layer for FaultyStore {
    type Inner = DynamoStore;

    fn inner(&self) -> &DynamoStore {
        &self.inner
    }

    fn around<'a, T: Send + 'a>(&'a self, call: Call<'a>, answer: Answer<'a, T>) -> Answer<'a, T> {
        Box::pin(async move {
            let hit = match call {
                Call::Update(_, condition, changes) => self.hit(condition, changes),
                Call::Get(_) if self.reads_fail.load(Ordering::SeqCst) && self.fired() > 0 => {
                    return Err(StoreError::Unavailable("injected: the read failed".into()));
                }
                _ => None,
            };
            match hit {
                None => answer.await,
                Some(Mode::LandLoseAnswer) => {
                    let landed = answer.await;
                    Err(StoreError::Unavailable(format!(
                        "injected: the answer was lost (the write answered {})",
                        if landed.is_ok() { "ok" } else { "an error" }
                    )))
                }
                Some(Mode::TimeoutNoLand) => {
                    tokio::time::sleep(TIMEOUT).await;
                    Err(StoreError::Unavailable(
                        "injected: the write timed out".into(),
                    ))
                }
            }
        })
    }
}
