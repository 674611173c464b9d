//! The credentials a client signs with, shared by all its clones, and when they are re-read.
//! A container lives for hours: without re-reads a rotated key would fail every call until it
//! dies. The secret is re-read after a refusal (the call is resent once, only if they changed),
//! and before a call once they are `REREAD_INTERVAL` old, so an overlapping rotation costs no
//! refusal. At most one re-read per interval, single flight: concurrent refusals wait on one
//! `tokio` mutex and find them replaced. Readers clone an `Arc` under a `std` lock never held
//! across an `.await`.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::time::Instant;

use super::answer::Reread;
use super::credentials::{self, REREAD_TIMEOUT};
use super::settings::CredentialsSource;
use super::signer::Credentials;
use crate::deadline::Deadline;

#[derive(Clone)]
pub(crate) struct Current {
    pub(crate) credentials: Arc<Credentials>,
    /// Bumped on each replacement: a refused caller can tell if another already replaced them.
    pub(crate) generation: u64,
    /// When the source was last asked (the load, or a re-read whatever its outcome).
    checked_at: Instant,
}

/// What a refused call should do.
pub(crate) enum AfterRefusal {
    /// The credentials changed since the call signed: send it again with them.
    Retry,
    GiveUp(Reread),
}

pub(crate) struct CredentialsCell {
    source: CredentialsSource,
    http: reqwest::Client,
    current: RwLock<Current>,
    /// Held through a re-read; when the last one started. `None` until the first, so the first
    /// refusal of a container's life is always answered by a re-read.
    last_reread: tokio::sync::Mutex<Option<Instant>>,
}

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

    /// After a refusal of generation `used`: re-read (once per `interval`), say whether to resend.
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

    /// Read the source once, holding the lock (`last`): `None` if replaced, else why not.
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
