//! The resume Lambda: configuration and clients built once, then every invocation — an API
//! Gateway request, the schedules' tick or a batch of its due occurrences — to
//! [`Resume::invoke`].

use lambda_http::lambda_runtime::{self, service_fn, LambdaEvent};
use lambda_http::Error;
use snapwake::{bootstrap, config::Config, locate::RegistryCache};
use snapwake_resume::Invocation;
use snapwake_resume::Resume;

#[tokio::main]
async fn main() -> Result<(), Error> {
    bootstrap::init();
    let config = Config::from_env()?;
    let store = bootstrap::dynamo_store(&config).await?;
    let resume = Resume {
        agentkit: bootstrap::agentkit(&config, store.clone()).await?,
        store,
        registry: RegistryCache::new(config.tool_overrides.clone()),
        identity: config.identity.clone(),
        wake: config.wake.clone(),
        schedules: config.schedules.clone(),
        fanout: bootstrap::fanout(&config)?,
    };
    let resume = &resume;
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<Invocation>| async move {
            // A function error carries the message only (never a provider's text or a secret).
            resume
                .invoke(event.payload, event.context)
                .await
                .map_err(|e| Error::from(e.to_string()))
        },
    ))
    .await
}
