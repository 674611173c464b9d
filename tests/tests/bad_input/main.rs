//! The bad-input list of docs/architecture.md, "Quality bars and where they are checked" on every
//! route, against DynamoDB Local and the simulator: malformed JSON, wrong types, unknown kinds, ids
//! with `/`, `%2F`, `..`, control characters, 201-character ids, bodies over 16 KiB, forged
//! cursors, array-string group claims, bad headers, unknown routes and wrong methods. Each answers
//! a well-formed problem+json 4xx with the expected status and code, and a refused request changes
//! nothing.

use std::sync::Arc;
use std::time::Duration;

use data_encoding::{BASE64, BASE64URL_NOPAD};
use serde_json::Value;
use snapwake::agentkit::AgentKitClient;
use snapwake::store::dynamo::DynamoStore;
use snapwake_tests::*;

type DynamoApi = Api<Arc<DynamoStore>, AgentKitClient>;

/// One request and the problem it must answer.
struct Case {
    name: String,
    event: Value,
    want: u16,
    code: &'static str,
}

impl Case {
    fn new(name: impl Into<String>, event: Value, want: u16, code: &'static str) -> Case {
        Case {
            name: name.into(),
            event,
            want,
            code,
        }
    }
}

/// Run `cases` through the dispatcher; answer one line per failed case.
async fn failures(api: &DynamoApi, cases: Vec<Case>) -> Vec<String> {
    let mut failed = Vec::new();
    for case in cases {
        let id = request_id_of(&case.event);
        let resp = api.handle(from_event(&case.event)).await;
        let (_, body) = answer(&resp);
        if let Some(fault) = problem_fault(&resp, case.want, Some(&id)) {
            failed.push(format!("{}: {fault}", case.name));
        } else if body["code"] != case.code {
            failed.push(format!(
                "{}: code {}, want {} ({body})",
                case.name, body["code"], case.code
            ));
        }
    }
    failed
}

fn assert_none_failed(failed: Vec<String>, of: usize) {
    assert!(
        failed.is_empty(),
        "{} of {of} cases failed:\n  {}",
        failed.len(),
        failed.join("\n  ")
    );
}

async fn world_and_api(test: &str) -> (World, DynamoApi) {
    let world = World::start(Duration::ZERO).await;
    let store = Arc::new(dynamo_store(test).await);
    world.register(&store).await;
    let api = Api::new(store, world.client(), identity());
    (world, api)
}

const ALICE: Who<'static> = Who::User("alice");

mod kinds_and_ids;
mod bodies;
mod headers_and_claims;
mod queries;
mod routes;
