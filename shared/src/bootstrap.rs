//! Cold-start wiring shared by every function's `main`: logs, then configuration and clients
//! built once, outside the handler, so a warm container reuses its connection pools.

use crate::agentkit::{AgentKitClient, AgentKitError};
use crate::config::{Config, ConfigError};
use crate::store::dynamo::DynamoStore;

/// Why a function could not start: its configuration, or AgentKit's credentials. A function
/// error at cold start (Lambda reports it and retries), never an HTTP answer.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    AgentKit(#[from] AgentKitError),
}

/// Logs as JSON lines in Lambda (CloudWatch parses them), plain text elsewhere; `RUST_LOG`
/// filters (default `info`). Logs go to stderr, so a command's own output (the server's
/// banner, a report) is alone on stdout; colours only on a terminal. Safe to call more than
/// once.
///
/// `RUST_LOG` takes `level` and `target=level` directives, comma-separated
/// (`info,snapwake=debug,aws_smithy_runtime=warn`): a `Targets` filter, not an `EnvFilter`,
/// whose span and field directives need a regex engine (half a megabyte in every function).
/// A value that does not parse falls back to `info`.
pub fn init_tracing() {
    use std::io::IsTerminal;
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let filter = std::env::var("RUST_LOG")
        .ok()
        .filter(|directives| !directives.trim().is_empty())
        .and_then(|directives| directives.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(LevelFilter::INFO));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let in_lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    let _ = if in_lambda {
        builder
            .json()
            .without_time()
            .with_current_span(false)
            .finish()
            .with(filter)
            .try_init()
    } else {
        builder.finish().with(filter).try_init()
    };
}

/// The DynamoDB store of a deployed function: `SNAPWAKE_TABLE` is required there.
pub async fn dynamo_store(config: &Config) -> Result<DynamoStore, StartError> {
    let table = config.table.clone().ok_or(ConfigError::Missing {
        var: "SNAPWAKE_TABLE",
    })?;
    Ok(DynamoStore::from_env(table).await)
}

/// The AgentKit client, credentials loaded once.
pub async fn agentkit(config: &Config) -> Result<AgentKitClient, StartError> {
    Ok(AgentKitClient::from_config(&config.agentkit).await?)
}
