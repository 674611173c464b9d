//! The AWS SDK configuration every client here starts from: HTTP client, timeouts, default chain.

use aws_config::BehaviorVersion;
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};

/// The SDK's configuration loader: the default chain over hyper 1 HTTPS on rustls with ring (as
/// reqwest: one TLS stack). The SDK crates are built without default features, so a loader not
/// given this HTTP client has none: build every SDK configuration from here.
pub fn sdk_defaults() -> aws_config::ConfigLoader {
    aws_config::defaults(BehaviorVersion::latest()).http_client(https_client())
}

/// Per attempt 3 s, the whole call with the SDK's retries 8 s (why: [`super::DynamoStore::from_env`]).
pub fn timeouts() -> aws_config::timeout::TimeoutConfig {
    aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(std::time::Duration::from_secs(2))
        .operation_attempt_timeout(std::time::Duration::from_secs(3))
        .operation_timeout(std::time::Duration::from_secs(8))
        .build()
}

pub fn https_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https()
}
