//! No input panics a handler (docs/architecture.md, "Quality bars and where they are checked",
//! Security): property tests over every function's `handle` with arbitrary methods, paths, query
//! strings, identities, headers and bodies (on the in-memory store and the simulator, for speed),
//! and over the UserSessionId codec.
//!
//! Every answer must be well formed: a status in 200..=599, and every 4xx/5xx a problem+json
//! body whose `status` is the HTTP status and whose `code` and `type` agree. With a healthy
//! store and simulator nothing may be a 500: an input snapwake did not foresee is a 4xx.

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::Value;
use snapwake::identity::caller::{self, UserSessionId};
use snapwake::identity::{belongs_to, display_name, is_valid_agent_id};
use snapwake::store::memory::MemoryStore;
use snapwake_tests::*;

/// One generated request.
#[derive(Clone, Debug)]
struct Input {
    method: String,
    path: String,
    query: String,
    who: usize,
    if_match: Option<Vec<u8>>,
    idempotency_key: Option<Vec<u8>>,
    body: Option<Vec<u8>>,
}

const WHO: [Who<'static>; 4] = [
    Who::User("alice"),
    Who::User("bob"),
    Who::Admin("root"),
    Who::Nobody,
];

/// A path segment: route words, real ids, plain text, percent escapes (valid or not, `%2F`,
/// `%00`, …), dots, and non-ASCII text.
fn segment(ids: Vec<String>) -> impl Strategy<Value = String> + Clone {
    let words = prop::sample::select(vec![
        "v1",
        "agents",
        "capabilities",
        "codex",
        "openclaw",
        "hermes",
        "resume",
        "snapshots",
        "..",
        ".",
        "",
        "%2F",
        "%2e%2e",
        "%00",
        "%0A",
        "%FF",
        "%",
        "snapshot-",
    ]);
    prop_oneof![
        3 => words.prop_map(str::to_string),
        2 => prop::sample::select(ids),
        2 => "[A-Za-z0-9_.:~-]{0,12}",
        1 => "(%[0-9A-Fa-f]{2}){1,4}",
        1 => "[A-Za-z0-9%._-]{190,210}",
        1 => "[\\p{L}\\p{N}\\p{S}]{1,6}",
    ]
}

/// A raw path: mostly shaped like snapwake's routes, sometimes anything.
fn path(ids: Vec<String>) -> impl Strategy<Value = String> {
    let seg = segment(ids.clone());
    let kind = prop_oneof![
        6 => Just("codex".to_string()),
        1 => prop::sample::select(vec!["hermes", "openclaw"]).prop_map(str::to_string),
        2 => seg.clone(),
    ];
    let id = prop_oneof![3 => prop::sample::select(ids), 2 => seg.clone()];
    let tail = prop::sample::select(vec![
        "",
        "",
        "/resume",
        "/resume",
        "/snapshots/",
        "/snapshots/",
        "/",
        "/x/y",
    ]);
    prop_oneof![
        6 => (kind, id.clone(), tail, id).prop_map(|(kind, id, tail, sid)| {
            let tail = if tail == "/snapshots/" { format!("{tail}{sid}") } else { tail.to_string() };
            format!("/v1/agents/{kind}/{id}{tail}")
        }),
        1 => prop::collection::vec(seg.clone(), 0..7).prop_map(|s| format!("/{}", s.join("/"))),
        3 => prop::sample::select(vec!["/v1/agents", "/v1/agents", "/v1/capabilities", "/", "/v1", "/v1/agents/"])
            .prop_map(str::to_string),
    ]
}

/// A query string of known and unknown keys (characters a URI query may hold).
fn query(ids: Vec<String>) -> impl Strategy<Value = String> {
    let key = prop_oneof![
        4 => prop::sample::select(vec!["kind", "state", "owner", "limit", "cursor"]).prop_map(str::to_string),
        1 => "[a-z%0-9]{0,6}",
    ];
    let value = prop_oneof![
        prop::sample::select(vec![
            "codex", "hermes", "gpt", "*", "alice", "root", "1", "0", "100", "101", "-1", "awake",
            "asleep", "x.y", "", "%00", "%2F", "%FF", "e30.e30",
        ])
        .prop_map(str::to_string),
        prop::sample::select(ids),
        "[A-Za-z0-9%._*~-]{0,40}",
    ];
    prop::collection::vec((key, value), 0..4).prop_map(|pairs| {
        pairs
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&")
    })
}

/// Arbitrary JSON, with snapwake's field names as likely keys.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,24}".prop_map(Value::from),
        prop::sample::select(vec![
            "codex",
            "hermes",
            "openclaw",
            "temporary",
            "recoverable",
            "Data helper"
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 32, 5, |inner| {
        let key = prop_oneof![
            3 => prop::sample::select(vec!["kind", "display_name", "retention", "snapshot_id"])
                .prop_map(str::to_string),
            1 => ".{0,8}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key, inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A body: none, random bytes, random text, arbitrary JSON, a plausible create or resume body,
/// or more than 16 KiB.
fn body(ids: Vec<String>) -> impl Strategy<Value = Option<Vec<u8>>> {
    let plausible = (
        prop::sample::select(vec![
            "codex", "codex", "codex", "hermes", "openclaw", "Codex", "",
        ]),
        prop_oneof!["[A-Za-z ]{1,20}", ".{0,45}"],
        prop::sample::select(vec!["temporary", "recoverable", "", "forever"]),
        prop::sample::select(ids),
        0..4u8,
    )
        .prop_map(|(kind, name, retention, snapshot, shape)| {
            let v = match shape {
                0 => serde_json::json!({"kind": kind, "display_name": name}),
                1 => {
                    serde_json::json!({"kind": kind, "display_name": name, "retention": retention})
                }
                2 => serde_json::json!({"snapshot_id": snapshot}),
                _ => serde_json::json!({}),
            };
            v.to_string().into_bytes()
        });
    prop_oneof![
        2 => Just(None),
        1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(Some),
        1 => ".{0,64}".prop_map(|s| Some(s.into_bytes())),
        2 => json().prop_map(|v| Some(v.to_string().into_bytes())),
        3 => plausible.prop_map(Some),
        1 => (16 * 1024 - 2..16 * 1024 + 64usize).prop_map(|n| Some(vec![b' '; n])),
    ]
}

fn header() -> impl Strategy<Value = Option<Vec<u8>>> {
    prop_oneof![
        2 => Just(None),
        1 => prop::sample::select(vec!["*", "\"0\"", "\"1\"", "W/\"2\"", "", "key-1", "\"18446744073709551616\""])
            .prop_map(|s| Some(s.as_bytes().to_vec())),
        1 => "[ -~]{0,220}".prop_map(|s| Some(s.into_bytes())),
        1 => prop::collection::vec(any::<u8>(), 0..24).prop_map(Some),
    ]
}

fn input(ids: Vec<String>) -> impl Strategy<Value = Input> {
    let method = prop_oneof![
        6 => prop::sample::select(vec!["GET", "POST", "DELETE"]).prop_map(str::to_string),
        1 => prop::sample::select(vec!["PUT", "PATCH", "HEAD", "OPTIONS", "get"]).prop_map(str::to_string),
        1 => "[A-Z]{1,10}",
    ];
    (
        method,
        path(ids.clone()),
        query(ids.clone()),
        0..WHO.len(),
        header(),
        header(),
        body(ids),
    )
        .prop_map(
            |(method, path, query, who, if_match, idempotency_key, body)| Input {
                method,
                path,
                query,
                who,
                if_match,
                idempotency_key,
                body,
            },
        )
}

/// The request of `input`, and the request id it carries.
fn build(input: &Input) -> (lambda_http::Request, String) {
    let mut ev = event(&input.method, &input.path, WHO[input.who], None);
    ev["rawQueryString"] = input.query.clone().into();
    let id = request_id_of(&ev);
    let mut req = from_event(&ev);
    let headers = req.headers_mut();
    for (name, value) in [
        ("if-match", &input.if_match),
        ("idempotency-key", &input.idempotency_key),
    ] {
        // Bytes no HTTP header can carry never reach a function.
        if let Some(v) = value
            .as_deref()
            .and_then(|v| http::HeaderValue::from_bytes(v).ok())
        {
            headers.insert(name, v);
        }
    }
    if let Some(b) = &input.body {
        *req.body_mut() = match String::from_utf8(b.clone()) {
            Ok(text) => lambda_http::Body::Text(text),
            Err(_) => lambda_http::Body::Binary(b.clone()),
        };
    }
    (req, id)
}

/// Why an answer is not well formed, if it is not.
fn malformed(resp: &lambda_http::Response<lambda_http::Body>, request_id: &str) -> Option<String> {
    let status = resp.status().as_u16();
    if !(200..=599).contains(&status) {
        return Some(format!("status {status}"));
    }
    if status == 500 {
        return Some(format!("500: {}", answer(resp).1));
    }
    if status >= 400 {
        return problem_fault(resp, status, Some(request_id));
    }
    None
}

#[test]
fn no_request_panics_a_handler_and_every_answer_is_well_formed() {
    let rt = multi_thread_runtime(2);
    let (world, api, ids) = rt.block_on(async {
        let world = World::start(Duration::ZERO).await;
        let store = Arc::new(MemoryStore::new());
        world.register(&store).await;
        let api = Api::new(store, world.client(), identity());
        let mut ids = Vec::new();
        for owner in ["alice", "bob"] {
            for _ in 0..3 {
                let (agent, snapshot) = world.asleep_agent(owner, "Fuzzed");
                ids.extend([agent, snapshot]);
            }
        }
        let (agent, _) = world.asleep_agent("alice", "With a session");
        world.live_session("alice", &agent);
        ids.push(agent);
        (world, api, ids)
    });

    let mut runner = TestRunner::new(Config {
        cases: 500,
        failure_persistence: None,
        max_shrink_iters: 200,
        ..Config::default()
    });
    // What the answers were (code or status), to show the generator reaches past routing.
    let seen = std::sync::Mutex::new(std::collections::BTreeMap::<String, usize>::new());
    let dispatched = std::sync::Mutex::new(std::collections::BTreeMap::<String, usize>::new());
    let result = runner.run(&input(ids), |input| {
        rt.block_on(async {
            for function in Function::ALL {
                let (req, id) = build(&input);
                let resp = api.handle_by(function, req).await;
                let (status, body) = answer(&resp);
                let what = body["code"]
                    .as_str()
                    .map_or(status.to_string(), str::to_string);
                *seen.lock().unwrap().entry(what).or_default() += 1;
                if let Some(why) = malformed(&resp, &id) {
                    return Err(TestCaseError::fail(format!("{function:?}: {why}")));
                }
            }
            let (req, id) = build(&input);
            let resp = api.handle(req).await;
            let (status, body) = answer(&resp);
            let what = body["code"]
                .as_str()
                .map_or(status.to_string(), str::to_string);
            *dispatched.lock().unwrap().entry(what).or_default() += 1;
            match malformed(&resp, &id) {
                Some(why) => Err(TestCaseError::fail(format!("dispatched: {why}"))),
                None => Ok(()),
            }
        })
    });
    drop(world);
    if let Err(e) = result {
        panic!("{e}");
    }
    let seen = seen.into_inner().unwrap();
    let dispatched = dispatched.into_inner().unwrap();
    eprintln!("answers of each function: {seen:?}\nanswers dispatched: {dispatched:?}");
    // The generator reaches past routing and authentication, not only into 404s.
    for what in [
        "200",
        "INVALID_REQUEST",
        "UNAUTHENTICATED",
        "AGENT_NOT_FOUND",
        "METHOD_NOT_ALLOWED",
        "ROUTE_NOT_FOUND",
    ] {
        assert!(dispatched.contains_key(what), "no {what} in {dispatched:?}");
    }
}

proptest! {
    #![proptest_config(Config { cases: 2000, failure_persistence: None, ..Config::default() })]

    /// The codec never panics on any string, and what it says agrees with itself.
    #[test]
    fn the_user_session_id_codec_never_panics(
        id in prop_oneof![
            ".{0,80}",
            "studio2?-[A-Za-z0-9_=-]{0,60}",
            "studio2-[0-9a-f]{16}-[a-z0-9]{0,8}-[A-Za-z0-9_=-]{0,24}",
            "studio-u_[A-Z2-7]{0,40}-.{0,10}",
        ],
        owner in prop_oneof![".{0,40}", "[a-z0-9_]{1,12}", "u_.{0,8}", ".{150,300}"],
        other in ".{0,40}",
        names in (
            prop::option::of(".{0,12}"),
            prop::option::of(".{0,12}"),
            prop::option::of(".{0,12}"),
        ),
    ) {
        let parsed = UserSessionId::parse(&id);
        let _ = parsed.format_name();
        let _ = parsed.legacy_name();
        let key = parsed.owner_key();
        let _ = belongs_to(&id, &owner);
        if belongs_to(&id, &owner) {
            let keys = caller::owner_keys(&owner);
            // Ownership implies the id's owner-index key is one of the owner's.
            prop_assert!(key.as_ref().is_some_and(|k| keys.contains(k)) || id.starts_with(&caller::prefix(&owner)));
        }
        let (record, metadata, snapshot) = names;
        let shown = display_name(record.as_deref(), metadata.as_deref(), Some(&id), snapshot.as_deref());
        let candidates = [record.as_deref(), metadata.as_deref(), parsed.legacy_name(), Some(id.as_str()), snapshot.as_deref()];
        prop_assert!(shown.is_empty() || candidates.contains(&Some(shown.as_str())));
        let _ = display_name(None, None, None, None);

        // A minted id is a valid agent id of its owner and of nobody else.
        let minted = caller::mint(&owner);
        prop_assert!(minted.len() <= 200 && is_valid_agent_id(&minted), "{minted}");
        prop_assert!(belongs_to(&minted, &owner));
        prop_assert_eq!(UserSessionId::parse(&minted).owner_key(), Some(caller::owner_keys(&owner)[0].clone()));
        if other != owner {
            prop_assert!(!belongs_to(&minted, &other), "{minted} of {owner:?} also {other:?}'s");
        }
    }
}
