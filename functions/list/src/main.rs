//! The list Lambda: configuration and clients built once, then every request to the handler.

use lambda_http::{service_fn, Error, Request};
use snapwake::{bootstrap, config::Config, locate::RegistryCache};
use snapwake_list::{List, ListSettings};

#[tokio::main]
async fn main() -> Result<(), Error> {
    bootstrap::init();
    let config = Config::from_env()?;
    let store = bootstrap::dynamo_store(&config).await?;
    let list = List::new(
        store.clone(),
        bootstrap::agentkit(&config, store).await?,
        RegistryCache::new(config.tool_overrides.clone()),
        config.identity.clone(),
        ListSettings {
            lock: config.wake.lock.clone(),
            cursor_key: config.cursor_key.clone(),
            open_url: config.open_url.clone(),
            prices: config.prices.clone(),
        },
    );
    let list = &list;
    lambda_http::run(service_fn(move |req: Request| async move {
        Ok::<_, std::convert::Infallible>(list.handle(req).await)
    }))
    .await
}
