//! The create Lambda: configuration and clients built once, then every request to the handler.

use lambda_http::{service_fn, Error, Request};
use snapwake::{bootstrap, config::Config, locate::RegistryCache};
use snapwake_create::{Create, CreateSettings};

#[tokio::main]
async fn main() -> Result<(), Error> {
    bootstrap::init();
    let config = Config::from_env()?;
    let store = bootstrap::dynamo_store(&config).await?;
    let create = Create {
        agentkit: bootstrap::agentkit(&config, store.clone()).await?,
        store,
        registry: RegistryCache::new(config.tool_overrides.clone()),
        identity: config.identity.clone(),
        settings: CreateSettings {
            // An unsettled CreateSession is waited out as long as a session may take to start.
            unsettled_window: config.wake.ready_timeout,
            open_url: config.open_url.clone(),
            idle: config.wake.idle,
            ..CreateSettings::default()
        },
    };
    let create = &create;
    lambda_http::run(service_fn(move |req: Request| async move {
        Ok::<_, std::convert::Infallible>(create.handle(req).await)
    }))
    .await
}
