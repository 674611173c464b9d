//! The JSON line of a deployed function: tracing-subscriber's own shape (`level`, `fields`,
//! `target`) plus, at the top level, the ids of its invocation ([`crate::invocation`]):
//!
//! ```json
//! {"level":"INFO","fields":{"message":"request refused","status":404},"target":"snapwake::http::edge",
//!  "aws_request_id":"8476a536-…","apigw_request_id":"JKJaXmPLvHcESHA="}
//! ```
//!
//! Top level rather than tracing-subscriber's `span`/`spans` lists: CloudWatch Logs Insights
//! discovers top-level fields, so `filter aws_request_id = "…"` finds one request's lines, and
//! the lists repeated every span's fields on every line. [`KeepIds`] reads the ids from the
//! invocation span (and `lambda_runtime`'s) into its extensions for [`JsonLines`] to write.

use std::fmt;

use serde::ser::{SerializeMap, Serializer as _};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};
use tracing_serde::fields::AsMap;
use tracing_serde::AsSerde;
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, JsonFields, Writer};
use tracing_subscriber::fmt::FmtContext;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::invocation;

/// Which span of an invocation `meta` is, if it is one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Ours,
    Runtime,
}

fn kind(meta: &Metadata<'_>) -> Option<Kind> {
    if !meta.is_span() {
        return None;
    }
    if meta.name() == invocation::SPAN_NAME && meta.target() == invocation::TARGET {
        Some(Kind::Ours)
    } else if meta.name() == invocation::RUNTIME_SPAN_NAME
        && meta.target().starts_with("lambda_runtime")
    {
        Some(Kind::Runtime)
    } else {
        None
    }
}

/// Whether `meta` is one of the spans the ids come from: the log filter lets them through
/// whatever `RUST_LOG` says, so a `warn` line inside one still carries its ids.
pub fn is_invocation_span(meta: &Metadata<'_>) -> bool {
    kind(meta).is_some()
}

/// The ids of an invocation, as far as one span knows them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InvocationIds {
    pub aws_request_id: Option<String>,
    pub apigw_request_id: Option<String>,
}

impl InvocationIds {
    /// `inner`'s ids over these: the innermost span that knows an id has the last word.
    fn overlay(&mut self, inner: &InvocationIds) {
        if inner.aws_request_id.is_some() {
            self.aws_request_id.clone_from(&inner.aws_request_id);
        }
        if inner.apigw_request_id.is_some() {
            self.apigw_request_id.clone_from(&inner.apigw_request_id);
        }
    }
}

/// Reads the ids of one span's fields: only the named ones, and only as text.
struct IdVisitor<'a> {
    kind: Kind,
    ids: &'a mut InvocationIds,
}

impl Visit for IdVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        let slot = match (self.kind, field.name()) {
            (Kind::Ours, invocation::AWS_REQUEST_ID)
            | (Kind::Runtime, invocation::RUNTIME_REQUEST_ID) => &mut self.ids.aws_request_id,
            (Kind::Ours, invocation::APIGW_REQUEST_ID) => &mut self.ids.apigw_request_id,
            _ => return,
        };
        *slot = Some(value.to_string());
    }

    // Every id is recorded as text; anything else of these spans is not written.
    fn record_debug(&mut self, _field: &Field, _value: &dyn fmt::Debug) {}
}

/// The layer that keeps each invocation span's [`InvocationIds`] in its extensions.
pub struct KeepIds;

impl<S> Layer<S> for KeepIds
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(kind) = kind(attrs.metadata()) else {
            return;
        };
        let Some(span) = ctx.span(id) else { return };
        let mut ids = InvocationIds::default();
        attrs.record(&mut IdVisitor {
            kind,
            ids: &mut ids,
        });
        span.extensions_mut().insert(ids);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let Some(kind) = kind(span.metadata()) else {
            return;
        };
        let mut extensions = span.extensions_mut();
        if let Some(ids) = extensions.get_mut::<InvocationIds>() {
            values.record(&mut IdVisitor { kind, ids });
        }
    }
}

fn ids_of<S, N>(ctx: &FmtContext<'_, S, N>) -> InvocationIds
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    let mut ids = InvocationIds::default();
    if let Some(scope) = ctx.event_scope() {
        for span in scope.from_root() {
            if let Some(inner) = span.extensions().get::<InvocationIds>() {
                ids.overlay(inner);
            }
        }
    }
    ids
}

pub struct JsonLines;

impl<S> FormatEvent<S, JsonFields> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, JsonFields>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let line = json_line(event, &ids_of(ctx)).map_err(|_| fmt::Error)?;
        let line = std::str::from_utf8(&line).map_err(|_| fmt::Error)?;
        writeln!(writer, "{line}")
    }
}

fn json_line(event: &Event<'_>, ids: &InvocationIds) -> Result<Vec<u8>, serde_json::Error> {
    let meta = event.metadata();
    let mut line = Vec::new();
    let mut serializer = serde_json::Serializer::new(&mut line);
    let mut map = serializer.serialize_map(None)?;
    map.serialize_entry("level", &meta.level().as_serde())?;
    map.serialize_entry("fields", &event.field_map())?;
    map.serialize_entry("target", meta.target())?;
    if let Some(id) = &ids.aws_request_id {
        map.serialize_entry(invocation::AWS_REQUEST_ID, id)?;
    }
    if let Some(id) = &ids.apigw_request_id {
        map.serialize_entry(invocation::APIGW_REQUEST_ID, id)?;
    }
    map.end()?;
    Ok(line)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::Value;
    use tracing_subscriber::layer::SubscriberExt;

    use crate::bootstrap::logs::log_layer_with;
    use crate::invocation;

    /// The JSON lines `log` writes under `RUST_LOG=directives`, through the functions' layer.
    fn lines(directives: &str, log: impl FnOnce()) -> Vec<Value> {
        let buffer = Arc::new(Mutex::new(Vec::<u8>::new()));
        let writer = buffer.clone();
        let make = move || Writer(writer.clone());
        let subscriber = tracing_subscriber::registry().with(log_layer_with(
            make,
            true,
            directives.parse().expect("directives"),
        ));
        tracing::subscriber::with_default(subscriber, log);
        let text = String::from_utf8(buffer.lock().unwrap().clone()).expect("UTF-8");
        text.lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }

    struct Writer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Writer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn context(id: &str) -> lambda_http::Context {
        let mut context = lambda_http::Context::default();
        context.request_id = id.into();
        context
    }

    #[test]
    fn a_line_has_the_fmt_members_and_its_invocations_ids_at_the_top() {
        let got = lines("info", || {
            tracing::info!(target: "snapwake::x", "before");
            let _event = invocation::begin_event(&context("aws-1")).entered();
            tracing::info!(target: "snapwake::x", n = 3, "inside");
        });
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(
            got[0],
            serde_json::json!({"level": "INFO", "fields": {"message": "before"}, "target": "snapwake::x"})
        );
        assert_eq!(
            got[1],
            serde_json::json!({"level": "INFO", "fields": {"message": "inside", "n": 3},
                "target": "snapwake::x", "aws_request_id": "aws-1"})
        );
    }

    #[test]
    fn the_ids_stay_under_a_quiet_rust_log_and_come_from_every_enclosing_span() {
        // `RUST_LOG=warn` would turn the INFO spans off; the filter keeps them for their ids.
        let got = lines("warn", || {
            let runtime = tracing::info_span!(
                target: "lambda_runtime::layers::trace",
                "Lambda runtime invoke",
                requestId = "aws-2"
            )
            .entered();
            tracing::warn!(target: "lambda_runtime::layers::api_response", "the runtime's own");
            let ours = tracing::info_span!(
                target: "snapwake::invocation",
                "invocation",
                aws_request_id = tracing::field::Empty,
                apigw_request_id = "apigw-2"
            )
            .entered();
            tracing::info!(target: "snapwake::x", "filtered out");
            tracing::warn!(target: "snapwake::x", "kept");
            drop(ours);
            drop(runtime);
        });
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0]["aws_request_id"], "aws-2");
        assert!(got[0].get("apigw_request_id").is_none(), "{}", got[0]);
        assert_eq!(got[1]["fields"]["message"], "kept");
        assert_eq!(got[1]["aws_request_id"], "aws-2", "from the runtime's span");
        assert_eq!(got[1]["apigw_request_id"], "apigw-2");
        // No span list: the ids are the only span-borne members.
        assert!(got
            .iter()
            .all(|l| l.get("spans").is_none() && l.get("span").is_none()));
    }
}
