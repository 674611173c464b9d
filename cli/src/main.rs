//! `snapwake`: the command-line entry point. Parses arguments and hands each subcommand to its
//! module; every module exposes `run(args) -> Result<(), CliError>`.

mod agents;
mod api;
mod cleanup;
mod deploy;
mod error;
mod invoke;
mod schedule;
mod serve;
mod sim;
mod table;
mod usid;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::CliError;

#[derive(Debug, Parser)]
#[command(
    name = "snapwake",
    version,
    about = "The snapwake control plane's command line"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the whole HTTP API on loopback (embedded store and simulator by default).
    Serve(serve::ServeArgs),
    /// Plan or apply the AgentKit Tools snapwake needs (the deploy function's code).
    Deploy(deploy::DeployArgs),
    /// Run the retention sweep: index every agent, prune old snapshots (the delete
    /// function's code).
    Sweep(cleanup::SweepArgs),
    /// Delete every agent of one owner (the delete function's offboarding).
    Offboard(cleanup::OffboardArgs),
    /// Run one function's handler on one event against the configured table and AgentKit,
    /// printing what the Lambda would answer (`--sample help` lists ready-made events).
    Invoke(invoke::InvokeArgs),
    /// Make snapwake's table on a local DynamoDB engine.
    Table(table::TableArgs),
    /// Serve the AgentKit simulator on loopback until Ctrl-C.
    Sim(sim::SimArgs),
    /// Encode owners and decode UserSessionIds (support tools).
    Usid(usid::UsidArgs),
    /// The deployed API from a terminal: list, show, wake and sleep agents (--url or
    /// SNAPWAKE_API_URL, --token or SNAPWAKE_TOKEN).
    Agents(agents::AgentsArgs),
    /// An agent's wake and sleep schedule through the deployed API: show, set, clear.
    Schedule(schedule::ScheduleArgs),
    /// Print a completion script for a shell: `snapwake completions bash > /etc/bash_completion.d/snapwake`,
    /// `snapwake completions zsh > "${fpath[1]}/_snapwake"`,
    /// `snapwake completions fish > ~/.config/fish/completions/snapwake.fish`.
    Completions { shell: clap_complete::Shell },
}

fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Deploy(args) => deploy::run(args),
        Command::Sweep(args) => cleanup::sweep(args),
        Command::Offboard(args) => cleanup::offboard(args),
        Command::Invoke(args) => invoke::run(args),
        Command::Table(args) => table::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Usid(args) => usid::run(args),
        Command::Agents(args) => agents::run(args),
        Command::Schedule(args) => schedule::run(args),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "snapwake",
                &mut std::io::stdout(),
            );
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("snapwake: {err}");
            ExitCode::from(err.exit_code())
        }
    }
}
