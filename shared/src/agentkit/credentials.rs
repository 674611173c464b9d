//! Loading AgentKit credentials (docs/agentkit.md, "Credentials"): from the environment, or
//! (preferred in Lambda) a Secrets Manager secret read through the AWS Parameters and Secrets
//! Lambda Extension on localhost, JSON keyed by the environment variable names or
//! `access_key_id` / `secret_access_key` / `session_token`. Errors never echo the secret.

use std::time::Duration;

use serde::Deserialize;

use super::answer::read_bounded;
use super::signer::Credentials;
use super::AgentKitError;
use crate::agentkit::CredentialsSource;

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
