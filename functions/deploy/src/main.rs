//! The deploy Lambda: configuration, catalogue and clients built once, then every event to the
//! handler, bounded by the invocation's deadline.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;
use snapwake::{bootstrap, config::Config};
use snapwake_deploy::reconcile::{no_retry_policy, Catalogue, DeploySettings};
use snapwake_deploy::Deploy;

#[tokio::main]
async fn main() -> Result<(), Error> {
    bootstrap::init();
    let config = Config::from_env()?;
    let store = bootstrap::dynamo_store(&config).await?;
    let agentkit = bootstrap::agentkit(&config, store.clone()).await?;
    let deploy = Deploy {
        store,
        writer: agentkit.clone().with_retry_policy(no_retry_policy()),
        agentkit,
        catalogue: Catalogue::from_lookup(|name| std::env::var(name).ok())?,
        settings: DeploySettings::default(),
    };
    let deploy = &deploy;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        deploy
            .invoke(event.payload, &event.context)
            .await
            .map_err(Error::from)
    }))
    .await
}
