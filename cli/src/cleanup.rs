//! `snapwake sweep [--dry-run]` and `snapwake offboard OWNER [--dry-run]`: the delete
//! function's own event handlers ([`snapwake_delete::Delete::sweep`],
//! [`snapwake_delete::Delete::offboard`]) run from a laptop against the configured table
//! (`SNAPWAKE_TABLE`, required: the Tools and the agents live there) and AgentKit
//! (`AGENTKIT_ENDPOINT` and credentials), with progress bars and a final table like `deploy`.

use std::io::Write;
use std::sync::Mutex;
use std::time::Duration;

use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use snapwake::agentkit::AgentKitClient;
use snapwake::config::Config;
use snapwake::domain::AgentKey;
use snapwake::invocation::Deadline;
use snapwake::locate::RegistryCache;
use snapwake::store::dynamo::DynamoStore;
use snapwake_delete::{Delete, DeleteSettings};
use snapwake_delete::{OffboardProgress, OffboardReport, Outcome};
use snapwake_delete::{SweepProgress, SweepReport};

use crate::error::CliError;

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// List and count what the sweep would index and prune; write and delete nothing.
    #[arg(long)]
    dry_run: bool,
    /// Stop (and checkpoint, to go on next time) after this many seconds.
    #[arg(long, default_value_t = 900)]
    timeout_s: u64,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct OffboardArgs {
    /// The owner id whose every agent is deleted.
    owner: String,
    /// List the agents that would be deleted; delete nothing.
    #[arg(long)]
    dry_run: bool,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 900)]
    timeout_s: u64,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Delete without asking. Without it the command asks on the terminal, and refuses when
    /// there is none to ask on (a script must say --yes).
    #[arg(long, short = 'y')]
    yes: bool,
}

/// Whether `owner`'s agents may go: `--yes`, a dry run, or a person at the terminal saying so.
fn confirmed(args: &OffboardArgs) -> Result<(), CliError> {
    use std::io::{BufRead, IsTerminal};
    if args.yes || args.dry_run {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(CliError::Usage(format!(
            "offboard deletes every agent of {} for good: pass --yes to do it without a \
             terminal to ask on (or --dry-run to see what would go)",
            args.owner
        )));
    }
    eprint!(
        "Delete every agent of {}, its sessions and snapshots, for good? [y/N] ",
        args.owner
    );
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        Ok(())
    } else {
        Err(CliError::Usage("not confirmed: nothing deleted".into()))
    }
}

/// The delete function's context from the environment, as its Lambda builds it.
async fn delete_function() -> Result<Delete<DynamoStore, AgentKitClient>, CliError> {
    let config = Config::from_env().map_err(|e| CliError::Usage(e.to_string()))?;
    let table = config.table.clone().ok_or_else(|| {
        CliError::Usage(
            "SNAPWAKE_TABLE is not set: the sweep and offboarding act on the agents of a table"
                .into(),
        )
    })?;
    let agentkit = AgentKitClient::from_config(&config.agentkit)
        .await
        .map_err(snapwake::Error::from)?;
    let store = DynamoStore::from_env(table).await;
    let settings = DeleteSettings::from_config(&config);
    Ok(Delete {
        agentkit: snapwake::bootstrap::within_budget(agentkit, &config, store.clone()),
        store,
        registry: RegistryCache::new(config.tool_overrides.clone()),
        identity: config.identity.clone(),
        settings,
    })
}

pub fn sweep(args: SweepArgs) -> Result<(), CliError> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let function = delete_function().await?;
        let bars = Bars::default();
        let deadline = Deadline::after(Duration::from_secs(args.timeout_s));
        let report = function.sweep(deadline, args.dry_run, &bars).await?;
        bars.finish();
        // As the scheduled sweep does: finish what earlier offboardings left.
        let offboarding = if args.dry_run {
            None
        } else {
            Some(function.finish_offboardings(deadline).await?)
        };
        let mut out = std::io::stdout().lock();
        if args.json {
            let mut value = serde_json::to_value(&report)?;
            value["offboarding"] = serde_json::to_value(&offboarding)?;
            serde_json::to_writer_pretty(&mut out, &value)?;
            writeln!(out)?;
        } else {
            print_sweep(&mut out, &report)?;
            if let Some(o) = offboarding.filter(|o| o.owners > 0) {
                writeln!(
                    out,
                    "pending offboardings: {} owner(s), {} agent(s) deleted, {} left, {} finished",
                    o.owners, o.deleted, o.left, o.finished
                )?;
            }
        }
        Ok(())
    })
}

pub fn offboard(args: OffboardArgs) -> Result<(), CliError> {
    confirmed(&args)?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let function = delete_function().await?;
        let bars = Bars::default();
        let deadline = Deadline::after(Duration::from_secs(args.timeout_s));
        let report = function
            .offboard(&args.owner, deadline, args.dry_run, &bars)
            .await?;
        bars.finish();
        let mut out = std::io::stdout().lock();
        if args.json {
            serde_json::to_writer_pretty(&mut out, &report)?;
            writeln!(out)?;
        } else {
            print_offboard(&mut out, &report)?;
        }
        if report.failed > 0 {
            return Err(CliError::Usage(format!(
                "{} agent(s) are held or could not be deleted: recorded, the next sweep (or this \
                 command again) finishes them",
                report.failed
            )));
        }
        Ok(())
    })
}

/// A bar per Tool for the sweep, one bar of agents for offboarding.
#[derive(Default)]
struct Bars {
    multi: MultiProgress,
    current: Mutex<Option<ProgressBar>>,
}

impl Bars {
    fn start(&self, prefix: &str, len: usize) {
        let bar = self.multi.add(ProgressBar::new(len as u64));
        if let Ok(style) = ProgressStyle::with_template("{prefix:<24} [{bar:30}] {pos}/{len} {msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(prefix.to_string());
        if let Ok(mut current) = self.current.lock() {
            if let Some(done) = current.replace(bar) {
                done.finish();
            }
        }
    }

    fn tick(&self, message: String) {
        if let Ok(current) = self.current.lock() {
            if let Some(bar) = current.as_ref() {
                bar.inc(1);
                bar.set_message(message);
            }
        }
    }

    fn finish(&self) {
        if let Ok(mut current) = self.current.lock() {
            if let Some(bar) = current.take() {
                bar.finish_with_message("done");
            }
        }
    }
}

impl SweepProgress for Bars {
    fn tool(&self, tool_id: &str, agents: usize) {
        self.start(tool_id, agents);
    }

    fn agent(&self, key: &AgentKey) {
        self.tick(key.agent_id.clone());
    }
}

impl OffboardProgress for Bars {
    fn found(&self, agents: usize) {
        self.start("agents", agents);
    }

    fn agent(&self, key: &AgentKey, outcome: Outcome) {
        self.tick(format!("{key}: {}", outcome_name(outcome)));
    }
}

fn outcome_name(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Deleted => "deleted",
        Outcome::AlreadyGone => "already gone",
        Outcome::WouldDelete => "would delete",
        Outcome::Failed => "FAILED",
    }
}

fn print_sweep(out: &mut impl Write, report: &SweepReport) -> std::io::Result<()> {
    writeln!(out)?;
    if report.already_running {
        return writeln!(out, "another sweep is running; nothing done");
    }
    writeln!(out, "{:<10} {:>10} {:>10}", "", "THIS RUN", "PASS")?;
    let rows = [
        ("seen", report.counts.seen, report.pass.seen),
        ("indexed", report.counts.indexed, report.pass.indexed),
        ("pruned", report.counts.pruned, report.pass.pruned),
        ("skipped", report.counts.skipped, report.pass.skipped),
        ("errors", report.counts.errors, report.pass.errors),
    ];
    for (name, run, pass) in rows {
        writeln!(out, "{name:<10} {run:>10} {pass:>10}")?;
    }
    writeln!(
        out,
        "\n{} Tools, {} ms{}{}{}",
        report.tools,
        report.duration_ms,
        if report.dry_run {
            ", dry run (nothing written)"
        } else {
            ""
        },
        if report.resumed {
            ", continued a checkpoint"
        } else {
            ""
        },
        if report.completed {
            ", pass complete"
        } else {
            ", checkpointed: run it again to go on"
        }
    )
}

fn print_offboard(out: &mut impl Write, report: &OffboardReport) -> std::io::Result<()> {
    writeln!(out)?;
    writeln!(out, "{:<10} {:<52} OUTCOME", "KIND", "AGENT")?;
    for (key, outcome) in &report.agents {
        writeln!(
            out,
            "{:<10} {:<52} {}",
            key.kind,
            key.agent_id,
            outcome_name(*outcome)
        )?;
    }
    writeln!(
        out,
        "\n{}: {} found, {} deleted, {} already gone, {} failed, {} ms{}",
        report.owner,
        report.found,
        report.deleted,
        report.already_gone,
        report.failed,
        report.duration_ms,
        if report.dry_run {
            ", dry run (nothing deleted)"
        } else {
            ""
        }
    )
}
