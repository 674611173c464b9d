use super::*;

const ROUTES: [Route; 3] = [
    Route::new("GET", "/v1/agents/{kind}/{agent_id}"),
    Route::new("DELETE", "/v1/agents/{kind}/{agent_id}"),
    Route::new("POST", "/v1/agents/{kind}/{agent_id}/resume"),
];

#[test]
fn routes_capture_decoded_segments() {
    let m = route(&ROUTES, "POST", "/v1/agents/codex/studio-a%3Ab/resume").unwrap();
    assert_eq!(m.params, vec!["codex", "studio-a:b"]);
    let m = route(&ROUTES, "GET", "/v1/agents/codex/x/").unwrap();
    assert_eq!(m.params, vec!["codex", "x"]);
}

#[test]
fn unknown_paths_are_404_and_wrong_methods_405() {
    assert!(matches!(
        route(&ROUTES, "GET", "/v1/nope"),
        Err(Error::RouteNotFound)
    ));
    match route(&ROUTES, "PUT", "/v1/agents/codex/x") {
        Err(Error::MethodNotAllowed { allow }) => assert_eq!(allow, "GET, DELETE"),
        other => panic!("{other:?}"),
    }
}

fn with_body(body: &str) -> Request {
    let mut req = Request::default();
    *req.body_mut() = Body::Text(body.into());
    req
}

#[test]
fn a_json_body_must_be_an_object() {
    #[derive(Debug, Default, serde::Deserialize)]
    #[allow(dead_code)]
    struct Optional {
        #[serde(default)]
        id: Option<String>,
    }
    for bad in ["[]", "[\"x\"]", "null", "7", "\"x\"", "true", " \n[1]"] {
        assert!(
            optional_json::<Optional>(&with_body(bad)).is_err(),
            "{bad:?}"
        );
    }
    assert!(optional_json::<Optional>(&with_body(" \n "))
        .unwrap()
        .is_none());
    let ok = optional_json::<Optional>(&with_body(" {\"id\":\"a\"}")).unwrap();
    assert_eq!(ok.unwrap().id.as_deref(), Some("a"));
}

#[test]
fn a_slash_inside_an_id_is_refused_once_decoded() {
    let m = route(&ROUTES, "GET", "/v1/agents/codex/a%2Fb").unwrap();
    assert!(parse_id(&m.params[1]).is_err());
    assert!(parse_id("..").is_ok(), "dots are legal id characters");
    assert!(parse_id(&"a".repeat(201)).is_err());
    assert!(parse_id("a\u{7}").is_err());
    assert!(route(&ROUTES, "GET", "/v1/agents/codex/%FF").is_err());
    assert!(parse_kind("Codex").is_err());
}
