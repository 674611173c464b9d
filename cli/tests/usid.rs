//! `snapwake usid` run as a real process, its JSON output parsed.

use std::process::{Command, Output};

use serde_json::Value;

fn snapwake(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_snapwake"))
        .args(args)
        .output()
        .expect("the snapwake binary runs")
}

fn json(args: &[&str]) -> Value {
    let out = snapwake(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

#[test]
fn encode_accepts_an_owner_starting_with_a_hyphen() {
    let expected = serde_json::json!({
        "owner": "-alice",
        "safe_owner": "u_FVQWY2LDMU",
        "prefix": "studio-u_FVQWY2LDMU-",
        "owner_keys": ["studio-u_FVQWY2LDMU", "studio2-69940822d4655a6e"],
    });
    assert_eq!(json(&["usid", "encode", "--", "-alice"]), expected);
    assert_eq!(json(&["usid", "encode", "-alice"]), expected);
}

#[test]
fn encode_follows_the_spec_vectors() {
    let v = json(&["usid", "encode", "alice@example.com"]);
    assert_eq!(v["safe_owner"], "u_MFWGSY3FIBSXQYLNOBWGKLTDN5WQ");
    assert_eq!(v["prefix"], "studio-u_MFWGSY3FIBSXQYLNOBWGKLTDN5WQ-");
    let v = json(&["usid", "encode", "张三"]);
    assert_eq!(v["safe_owner"], "u_4W6KBZFYRE");
}

#[test]
fn decode_with_and_without_owner() {
    let legacy = "studio2-2bd806c97f0e00af-random-QWxpY2UgT2xk";
    let v = json(&["usid", "decode", legacy]);
    assert_eq!(
        v,
        serde_json::json!({
            "user_session_id": legacy,
            "format": "legacy",
            "owner_key": "studio2-2bd806c97f0e00af",
            "display_name": "Alice Old",
            "belongs_to_owner": null,
        })
    );
    assert_eq!(
        json(&["usid", "decode", legacy, "--owner", "alice"])["belongs_to_owner"],
        true
    );
    assert_eq!(
        json(&["usid", "decode", "--owner", "bob", legacy])["belongs_to_owner"],
        false
    );

    let current = "studio-u_FVQWY2LDMU-0f3c9a7e5b1d4c2a8e6f0b9d7c5a3e1f";
    let v = json(&["usid", "decode", current, "--owner", "-alice"]);
    assert_eq!(v["format"], "current");
    assert_eq!(v["owner_key"], "studio-u_FVQWY2LDMU");
    assert_eq!(v["display_name"], Value::Null);
    assert_eq!(v["belongs_to_owner"], true);

    let older = "studio-1b4e28ba-2fa1-11d2-883f-0016d3cca427";
    let v = json(&["usid", "decode", older, "--owner=alice"]);
    assert_eq!(v["format"], "older");
    assert_eq!(v["owner_key"], Value::Null);
    assert_eq!(v["belongs_to_owner"], false);

    assert_eq!(json(&["usid", "decode", "--", "-x"])["format"], "unowned");
}

#[test]
fn bad_input_exits_2_with_a_message() {
    for args in [
        &["usid", "encode", ""][..],
        &["usid", "decode", ""],
        &["usid", "decode", "studio-alice-1", "--owner", ""],
        &["usid", "encode"],
        &["usid", "frobnicate"],
    ] {
        let out = snapwake(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
}
