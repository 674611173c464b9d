//! Where one invocation begins, and what it is.
//!
//! [`Invocation`] (its function, priority and trigger) is set once at each entry point and read
//! where it matters: the AWS call recorder, the AgentKit budget's lanes, announced events. Its
//! span ([`begin_http`], [`begin_event`]) carries `aws_request_id` and, for API Gateway,
//! `apigw_request_id` (a problem's `request_id`): every JSON log line inside it carries them at
//! its top level (`bootstrap::logs`), so CloudWatch finds one request's lines by either.
//!
//! A point in time by which an operation must have answered. Every call that may wait takes a
//! [`Deadline`] from its caller instead of inventing its own timeout: a Lambda has its remaining
//! time, an HTTP request its budget, and nothing may run past either.
//!
//! And the metrics an invocation reports ([`Metric`]), as CloudWatch embedded metric format (EMF): one JSON line on stdout, which Lambda's
//! log pipeline turns into metrics without an API call. The one place snapwake emits them from.
//!
//! In Lambda every record is also published under its dimensions plus `FunctionName`: an extra
//! set, not a changed one, since an alarm matches an exact set. Nothing is emitted unless
//! `SNAPWAKE_METRICS_NAMESPACE` is set: locally and in tests the lines would only be noise.

use crate::domain::{Announce, Announcement, Trigger};
use lambda_http::request::RequestContext;
use lambda_http::{Context, Request, RequestExt};
use serde_json::{json, Map, Value};
use std::future::Future;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use tokio::time::Instant;
use tracing::field::Empty;
use tracing::Span;

/// Whose work an invocation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// A person waiting on an HTTP answer: wake, sleep, list, create, delete.
    People,
    /// Work nobody waits on: the tick, the sweep, the refresh, deploys.
    Background,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Invocation {
    /// The function running it (its logical id in the template): whose AWS calls they are.
    pub function: &'static str,
    /// Whose work it is: the budget's lane for its AgentKit calls.
    pub priority: Priority,
    /// What set it off: the trigger its state changes are announced with.
    pub trigger: Trigger,
}

tokio::task_local! {
    static CURRENT: Invocation;
}

impl Invocation {
    pub fn http(function: &'static str) -> Self {
        Invocation {
            function,
            priority: Priority::People,
            trigger: Trigger::Http,
        }
    }

    pub fn background(function: &'static str, trigger: Trigger) -> Self {
        Invocation {
            function,
            priority: Priority::Background,
            trigger,
        }
    }

    /// Run `work` as this invocation. Boxed: an entry point's future is large enough to
    /// overflow a test thread's stack.
    pub async fn run<F: Future>(self, work: F) -> F::Output {
        CURRENT.scope(self, Box::pin(work)).await
    }

    /// The invocation the current task runs in, if any.
    pub fn current() -> Option<Invocation> {
        CURRENT.try_with(|i| *i).ok()
    }
}

/// The function the current task runs as, if any.
pub fn function() -> Option<&'static str> {
    Invocation::current().map(|i| i.function)
}

/// Whose work the current task is: a person's outside any invocation.
pub fn priority() -> Priority {
    Invocation::current().map_or(Priority::People, |i| i.priority)
}

/// What set the current task off: HTTP outside any invocation.
pub fn trigger() -> Trigger {
    Invocation::current().map_or(Trigger::Http, |i| i.trigger)
}

pub const SPAN_NAME: &str = "invocation";
/// The invocation span's target (this module's path, which the span gets by default).
pub const TARGET: &str = "snapwake::invocation";
pub const AWS_REQUEST_ID: &str = "aws_request_id";
/// API Gateway's request id (`requestContext.requestId`): only in an HTTP request.
pub const APIGW_REQUEST_ID: &str = "apigw_request_id";

/// The span `lambda_runtime` opens around each invocation: its own lines inside it (an event it
/// cannot read) carry `aws_request_id` too.
pub const RUNTIME_SPAN_NAME: &str = "Lambda runtime invoke";
/// The request id field of [`RUNTIME_SPAN_NAME`].
pub const RUNTIME_REQUEST_ID: &str = "requestId";

/// An API Gateway request's span, with Lambda's request id (none locally) and API Gateway's.
pub fn begin_http(request: &Request) -> Span {
    let aws = request
        .lambda_context_ref()
        .map(|context| context.request_id.as_str());
    let apigw = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.request_id.as_deref(),
        _ => None,
    };
    begin(aws, apigw)
}

/// An event invocation's span (a schedule, an event, a direct invoke), with Lambda's id.
pub fn begin_event(context: &Context) -> Span {
    begin(Some(context.request_id.as_str()), None)
}

fn begin(aws_request_id: Option<&str>, apigw_request_id: Option<&str>) -> Span {
    // Only known ids are recorded: a field left `Empty` is not written at all.
    let span = tracing::info_span!(
        "invocation",
        aws_request_id = Empty,
        apigw_request_id = Empty
    );
    for (field, id) in [
        (AWS_REQUEST_ID, aws_request_id),
        (APIGW_REQUEST_ID, apigw_request_id),
    ] {
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            span.record(field, id);
        }
    }
    span
}

/// Kept back from a Lambda's remaining time so the answer still gets out: work that ends
/// exactly at the deadline has no time left to say what it did.
pub const ANSWER_MARGIN: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Deadline(Instant);

impl Deadline {
    pub fn after(budget: Duration) -> Self {
        Deadline(Instant::now() + budget)
    }

    pub fn at(instant: Instant) -> Self {
        Deadline(instant)
    }

    pub fn instant(self) -> Instant {
        self.0
    }

    pub fn remaining(self) -> Duration {
        self.0.saturating_duration_since(Instant::now())
    }

    pub fn is_past(self) -> bool {
        self.remaining().is_zero()
    }

    pub fn allows(self, wait: Duration) -> bool {
        Instant::now() + wait < self.0
    }

    /// The Lambda context's `deadline_ms` (epoch ms) less [`ANSWER_MARGIN`].
    pub fn for_invocation(deadline_ms: u64) -> Self {
        let left = deadline_ms.saturating_sub(crate::ambient::now_ms());
        Deadline::after(Duration::from_millis(left).saturating_sub(ANSWER_MARGIN))
    }

    /// `budget` (what the route allows itself), cut to its Lambda's remaining time less
    /// [`ANSWER_MARGIN`]; served locally, the budget alone.
    pub fn for_request(request: &Request, budget: Duration) -> Self {
        let own = Deadline::after(budget);
        match request.lambda_context_ref() {
            Some(ctx) => own.min(Deadline::for_invocation(ctx.deadline)),
            None => own,
        }
    }

    /// The deadline in epoch ms, as a record keeps it (a poll lease until the caller's deadline).
    pub fn epoch_ms(self) -> u64 {
        crate::ambient::now_ms() + self.remaining().as_millis() as u64
    }

    pub fn min_after(self, budget: Duration) -> Self {
        self.min(Deadline::after(budget))
    }
}

/// API Gateway cuts HTTP requests at 30 s; [`ANSWER_MARGIN`] of that is kept for the answer.
pub const REQUEST_BUDGET: Duration = Duration::from_secs(28);

/// A request's two limits (docs/wake-protocol.md, "Short requests"): `work`, by which it answers
/// (every store and AgentKit call takes its timeout from it), and `wait`, never later, until
/// which it may wait on others. A `wait` already past means "do your own step, then answer".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    pub work: Deadline,
    pub wait: Deadline,
}

impl Budget {
    pub fn new(work: Deadline, wait: Duration) -> Self {
        Budget {
            work,
            wait: work.min_after(wait),
        }
    }

    /// [`REQUEST_BUDGET`] cut as [`Deadline::for_request`] does, waiting at most `wait`.
    pub fn for_request(request: &Request, wait: Duration) -> Self {
        Budget::new(Deadline::for_request(request, REQUEST_BUDGET), wait)
    }
}

/// The pause of every wait loop of a wake or a sleep (polling AgentKit, watching the record):
/// it starts at `min`, grows by half each time up to `max`, and never sleeps past a deadline.
#[derive(Clone, Copy, Debug)]
pub struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    pub fn new(min: Duration, max: Duration) -> Self {
        Backoff { next: min, max }
    }

    /// Sleep the next pause if `until` allows it whole (and `also` after); else `false` at once.
    pub async fn wait(&mut self, until: Deadline, also: Duration) -> bool {
        if !until.allows(self.next + also) {
            return false;
        }
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 3 / 2).min(self.max);
        true
    }
}

/// How often AgentKit is asked about work in progress (docs/wake-protocol.md, "Short
/// requests"): every `min` at first, then a quarter of the time taken so far, up to `max`. A
/// session Ready in 2 s is seen within half a second; a boot of minutes costs a call every
/// `max`. The holder and the poll lease share it, so calls never grow with the callers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pace {
    pub min: Duration,
    pub max: Duration,
}

impl Pace {
    /// The pause before the next poll of work begun at `since_ms` (0: unknown, the shortest).
    pub fn gap(&self, since_ms: u64, now_ms: u64) -> Duration {
        let elapsed = Duration::from_millis(now_ms.saturating_sub(since_ms));
        let gap = if since_ms == 0 { self.min } else { elapsed / 4 };
        gap.clamp(self.min, self.max.max(self.min))
    }

    /// A 202's `Retry-After`: the pause rounded up to whole seconds, at least one.
    pub fn retry_after_s(&self, since_ms: u64, now_ms: u64) -> u64 {
        let gap = self.gap(since_ms, now_ms);
        gap.as_millis().div_ceil(1000).max(1) as u64
    }
}

/// What a write that is the state change `what` records, set off by the current task.
pub fn announcement(what: Announce) -> Announcement {
    Announcement {
        what,
        trigger: trigger(),
    }
}

pub const NAMESPACE_VAR: &str = "SNAPWAKE_METRICS_NAMESPACE";

/// The dimension naming the function a record comes from (Lambda's own name for it).
pub const FUNCTION_DIMENSION: &str = "FunctionName";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Count,
    Milliseconds,
}

impl Unit {
    fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Milliseconds => "Milliseconds",
        }
    }
}

/// One EMF record: metric values under one set of dimensions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metric {
    dimensions: Vec<(&'static str, String)>,
    /// More dimension sets for the same values, each a subset of `dimensions`: an alarm summing
    /// a per-action count over every action needs the set without the action.
    rollups: Vec<Vec<&'static str>>,
    metrics: Vec<(&'static str, Unit, f64)>,
}

impl Metric {
    /// A record of `component` (`wake`, `agentkit`, `sweep`, …), carried as a dimension.
    pub fn of(component: &str) -> Metric {
        Metric::default().dimension("Component", component)
    }

    pub fn dimension(mut self, name: &'static str, value: impl Into<String>) -> Metric {
        self.dimensions.push((name, value.into()));
        self
    }

    pub fn rolled_up_by(mut self, names: &[&'static str]) -> Metric {
        self.rollups.push(names.to_vec());
        self
    }

    pub fn count(mut self, name: &'static str, n: u64) -> Metric {
        self.metrics.push((name, Unit::Count, n as f64));
        self
    }

    pub fn millis(mut self, name: &'static str, ms: u64) -> Metric {
        self.metrics.push((name, Unit::Milliseconds, ms as f64));
        self
    }

    /// The record as EMF: the `_aws` envelope, then each dimension and value at the top level.
    pub fn to_emf(&self, namespace: &str, timestamp_ms: u64) -> Value {
        self.to_emf_of(namespace, timestamp_ms, None)
    }

    /// [`Metric::to_emf`] with a set of its dimensions plus `FunctionName`, when one is given.
    pub fn to_emf_of(&self, namespace: &str, timestamp_ms: u64, function: Option<&str>) -> Value {
        let dimension_names: Vec<&str> = self.dimensions.iter().map(|(n, _)| *n).collect();
        let mut dimension_sets = vec![dimension_names.clone()];
        dimension_sets.extend(self.rollups.iter().cloned());
        if function.is_some() {
            let mut with_function = dimension_names;
            with_function.push(FUNCTION_DIMENSION);
            dimension_sets.push(with_function);
        }
        let metric_defs: Vec<Value> = self
            .metrics
            .iter()
            .map(|(name, unit, _)| json!({ "Name": name, "Unit": unit.as_str() }))
            .collect();
        let mut out = Map::new();
        out.insert(
            "_aws".into(),
            json!({
                "Timestamp": timestamp_ms,
                "CloudWatchMetrics": [{
                    "Namespace": namespace,
                    "Dimensions": dimension_sets,
                    "Metrics": metric_defs,
                }],
            }),
        );
        for (name, value) in &self.dimensions {
            out.insert((*name).into(), Value::from(value.as_str()));
        }
        if let Some(function) = function {
            out.insert(FUNCTION_DIMENSION.into(), Value::from(function));
        }
        for (name, _, value) in &self.metrics {
            out.insert((*name).into(), json!(value));
        }
        Value::Object(out)
    }
}

type Sink = Box<dyn Fn(&str) + Send + Sync>;

fn sink() -> &'static Mutex<Option<Sink>> {
    static SINK: OnceLock<Mutex<Option<Sink>>> = OnceLock::new();
    SINK.get_or_init(|| Mutex::new(None))
}

/// Lambda's own name for this process's function (`AWS_LAMBDA_FUNCTION_NAME`; `None` outside
/// Lambda): the `FunctionName` dimension. Not [`function`], the template's logical id of the
/// current invocation, which the call recorder and the budget read.
fn lambda_function_name() -> Option<&'static str> {
    static FUNCTION: OnceLock<Option<String>> = OnceLock::new();
    FUNCTION
        .get_or_init(|| {
            std::env::var("AWS_LAMBDA_FUNCTION_NAME")
                .ok()
                .filter(|n| !n.trim().is_empty())
        })
        .as_deref()
}

/// `ColdStart` = 1 (component `lambda`), once per process: its sum per `FunctionName` is how
/// many containers each function started.
pub fn cold_start_record() -> Option<Metric> {
    static STARTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let first = !STARTED.swap(true, std::sync::atomic::Ordering::SeqCst);
    first.then(|| Metric::of("lambda").count("ColdStart", 1))
}

/// Mark this container's start (every `main` calls it through `bootstrap::init`).
pub fn cold_start() {
    if let Some(record) = cold_start_record() {
        emit(record);
    }
}

fn namespace() -> Option<&'static str> {
    static NAMESPACE: OnceLock<Option<String>> = OnceLock::new();
    NAMESPACE
        .get_or_init(|| {
            std::env::var(NAMESPACE_VAR)
                .ok()
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty())
        })
        .as_deref()
}

/// Send lines to `lines` instead of stdout (tests).
pub fn capture_into(lines: std::sync::Arc<Mutex<Vec<String>>>) {
    if let Ok(mut slot) = sink().lock() {
        *slot = Some(Box::new(move |line| {
            if let Ok(mut all) = lines.lock() {
                all.push(line.to_string());
            }
        }));
    }
}

/// Emit `record`, when a namespace is configured. Never fails: a metric is not worth an error.
pub fn emit(record: Metric) {
    let Some(namespace) = namespace() else { return };
    if record.metrics.is_empty() {
        return;
    }
    let line = record
        .to_emf_of(namespace, crate::ambient::now_ms(), lambda_function_name())
        .to_string();
    match sink().lock() {
        Ok(slot) => match slot.as_ref() {
            Some(capture) => capture(&line),
            // One `println!` is one write of one line: Lambda reads each as one log event.
            None => println!("{line}"),
        },
        Err(_) => println!("{line}"),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod deadline_pace_tests;

#[cfg(test)]
mod metric_tests;
