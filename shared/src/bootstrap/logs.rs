//! The log setup of every function and of the local server: one `fmt` layer, filtered by
//! `RUST_LOG` ([`rust_log`]) and then by [`LOG_CAPS`], which no `RUST_LOG` can lift.
//!
//! Why the caps: at `trace`, `lambda_runtime` logs every raw event (the caller's bearer token
//! among its headers) and the network crates log requests as they go; a `RUST_LOG=trace` must
//! not copy tokens into CloudWatch (docs/security.md, "Trace logs"). A cap written as one more
//! directive could be out-ranked by a more specific one, so the caps are a second filter.

use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::{filter_fn, FilterExt, Targets};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

use super::json;

/// Crates whose `trace` output carries a request or an event as it is, capped at `debug`.
pub const LOG_CAPS: [&str; 14] = [
    "lambda_runtime",
    "lambda_runtime_api_client",
    "lambda_http",
    "hyper",
    "hyper_util",
    "h2",
    "reqwest",
    "rustls",
    "aws_config",
    "aws_sigv4",
    "aws_smithy_runtime",
    "aws_smithy_runtime_api",
    "aws_smithy_http_client",
    "aws_sdk_dynamodb",
];

/// The filter [`LOG_CAPS`] make: everything else passes.
pub fn log_caps() -> Targets {
    LOG_CAPS.iter().fold(
        Targets::new().with_default(LevelFilter::TRACE),
        |t, krate| t.with_target(*krate, LevelFilter::DEBUG),
    )
}

/// `RUST_LOG` as `level` and `target=level` directives (`info,snapwake=debug`): a `Targets`
/// filter, not an `EnvFilter`, whose regex engine costs half a megabyte in every function.
/// Unset, blank or unreadable: `info`.
pub fn rust_log() -> Targets {
    std::env::var("RUST_LOG")
        .ok()
        .filter(|directives| !directives.trim().is_empty())
        .and_then(|directives| directives.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(LevelFilter::INFO))
}

/// The log layer: JSON lines without a timestamp in Lambda (CloudWatch parses them and stamps
/// each line), plain text elsewhere; `RUST_LOG` filters (default `info`), then the caps.
pub fn log_layer<S, W>(writer: W, json: bool) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    log_layer_with(writer, json, rust_log())
}

/// [`log_layer`] with `directives` for `RUST_LOG`'s, so a test needs no environment.
pub fn log_layer_with<S, W>(
    writer: W,
    json: bool,
    directives: Targets,
) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    use std::io::IsTerminal;
    // The invocation spans pass whatever `RUST_LOG` says (they print nothing themselves), so a
    // `warn` line still carries its ids; events still meet the caps.
    let invocation_spans =
        filter_fn(json::is_invocation_span).with_max_level_hint(LevelFilter::INFO);
    let filter = directives.and(log_caps()).or(invocation_spans);
    if json {
        json::KeepIds
            .and_then(
                tracing_subscriber::fmt::layer()
                    .json()
                    .event_format(json::JsonLines)
                    .with_writer(writer),
            )
            .with_filter(filter)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .with_ansi(std::io::stderr().is_terminal())
            .with_writer(writer)
            .with_filter(filter)
            .boxed()
    }
}

/// Logs to stderr, so a command's own output (the server's banner, a report) is alone on
/// stdout; JSON in Lambda. Safe to call more than once.
pub fn init_tracing() {
    let in_lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    let _ = tracing_subscriber::registry()
        .with(log_layer(std::io::stderr, in_lambda))
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    #[test]
    fn caps_hold_network_and_runtime_crates_at_debug() {
        let caps = log_caps();
        for (target, level, passes) in [
            ("lambda_runtime::layers::api_response", Level::TRACE, false),
            ("lambda_runtime::layers::api_response", Level::DEBUG, true),
            ("hyper_util::client", Level::TRACE, false),
            ("snapwake::wake", Level::TRACE, true),
            ("reqwest::connect", Level::INFO, true),
        ] {
            assert_eq!(
                caps.would_enable(target, &level),
                passes,
                "{target} at {level}"
            );
        }
    }
}
