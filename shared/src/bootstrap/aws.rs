//! The AWS SDK configuration of a deployed function, read from the Lambda environment only:
//! Lambda hands every function its credentials and region there, so the functions leave out
//! the SDK's default chain and its binary size (BENCHMARKS.md, "Binary sizes"). The CLI and the
//! tests keep the whole chain ([`crate::store::dynamo::sdk_defaults`]).

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::config::SharedCredentialsProvider;

/// Credentials and region from the environment, `AWS_ENDPOINT_URL` when set (DynamoDB Local in
/// the tests), and the one shared HTTPS client.
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
