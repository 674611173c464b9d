//! Metrics as CloudWatch embedded metric format (EMF): one JSON line on stdout, which Lambda's
//! log pipeline turns into metrics without an API call. The one place snapwake emits them from.
//!
//! In Lambda every record is also published under its dimensions plus `FunctionName`: an extra
//! set, not a changed one, since an alarm matches an exact set. Nothing is emitted unless
//! `SNAPWAKE_METRICS_NAMESPACE` is set: locally and in tests the lines would only be noise.

use std::sync::{Mutex, OnceLock};

use serde_json::{json, Map, Value};

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
pub struct Record {
    dimensions: Vec<(&'static str, String)>,
    /// More dimension sets for the same values, each a subset of `dimensions`: an alarm summing
    /// a per-action count over every action needs the set without the action.
    rollups: Vec<Vec<&'static str>>,
    metrics: Vec<(&'static str, Unit, f64)>,
}

impl Record {
    /// A record of `component` (`wake`, `agentkit`, `sweep`, …), carried as a dimension.
    pub fn of(component: &str) -> Record {
        Record::default().dimension("Component", component)
    }

    pub fn dimension(mut self, name: &'static str, value: impl Into<String>) -> Record {
        self.dimensions.push((name, value.into()));
        self
    }

    pub fn rolled_up_by(mut self, names: &[&'static str]) -> Record {
        self.rollups.push(names.to_vec());
        self
    }

    pub fn count(mut self, name: &'static str, n: u64) -> Record {
        self.metrics.push((name, Unit::Count, n as f64));
        self
    }

    pub fn millis(mut self, name: &'static str, ms: u64) -> Record {
        self.metrics.push((name, Unit::Milliseconds, ms as f64));
        self
    }

    /// The record as EMF: the `_aws` envelope, then each dimension and value at the top level.
    pub fn to_emf(&self, namespace: &str, timestamp_ms: u64) -> Value {
        self.to_emf_of(namespace, timestamp_ms, None)
    }

    /// [`Record::to_emf`] with a set of its dimensions plus `FunctionName`, when one is given.
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

/// The function this process is, in Lambda (`None` elsewhere).
fn function_name() -> Option<&'static str> {
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
pub fn cold_start_record() -> Option<Record> {
    static STARTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let first = !STARTED.swap(true, std::sync::atomic::Ordering::SeqCst);
    first.then(|| Record::of("lambda").count("ColdStart", 1))
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
pub fn emit(record: Record) {
    let Some(namespace) = namespace() else { return };
    if record.metrics.is_empty() {
        return;
    }
    let line = record
        .to_emf_of(namespace, crate::timestamp::now_ms(), function_name())
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
mod tests {
    use super::*;

    #[test]
    fn a_record_is_emf() {
        let line = Record::of("resume")
            .dimension("Action", "ResumeSessionFromSnapshot")
            .count("AgentKitErrors", 2)
            .millis("WakeLatency", 1500)
            .to_emf("snapwake", 1_700_000_000_000);
        assert_eq!(line["_aws"]["Timestamp"], 1_700_000_000_000u64);
        let directive = &line["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "snapwake");
        assert_eq!(directive["Dimensions"], json!([["Component", "Action"]]));
        assert_eq!(
            directive["Metrics"],
            json!([
                {"Name": "AgentKitErrors", "Unit": "Count"},
                {"Name": "WakeLatency", "Unit": "Milliseconds"},
            ])
        );
        assert_eq!(line["Component"], "resume");
        assert_eq!(line["Action"], "ResumeSessionFromSnapshot");
        assert_eq!(line["AgentKitErrors"], 2.0);
        assert_eq!(line["WakeLatency"], 1500.0);
        assert!(
            line.get(FUNCTION_DIMENSION).is_none(),
            "no function outside Lambda"
        );
    }

    #[test]
    fn a_function_s_record_names_it_in_one_more_dimension_set() {
        let line = Record::of("agentkit")
            .dimension("Action", "GetSession")
            .rolled_up_by(&["Component"])
            .count("AgentKitThrottles", 1)
            .to_emf_of("snapwake", 1, Some("snapwake-ResumeFunction-abc"));
        let directive = &line["_aws"]["CloudWatchMetrics"][0];
        // The sets the alarms watch are unchanged; the function's comes after them.
        assert_eq!(
            directive["Dimensions"],
            json!([
                ["Component", "Action"],
                ["Component"],
                ["Component", "Action", "FunctionName"]
            ])
        );
        assert_eq!(line["FunctionName"], "snapwake-ResumeFunction-abc");
    }

    #[test]
    fn a_container_starts_once() {
        let first = cold_start_record();
        let second = cold_start_record();
        let line =
            first
                .expect("the first call marks the start")
                .to_emf_of("snapwake", 1, Some("f"));
        assert_eq!(line["ColdStart"], 1.0);
        assert_eq!(line["Component"], "lambda");
        assert!(second.is_none(), "a warm invocation is no cold start");
    }
}
