//! `snapwake invoke FUNCTION [--event FILE|-]`: one function's handler on one event, locally,
//! against the configured table (`SNAPWAKE_TABLE`) and AgentKit (`AGENTKIT_ENDPOINT` and
//! credentials), printing what the Lambda would answer: the API Gateway response JSON of an
//! HTTP request, the report of the sweep, offboarding or deploy. What `sam local invoke` does,
//! without Docker. `snapwake invoke --sample NAME` prints a ready-made event to start from.

use std::io::{Read, Write};
use std::time::Duration;

use clap::{Args, ValueEnum};
use lambda_http::{Context, Request, RequestExt};
use serde_json::Value;
use snapwake::agentkit::AgentKitClient;
use snapwake::ambient::now_ms;
use snapwake::config::Config;
use snapwake::http::edge::api_gateway_v2;
use snapwake::locate::RegistryCache;
use snapwake::store::dynamo::DynamoStore;
use snapwake_deploy::reconcile::{no_retry_policy, Catalogue, DeploySettings};

use crate::error::CliError;

#[derive(Debug, Args)]
pub struct InvokeArgs {
    /// The function to run.
    #[arg(value_enum, required_unless_present = "sample")]
    function: Option<Function>,
    /// The event: a JSON file, or `-` for standard input.
    #[arg(long, default_value = "-")]
    event: String,
    /// The invocation's time limit, as the function's Lambda timeout would set it.
    #[arg(long, default_value_t = 30)]
    timeout_s: u64,
    /// Print a sample event instead of invoking anything (`--sample help` lists them).
    #[arg(long, conflicts_with = "function")]
    sample: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Function {
    List,
    Create,
    Resume,
    Delete,
    Deploy,
}

/// The sample events: a name, what it is, and the event.
fn samples() -> Vec<(&'static str, &'static str, Value)> {
    let http = |method: &str, path: &str, body: Option<&str>| {
        let mut event = fixture(APIGW_EVENT);
        event["rawPath"] = path.into();
        event["routeKey"] = format!("{method} {path}").into();
        event["requestContext"]["http"]["method"] = method.into();
        event["requestContext"]["http"]["path"] = path.into();
        event["body"] = body.map_or(Value::Null, Value::from);
        if let Some(headers) = event["headers"].as_object_mut() {
            headers.remove("idempotency-key");
            headers.remove("content-length");
        }
        event
    };
    vec![
        (
            "list-agents",
            "list: GET /v1/agents, as API Gateway delivers it with a JWT authorizer",
            http("GET", "/v1/agents", None),
        ),
        (
            "capabilities",
            "list: GET /v1/capabilities",
            http("GET", "/v1/capabilities", None),
        ),
        (
            "create-agent",
            "create: POST /v1/agents",
            http(
                "POST",
                "/v1/agents",
                Some(r#"{"kind":"codex","display_name":"From snapwake invoke"}"#),
            ),
        ),
        (
            "resume-agent",
            "resume: POST /v1/agents/codex/AGENT_ID/resume (put an agent id in the path), held \
             until awake (`Prefer: wait=20`; without it, a 202 at once while it boots)",
            {
                let mut event = http("POST", "/v1/agents/codex/AGENT_ID/resume", None);
                event["headers"]["prefer"] = "wait=20".into();
                event
            },
        ),
        (
            "tick",
            "resume: the schedules' tick, as EventBridge Scheduler sends it every minute (put \
             the minute to tick at in \"time\")",
            fixture(include_str!(
                "../../tests/fixtures/eventbridge/scheduler-tick.json"
            )),
        ),
        (
            "sweep",
            "delete: the sweep's EventBridge schedule with its input {\"action\": \"sweep\"}",
            fixture(include_str!(
                "../../tests/fixtures/eventbridge/scheduled-sweep-input.json"
            )),
        ),
        (
            "owner-offboarded",
            "delete: an offboarding event (detail-type snapwake.owner.offboarded)",
            fixture(include_str!(
                "../../tests/fixtures/eventbridge/owner-offboarded.json"
            )),
        ),
        (
            "scheduled",
            "deploy: the daily EventBridge schedule",
            fixture(include_str!(
                "../../tests/fixtures/eventbridge/scheduled-event.json"
            )),
        ),
        (
            "deploy-plan",
            "deploy: a direct invoke that plans and writes nothing",
            serde_json::json!({ "dry_run": true }),
        ),
    ]
}

/// The API Gateway HTTP API (payload 2.0) event the HTTP samples are edited from: a real one,
/// with a JWT authorizer's claims.
const APIGW_EVENT: &str = include_str!("../../tests/fixtures/apigw/jwt-no-groups.json");

fn fixture(text: &str) -> Value {
    // The fixtures are the repository's own, checked by the tests: they parse.
    serde_json::from_str(text).unwrap_or(Value::Null)
}

pub fn run(args: InvokeArgs) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    if let Some(name) = args.sample {
        let all = samples();
        let Some((_, _, event)) = all.iter().find(|(n, _, _)| *n == name) else {
            let mut names = String::new();
            for (n, about, _) in &all {
                names.push_str(&format!("\n  {n:<18} {about}"));
            }
            return if name == "help" {
                writeln!(out, "sample events:{names}")?;
                Ok(())
            } else {
                Err(CliError::Usage(format!(
                    "no sample named {name:?}; the samples are:{names}"
                )))
            };
        };
        serde_json::to_writer_pretty(&mut out, event)?;
        writeln!(out)?;
        return Ok(());
    }
    let Some(function) = args.function else {
        return Err(CliError::Usage("name a function or --sample".into()));
    };
    let event = read_event(&args.event)?;
    let budget = Duration::from_secs(args.timeout_s);
    let runtime = tokio::runtime::Runtime::new()?;
    let answer = runtime.block_on(invoke(function, event, budget))?;
    serde_json::to_writer_pretty(&mut out, &answer)?;
    writeln!(out)?;
    Ok(())
}

fn read_event(source: &str) -> Result<Value, CliError> {
    let mut text = String::new();
    if source == "-" {
        std::io::stdin().read_to_string(&mut text)?;
    } else {
        text = std::fs::read_to_string(source)
            .map_err(|e| CliError::Usage(format!("{source}: {e}")))?;
    }
    serde_json::from_str(&text).map_err(|e| CliError::Usage(format!("the event is not JSON: {e}")))
}

/// The Lambda context of an invocation that may take `budget`.
fn context(budget: Duration) -> Context {
    let mut context = Context::default();
    context.request_id = format!("invoke-{}", uuid::Uuid::new_v4().simple());
    context.deadline = now_ms() + budget.as_millis() as u64;
    context
}

async fn invoke(function: Function, event: Value, budget: Duration) -> Result<Value, CliError> {
    let config = Config::from_env().map_err(|e| CliError::Usage(e.to_string()))?;
    let table = config.table.clone().ok_or_else(|| {
        CliError::Usage(
            "SNAPWAKE_TABLE is not set: a function acts on the agents of a table".into(),
        )
    })?;
    // As the deployed functions are: the views' open link (in the configuration). Their state
    // changes reach the bus from the table's stream, through the deployed announce function
    // (docs/events.md), as any other writer's do.
    let store = DynamoStore::from_env(table).await;
    let agentkit = AgentKitClient::from_config(&config.agentkit)
        .await
        .map_err(snapwake::Error::from)?;
    let agentkit = snapwake::bootstrap::within_budget(agentkit, &config, store.clone());
    let registry = RegistryCache::new(config.tool_overrides.clone());
    let identity = config.identity.clone();
    let context = context(budget);
    match function {
        Function::List => {
            let list = snapwake_list::List::new(
                store,
                agentkit,
                registry,
                identity,
                snapwake_list::ListSettings {
                    lock: config.wake.lock.clone(),
                    cursor_key: config.cursor_key.clone(),
                    open_url: config.open_url.clone(),
                    prices: config.prices.clone(),
                },
            );
            let request = http_request(function, &event, context)?;
            Ok(json(api_gateway_v2(list.handle(request).await)))
        }
        Function::Create => {
            let create = snapwake_create::Create {
                store,
                agentkit,
                registry,
                identity,
                settings: snapwake_create::CreateSettings {
                    open_url: config.open_url.clone(),
                    idle: config.wake.idle,
                    ..snapwake_create::CreateSettings::default()
                },
            };
            let request = http_request(function, &event, context)?;
            Ok(json(api_gateway_v2(create.handle(request).await)))
        }
        Function::Resume => {
            let resume = snapwake_resume::Resume {
                store,
                agentkit,
                registry,
                identity,
                wake: config.wake.clone(),
                schedules: config.schedules.clone(),
                // No queue: the tick's own invocation works what it hands over.
                fanout: snapwake::fanout::Fanout::Channel(Default::default()),
            };
            // The function's own dispatch: an HTTP request or the schedules' tick, typed as
            // the Lambda runtime types it.
            let event = serde_json::from_value(event).map_err(|e| {
                CliError::Usage(format!("not an event of the resume function: {e}"))
            })?;
            Ok(json(resume.invoke(event, context).await?))
        }
        Function::Delete => {
            let settings = snapwake_delete::DeleteSettings::from_config(&config);
            let delete = snapwake_delete::Delete {
                store,
                agentkit,
                registry,
                identity,
                settings,
            };
            Ok(delete.invoke(event, context).await?)
        }
        Function::Deploy => {
            let catalogue = Catalogue::from_lookup(|name| std::env::var(name).ok())
                .map_err(|e| CliError::Usage(e.to_string()))?;
            let deploy = snapwake_deploy::Deploy {
                store,
                writer: agentkit.clone().with_retry_policy(no_retry_policy()),
                agentkit,
                catalogue,
                settings: DeploySettings::default(),
            };
            Ok(deploy.invoke(event, &context).await?)
        }
    }
}

/// `event` as the HTTP request it carries: only an API Gateway HTTP API (payload 2.0) event is
/// one for the list, create and resume functions.
fn http_request(function: Function, event: &Value, context: Context) -> Result<Request, CliError> {
    if event.pointer("/requestContext/http/method").is_none() {
        let name = function
            .to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default();
        return Err(CliError::Usage(format!(
            "{name} takes an API Gateway HTTP API (payload 2.0) event; \
             `snapwake invoke --sample help` lists ready-made ones"
        )));
    }
    let request = lambda_http::request::from_str(&event.to_string())
        .map_err(|e| CliError::Usage(format!("not an API Gateway request: {e}")))?;
    Ok(request.with_lambda_context(context))
}

/// A function's answer as the JSON `snapwake invoke` prints.
fn json(answer: impl serde::Serialize) -> Value {
    serde_json::to_value(answer).unwrap_or(Value::Null)
}
