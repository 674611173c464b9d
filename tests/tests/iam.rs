//! IAM proven against the code (docs/security.md, "What each function may do, proven by its
//! calls"): every AWS call each function made anywhere in the test suites is allowed by that
//! function's policy in `infra/template.yaml`, conditions included; every grant is used; and
//! taking any used grant away, or any used pattern from a condition, refuses a recorded call.
//!
//! The recordings come from a whole run with `SNAPWAKE_AWS_CALLS=<dir>` (`snapwake::aws_calls`),
//! so the check over them runs after every suite: `scripts/test.sh` runs it as its own step
//! (`--run-ignored only`). The other tests here check the checker on calls written by hand.

use std::path::PathBuf;

use snapwake::aws_calls::{AwsCall, RECORD_VAR};
use snapwake_tests::iam::{Condition, Policies};
use snapwake_tests::template;

fn policies() -> Policies {
    Policies::of(&template::load())
}

fn call(
    function: &str,
    service: &str,
    operation: &str,
    resource: &str,
    key: Option<&str>,
) -> AwsCall {
    AwsCall {
        function: Some(function.into()),
        service: service.into(),
        operation: operation.into(),
        resource: resource.into(),
        leading_key: key.map(str::to_string),
    }
}

#[test]
#[ignore = "needs a whole run's recordings: scripts/test.sh runs it after every suite"]
fn every_recorded_call_is_allowed_every_grant_used_and_every_mutation_refused() {
    let dir = PathBuf::from(
        std::env::var_os(RECORD_VAR)
            .expect("SNAPWAKE_AWS_CALLS names the directory a whole run recorded its AWS calls in"),
    );
    let (calls, unreadable) = snapwake_tests::iam::recorded(&dir);
    let policies = policies();
    let by_functions: Vec<&AwsCall> = calls.iter().filter(|c| c.function.is_some()).collect();
    println!(
        "{} distinct calls recorded ({} by functions, {unreadable} lines unreadable) in {}",
        calls.len(),
        by_functions.len(),
        dir.display()
    );
    for (name, function) in &policies.functions {
        let made = by_functions
            .iter()
            .filter(|c| c.function.as_deref() == Some(name))
            .count();
        println!(
            "  {name}: {made} distinct calls, {} grants",
            function.grants.len()
        );
    }
    for name in policies.functions.keys() {
        assert!(
            by_functions
                .iter()
                .any(|c| c.function.as_deref() == Some(name.as_str())),
            "{name} made no recorded call: its tests ran outside an `Invocation`?"
        );
    }

    let refused = policies.refusals(by_functions.iter().copied());
    assert!(
        refused.is_empty(),
        "calls the template does not allow:\n{}",
        lines(&refused)
    );

    let unused = policies.unused(&by_functions);
    assert!(
        unused.is_empty(),
        "grants no recorded call uses (least privilege: take them away, or test the call):\n{}",
        unused
            .iter()
            .map(|(f, g)| format!("  {f}: {g}"))
            .collect::<Vec<_>>()
            .join("\n")
    );

    // Mutations: each grant a call uses, taken away, refuses a call; so does each pattern a
    // call's key matches, taken from its condition.
    let mut narrowed = 0;
    for (name, function) in &policies.functions {
        for grant in &function.grants {
            if function.used_by_lambda(grant) {
                continue;
            }
            let mutated = policies.without(name, grant);
            let needed = by_functions.iter().any(|c| {
                c.function.as_deref() == Some(name.as_str()) && mutated.refusal(c).is_some()
            });
            assert!(
                needed,
                "{name}: without {grant}, every recorded call is still allowed (another grant \
                 allows the same)"
            );
            if let Condition::LeadingKeys { patterns, .. } = &grant.condition {
                for pattern in patterns {
                    let mutated = policies.narrowed(name, grant.statement, pattern);
                    assert!(
                        !mutated.refusals(by_functions.iter().copied()).is_empty(),
                        "{name}: without {pattern} in its condition, every call is still allowed"
                    );
                    narrowed += 1;
                }
            }
        }
    }
    assert!(
        narrowed > 0,
        "no condition was narrowed: the template has none left?"
    );
}

fn lines(set: &std::collections::BTreeSet<String>) -> String {
    set.iter()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A DynamoDB call by `function`.
fn dynamo(function: &str, operation: &str, resource: &str, key: Option<&str>) -> AwsCall {
    call(function, "dynamodb", operation, resource, key)
}

/// `function` sending to the fan-out queue.
fn queue_send(function: &str) -> AwsCall {
    call(
        function,
        "sqs",
        "SendMessageBatch",
        "env:SNAPWAKE_DUE_QUEUE_URL",
        None,
    )
}

/// `function` publishing to the state-change bus.
fn bus_put(function: &str) -> AwsCall {
    call(
        function,
        "events",
        "PutEvents",
        "env:SNAPWAKE_EVENT_BUS",
        None,
    )
}

/// The list function's write of the item `key` leads with.
fn list_write(key: &str) -> AwsCall {
    dynamo("ListFunction", "UpdateItem", "table", Some(key))
}

#[test]
fn the_list_functions_writes_are_the_budgets_and_the_cursor_keys_only() {
    let p = policies();
    let budget = list_write("BUDGET#Resume#1");
    let cursor = list_write("KEY#cursor");
    let record = list_write("AGENT#codex#a");
    assert_eq!(p.refusal(&budget), None);
    assert_eq!(p.refusal(&cursor), None);
    let refused = p.refusal(&record).expect("a record write refused");
    assert!(
        refused.contains("ListFunction")
            && refused.contains("UpdateItem")
            && refused.contains("AGENT#codex#a"),
        "names the function, the action and the key: {refused}"
    );
    // Reads lead with any key.
    assert_eq!(
        p.refusal(&dynamo("ListFunction", "GetItem", "table", Some("AGENT#x"))),
        None
    );
}

#[test]
fn a_dropped_action_or_a_narrowed_condition_refuses_the_call_it_allowed() {
    let p = policies();
    let budget = list_write("BUDGET#Resume#1");
    let list = &p.functions["ListFunction"];
    let write = list
        .grants
        .iter()
        .find(|g| g.action == "dynamodb:UpdateItem")
        .expect("the list function writes");
    assert!(p.without("ListFunction", write).refusal(&budget).is_some());
    assert!(p
        .narrowed("ListFunction", write.statement, "BUDGET#*")
        .refusal(&budget)
        .is_some());
    // Narrowing the other pattern leaves this call allowed.
    assert_eq!(
        p.narrowed("ListFunction", write.statement, "KEY#cursor")
            .refusal(&budget),
        None
    );
}

#[test]
fn each_function_reaches_only_its_own_resources() {
    let p = policies();
    let allowed = [
        dynamo("ResumeFunction", "Query", "index/by_due", Some("DUE#0")),
        queue_send("ResumeFunction"),
        bus_put("AnnounceFunction"),
        dynamo(
            "AnnounceFunction",
            "UpdateItem",
            "table",
            Some("USAGE#2026-12-07"),
        ),
        dynamo("ListFunction", "Query", "table", Some("USAGE#2026-12-07")),
        dynamo("DeleteFunction", "BatchGetItem", "table", Some("AGENT#x")),
        dynamo("DeployFunction", "PutItem", "table", Some("REGISTRY")),
    ];
    for c in &allowed {
        assert_eq!(p.refusal(c), None, "{c:?}");
    }
    let refused = [
        // The owner index is the list's and the delete's, not create's.
        dynamo("CreateFunction", "Query", "index/by_owner", Some("alice")),
        // Only the announce function publishes.
        bus_put("ResumeFunction"),
        // The announce function writes usage rows and reads nothing of the table.
        dynamo("AnnounceFunction", "GetItem", "table", Some("AGENT#x")),
        dynamo("AnnounceFunction", "UpdateItem", "table", Some("AGENT#x")),
        // The list reads usage rows, nothing else by the table's own key.
        dynamo("ListFunction", "Query", "table", Some("AGENT#x")),
        // No function scans but the list.
        dynamo("DeleteFunction", "Scan", "table", None),
        // A function the template does not have.
        dynamo("GhostFunction", "GetItem", "table", None),
    ];
    for c in &refused {
        assert!(p.refusal(c).is_some(), "{c:?} allowed");
    }
}

#[test]
fn calls_outside_every_function_are_not_a_functions() {
    let mut setup = dynamo("ListFunction", "CreateTable", "table", None);
    setup.function = None;
    assert_eq!(
        policies().refusal(&setup),
        None,
        "a test's own setup is no function's call"
    );
}

#[test]
fn a_grant_no_call_uses_is_reported_unless_lambda_uses_it() {
    let p = policies();
    let calls = [
        dynamo("ResumeFunction", "GetItem", "table", Some("AGENT#x")),
        queue_send("ResumeFunction"),
    ];
    let calls: Vec<&AwsCall> = calls.iter().collect();
    let unused: Vec<String> = p
        .unused(&calls)
        .into_iter()
        .filter(|(f, _)| f == "ResumeFunction")
        .map(|(_, g)| g.action)
        .collect();
    // The table's other actions and the due index are unused here...
    assert!(
        unused.contains(&"dynamodb:UpdateItem".to_string()),
        "{unused:?}"
    );
    assert!(unused.contains(&"dynamodb:Query".to_string()), "{unused:?}");
    // ...but not what the calls used, what Lambda polls the queue with, or the secret the
    // extension reads at cold start.
    for used in [
        "dynamodb:GetItem",
        "sqs:SendMessage",
        "sqs:ReceiveMessage",
        "secretsmanager:GetSecretValue",
    ] {
        assert!(
            !unused.contains(&used.to_string()),
            "{used} reported unused: {unused:?}"
        );
    }
}
