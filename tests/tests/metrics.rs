//! The functions' metrics are CloudWatch embedded-metric-format lines: a resume, a storm's
//! joiners, an AgentKit throttle and a status nobody documented each leave records, and every line is valid
//! EMF (the `_aws` envelope, metric definitions whose values are top-level numbers, dimension
//! sets whose values are top-level strings). Its own binary: the namespace and the capture
//! are per process.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use snapwake::invocation::{capture_into, NAMESPACE_VAR};
use snapwake::store::dynamo::DynamoStore;
use snapwake::store::AgentStore;
use snapwake_sim::Fault;
use snapwake_tests::*;

type DynamoApi = Api<Arc<DynamoStore>, snapwake::agentkit::AgentKitClient>;

/// Why `line` is not valid EMF, if it is not (the format's rules, as CloudWatch checks them).
fn emf_fault(line: &str) -> Option<String> {
    let v: Value = serde_json::from_str(line).ok()?;
    let Some(aws) = v.get("_aws") else {
        return Some("no _aws".into());
    };
    if !aws["Timestamp"].is_u64() {
        return Some("Timestamp is not epoch milliseconds".into());
    }
    let Some(directives) = aws["CloudWatchMetrics"].as_array() else {
        return Some("CloudWatchMetrics is not an array".into());
    };
    if directives.is_empty() {
        return Some("no metric directive".into());
    }
    for d in directives {
        if d["Namespace"].as_str().is_none_or(|n| n.is_empty()) {
            return Some("no Namespace".into());
        }
        let Some(sets) = d["Dimensions"].as_array() else {
            return Some("Dimensions is not an array".into());
        };
        for set in sets {
            let Some(names) = set.as_array() else {
                return Some("a dimension set is not an array".into());
            };
            if names.len() > 30 {
                return Some("more than 30 dimensions".into());
            }
            for name in names {
                let Some(name) = name.as_str() else {
                    return Some("a dimension name is not a string".into());
                };
                if !v[name].is_string() {
                    return Some(format!("dimension {name} has no string value"));
                }
            }
        }
        let Some(metrics) = d["Metrics"].as_array() else {
            return Some("Metrics is not an array".into());
        };
        if metrics.is_empty() || metrics.len() > 100 {
            return Some("Metrics must hold 1 to 100 definitions".into());
        }
        for m in metrics {
            let Some(name) = m["Name"].as_str() else {
                return Some("a metric without Name".into());
            };
            if !v[name].is_number() {
                return Some(format!("metric {name} has no numeric value"));
            }
            let units = ["Count", "Milliseconds", "Seconds", "None"];
            if !m["Unit"].as_str().is_some_and(|u| units.contains(&u)) {
                return Some(format!("metric {name} has no known Unit"));
            }
        }
    }
    None
}

/// The records captured so far whose `name` metric is set, summed.
fn total(lines: &Mutex<Vec<String>>, name: &str) -> f64 {
    let lines = lines.lock().unwrap();
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v[name].as_f64())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wakes_joins_and_throttles_leave_valid_emf_records() {
    std::env::set_var(NAMESPACE_VAR, "snapwake-test");
    // As in Lambda, where every record names its function. (Read once, before any record.)
    std::env::set_var("AWS_LAMBDA_FUNCTION_NAME", "snapwake-test-ResumeFunction");
    let lines = Arc::new(Mutex::new(Vec::new()));
    capture_into(lines.clone());
    // The container's start, marked once however often `main`'s init would run.
    snapwake::invocation::cold_start();
    snapwake::invocation::cold_start();

    let world = World::start(Duration::from_millis(300)).await;
    let store = Arc::new(dynamo_store("metrics").await);
    world.register(&store).await;
    let api: Arc<DynamoApi> = Arc::new(Api::new(store.clone(), world.client(), identity()));

    // 20 callers wake one asleep agent, each held until it is awake: one Resume sent, the
    // others join.
    let (agent, _) = world.asleep_agent("alice", "metered");
    let path = format!("/v1/agents/codex/{agent}/resume");
    let mut callers = Vec::new();
    for _ in 0..20 {
        let api = api.clone();
        let path = path.clone();
        callers.push(tokio::spawn(async move {
            api.handle(prefer_wait(alices_request("POST", &path), 5))
                .await
                .status()
                .as_u16()
        }));
    }
    for c in callers {
        assert_eq!(c.await.unwrap(), 200);
    }
    assert_eq!(total(&lines, "ResumesSent"), 1.0);
    assert_eq!(total(&lines, "WakesCompleted"), 20.0);
    assert!(total(&lines, "WakesJoined") >= 1.0);

    // AgentKit throttles a listing: counted by action.
    world.inject(Fault::error(Some("ListSessions"), "Throttling", 429).next(1));
    let listed = api.handle(alices_request("GET", "/v1/agents")).await;
    assert_eq!(listed.status(), 200);
    assert!(total(&lines, "AgentKitThrottles") >= 1.0);

    // A session in a status nobody documented is counted, not woken beside.
    let (odd, _) = world.asleep_agent("alice", "odd");
    world
        .sim
        .control()
        .seed_session(snapwake_sim::SeedSession {
            tool_id: world.recoverable.clone(),
            user_session_id: Some(odd.clone()),
            status: Some("Paused".into()),
            ..Default::default()
        })
        .unwrap();
    let resumed = api
        .handle(alices_request(
            "POST",
            &format!("/v1/agents/codex/{odd}/resume"),
        ))
        .await;
    assert_eq!(resumed.status(), 502);
    assert!(total(&lines, "UnknownStatus") >= 1.0);
    assert_eq!(total(&lines, "WakesFailed"), 1.0, "the 502 is a failure");

    // A refusal is not a failure: an agent of alice's that AgentKit has nothing of is a 404.
    let nothing = snapwake::identity::caller::mint("alice");
    let refused = api
        .handle(alices_request(
            "POST",
            &format!("/v1/agents/codex/{nothing}/resume"),
        ))
        .await;
    assert_eq!(refused.status(), 404);
    assert_eq!(total(&lines, "WakesFailed"), 1.0, "a 404 is no failed wake");
    assert!(total(&lines, "WakesRefused") >= 1.0);

    // A state change whose event the bus refuses every time: the relay counts it failed
    // (one per change, not per try) and stops there; handed over again, it is published.
    let bus = snapwake_tests::event_bus::EventBusDouble::start().await;
    bus.fail_next(&[snapwake_tests::event_bus::BusFault::ServerError; 3]);
    let key = snapwake::domain::AgentKey::new(snapwake::domain::Kind::Codex, &agent);
    let before = store.get(&key).await.unwrap().unwrap();
    let changes = snapwake::store::Changes {
        announce: Some(snapwake::invocation::announcement(
            snapwake::domain::Announce::Awake,
        )),
        ..Default::default()
    };
    let written = store
        .update(
            &key,
            &snapwake::store::Condition::Version(before.version),
            &changes,
        )
        .await
        .expect("the write stands");
    let change = [snapwake::store::RecordChange {
        sequence: "1".into(),
        old: Some(before),
        new: Some(written),
    }];
    let relayed = snapwake::events::announce(
        &change,
        &bus.publisher(),
        snapwake::invocation::Deadline::after(Duration::from_secs(60)),
    )
    .await;
    assert_eq!(relayed.failed_at.as_deref(), Some("1"));
    assert_eq!(total(&lines, "EventsFailed"), 1.0);
    assert_eq!(total(&lines, "EventsPublished"), 0.0);
    let relayed = snapwake::events::announce(
        &change,
        &bus.publisher(),
        snapwake::invocation::Deadline::after(Duration::from_secs(60)),
    )
    .await;
    assert_eq!((relayed.published, relayed.failed_at), (1, None));
    assert_eq!(total(&lines, "EventsPublished"), 1.0);

    // Every line is EMF, in the configured namespace.
    let all = lines.lock().unwrap().clone();
    assert!(!all.is_empty());
    for line in &all {
        assert_eq!(emf_fault(line), None, "{line}");
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            v["_aws"]["CloudWatchMetrics"][0]["Namespace"],
            "snapwake-test"
        );
        assert_eq!(v["FunctionName"], "snapwake-test-ResumeFunction", "{line}");
    }
    assert_eq!(
        total(&lines, "ColdStart"),
        1.0,
        "one cold start per container"
    );

    // Every alarm of the template on a metric snapwake publishes watches a metric name and an
    // exact dimension set (names and values) that some record above was published under:
    // CloudWatch matches the exact set, so any other alarm could never fire.
    let alarms = custom_alarms();
    assert!(alarms.len() >= 2, "{alarms:?}");
    for (alarm, metric, dimensions) in alarms {
        let published = all.iter().any(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            let directive = &v["_aws"]["CloudWatchMetrics"][0];
            let named = directive["Metrics"]
                .as_array()
                .is_some_and(|ms| ms.iter().any(|m| m["Name"] == metric.as_str()));
            let mut want: Vec<&str> = dimensions.iter().map(|(n, _)| n.as_str()).collect();
            want.sort();
            let a_set = directive["Dimensions"].as_array().is_some_and(|sets| {
                sets.iter().any(|set| {
                    let mut names: Vec<&str> = set
                        .as_array()
                        .map(|s| s.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    names.sort();
                    names == want
                })
            });
            let values = dimensions.iter().all(|(n, val)| v[n] == val.as_str());
            named && a_set && values
        });
        assert!(
            published,
            "{alarm} watches {metric} under {dimensions:?}, which nothing publishes"
        );
    }
}

/// An alarm of the template: its name, the metric it watches and its dimensions (name, value).
type Alarm = (String, String, Vec<(String, String)>);

/// The template's alarms in snapwake's own namespace.
fn custom_alarms() -> Vec<Alarm> {
    let template = snapwake_tests::template::load();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let Some(resources) = template["Resources"].as_object() else {
        return Vec::new();
    };
    resources
        .iter()
        .filter(|(_, r)| r["Type"] == "AWS::CloudWatch::Alarm")
        .filter(|(_, r)| r["Properties"]["Namespace"]["Ref"] == "MetricsNamespace")
        .map(|(name, r)| {
            let props = &r["Properties"];
            let dimensions = props["Dimensions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|d| (text(&d["Name"]), text(&d["Value"])))
                .collect();
            (name.clone(), text(&props["MetricName"]), dimensions)
        })
        .collect()
}

#[test]
fn the_validator_refuses_what_is_not_emf() {
    assert!(emf_fault(r#"{"WakesCompleted": 1}"#).is_some());
    let undeclared_value = r#"{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n",
        "Dimensions":[["Component"]],"Metrics":[{"Name":"X","Unit":"Count"}]}]},"Component":"c"}"#;
    assert!(emf_fault(undeclared_value).is_some());
    let good = r#"{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n",
        "Dimensions":[["Component"]],"Metrics":[{"Name":"X","Unit":"Count"}]}]},
        "Component":"c","X":1}"#;
    assert_eq!(emf_fault(good), None);
}
