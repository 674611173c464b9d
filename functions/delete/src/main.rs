//! The delete Lambda: configuration and clients built once, then every invocation — an API
//! Gateway request, the sweep's schedule, an offboarding event — to [`Delete::invoke`], which
//! tells them apart by their shape.

use lambda_http::lambda_runtime::{self, service_fn, LambdaEvent};
use lambda_http::Error;
use serde_json::Value;
use snapwake::{bootstrap, config::Config, locate::RegistryCache};
use snapwake_delete::{Delete, DeleteSettings};

#[tokio::main]
async fn main() -> Result<(), Error> {
    bootstrap::init();
    let config = Config::from_env()?;
    let store = bootstrap::dynamo_store(&config).await?;
    let settings = DeleteSettings::from_config(&config);
    let delete = Delete {
        agentkit: bootstrap::agentkit(&config, store.clone()).await?,
        store,
        registry: RegistryCache::new(config.tool_overrides.clone()),
        identity: config.identity.clone(),
        settings,
    };
    let delete = &delete;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        // A function error carries the message only (never a provider's text or a secret).
        delete
            .invoke(event.payload, event.context)
            .await
            .map_err(|e| Error::from(e.to_string()))
    }))
    .await
}
