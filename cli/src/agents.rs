//! `snapwake agents list|show|wake|sleep`: the deployed API from a terminal, for operators
//! (docs/operations.md, "The API from a terminal"). Answers are printed as JSON on stdout;
//! retries, progress and errors go to stderr. Errors API Gateway answers itself are named as
//! such ([`crate::api::answer`]).

use std::io::Write;
use std::time::Duration;

use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{json, Value};

use crate::api::{ApiArgs, Call, Client, Doing};
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct AgentsArgs {
    #[command(flatten)]
    api: ApiArgs,
    #[command(subcommand)]
    command: AgentsCommand,
}

const KINDS: [&str; 3] = ["codex", "openclaw", "hermes"];

/// An agent on the command line: `<kind> <agent_id>`.
#[derive(Debug, Args)]
pub(crate) struct AgentRef {
    /// The agent's kind.
    #[arg(value_parser = KINDS)]
    kind: String,
    /// The agent's id (its UserSessionId, or `snapshot-<SnapshotId>`).
    #[arg(allow_hyphen_values = true)]
    agent_id: String,
}

impl AgentRef {
    pub(crate) fn path(&self, verb: Option<&str>) -> Vec<String> {
        let mut path = vec![
            "v1".to_string(),
            "agents".to_string(),
            self.kind.clone(),
            self.agent_id.clone(),
        ];
        path.extend(verb.map(str::to_string));
        path
    }

    pub(crate) fn name(&self) -> String {
        format!("{}/{}", self.kind, self.agent_id)
    }
}

#[derive(Debug, Subcommand)]
enum AgentsCommand {
    /// List agents (GET /v1/agents): yours, one owner's (--owner, admins) or everyone's
    /// (--all, admins; every page followed).
    List {
        /// Everyone's agents, page after page (`owner=*`).
        #[arg(long, conflicts_with = "owner")]
        all: bool,
        /// One owner's agents (admins).
        #[arg(long, allow_hyphen_values = true)]
        owner: Option<String>,
        /// Only agents of this kind.
        #[arg(long, value_parser = KINDS)]
        kind: Option<String>,
        /// Only agents in this state (awake, asleep, waking, …).
        #[arg(long)]
        state: Option<String>,
        /// Agents per page with --all (1–100).
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100))]
        limit: u32,
    },
    /// Show one agent (GET /v1/agents/{kind}/{agent_id}).
    Show {
        #[command(flatten)]
        agent: AgentRef,
    },
    /// Wake an agent and wait until it is awake (POST …/resume with `Prefer: wait=20`, asked
    /// again after each 202's Retry-After).
    Wake {
        #[command(flatten)]
        agent: AgentRef,
        /// Wake from this snapshot instead of the newest Ready one.
        #[arg(long)]
        snapshot: Option<String>,
        /// Stop following after this long (the wake goes on without the command).
        #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
        timeout: Duration,
    },
    /// Put an agent to sleep and wait until its snapshot is saved (POST …/sleep, followed
    /// like wake).
    Sleep {
        #[command(flatten)]
        agent: AgentRef,
        /// Stop following after this long (the sleep goes on without the command).
        #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
        timeout: Duration,
    },
}

/// The most `--all` pages followed: 100 000 agents at the largest page size.
const MAX_PAGES: usize = 1000;

/// How long a wake or sleep request asks to be held (the API's own maximum, under API
/// Gateway's 30 s integration timeout).
const PREFER_WAIT_S: u32 = 20;

pub fn run(args: AgentsArgs) -> Result<(), CliError> {
    print_answer(&args.api, |client| async move {
        command(&client, args.command).await
    })
}

/// Run one command against the API on a runtime of its own and print its JSON answer.
pub(crate) fn print_answer<F, A>(api: &ApiArgs, command: F) -> Result<(), CliError>
where
    F: FnOnce(Client) -> A,
    A: std::future::Future<Output = Result<Value, CliError>>,
{
    let client = Client::new(api)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let out = runtime.block_on(command(client))?;
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut stdout, &out)?;
    writeln!(stdout)?;
    Ok(())
}

async fn command(client: &Client, command: AgentsCommand) -> Result<Value, CliError> {
    match command {
        AgentsCommand::List {
            all,
            owner,
            kind,
            state,
            limit,
        } => {
            let mut query: Vec<(&'static str, String)> = Vec::new();
            query.extend(kind.map(|k| ("kind", k)));
            query.extend(state.map(|s| ("state", s)));
            if all {
                return list_everyone(client, query, limit).await;
            }
            query.extend(owner.map(|o| ("owner", o)));
            let mut call = Call::get(vec!["v1".into(), "agents".into()]);
            call.query = query;
            Ok(client.send(&call, None).await?.body)
        }
        AgentsCommand::Show { agent } => {
            Ok(client.send(&Call::get(agent.path(None)), None).await?.body)
        }
        AgentsCommand::Wake {
            agent,
            snapshot,
            timeout,
        } => {
            let body = snapshot.map(|s| json!({ "snapshot_id": s }));
            let doing = Doing {
                agent: agent.name(),
                doing: "waking",
                verb: "wake",
            };
            followed(client, &agent, "resume", body, &doing, timeout).await
        }
        AgentsCommand::Sleep { agent, timeout } => {
            let doing = Doing {
                agent: agent.name(),
                doing: "going to sleep",
                verb: "sleep",
            };
            followed(client, &agent, "sleep", None, &doing, timeout).await
        }
    }
}

async fn followed(
    client: &Client,
    agent: &AgentRef,
    verb: &str,
    body: Option<Value>,
    doing: &Doing,
    timeout: Duration,
) -> Result<Value, CliError> {
    let call = Call {
        method: Method::POST,
        path: agent.path(Some(verb)),
        query: Vec::new(),
        body,
        prefer_wait: Some(PREFER_WAIT_S),
        // A wake or sleep asked twice is the same wake or sleep (docs/wake-protocol.md).
        idempotent: true,
    };
    let answer = client.follow(&call, doing, timeout).await?;
    if let Some(state) = answer.body.get("state").and_then(Value::as_str) {
        eprintln!("snapwake: {} is {state}", doing.agent);
    }
    Ok(answer.body)
}

/// Every page of `owner=*`, followed by `next_cursor`: one list of agents, and the Tools that
/// could not be read on any page.
async fn list_everyone(
    client: &Client,
    query: Vec<(&'static str, String)>,
    limit: u32,
) -> Result<Value, CliError> {
    let mut agents = Vec::new();
    let mut partial = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut call = Call::get(vec!["v1".into(), "agents".into()]);
        call.query = query.clone();
        call.query.push(("owner", "*".to_string()));
        call.query.push(("limit", limit.to_string()));
        call.query.extend(cursor.take().map(|c| ("cursor", c)));
        let mut page = client.send(&call, None).await?.body;
        if let Some(Value::Array(more)) = page.get_mut("agents").map(Value::take) {
            agents.extend(more);
        }
        if let Some(Value::Array(more)) = page.get_mut("partial").map(Value::take) {
            partial.extend(more);
        }
        match page.get("next_cursor").and_then(Value::as_str) {
            Some(next) if !next.is_empty() => cursor = Some(next.to_string()),
            _ => return Ok(json!({ "agents": agents, "partial": partial })),
        }
    }
    Err(CliError::from(crate::api::ApiError::Client(format!(
        "more than {MAX_PAGES} pages of agents: narrow the list with --kind or --state"
    ))))
}
