//! The resume Lambda: configuration and clients built once, then every request to the handler.

use lambda_http::{service_fn, Error, Request};
use snapwake::{bootstrap, config::Config, registry_cache::RegistryCache};
use snapwake_resume::Resume;

#[tokio::main]
async fn main() -> Result<(), Error> {
    bootstrap::init();
    let config = Config::from_env()?;
    let resume = Resume {
        store: bootstrap::dynamo_store(&config).await?,
        agentkit: bootstrap::agentkit(&config).await?,
        registry: RegistryCache::new(config.tool_overrides.clone()),
        identity: config.identity.clone(),
        wake: config.wake.clone(),
    };
    let resume = &resume;
    lambda_http::run(service_fn(move |req: Request| async move {
        Ok::<_, std::convert::Infallible>(resume.handle(req).await)
    }))
    .await
}
