//! The caller read from full API Gateway HTTP API (payload 2.0) events, as Lambda receives them.

use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt};
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

fn config(admins: &[&str], groups: &[&str]) -> IdentityConfig {
    IdentityConfig {
        admins: admins.iter().map(|a| a.to_lowercase()).collect(),
        admin_groups: groups.iter().map(|g| g.to_string()).collect(),
        ..IdentityConfig::default()
    }
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
    // Identifier claims compare case-folded.
    assert!(caller("jwt-cognito-groups", &config(&["alice@example.com"], &[])).is_admin);
    assert!(caller("jwt-cognito-groups", &config(&["ALICE@EXAMPLE.COM"], &[])).is_admin);
    assert!(
        caller(
            "jwt-cognito-groups",
            &config(&["8F3C2A1E-5B7D-4C9E-A0F1-2B3C4D5E6F70"], &[])
        )
        .is_admin
    );
    // `cognito:username` is not an identifier claim of docs/identity.md.
    assert!(!caller("jwt-cognito-groups", &config(&["alice"], &[])).is_admin);
}

#[test]
fn jwt_without_groups() {
    let c = caller("jwt-no-groups", &config(&[], &["admins"]));
    assert_eq!(c.owner, "github|583231");
    assert_eq!(c.display_name, "bob");
    assert!(!c.is_admin);
    assert!(caller("jwt-no-groups", &config(&["Bob"], &[])).is_admin);
    assert!(caller("jwt-no-groups", &config(&["github|583231"], &[])).is_admin);
    // `name` is free text people can often edit themselves: it never makes an admin.
    assert!(!caller("jwt-no-groups", &config(&["bob builder"], &[])).is_admin);
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
    assert!(caller("lambda-authorizer", &config(&["DEV42"], &[])).is_admin);
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
