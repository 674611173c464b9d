//! How to reach AgentKit: endpoint, regions, credentials, timeout. Built by `crate::config`.

use std::time::Duration;

use super::Credentials;
use crate::agentkit::types::Secret;

/// Where AgentKit credentials come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialsSource {
    /// `VOLCENGINE_ACCESS_KEY`, `VOLCENGINE_SECRET_KEY`, optional `VOLCENGINE_SESSION_TOKEN`.
    Static(Credentials),
    /// A Secrets Manager secret (`AGENTKIT_CREDENTIALS_SECRET`) read through the AWS
    /// Parameters and Secrets Lambda Extension on `port`, with the token in `AWS_SESSION_TOKEN`.
    SecretsExtension {
        secret_id: String,
        port: u16,
        aws_session_token: Secret,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentKitConfig {
    /// `AGENTKIT_ENDPOINT`, default the global Volcengine OpenAPI host.
    pub endpoint: String,
    /// `AGENTKIT_REGIONS`, tried in order.
    pub regions: Vec<String>,
    pub credentials: CredentialsSource,
    /// Per-attempt HTTP timeout (`AGENTKIT_TIMEOUT_MS`, default 10 000).
    pub request_timeout: Duration,
}
