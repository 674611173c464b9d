//! `snapwake schedule show|set|clear <kind> <agent_id>`: an agent's wake and sleep schedule
//! through the deployed API (docs/schedules.md). Answers are printed as JSON on stdout;
//! errors name the field the API refused.

use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{json, Value};

use crate::agents::{print_answer, AgentRef};
use crate::api::{ApiArgs, Call, Client};
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct ScheduleArgs {
    #[command(flatten)]
    api: ApiArgs,
    #[command(subcommand)]
    command: ScheduleCommand,
}

#[derive(Debug, Subcommand)]
enum ScheduleCommand {
    /// Show the agent's schedule and its next occurrences (GET …/schedule).
    Show {
        #[command(flatten)]
        agent: AgentRef,
    },
    /// Set the agent's schedule, replacing any (PUT …/schedule), e.g.
    /// `snapwake schedule set codex <id> --timezone Europe/Berlin --wake "30 8 * * MON-FRI"
    /// --sleep "0 19 * * MON-FRI"`.
    Set {
        #[command(flatten)]
        agent: AgentRef,
        /// An IANA time zone (Europe/Berlin, America/New_York, UTC…).
        #[arg(long)]
        timezone: String,
        /// When to wake it: five-field cron in the zone's local time.
        #[arg(long)]
        wake: Option<String>,
        /// When to put it to sleep (snapshot kept): five-field cron.
        #[arg(long)]
        sleep: Option<String>,
    },
    /// Remove the agent's schedule (DELETE …/schedule).
    Clear {
        #[command(flatten)]
        agent: AgentRef,
    },
}

pub fn run(args: ScheduleArgs) -> Result<(), CliError> {
    print_answer(&args.api, |client| async move {
        command(&client, args.command).await
    })
}

async fn command(client: &Client, command: ScheduleCommand) -> Result<Value, CliError> {
    let (method, agent, body) = match command {
        ScheduleCommand::Show { agent } => (Method::GET, agent, None),
        ScheduleCommand::Set {
            agent,
            timezone,
            wake,
            sleep,
        } => {
            if wake.is_none() && sleep.is_none() {
                return Err(CliError::Usage(
                    "say --wake, --sleep or both (`snapwake schedule clear` removes a schedule)"
                        .into(),
                ));
            }
            let body = json!({"timezone": timezone, "wake": wake, "sleep": sleep});
            (Method::PUT, agent, Some(body))
        }
        ScheduleCommand::Clear { agent } => (Method::DELETE, agent, None),
    };
    let call = Call {
        method,
        path: agent.path(Some("schedule")),
        query: Vec::new(),
        body,
        prefer_wait: None,
        // PUT and DELETE replace or remove as a whole: asking twice is asking once.
        idempotent: true,
    };
    let answer = client.send(&call, None).await?;
    if answer.body.is_null() {
        eprintln!("snapwake: the schedule of {} is removed", agent.name());
        return Ok(json!({}));
    }
    Ok(answer.body)
}
