//! The delete Lambda: configuration and clients built once, then every request to the handler.
//!
//! Today every invocation is an API Gateway request. The EventBridge handlers of cleanup.md
//! (the sweep, offboarding) will arrive in the same binary: this is where the invocation will
//! be dispatched on its shape (an HTTP API event, a `Scheduled Event`, an offboarding event).

use lambda_http::{service_fn, Error, Request};
use snapwake::{bootstrap, config::Config, registry::RegistryCache};
use snapwake_delete::Delete;

#[tokio::main]
async fn main() -> Result<(), Error> {
    bootstrap::init_tracing();
    let config = Config::from_env()?;
    let delete = Delete {
        store: bootstrap::dynamo_store(&config).await?,
        agentkit: bootstrap::agentkit(&config).await?,
        registry: RegistryCache::new(config.tool_overrides.clone()),
        identity: config.identity.clone(),
        settings: snapwake_delete::DeleteSettings::default(),
    };
    let delete = &delete;
    lambda_http::run(service_fn(move |req: Request| async move {
        Ok::<_, std::convert::Infallible>(delete.handle(req).await)
    }))
    .await
}
