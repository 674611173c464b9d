use super::*;

#[test]
fn a_record_is_emf() {
    let line = Metric::of("resume")
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
    let line = Metric::of("agentkit")
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
    let line = first
        .expect("the first call marks the start")
        .to_emf_of("snapwake", 1, Some("f"));
    assert_eq!(line["ColdStart"], 1.0);
    assert_eq!(line["Component"], "lambda");
    assert!(second.is_none(), "a warm invocation is no cold start");
}
