//! Cold-start wiring shared by every function's `main`: logs ([`logs`]), then configuration and
//! clients built once, outside the handler, so a warm container reuses its connection pools.

pub mod aws;
pub mod json;
pub mod logs;

pub use logs::init_tracing;

/// What every function's `main` does first: logs, then the cold-start mark in its metrics.
pub fn init() {
    init_tracing();
    crate::invocation::cold_start();
}

use std::sync::Arc;

use crate::agentkit::{AgentKitClient, AgentKitError};
use crate::budget::AgentKitBudget;
use crate::config::{Config, ConfigError};
use crate::store::dynamo::DynamoStore;
use crate::store::BudgetStore;

/// Why a function could not start: a cold-start error for Lambda to retry, never an HTTP answer.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    AgentKit(#[from] AgentKitError),
}

/// The DynamoDB store of a deployed function; `SNAPWAKE_TABLE` is required there.
pub async fn dynamo_store(config: &Config) -> Result<DynamoStore, StartError> {
    let sdk = aws::lambda_sdk_config();
    let table = config.table.clone().ok_or(ConfigError::Missing {
        var: "SNAPWAKE_TABLE",
    })?;
    Ok(DynamoStore::from_conf(&sdk, table))
}

/// The announce function's publisher (docs/events.md): EventBridge when `SNAPWAKE_EVENT_BUS`
/// names a bus, else none. A bus that cannot be set up fails the cold start, not silently.
pub fn publisher(config: &Config) -> Result<crate::events::Publisher, StartError> {
    use crate::events::{eventbridge::EventBridge, Publisher};
    match &config.event_bus {
        None => Ok(Publisher::Off),
        Some(bus) => EventBridge::new(&aws::lambda_sdk_config(), bus.clone())
            .map(Publisher::EventBridge)
            .map_err(|e| {
                StartError::Config(ConfigError::Invalid {
                    var: "SNAPWAKE_EVENT_BUS",
                    reason: e.to_string(),
                })
            }),
    }
}

/// Where the tick hands due occurrences (docs/schedules.md, "Fan-out"): the SQS queue
/// `SNAPWAKE_DUE_QUEUE_URL` names, else a channel the tick's own invocation works.
pub fn fanout(config: &Config) -> Result<crate::fanout::Fanout, StartError> {
    use crate::fanout::{Fanout, SqsQueue};
    match &config.due_queue {
        None => Ok(Fanout::Channel(Default::default())),
        Some(url) => SqsQueue::new(&aws::lambda_sdk_config(), url.clone())
            .map(Fanout::Sqs)
            .map_err(|e| {
                StartError::Config(ConfigError::Invalid {
                    var: "SNAPWAKE_DUE_QUEUE_URL",
                    reason: e.to_string(),
                })
            }),
    }
}

/// The AgentKit client, credentials loaded now (re-read when refused or old), every call taking
/// its slot from the deployment's budget in `store` (docs/agentkit.md).
pub async fn agentkit<S: BudgetStore + 'static>(
    config: &Config,
    store: S,
) -> Result<AgentKitClient, StartError> {
    Ok(within_budget(
        AgentKitClient::from_config(&config.agentkit).await?,
        config,
        store,
    ))
}

/// `client` taking its slots from the budget `config` sets (none when turned off).
pub fn within_budget<S: BudgetStore + 'static>(
    client: AgentKitClient,
    config: &Config,
    store: S,
) -> AgentKitClient {
    match &config.budget {
        Some(settings) => {
            client.with_budget(Arc::new(AgentKitBudget::new(store, settings.clone())))
        }
        None => client,
    }
}
