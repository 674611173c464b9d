//! The AWS SDK configuration every client here starts from: the HTTP client, the timeouts and,
//! for the CLI and the tests, the SDK's whole default chain.

use aws_config::BehaviorVersion;
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};

/// The AWS SDK's configuration loader every client here starts from: the default credential,
/// region and endpoint chain, over the SDK's hyper 1 HTTPS client on rustls with ring, the
/// crypto provider reqwest (the AgentKit client) uses too, so a binary carries one TLS stack.
///
/// aws-config and aws-sdk-dynamodb are built without their default features (the legacy
/// hyper 0.14 client, and a default client on aws-lc), so a loader that is not given this HTTP
/// client has none: build every SDK configuration from here.
pub fn sdk_defaults() -> aws_config::ConfigLoader {
    aws_config::defaults(BehaviorVersion::latest()).http_client(https_client())
}

/// Per attempt 3 s, the whole call with the SDK's retries 8 s (why: [`DynamoStore::from_env`]).
pub fn timeouts() -> aws_config::timeout::TimeoutConfig {
    aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(std::time::Duration::from_secs(2))
        .operation_attempt_timeout(std::time::Duration::from_secs(3))
        .operation_timeout(std::time::Duration::from_secs(8))
        .build()
}

/// The SDK's hyper 1 HTTPS client on rustls with ring (see [`sdk_defaults`]).
pub fn https_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https()
}
