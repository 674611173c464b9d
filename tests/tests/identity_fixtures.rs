//! The caller read from full API Gateway HTTP API (payload 2.0) events, as Lambda receives them.

use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt};
use snapwake::config::Config;
use snapwake::identity::Caller;
use snapwake::identity::IdentityConfig;
use snapwake::Error;

fn event(name: &str) -> Request {
    let path = format!("{}/fixtures/apigw/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let json = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let request = lambda_http::request::from_str(&json).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert!(
        matches!(
            request.request_context_ref(),
            Some(RequestContext::ApiGatewayV2(_))
        ),
        "{name} is not an HTTP API payload 2.0 event"
    );
    request
}

/// The identity configuration `SNAPWAKE_ADMINS=<admins joined by commas>` and
/// `SNAPWAKE_ADMIN_GROUPS=<groups>` give, read as the functions read them.
fn config(admins: &[&str], groups: &[&str]) -> IdentityConfig {
    let lookup = |name: &str| match name {
        "SNAPWAKE_ADMINS" => Some(admins.join(",")),
        "SNAPWAKE_ADMIN_GROUPS" => Some(groups.join(",")),
        "VOLCENGINE_ACCESS_KEY" | "VOLCENGINE_SECRET_KEY" => Some("fixture".to_string()),
        _ => None,
    };
    Config::from_lookup(lookup)
        .expect("a valid configuration")
        .identity
}

fn caller(name: &str, config: &IdentityConfig) -> Caller {
    Caller::from_request(&event(name), config).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn cognito_jwt_with_flattened_groups() {
    let c = caller("jwt-cognito-groups", &IdentityConfig::default());
    assert_eq!(c.owner, "8f3c2a1e-5b7d-4c9e-a0f1-2b3c4d5e6f70");
    assert_eq!(c.display_name, "Alice@Example.com");
    assert!(!c.is_admin, "nobody is admin unless configured");

    // `cognito:groups` arrives as "[admins devs]".
    assert!(caller("jwt-cognito-groups", &config(&[], &["admins"])).is_admin);
    assert!(caller("jwt-cognito-groups", &config(&[], &["devs"])).is_admin);
    assert!(!caller("jwt-cognito-groups", &config(&[], &["ops"])).is_admin);
    assert!(!caller("jwt-cognito-groups", &config(&[], &["[admins"])).is_admin);
    // A verified email, named as such, compares ignoring ASCII case.
    assert!(
        caller(
            "jwt-cognito-groups",
            &config(&["email:alice@example.com"], &[])
        )
        .is_admin
    );
    assert!(
        caller(
            "jwt-cognito-groups",
            &config(&["email:ALICE@EXAMPLE.COM"], &[])
        )
        .is_admin
    );
    // A bare value is looked for only in the claim the owner id came from (`sub`).
    assert!(!caller("jwt-cognito-groups", &config(&["alice@example.com"], &[])).is_admin);
    let sub = "8F3C2A1E-5B7D-4C9E-A0F1-2B3C4D5E6F70";
    assert!(caller("jwt-cognito-groups", &config(&[sub], &[])).is_admin);
    assert!(caller("jwt-cognito-groups", &config(&[&format!("sub:{sub}")], &[])).is_admin);
    // `cognito:username` is not an identifier claim of docs/identity.md.
    assert!(!caller("jwt-cognito-groups", &config(&["alice"], &[])).is_admin);
}

/// `SNAPWAKE_ADMINS=boss@corp.com` named the boss by email; a user pool that lets people pick
/// their username let mallory sign up as `boss@corp.com`. Neither the bare entry nor the
/// `email:` one makes her admin; only naming the claim she chose would.
#[test]
fn a_chosen_username_equal_to_an_admin_email_is_not_admin() {
    let c = caller("jwt-chosen-username", &config(&["boss@corp.com"], &[]));
    assert_eq!(c.owner, "0b7e6a52-93c4-4f1e-8d2a-6c5b4a392817");
    assert!(!c.is_admin, "cross-claim match");
    assert!(
        !caller(
            "jwt-chosen-username",
            &config(&["email:boss@corp.com"], &[])
        )
        .is_admin
    );
    assert!(!caller("jwt-chosen-username", &config(&["BOSS@corp.com"], &[])).is_admin);
    assert!(
        caller(
            "jwt-chosen-username",
            &config(&["preferred_username:boss@corp.com"], &[])
        )
        .is_admin
    );
}

/// `\u{212A}` (KELVIN SIGN) lower-cases to `k` under Unicode rules: folding only ASCII keeps
/// `\u{212A}ate@corp.com` apart from `kate@corp.com`.
#[test]
fn a_kelvin_sign_is_not_the_letter_k() {
    for admins in [
        "email:kate@corp.com",
        "email:KATE@corp.com",
        "preferred_username:kate@corp.com",
    ] {
        let c = caller("jwt-kelvin-sign", &config(&[admins], &[]));
        assert!(!c.is_admin, "{admins}");
    }
    assert!(
        caller(
            "jwt-kelvin-sign",
            &config(&["email:\u{212A}ate@corp.com"], &[])
        )
        .is_admin
    );
}

/// `email` counts only with `email_verified: true`.
#[test]
fn an_unverified_email_is_not_admin_and_a_verified_one_is() {
    let unverified = caller(
        "jwt-unverified-email",
        &config(&["email:boss@corp.com"], &[]),
    );
    assert_eq!(unverified.display_name, "boss@corp.com");
    assert!(!unverified.is_admin);
    // The same address, verified (jwt-cognito-groups carries `email_verified: "true"`).
    assert!(
        caller(
            "jwt-cognito-groups",
            &config(&["email:Alice@Example.com"], &[])
        )
        .is_admin
    );
    // `sub:`-qualified: the unverified caller's own id still works.
    assert!(
        caller(
            "jwt-unverified-email",
            &config(&["sub:9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"], &[])
        )
        .is_admin
    );
}

#[test]
fn jwt_without_groups() {
    let c = caller("jwt-no-groups", &config(&[], &["admins"]));
    assert_eq!(c.owner, "github|583231");
    assert_eq!(c.display_name, "bob");
    assert!(!c.is_admin);
    assert!(!caller("jwt-no-groups", &config(&["Bob"], &[])).is_admin);
    assert!(caller("jwt-no-groups", &config(&["preferred_username:Bob"], &[])).is_admin);
    assert!(caller("jwt-no-groups", &config(&["github|583231"], &[])).is_admin);
    assert!(caller("jwt-no-groups", &config(&["sub:github|583231"], &[])).is_admin);
    // `name` is free text people can often edit themselves: it never makes an admin.
    assert!(!caller("jwt-no-groups", &config(&["bob builder"], &[])).is_admin);
    assert!(!caller("jwt-no-groups", &config(&["name:Bob Builder"], &[])).is_admin);
    // A configured owner claim order is honoured.
    let by_username = IdentityConfig {
        owner_claims: vec!["preferred_username".into(), "sub".into()],
        ..IdentityConfig::default()
    };
    assert_eq!(caller("jwt-no-groups", &by_username).owner, "bob");
}

#[test]
fn lambda_authorizer_with_mixed_values() {
    let c = caller("lambda-authorizer", &IdentityConfig::default());
    // No `sub`: `user_id` is next, and the number 42 counts as "42".
    assert_eq!(c.owner, "42");
    assert_eq!(c.display_name, "dev42");
    assert!(!c.is_admin);
    assert!(caller("lambda-authorizer", &config(&[], &["admins"])).is_admin);
    assert!(caller("lambda-authorizer", &config(&["42"], &[])).is_admin);
    assert!(!caller("lambda-authorizer", &config(&["DEV42"], &[])).is_admin);
    assert!(caller("lambda-authorizer", &config(&["login:DEV42"], &[])).is_admin);
    assert!(caller("lambda-authorizer", &config(&["user_id:42"], &[])).is_admin);
    assert!(!caller("lambda-authorizer", &config(&["acme"], &["staff"])).is_admin);
}

#[test]
fn missing_identity_is_a_401_problem() {
    // no-authorizer also carries the local server's headers: Lambda must ignore them.
    for name in ["no-authorizer", "jwt-empty-claims"] {
        let err =
            Caller::from_request(&event(name), &config(&["mallory"], &["admins"])).expect_err(name);
        assert!(matches!(err, Error::Unauthenticated), "{name}: {err:?}");
        let response = err.into_response(Some("UvW6CjY4IAMEV0C="));
        assert_eq!(response.status().as_u16(), 401);
        assert_eq!(
            response.headers()[http::header::CONTENT_TYPE],
            "application/problem+json"
        );
        let Body::Text(body) = response.body() else {
            panic!("{name}: body is not text");
        };
        let problem: serde_json::Value = serde_json::from_str(body).expect("problem+json");
        assert_eq!(problem["code"], "UNAUTHENTICATED");
        assert_eq!(problem["status"], 401);
        assert_eq!(problem["request_id"], "UvW6CjY4IAMEV0C=");
    }
}

#[test]
fn a_request_without_an_api_gateway_context_is_unauthenticated() {
    let request = Request::new(Body::Empty);
    assert!(matches!(
        Caller::from_request(&request, &IdentityConfig::default()),
        Err(Error::Unauthenticated)
    ));
}

#[test]
fn an_owner_claim_order_that_finds_nothing_is_unauthenticated() {
    let only_email = IdentityConfig {
        owner_claims: vec!["email".into()],
        ..IdentityConfig::default()
    };
    assert!(matches!(
        Caller::from_request(&event("lambda-authorizer"), &only_email),
        Err(Error::Unauthenticated)
    ));
}
