//! Unit tests of `config`.

use super::*;
use crate::identity::AdminEntry;
use std::collections::HashMap;

fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|k| map.get(k).cloned())
}

const KEYS: [(&str, &str); 2] = [
    ("VOLCENGINE_ACCESS_KEY", "AK"),
    ("VOLCENGINE_SECRET_KEY", "SK"),
];

#[test]
fn defaults_make_nobody_admin_and_use_both_regions() {
    let c = config(&KEYS).unwrap();
    assert!(c.identity.admins.is_empty() && c.identity.admin_groups.is_empty());
    assert_eq!(c.identity.owner_claims[0], "sub");
    assert_eq!(c.identity.owner_claims.len(), 7);
    assert_eq!(c.agentkit.regions, vec!["cn-beijing", "cn-shanghai"]);
    assert_eq!(c.agentkit.endpoint, DEFAULT_AGENTKIT_ENDPOINT);
    assert!(matches!(
        c.agentkit.credentials,
        CredentialsSource::Static(_)
    ));
}

#[test]
fn lists_are_trimmed_and_admin_entries_name_their_claim() {
    let mut vars = KEYS.to_vec();
    vars.extend([
        (
            "SNAPWAKE_ADMINS",
            " email:Alice@Example.com , ,bob, sub: s-1 ",
        ),
        ("SNAPWAKE_ADMIN_GROUPS", "admins"),
        ("AGENTKIT_REGIONS", "cn-shanghai"),
        ("AGENTKIT_ENDPOINT", "http://127.0.0.1:9000/"),
    ]);
    let c = config(&vars).unwrap();
    assert_eq!(
        c.identity.admins,
        vec![
            AdminEntry::in_claim("email", "Alice@Example.com"),
            AdminEntry::bare("bob"),
            AdminEntry::in_claim("sub", "s-1"),
        ]
    );
    assert_eq!(c.identity.admin_groups, vec!["admins"]);
    assert_eq!(c.agentkit.regions, vec!["cn-shanghai"]);
    assert_eq!(c.agentkit.endpoint, "http://127.0.0.1:9000");
}

#[test]
fn bad_values_name_the_variable() {
    let err = config(&[]).unwrap_err();
    assert_eq!(
        err,
        ConfigError::Missing {
            var: "VOLCENGINE_ACCESS_KEY"
        }
    );
    let mut vars = KEYS.to_vec();
    vars.push(("AGENTKIT_ENDPOINT", "ftp://x"));
    assert!(config(&vars)
        .unwrap_err()
        .to_string()
        .contains("AGENTKIT_ENDPOINT"));
    let mut vars = KEYS.to_vec();
    vars.push(("AGENTKIT_REGIONS", "cn beijing"));
    assert!(config(&vars)
        .unwrap_err()
        .to_string()
        .contains("AGENTKIT_REGIONS"));
    let mut vars = KEYS.to_vec();
    vars.push(("AGENTKIT_TIMEOUT_MS", "soon"));
    assert!(config(&vars)
        .unwrap_err()
        .to_string()
        .contains("AGENTKIT_TIMEOUT_MS"));
    let mut vars = KEYS.to_vec();
    vars.push(("SNAPWAKE_OWNER_CLAIMS", " , "));
    assert!(config(&vars)
        .unwrap_err()
        .to_string()
        .contains("SNAPWAKE_OWNER_CLAIMS"));
}

#[test]
fn the_secret_is_preferred_and_needs_the_lambda_token() {
    let mut vars = KEYS.to_vec();
    vars.push(("AGENTKIT_CREDENTIALS_SECRET", "snapwake/agentkit"));
    assert_eq!(
        config(&vars).unwrap_err(),
        ConfigError::Missing {
            var: "AWS_SESSION_TOKEN"
        }
    );
    vars.push(("AWS_SESSION_TOKEN", "tok"));
    let c = config(&vars).unwrap();
    assert_eq!(
        c.agentkit.credentials,
        CredentialsSource::SecretsExtension {
            secret_id: "snapwake/agentkit".into(),
            port: 2773,
            aws_session_token: "tok".into()
        }
    );
}

#[test]
fn a_cursor_key_must_be_long_and_is_never_echoed() {
    assert_eq!(config(&KEYS).unwrap().cursor_key, None);
    let mut vars = KEYS.to_vec();
    vars.push(("SNAPWAKE_CURSOR_KEY", "short-secret"));
    let err = config(&vars).unwrap_err().to_string();
    assert!(err.contains("SNAPWAKE_CURSOR_KEY") && !err.contains("short-secret"));
    let key = "k".repeat(32);
    let mut vars = KEYS.to_vec();
    vars.push(("SNAPWAKE_CURSOR_KEY", &key));
    assert_eq!(config(&vars).unwrap().cursor_key, Some(key.as_str().into()));
}

#[test]
fn retention_keeps_three_by_default_and_refuses_none() {
    let c = config(&KEYS).unwrap();
    assert_eq!(c.retention, RetentionConfig::default());
    let mut vars = KEYS.to_vec();
    vars.extend([
        ("SNAPWAKE_KEEP_SNAPSHOTS", "5"),
        ("SNAPWAKE_SNAPSHOT_MAX_AGE_DAYS", "30"),
    ]);
    let c = config(&vars).unwrap();
    assert_eq!(
        (c.retention.keep_snapshots, c.retention.max_age_days),
        (5, Some(30))
    );
    for (var, value) in [
        ("SNAPWAKE_KEEP_SNAPSHOTS", "0"),
        ("SNAPWAKE_SNAPSHOT_MAX_AGE_DAYS", "0"),
        ("SNAPWAKE_SNAPSHOT_MAX_AGE_DAYS", "a month"),
    ] {
        let mut vars = KEYS.to_vec();
        vars.push((var, value));
        assert!(
            config(&vars).unwrap_err().to_string().contains(var),
            "{var}={value}"
        );
    }
}

#[test]
fn the_readiness_timeout_outlives_the_wait() {
    let mut vars = KEYS.to_vec();
    vars.extend([
        ("SNAPWAKE_WAIT_S", "20"),
        ("SNAPWAKE_READY_TIMEOUT_S", "20"),
    ]);
    assert!(config(&vars)
        .unwrap_err()
        .to_string()
        .contains("SNAPWAKE_READY_TIMEOUT_S"));
    let mut vars = KEYS.to_vec();
    vars.extend([("SNAPWAKE_WAIT_S", "5"), ("SNAPWAKE_READY_TIMEOUT_S", "30")]);
    let c = config(&vars).unwrap();
    assert_eq!(c.wake.ready_timeout, Duration::from_secs(30));
}

#[test]
fn the_longest_wait_is_twenty_seconds_and_none_at_all_is_allowed() {
    for (wait, ok) in [("0", true), ("20", true), ("21", false), ("28", false)] {
        let mut vars = KEYS.to_vec();
        vars.extend([("SNAPWAKE_WAIT_S", wait)]);
        match config(&vars) {
            Ok(c) => {
                assert!(ok, "{wait} accepted");
                assert_eq!(c.wake.wait.as_secs().to_string(), wait);
            }
            Err(e) => {
                assert!(!ok, "{wait} refused: {e}");
                assert!(e.to_string().contains("SNAPWAKE_WAIT_S"), "{e}");
            }
        }
    }
}

#[test]
fn the_keepalive_bound_is_a_minute_to_a_week() {
    assert_eq!(
        config(&KEYS).unwrap().wake.max_ttl,
        Duration::from_secs(28_800)
    );
    for bad in ["59", "604801", "x"] {
        let mut vars = KEYS.to_vec();
        vars.push(("SNAPWAKE_MAX_TTL_S", bad));
        let err = config(&vars).unwrap_err().to_string();
        assert!(err.contains("SNAPWAKE_MAX_TTL_S"), "{bad}: {err}");
    }
    let mut vars = KEYS.to_vec();
    vars.push(("SNAPWAKE_MAX_TTL_S", "3600"));
    assert_eq!(
        config(&vars).unwrap().wake.max_ttl,
        Duration::from_secs(3600)
    );
}

#[test]
fn a_secret_value_is_never_echoed_in_errors() {
    let mut vars = KEYS.to_vec();
    vars.push(("AGENTKIT_CREDENTIALS_SECRET", "x"));
    vars.push(("AWS_SESSION_TOKEN", "tok"));
    vars.push(("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT", "99999"));
    let err = config(&vars).unwrap_err().to_string();
    assert!(err.contains("PARAMETERS_SECRETS_EXTENSION_HTTP_PORT") && !err.contains("tok"));
}

#[test]
fn a_base_path_is_normalised_and_a_malformed_one_refused() {
    let mut vars = KEYS.to_vec();
    assert_eq!(config(&vars).unwrap().base_path, None);
    vars.push(("SNAPWAKE_BASE_PATH", "api/v2/"));
    assert_eq!(config(&vars).unwrap().base_path.as_deref(), Some("/api/v2"));
    for bad in ["/a b", "/api//v2", "/api?x=1", "/%2e%2e"] {
        let mut vars = KEYS.to_vec();
        vars.push(("SNAPWAKE_BASE_PATH", bad));
        match config(&vars) {
            Err(ConfigError::Invalid { var, .. }) => assert_eq!(var, "SNAPWAKE_BASE_PATH"),
            other => panic!("{bad:?} accepted: {other:?}"),
        }
    }
}

#[test]
fn snapshot_grace_and_timeout_are_read_and_ordered() {
    let c = config(&KEYS).unwrap();
    assert_eq!(c.wake.snapshot_grace, Duration::from_secs(120));
    assert_eq!(c.wake.snapshot_stuck_after, Duration::from_secs(1800));
    let mut vars = KEYS.to_vec();
    vars.extend([
        ("SNAPWAKE_SNAPSHOT_GRACE_S", "30"),
        ("SNAPWAKE_SNAPSHOT_TIMEOUT_S", "600"),
    ]);
    let c = config(&vars).unwrap();
    assert_eq!(c.wake.snapshot_grace, Duration::from_secs(30));
    assert_eq!(c.wake.snapshot_stuck_after, Duration::from_secs(600));
    // A snapshot cannot be given up on before it could even be listed.
    let mut vars = KEYS.to_vec();
    vars.extend([
        ("SNAPWAKE_SNAPSHOT_GRACE_S", "300"),
        ("SNAPWAKE_SNAPSHOT_TIMEOUT_S", "60"),
    ]);
    assert!(config(&vars)
        .unwrap_err()
        .to_string()
        .contains("SNAPWAKE_SNAPSHOT_TIMEOUT_S"));
}

#[test]
fn a_schedule_fires_at_most_hourly_unless_configured() {
    let c = config(&KEYS).unwrap();
    assert_eq!(c.schedules.min_interval, Duration::from_secs(3600));
    let mut vars = KEYS.to_vec();
    vars.push(("SNAPWAKE_SCHEDULE_MIN_INTERVAL_S", "0"));
    assert_eq!(
        config(&vars).unwrap().schedules.min_interval,
        Duration::ZERO
    );
    let mut vars = KEYS.to_vec();
    vars.push(("SNAPWAKE_SCHEDULE_MIN_INTERVAL_S", "an hour"));
    let err = config(&vars).unwrap_err().to_string();
    assert!(err.contains("SNAPWAKE_SCHEDULE_MIN_INTERVAL_S"), "{err}");
}

#[test]
fn idle_sleeps_are_handed_over_at_the_background_lane_of_the_snapshot_limit() {
    let assumed = config(&KEYS).unwrap();
    // 20 a second: 90% of it is 18, less the people's fifth (4): 14.
    assert_eq!(assumed.schedules.idle_sleeps_per_second, 14);
    let limits = [
        KEYS[0],
        KEYS[1],
        (
            "SNAPWAKE_AGENTKIT_LIMITS",
            "agentkit,CreateSessionSnapshot=50",
        ),
    ];
    // 45, less 9: 36.
    assert_eq!(
        config(&limits).unwrap().schedules.idle_sleeps_per_second,
        36
    );
    let off = [KEYS[0], KEYS[1], ("SNAPWAKE_AGENTKIT_LIMITS", "off")];
    assert_eq!(
        config(&off).unwrap().schedules.idle_sleeps_per_second,
        crate::schedule::plan::DEFAULT_IDLE_SLEEPS_PER_SECOND
    );
}
