//! Ambiguity (docs/wake-protocol.md, "Ambiguous writes"; docs/agentkit.md, "Errors and what
//! they mean"), end to end through the HTTP handlers, on
//! DynamoDB Local and the simulated AgentKit.
//!
//! Part 1, ambiguous writes: [`FaultyStore`] wraps the DynamoDB adapter and, at one write site
//! of wake, delete, create or sleep at a time (recognised by the write's condition and
//! changes), makes the write land but lose its answer, or time out without landing. The table
//! [`SITES`] names every site and the flow that reaches it; every (site, mode) is run, retried
//! until it settles, and checked: no double Resume, no lost snapshot, never two live sessions,
//! the record converges to a resting state with no holder, every call answered within its
//! budget with a well-formed answer; for a sleep, one CreateSessionSnapshot and one new Ready
//! snapshot, no live session, the session never ended before its snapshot was Ready (the
//! simulated AgentKit's [`Kit`] notes every DeleteSession with the snapshots' statuses at that
//! moment), and the next wake from that snapshot. A new site is one line of [`SITES`]. Each
//! (site, mode) runs twice: the fault firing once (the lock's re-send resolves it, so callers
//! see nothing), and firing on every send of the write (it stays ambiguous for that caller,
//! which may answer 503, and the flow must converge on retries).
//!
//! Part 2, ambiguous AgentKit answers: a Resume that times out after AgentKit acted, and a bare
//! 503 (no envelope, no code) after AgentKit acted, for an agent with a UserSessionId and for a
//! `snapshot-<id>` agent, with callers arriving while it is pending: one live session in the
//! end, never a second Resume, the snapshot kept. An unknown Resume whose later reconcile
//! fails once is still never doubled. And a `snapshot-<id>` agent whose session expired wakes
//! again.
//!
//! Part 3, ambiguous AgentKit answers to a sleep: CreateSessionSnapshot and DeleteSession
//! answered with a 500 or a bare 503 after acting, or after the client's timeout: one
//! snapshot, the session ended once and only once its snapshot is Ready, the agent asleep and
//! woken from that snapshot next. And a sleep sent again (its answer lost to the client) that
//! finds the agent asleep already: the next wake still comes from the sleep's snapshot even
//! when an older one carries the same whole second.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use snapwake::agentkit::types::{metadata_value, Action, MetadataEntry, Snapshot};
use snapwake::agentkit::{AgentKit, AgentKitClient};
use snapwake::ambient::now_s;
use snapwake::domain::{AgentKey, AgentRecord, Kind, WakeState};
use snapwake::lock::LockSettings;
use snapwake::store::dynamo::DynamoStore;
use snapwake::store::{AgentStore, Answer, Call, Changes, Condition, Layer, StoreError};
use snapwake::wake::WakeSettings;
use snapwake_create::{Create, CreateSettings};
use snapwake_delete::{Delete, DeleteSettings};
use snapwake_resume::Resume;
use snapwake_sim::{Fault, SeedSnapshot, SimControl};
use snapwake_tests::*;

const RESUME: &str = "ResumeSessionFromSnapshot";

mod faulty_store;
mod write_sites;
mod world;
mod checks;
mod flows;
mod ambiguous_writes;
mod unknown_resume;
mod lost_sleep_answers;
mod etags;
