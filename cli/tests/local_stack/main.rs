//! The local stack, as an operator following the README runs it: on DynamoDB Local (a fresh
//! table) and a `snapwake sim` process, the built `snapwake` binary runs `table create`,
//! `deploy --apply`, `serve` (in the background), `sweep` and `offboard`, each as its own
//! process, in that order; every step's exit code and output are checked, and the agents
//! are checked over real HTTP through `serve` between the steps.
//!
//! Needs DynamoDB Local: `eval "$(scripts/start-dynamodb-local.sh)"` (scripts/test.sh does it).
//! Without `AWS_ENDPOINT_URL` this fails, it does not skip.
//!
//! Checks that do not stop the flow are collected and reported together at the end, so one
//! wrong message does not hide what the later steps do.

mod setup;

use setup::*;

mod processes;
mod findings;
mod http;

use findings::*;
use http::*;
use processes::*;

#[test]
fn the_local_stack_runs_in_the_readme_order() {
    let started = Instant::now();
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    assert!(
        !endpoint.trim().is_empty(),
        "AWS_ENDPOINT_URL is not set: this test needs DynamoDB Local. Start it with \
         `eval \"$(scripts/start-dynamodb-local.sh)\"` (or run scripts/test.sh)"
    );
    let mut findings = Findings::default();
    let table = format!("snapwake-local-stack-{}", uuid::Uuid::new_v4().simple());

    // 0. The AgentKit simulator, on a port of our choosing.
    let sim_port = free_port();
    let mut stack = Stack {
        table: table.clone(),
        agentkit: format!("http://127.0.0.1:{sim_port}"),
    };
    let mut sim = Proc::spawn(
        "snapwake sim",
        stack.command(&["sim", "--port", &sim_port.to_string()]),
    );
    let sim_lines = sim.wait_for_first_line();
    let sim_banner = sim_lines.first().cloned().unwrap_or_default();
    assert!(
        sim_banner.contains(&stack.agentkit),
        "the simulator's first line should say it listens on {}: {sim_banner:?}",
        stack.agentkit
    );
    // Its first line names where it listens; use exactly that.
    if let Some(url) = sim_banner
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
    {
        stack.agentkit = url.trim_end_matches(['/', ',', ';', ')']).to_string();
    }

    // 1. `table create`: refuses without a local engine; makes the table; again is a no-op.
    let mut no_endpoint = stack.command(&["table", "create"]);
    no_endpoint.env_remove("AWS_ENDPOINT_URL");
    let refused = stack.run_command("table create (no AWS_ENDPOINT_URL)", no_endpoint);
    findings.check(refused.code() == Some(2), || {
        format!(
            "`table create` without AWS_ENDPOINT_URL should exit 2\n{}",
            refused.describe()
        )
    });
    findings.check(refused.stderr.contains("AWS_ENDPOINT_URL"), || {
        format!(
            "`table create` without AWS_ENDPOINT_URL should name the variable\n{}",
            refused.describe()
        )
    });

    let created = stack.run(&["table", "create"]);
    assert!(
        created.status.success(),
        "`table create` failed\n{}",
        created.describe()
    );
    findings.check(created.stdout.contains(&table), || {
        format!(
            "`table create` should name the table it made\n{}",
            created.describe()
        )
    });
    let again = stack.run(&["table", "create"]);
    findings.check(again.status.success(), || {
        format!(
            "a second `table create` should exit 0 (idempotent)\n{}",
            again.describe()
        )
    });

    // 2. `deploy --apply`: the Tools on the simulator, the registry in the table.
    let deployed = stack.run(&["deploy", "--apply"]);
    assert!(
        deployed.status.success(),
        "`deploy --apply` failed\n{}",
        deployed.describe()
    );
    findings.check(
        deployed.stdout.contains("Applied") && deployed.stdout.contains("registry written"),
        || {
            format!(
                "`deploy --apply` should report Applied and the registry written\n{}",
                deployed.describe()
            )
        },
    );
    let created_tools = deployed
        .stdout
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some("created"))
        .count();
    findings.check(created_tools == 7, || {
        format!(
            "`deploy --apply` on a fresh simulator should create the catalogue's 7 Tools, \
             created {created_tools}\n{}",
            deployed.describe()
        )
    });
    findings.check(!deployed.stderr.contains("not persisted"), || {
        format!(
            "`deploy --apply` with SNAPWAKE_TABLE must write the table, not memory\n{}",
            deployed.describe()
        )
    });

    // 3. `serve` in the background, on the table and the simulator.
    let port = free_port();
    let mut serve = Proc::spawn(
        "snapwake serve",
        stack.command(&["serve", "--port", &port.to_string(), "--sweep-every", "0s"]),
    );
    let first_lines = serve.wait_for_first_line();
    let waiting = Instant::now();
    let capabilities = loop {
        match http(port, "GET", "/v1/capabilities", None) {
            Ok(answer) if answer.status == 200 => break answer,
            Ok(answer) if waiting.elapsed() > START_TIMEOUT => panic!(
                "GET /v1/capabilities answered {}\n{}",
                answer.describe(),
                serve.describe()
            ),
            Err(e) if waiting.elapsed() > START_TIMEOUT => panic!(
                "snapwake serve did not answer within {START_TIMEOUT:?}: {e}\n{}",
                serve.describe()
            ),
            _ => {
                serve.assert_running();
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    };
    let stdout = serve.stdout();
    let first = first_lines.first().cloned().unwrap_or_default();
    findings.check(
        first.starts_with(&format!("snapwake serving on http://127.0.0.1:{port}")),
        || {
            format!(
                "the first line `snapwake serve` prints on stdout should be its banner \
                 (\"snapwake serving on http://127.0.0.1:{port} …\"), got {first:?}\n\
                 --- stdout so far ---\n{stdout}"
            )
        },
    );
    let banner = stdout
        .lines()
        .find(|l| l.contains("snapwake serving on"))
        .unwrap_or_default()
        .to_string();
    findings.check(!banner.is_empty(), || {
        format!("`snapwake serve` printed no banner\n{}", serve.describe())
    });
    findings.check(
        !banner.is_empty() && !banner.to_lowercase().contains("demo"),
        || format!("without --demo the banner must not claim demo agents: {banner:?}"),
    );
    findings.check(banner.contains("sweep"), || {
        format!("the banner should mention the start-up sweep: {banner:?}")
    });
    findings.check(!banner.contains("sweep failed"), || {
        format!("the start-up sweep failed: {banner:?}")
    });
    findings.check(!banner.contains("then every"), || {
        format!("with --sweep-every 0s the banner must not announce a schedule: {banner:?}")
    });
    findings.check(
        banner.contains("DynamoDB") && banner.contains(&stack.agentkit),
        || {
            format!(
                "the banner should name the DynamoDB store and AgentKit at {}: {banner:?}",
                stack.agentkit
            )
        },
    );
    let codex = capabilities.json()["kinds"]
        .as_array()
        .and_then(|kinds| kinds.iter().find(|k| k["kind"] == "codex").cloned())
        .unwrap_or(Value::Null);
    findings.check(codex["retention"]["recoverable"]["enabled"] == true, || {
        format!(
            "the registry `deploy --apply` wrote should enable recoverable codex: {}",
            capabilities.describe()
        )
    });

    let create = http(
        port,
        "POST",
        "/v1/agents",
        Some(&serde_json::json!({
            "kind": "codex",
            "display_name": "Stack test",
            "retention": "recoverable",
        })),
    )
    .expect("POST /v1/agents");
    assert_eq!(
        create.status,
        201,
        "POST /v1/agents: {}\n{}",
        create.describe(),
        serve.describe()
    );
    let agent = create.json();
    let agent_id = agent["agent_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no agent_id in {}", create.describe()))
        .to_string();
    findings.check(
        agent["owner"] == USER
            && agent["kind"] == "codex"
            && agent["display_name"] == "Stack test"
            && agent["retention"] == "recoverable",
        || format!("the created agent: {}", create.describe()),
    );
    let agent_path = format!("/v1/agents/codex/{agent_id}");
    findings.check(
        create.headers.get("location").map(String::as_str) == Some(agent_path.as_str()),
        || format!("Location should be {agent_path}: {}", create.describe()),
    );
    let listed = http(port, "GET", "/v1/agents", None).expect("GET /v1/agents");
    findings.check(
        listed.status == 200 && listed_ids(&listed) == [agent_id.clone()],
        || {
            format!(
                "GET /v1/agents should list {agent_id}: {}",
                listed.describe()
            )
        },
    );

    // Its day on the deployed path: kept alive, put to sleep, woken again.
    let kept = http(
        port,
        "POST",
        &format!("{agent_path}/keepalive"),
        Some(&serde_json::json!({"ttl_s": 7200})),
    )
    .expect("POST keepalive");
    findings.check(
        kept.status == 200 && kept.json()["session"]["expire_at"].is_string(),
        || {
            format!(
                "keepalive should answer 200 with the session: {}",
                kept.describe()
            )
        },
    );
    let slept = http(port, "POST", &format!("{agent_path}/sleep"), None).expect("POST sleep");
    findings.check(
        slept.status == 200
            && slept.json()["state"] == "asleep"
            && slept.json()["slept"] == true
            && slept.json()["snapshots"][0]["status"] == "Ready",
        || {
            format!(
                "sleep should answer 200 asleep with a Ready snapshot: {}",
                slept.describe()
            )
        },
    );
    let woken = http(port, "POST", &format!("{agent_path}/resume"), None).expect("POST resume");
    findings.check(
        woken.status == 200 && woken.json()["state"] == "awake" && woken.json()["resumed"] == true,
        || {
            format!(
                "resume after the sleep should wake it: {}",
                woken.describe()
            )
        },
    );

    // 4. `sweep`: a whole pass over the Tools; the JSON report too.
    let swept = stack.run(&["sweep"]);
    findings.check(swept.status.success(), || {
        format!("`sweep` should exit 0\n{}", swept.describe())
    });
    findings.check(swept.stdout.contains("pass complete"), || {
        format!(
            "`sweep` should report the pass complete\n{}",
            swept.describe()
        )
    });
    let swept_json = stack.run(&["sweep", "--json"]);
    findings.check(swept_json.status.success(), || {
        format!("`sweep --json` should exit 0\n{}", swept_json.describe())
    });
    match serde_json::from_str::<Value>(&swept_json.stdout) {
        Ok(report) => findings.check(
            report["completed"] == true
                && report["dry_run"] == false
                && report["already_running"] == false
                && report["errors"] == 0
                && report["seen"].as_u64().is_some_and(|n| n >= 1),
            || {
                format!(
                    "`sweep --json` should report a complete pass that saw alice's agent, \
                     without errors: {report:#}"
                )
            },
        ),
        Err(e) => findings.check(false, || {
            format!(
                "`sweep --json` printed no JSON ({e})\n{}",
                swept_json.describe()
            )
        }),
    }

    // 5. `offboard alice`: a dry run lists and keeps; the real run deletes; again is a no-op.
    let dry = stack.run(&["offboard", USER, "--dry-run"]);
    findings.check(dry.status.success(), || {
        format!(
            "`offboard {USER} --dry-run` should exit 0\n{}",
            dry.describe()
        )
    });
    findings.check(
        dry.stdout
            .lines()
            .any(|l| l.contains(&agent_id) && l.contains("would delete"))
            && dry.stdout.contains("0 deleted")
            && dry.stdout.contains("dry run"),
        || {
            format!(
                "`offboard {USER} --dry-run` should list {agent_id} as \"would delete\" and \
                 delete nothing\n{}",
                dry.describe()
            )
        },
    );
    let still = http(port, "GET", &agent_path, None).expect("GET the agent");
    findings.check(still.status == 200, || {
        format!(
            "after the dry run {agent_path} should still answer 200: {}",
            still.describe()
        )
    });
    let still_listed = http(port, "GET", "/v1/agents", None).expect("GET /v1/agents");
    findings.check(listed_ids(&still_listed) == [agent_id.clone()], || {
        format!(
            "after the dry run GET /v1/agents should still list {agent_id}: {}",
            still_listed.describe()
        )
    });

    // Without --yes and without a terminal to ask on, it refuses and deletes nothing.
    let mut unasked = stack.command(&["offboard", USER]);
    unasked.stdin(std::process::Stdio::null());
    let refused = stack.run_command("offboard (no --yes, no terminal)", unasked);
    findings.check(
        !refused.status.success() && refused.stderr.contains("--yes"),
        || {
            format!(
                "`offboard {USER}` without --yes or a terminal should refuse, naming --yes\n{}",
                refused.describe()
            )
        },
    );
    let kept = http(port, "GET", &agent_path, None).expect("GET the agent");
    findings.check(kept.status == 200, || {
        format!(
            "after the refused offboard {agent_path} should still answer 200: {}",
            kept.describe()
        )
    });

    let offboarded = stack.run(&["offboard", USER, "--yes"]);
    findings.check(offboarded.status.success(), || {
        format!("`offboard {USER}` should exit 0\n{}", offboarded.describe())
    });
    findings.check(
        offboarded
            .stdout
            .lines()
            .any(|l| l.contains(&agent_id) && l.trim_end().ends_with("deleted"))
            && offboarded.stdout.contains("1 deleted")
            && offboarded.stdout.contains("0 failed"),
        || {
            format!(
                "`offboard {USER}` should report {agent_id} deleted\n{}",
                offboarded.describe()
            )
        },
    );
    let after = http(port, "GET", "/v1/agents", None).expect("GET /v1/agents");
    findings.check(after.status == 200 && listed_ids(&after).is_empty(), || {
        format!(
            "after offboarding GET /v1/agents should list nothing: {}",
            after.describe()
        )
    });
    let gone = http(port, "GET", &agent_path, None).expect("GET the agent");
    findings.check(
        gone.status == 410 && gone.body.contains("AGENT_GONE"),
        || {
            format!(
                "after offboarding {agent_path} should answer 410 AGENT_GONE: {}",
                gone.describe()
            )
        },
    );

    let again = stack.run(&["offboard", USER, "--yes"]);
    findings.check(again.status.success(), || {
        format!(
            "a second `offboard {USER}` should exit 0 (nothing left)\n{}",
            again.describe()
        )
    });
    findings.check(
        again.stdout.contains("0 deleted") && again.stdout.contains("0 failed"),
        || {
            format!(
                "a second `offboard {USER}` should delete nothing\n{}",
                again.describe()
            )
        },
    );

    // The background processes lived through it all.
    serve.assert_running();
    sim.assert_running();
    drop(serve);
    drop(sim);
    eprintln!(
        "[local_stack] whole flow on table {table} in {} ms",
        started.elapsed().as_millis()
    );
    assert!(
        findings.0.is_empty(),
        "{} check(s) failed:\n\n{}",
        findings.0.len(),
        findings.0.join("\n\n")
    );
}
