//! The AWS SDK configuration of a deployed function, read from the Lambda environment only.
//!
//! Lambda hands every function its role's credentials (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`) and its region (`AWS_REGION`) as environment
//! variables, so a function needs none of the SDK's default chain: profile files, SSO, web
//! identity (an STS client), ECS and IMDS. Leaving that chain out of the functions took 0.6 MiB
//! off each binary (BENCHMARKS.md, "Binary sizes"), the room schedules' time-zone database
//! needed. The CLI and the tests keep the whole chain
//! ([`crate::store::dynamo::sdk_defaults`]).

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::config::SharedCredentialsProvider;

/// The SDK configuration of a function: credentials and region from the environment, an
/// endpoint when `AWS_ENDPOINT_URL` names one (DynamoDB Local in the tests), the one HTTPS
/// client every client here shares.
pub fn lambda_sdk_config() -> SdkConfig {
    let mut config = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .http_client(crate::store::dynamo::https_client())
        .credentials_provider(SharedCredentialsProvider::new(
            aws_config::environment::EnvironmentVariableCredentialsProvider::new(),
        ))
        .timeout_config(crate::store::dynamo::timeouts());
    if let Some(region) = env("AWS_REGION").or_else(|| env("AWS_DEFAULT_REGION")) {
        config = config.region(Region::new(region));
    }
    if let Some(endpoint) = env("AWS_ENDPOINT_URL") {
        config = config.endpoint_url(endpoint);
    }
    config.build()
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}
