//! Loading AgentKit credentials (docs/agentkit.md, "Credentials"): from the environment, or
//! (preferred in Lambda) a Secrets Manager secret read through the AWS Parameters and Secrets
//! Lambda Extension on localhost, JSON keyed by the environment variable names or
//! `access_key_id` / `secret_access_key` / `session_token`. Errors never echo the secret.
//!
//! And the credentials a client signs with, shared by all its clones, and when they are re-read.
//! A container lives for hours: without re-reads a rotated key would fail every call until it
//! dies. The secret is re-read after a refusal (the call is resent once, only if they changed),
//! and before a call once they are `REREAD_INTERVAL` old, so an overlapping rotation costs no
//! refusal. At most one re-read per interval, single flight: concurrent refusals wait on one
//! `tokio` mutex and find them replaced. Readers clone an `Arc` under a `std` lock never held
//! across an `.await`.

use std::time::Duration;

use serde::Deserialize;

use super::answer::{read_bounded, Reread};
use super::signer::Credentials;
use super::AgentKitError;
use crate::agentkit::CredentialsSource;
use crate::invocation::Deadline;
use std::sync::{Arc, RwLock};
use tokio::time::Instant;

/// Attempts at cold start: the extension may still be starting during the init phase.
const EXTENSION_ATTEMPTS: u32 = 3;

const EXTENSION_TIMEOUT: Duration = Duration::from_secs(2);

/// At most one re-read of the secret per container in this long, whatever asks. It matches the
/// extension's cache (`SECRETS_MANAGER_TTL`, 300 s default and max): sooner would mostly get the
/// cached value, and a wrong key must not turn each request into a read of the secret.
pub const REREAD_INTERVAL: Duration = Duration::from_secs(300);

/// How long a re-read may take (one attempt: the extension is warm by then).
pub const REREAD_TIMEOUT: Duration = Duration::from_secs(2);

/// A secret of three keys is well under a KiB; Secrets Manager's own limit is 64 KiB.
const MAX_SECRET_ANSWER_BYTES: usize = 64 * 1024;

pub async fn load(
    source: &CredentialsSource,
    http: &reqwest::Client,
) -> Result<Credentials, AgentKitError> {
    match source {
        CredentialsSource::Static(c) => Ok(c.clone()),
        CredentialsSource::SecretsExtension {
            secret_id,
            port,
            aws_session_token,
        } => {
            let url = extension_url(*port);
            from_extension(http, &url, secret_id, aws_session_token.expose()).await
        }
    }
}

/// Read `source` again, once, within `timeout`: `Ok(None)` for static credentials.
pub(crate) async fn reread(
    source: &CredentialsSource,
    http: &reqwest::Client,
    timeout: Duration,
) -> Result<Option<Credentials>, AgentKitError> {
    match source {
        CredentialsSource::Static(_) => Ok(None),
        CredentialsSource::SecretsExtension {
            secret_id,
            port,
            aws_session_token,
        } => read_extension(
            http,
            &extension_url(*port),
            secret_id,
            aws_session_token.expose(),
            1,
            timeout,
        )
        .await
        .map(Some),
    }
}

fn extension_url(port: u16) -> String {
    format!("http://localhost:{port}/secretsmanager/get")
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct GetSecretValue {
    secret_string: Option<String>,
}

#[derive(Deserialize)]
struct SecretValue {
    #[serde(alias = "VOLCENGINE_ACCESS_KEY")]
    access_key_id: Option<String>,
    #[serde(alias = "VOLCENGINE_SECRET_KEY")]
    secret_access_key: Option<String>,
    #[serde(alias = "VOLCENGINE_SESSION_TOKEN")]
    session_token: Option<String>,
}

/// Read `secret_id` from the extension at `url` as at cold start, in a few attempts.
pub async fn from_extension(
    http: &reqwest::Client,
    url: &str,
    secret_id: &str,
    aws_session_token: &str,
) -> Result<Credentials, AgentKitError> {
    read_extension(
        http,
        url,
        secret_id,
        aws_session_token,
        EXTENSION_ATTEMPTS,
        EXTENSION_TIMEOUT,
    )
    .await
}

async fn read_extension(
    http: &reqwest::Client,
    url: &str,
    secret_id: &str,
    aws_session_token: &str,
    attempts: u32,
    timeout: Duration,
) -> Result<Credentials, AgentKitError> {
    let fail = |why: &str| AgentKitError::Credentials(format!("secret {secret_id:?}: {why}"));
    let mut last = fail("not read");
    for attempt in 0..attempts {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
        }
        let resp = http
            .get(url)
            .query(&[("secretId", secret_id)])
            .header("X-Aws-Parameters-Secrets-Token", aws_session_token)
            .timeout(timeout)
            .send()
            .await;
        let resp = match resp {
            Ok(r) if r.status().is_success() => r,
            Ok(r) => {
                last = fail(&format!(
                    "the extension answered HTTP {}",
                    r.status().as_u16()
                ));
                continue;
            }
            Err(_) => {
                last = fail("the extension did not answer");
                continue;
            }
        };
        let body = read_bounded(resp, MAX_SECRET_ANSWER_BYTES)
            .await
            .map_err(|_| fail("the extension's answer could not be read within 64 KiB"))?;
        let value: GetSecretValue = serde_json::from_slice(&body)
            .map_err(|_| fail("the extension's answer is not GetSecretValue JSON"))?;
        let secret = value
            .secret_string
            .ok_or_else(|| fail("the secret has no SecretString"))?;
        let parsed: SecretValue = serde_json::from_str(&secret)
            .map_err(|_| fail("the SecretString is not a JSON object of keys"))?;
        let access = parsed.access_key_id.filter(|s| !s.is_empty());
        let secret_key = parsed.secret_access_key.filter(|s| !s.is_empty());
        return match (access, secret_key) {
            (Some(ak), Some(sk)) => Ok(Credentials::new(ak, sk, parsed.session_token)),
            _ => Err(fail("the secret lacks the access key or the secret key")),
        };
    }
    Err(last)
}

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
        let read = reread(&self.source, &self.http, timeout).await;
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
