//! The announce Lambda: the usage store and the publisher built once, then every batch of the table's stream that
//! its event source mapping hands over to [`Announce::handle`].

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;
use snapwake::{bootstrap, config::Config};
use snapwake_announce::Announce;

#[tokio::main]
async fn main() -> Result<(), Error> {
    bootstrap::init();
    let config = Config::from_env()?;
    let announce = Announce {
        usage: bootstrap::dynamo_store(&config).await?,
        sink: bootstrap::publisher(&config)?,
    };
    let announce = &announce;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        let deadline = snapwake::invocation::Deadline::for_invocation(event.context.deadline);
        Ok::<_, Error>(announce.handle(&event.payload, deadline).await)
    }))
    .await
}
