//! One invocation of a function in the simulated deployment, and the faults at its every
//! step: the table answering late, failing, or losing the answer of a write that landed, and
//! the invocation stopped dead between any two of its calls (before a call, or after it landed
//! and before its answer is read), as a Lambda is when it times out, runs out of memory or is
//! recycled.
//!
//! An invocation's context travels with its future (a task-local), so the table's layer and
//! the AgentKit hook count its calls and stop it at the one its fate names; every call outside
//! an invocation (the checks of the model) passes untouched.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use snapwake::agentkit::types::Action;
use snapwake::domain::Trigger;
use snapwake::store::memory::MemoryStore;
use snapwake::store::{Answer, Call, Condition, Layer, StoreError};
use tokio::sync::Notify;

use crate::{AgentKitCall, AgentKitHook};

tokio::task_local! {
    static CURRENT: Arc<Invocation>;
}

/// Where an invocation is stopped: at its `call`-th call to the table or to AgentKit (from 1),
/// before that call was made, or after it was carried out and before its answer was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stop {
    pub at_call: u32,
    pub after_landing: bool,
}

/// One invocation: its calls so far, and its fate.
pub struct Invocation {
    calls: AtomicU32,
    stop: Option<Stop>,
    stopping: Notify,
}

impl Invocation {
    /// `name` says what it is where it is made (a request, the tick, a consumer...).
    pub fn new(name: &str, stop: Option<Stop>) -> Arc<Invocation> {
        let _ = name;
        Arc::new(Invocation {
            calls: AtomicU32::new(0),
            stop,
            stopping: Notify::new(),
        })
    }

    /// Run `work` as this invocation: `None` when it was stopped (dropped at the call its fate
    /// names, as a killed process drops everything it held).
    pub async fn run<F: std::future::Future>(self: &Arc<Self>, work: F) -> Option<F::Output> {
        let me = self.clone();
        CURRENT
            .scope(self.clone(), async move {
                tokio::select! {
                    biased;
                    _ = me.stopping.notified() => None,
                    out = work => Some(out),
                }
            })
            .await
    }

    /// Count one call; whether the invocation stops at it (and how).
    fn next_call(&self) -> Option<bool> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let stop = self.stop.filter(|s| s.at_call == n)?;
        Some(stop.after_landing)
    }

    fn stop_now(&self) {
        self.stopping.notify_one();
    }
}

/// The current task's invocation, if it runs as one.
fn current() -> Option<Arc<Invocation>> {
    CURRENT.try_with(Arc::clone).ok()
}

/// Pass `call` on for the current invocation, stopping it there if its fate says so.
async fn through<T>(call: impl std::future::Future<Output = T>) -> T {
    let Some(invocation) = current() else {
        return call.await;
    };
    match invocation.next_call() {
        None => call.await,
        Some(after_landing) => {
            if after_landing {
                let _ = call.await;
            }
            invocation.stop_now();
            std::future::pending().await
        }
    }
}

/// How often the table misbehaves, per call (0.0: never).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TableFaults {
    /// A write lands and its answer is lost (`Unavailable`).
    pub lose_write_answers: f64,
    /// A call fails before it reaches the table (`Unavailable`, nothing done).
    pub fail_before: f64,
}

/// What a write that landed was, for the model: who made it (the trigger of the invocation's
/// task) and whether it was a write under the lock of an earlier acquire (fenced, or by
/// anyone), which announces what that acquire's generation set out to do.
#[derive(Clone, Debug)]
pub struct Landed {
    pub trigger: Trigger,
    pub under_generation: bool,
}

/// The table of the simulated deployment: the in-memory store, with [`TableFaults`] and the
/// invocations' stops around every call, and a note of who made each write that landed
/// (keyed by its number in the store's change feed).
pub struct FaultyTable {
    pub memory: Arc<MemoryStore>,
    faults: Mutex<(TableFaults, fastrand::Rng)>,
    /// Calls failed before they were made.
    failed: AtomicU32,
    /// Writes that landed with their answer lost.
    lost: AtomicU32,
    landed: Mutex<HashMap<u64, Landed>>,
}

impl FaultyTable {
    pub fn new(memory: Arc<MemoryStore>, seed: u64) -> Self {
        FaultyTable {
            memory,
            faults: Mutex::new((TableFaults::default(), fastrand::Rng::with_seed(seed))),
            failed: AtomicU32::new(0),
            lost: AtomicU32::new(0),
            landed: Mutex::new(HashMap::new()),
        }
    }

    pub fn set_faults(&self, faults: TableFaults) {
        self.faults.lock().unwrap_or_else(|p| p.into_inner()).0 = faults;
    }

    /// Faults made so far: (calls failed before they were made, answers lost of writes that
    /// landed).
    pub fn faults_made(&self) -> (u64, u64) {
        (
            u64::from(self.failed.load(Ordering::SeqCst)),
            u64::from(self.lost.load(Ordering::SeqCst)),
        )
    }

    /// What the write numbered `change` in the feed was (once: the model takes it).
    pub fn take_landed(&self, change: u64) -> Option<Landed> {
        self.landed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&change)
    }

    /// Roll for one call: (fail before it, lose its answer).
    fn roll(&self, call: &Call<'_>) -> (bool, bool) {
        if current().is_none() {
            return (false, false);
        }
        let mut faults = self.faults.lock().unwrap_or_else(|p| p.into_inner());
        let (f, rng) = &mut *faults;
        let before = f.fail_before > 0.0 && rng.f64() < f.fail_before;
        let lose = call.writes() && f.lose_write_answers > 0.0 && rng.f64() < f.lose_write_answers;
        if before {
            self.failed.fetch_add(1, Ordering::SeqCst);
        } else if lose {
            self.lost.fetch_add(1, Ordering::SeqCst);
        }
        (before, lose)
    }
}

impl Layer for FaultyTable {
    type Inner = MemoryStore;

    fn inner(&self) -> &MemoryStore {
        &self.memory
    }

    fn around<'a, T: Send + 'a>(&'a self, call: Call<'a>, answer: Answer<'a, T>) -> Answer<'a, T> {
        Box::pin(through(async move {
            let (fail_before, lose) = self.roll(&call);
            if fail_before {
                return Err(StoreError::Unavailable(
                    "simulated: the table failed".into(),
                ));
            }
            let before = self.memory.changes_made();
            // The memory store answers at once (no await inside): no other task writes
            // between reading the feed's position and this write.
            let answered = answer.await;
            let after = self.memory.changes_made();
            if let Call::Update(_, condition, _) = call {
                if after == before + 1 {
                    let under_generation = matches!(
                        condition,
                        Condition::Held { .. }
                            | Condition::WakingWith { .. }
                            | Condition::SleepingWith { .. }
                    );
                    let landed = Landed {
                        trigger: snapwake::invocation::trigger(),
                        under_generation,
                    };
                    self.landed
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(after, landed);
                }
            }
            if lose {
                return Err(StoreError::Unavailable(
                    "simulated: the answer of a write that landed was lost".into(),
                ));
            }
            answered
        }))
    }
}

/// The AgentKit hook of the simulated deployment: each call is one of the invocation's steps,
/// where its fate may stop it (before AgentKit got the request, or after AgentKit acted and
/// before the answer was read).
pub struct Stoppable;

impl AgentKitHook for Stoppable {
    async fn around<A: Action, C: AgentKitCall>(&self, _: &A, call: C) -> C::Output {
        through(call).await
    }
}
