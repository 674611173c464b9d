//! The TTL and the body: out-of-range TTLs and bad bodies refused before AgentKit, the longest
//! TTL the configured one, and a whole number written as a float taken as seconds.

use super::*;

#[tokio::test]
async fn out_of_range_ttls_and_bad_bodies_are_refused_before_agentkit() {
    let (world, _store, api, ctl) = setup("keepalive-range").await;
    let (agent_id, session_id) = awake_agent(&world, &api).await;
    let expiry = sim_expiry(&ctl, &session_id);

    let cases: Vec<(&str, Option<String>, u16)> = vec![
        ("ttl 0", Some(r#"{"ttl_s":0}"#.into()), 422),
        ("ttl 1", Some(r#"{"ttl_s":1}"#.into()), 422),
        ("ttl 59", Some(r#"{"ttl_s":59}"#.into()), 422),
        ("ttl max + 1", Some(r#"{"ttl_s":28801}"#.into()), 422),
        ("ttl a week", Some(r#"{"ttl_s":604800}"#.into()), 422),
        (
            "ttl u64::MAX",
            Some(r#"{"ttl_s":18446744073709551615}"#.into()),
            422,
        ),
        (
            "ttl u64::MAX + 1",
            Some(r#"{"ttl_s":18446744073709551616}"#.into()),
            400,
        ),
        (
            "ttl 1e30",
            Some(r#"{"ttl_s":1000000000000000000000000000000}"#.into()),
            400,
        ),
        ("ttl negative", Some(r#"{"ttl_s":-60}"#.into()), 400),
        ("ttl fractional", Some(r#"{"ttl_s":60.5}"#.into()), 400),
        (
            "ttl a fraction in an exponent",
            Some(r#"{"ttl_s":36.05e1}"#.into()),
            400,
        ),
        ("ttl a string", Some(r#"{"ttl_s":"3600"}"#.into()), 400),
        ("ttl null", Some(r#"{"ttl_s":null}"#.into()), 400),
        ("ttl a bool", Some(r#"{"ttl_s":true}"#.into()), 400),
        ("ttl an array", Some(r#"{"ttl_s":[3600]}"#.into()), 400),
        ("no ttl", Some("{}".into()), 400),
        ("misspelt", Some(r#"{"ttl":3600}"#.into()), 400),
        ("extra field", Some(r#"{"ttl_s":3600,"x":1}"#.into()), 400),
        (
            "ttl twice",
            Some(r#"{"ttl_s":3600,"ttl_s":60}"#.into()),
            400,
        ),
        ("no body", None, 400),
        ("blank body", Some("  ".into()), 400),
        ("not JSON", Some("ttl_s=3600".into()), 400),
        ("malformed", Some(r#"{"ttl_s":3600"#.into()), 400),
        ("a number", Some("3600".into()), 400),
        ("an array", Some(r#"[{"ttl_s":3600}]"#.into()), 400),
        ("null", Some("null".into()), 400),
        ("a string", Some(r#""3600""#.into()), 400),
        ("trailing garbage", Some(r#"{"ttl_s":3600} {}"#.into()), 400),
    ];
    let mut failed = Vec::new();
    for (name, body, want) in &cases {
        let resp = post(&api, &agent_id, "keepalive", body.as_deref()).await;
        let (_, answer_body) = answer(&resp);
        if let Some(fault) = problem_fault(&resp, *want, None) {
            failed.push(format!("{name}: {fault}"));
        } else if answer_body["code"] != "INVALID_REQUEST" {
            failed.push(format!("{name}: code {}", answer_body["code"]));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} failed:\n  {}",
        failed.len(),
        cases.len(),
        failed.join("\n  ")
    );
    assert_eq!(sent_ttls(&ctl), 0, "nothing refused reaches AgentKit");
    assert_eq!(
        sim_expiry(&ctl, &session_id),
        expiry,
        "the session is as it was"
    );

    // The range's bounds are in it.
    let detail = answer(&post(&api, &agent_id, "keepalive", Some(r#"{"ttl_s":59}"#)).await).1;
    let detail = detail["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("60") && detail.contains("28800"),
        "the detail says the range: {detail}"
    );
    for ttl_s in [60, 28_800] {
        kept_alive(&api, &ctl, &agent_id, &session_id, ttl_s).await;
    }
    assert_eq!(sent_ttls(&ctl), 2);
}

#[tokio::test]
async fn the_longest_ttl_is_the_configured_one() {
    let (world, _store, mut api, _) = setup("keepalive-max").await;
    api.resume.wake.max_ttl = HOUR;
    let ctl = world.sim.control();
    let (agent_id, session_id) = awake_agent(&world, &api).await;

    for ttl_s in [3601, 7200, 28_800] {
        let body = format!(r#"{{"ttl_s":{ttl_s}}}"#);
        let resp = post(&api, &agent_id, "keepalive", Some(&body)).await;
        assert_problem(&resp, 422, "INVALID_REQUEST");
        let detail = answer(&resp).1["detail"].as_str().unwrap().to_string();
        assert!(detail.contains("3600"), "{ttl_s}: {detail}");
    }
    assert_eq!(sent_ttls(&ctl), 0);
    kept_alive(&api, &ctl, &agent_id, &session_id, 3600).await;
    kept_alive(&api, &ctl, &agent_id, &session_id, 60).await;
    assert_eq!(sent_ttls(&ctl), 2);
}

/// JSON has one number type: `3600.0` and `36e2` are the whole number 3600 (the API
/// description's conformance run sends them, as JSON Schema allows for an integer).
#[tokio::test]
async fn a_whole_number_written_as_a_float_is_a_number_of_seconds() {
    let (world, _store, api, _) = setup("keepalive-float").await;
    let (agent_id, _) = awake_agent(&world, &api).await;
    for body in [r#"{"ttl_s":3600.0}"#, r#"{"ttl_s":36e2}"#] {
        let (status, answered) = answer(&post(&api, &agent_id, "keepalive", Some(body)).await);
        assert_eq!(status, 200, "{body}: {answered}");
        assert_eq!(answered["ttl_s"], 3600, "{body}: {answered}");
    }
}
