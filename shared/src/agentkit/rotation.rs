//! The credentials a client signs with, shared by all its clones, and when they are read again.
//!
//! A container lives for hours and reads its credentials at cold start; a rotated key would
//! otherwise fail every call until the container dies. So the client re-reads the secret:
//!
//! - **after a refusal** (`AgentKitError::Unauthorized`): then the refused call is sent once
//!   more, only if the credentials changed; a refusal with unchanged ones is returned;
//! - **proactively**, before a call, when they were last read [`REREAD_INTERVAL`] ago or
//!   more, so that a key rotated with an overlap is picked up without a single refusal. A
//!   failed proactive read keeps the old credentials and the call goes on with them.
//!
//! Either way at most one re-read per interval: the secret is not read on every request of a
//! container whose key is simply wrong. Concurrent refusals share one re-read (single flight):
//! the first caller reads while the others wait on the same lock, then find the credentials
//! already replaced and retry with them. Static credentials (the environment) are never
//! re-read.
//!
//! Readers take the current credentials from a `std` read-write lock (an `Arc` clone, the lock
//! never held across an `.await`); the re-read is serialised by a `tokio` mutex. Values are
//! never logged: only why a re-read happened and what came of it.
//!
//! [`REREAD_INTERVAL`]: super::credentials::REREAD_INTERVAL

use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::time::Instant;

use super::credentials::{self, REREAD_TIMEOUT};
use super::error::Reread;
use super::settings::CredentialsSource;
use super::signer::Credentials;
use crate::deadline::Deadline;

/// The credentials to sign with now.
#[derive(Clone)]
pub(crate) struct Current {
    pub(crate) credentials: Arc<Credentials>,
    /// Bumped each time the credentials are replaced, so a refused caller can tell whether
    /// another one already replaced those it signed with.
    pub(crate) generation: u64,
    /// When the source was last asked (the load, or a re-read whatever its outcome).
    checked_at: Instant,
}

/// What a refused call should do.
pub(crate) enum AfterRefusal {
    /// The credentials changed since the call signed: send it again with them.
    Retry,
    /// Nothing better to sign with: return the refusal, saying why.
    GiveUp(Reread),
}

pub(crate) struct CredentialsCell {
    source: CredentialsSource,
    http: reqwest::Client,
    current: RwLock<Current>,
    /// Held for the length of a re-read (single flight); holds when the last one started.
    /// `None` until the first: the load at cold start does not count against the interval, so
    /// the first refusal of a container's life is always answered by a re-read.
    last_reread: tokio::sync::Mutex<Option<Instant>>,
}

/// Why the source is read again (for the log line).
#[derive(Clone, Copy)]
enum Why {
    Refused,
    Stale,
}

impl Why {
    fn as_str(self) -> &'static str {
        match self {
            Why::Refused => "refused",
            Why::Stale => "stale",
        }
    }
}

impl CredentialsCell {
    /// `credentials` as just read from `source`.
    pub(crate) fn new(
        source: CredentialsSource,
        http: reqwest::Client,
        credentials: Credentials,
    ) -> Self {
        CredentialsCell {
            source,
            http,
            current: RwLock::new(Current {
                credentials: Arc::new(credentials),
                generation: 0,
                checked_at: Instant::now(),
            }),
            last_reread: tokio::sync::Mutex::new(None),
        }
    }

    pub(crate) fn current(&self) -> Current {
        // A panic elsewhere cannot leave a half-written `Current`: it is replaced whole.
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn rereadable(&self) -> bool {
        matches!(self.source, CredentialsSource::SecretsExtension { .. })
    }

    /// Before a call: re-read credentials last read `interval` ago or more. Never waits for
    /// another caller's re-read (that caller refreshes them), never fails the call.
    pub(crate) async fn refresh_if_stale(&self, interval: Duration, deadline: Deadline) {
        if !self.rereadable() || self.current().checked_at.elapsed() < interval {
            return;
        }
        let Ok(mut last) = self.last_reread.try_lock() else {
            return;
        };
        // Another caller may have re-read them between the check and the lock.
        if self.current().checked_at.elapsed() < interval {
            return;
        }
        self.reread(&mut last, Why::Stale, deadline).await;
    }

    /// After AgentKit refused the credentials of generation `used`: re-read them unless that
    /// was done less than `interval` ago, and say whether the call may be sent again.
    pub(crate) async fn after_refusal(
        &self,
        used: u64,
        interval: Duration,
        deadline: Deadline,
    ) -> AfterRefusal {
        if !self.rereadable() {
            return AfterRefusal::GiveUp(Reread::Static);
        }
        let Ok(mut last) =
            tokio::time::timeout(deadline.remaining(), self.last_reread.lock()).await
        else {
            return AfterRefusal::GiveUp(Reread::NoTime);
        };
        // Replaced while this call was refused, or while it waited for another's re-read.
        if self.current().generation != used {
            return AfterRefusal::Retry;
        }
        if let Some(at) = *last {
            let ago = at.elapsed();
            if ago < interval {
                return AfterRefusal::GiveUp(Reread::TooSoon {
                    ago,
                    every: interval,
                });
            }
        }
        match self.reread(&mut last, Why::Refused, deadline).await {
            None => AfterRefusal::Retry,
            Some(outcome) => AfterRefusal::GiveUp(outcome),
        }
    }

    /// Read the source once, holding the re-read lock (`last`). `None` when the credentials
    /// were replaced; otherwise what happened instead (they are then unchanged).
    async fn reread(
        &self,
        last: &mut Option<Instant>,
        why: Why,
        deadline: Deadline,
    ) -> Option<Reread> {
        let timeout = REREAD_TIMEOUT.min(deadline.remaining());
        if timeout.is_zero() {
            return Some(Reread::NoTime);
        }
        *last = Some(Instant::now());
        let read = credentials::reread(&self.source, &self.http, timeout).await;
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        current.checked_at = Instant::now();
        let outcome = match read {
            Ok(Some(new)) if new != *current.credentials => {
                current.credentials = Arc::new(new);
                current.generation += 1;
                None
            }
            Ok(_) => Some(Reread::Unchanged),
            // The error names the secret and what failed, never a value (`credentials.rs`).
            Err(e) => Some(Reread::Failed(e.to_string())),
        };
        drop(current);
        match &outcome {
            None => tracing::info!(why = why.as_str(), "agentkit credentials re-read: replaced"),
            Some(Reread::Failed(error)) => tracing::warn!(
                why = why.as_str(),
                %error,
                "agentkit credentials re-read failed; the previous ones are kept"
            ),
            Some(_) => tracing::info!(
                why = why.as_str(),
                "agentkit credentials re-read: unchanged"
            ),
        }
        outcome
    }
}
