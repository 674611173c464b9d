//! `snapwake deploy --plan | --apply [--catalogue FILE] [--migrate-legacy]`: the deploy
//! function's reconciler ([`snapwake_deploy::reconcile`]) run from a laptop against `AGENTKIT_ENDPOINT`
//! (credentials from the environment, as the functions read them), with a progress bar per
//! Tool and a final table.
//!
//! The registry goes to DynamoDB when `SNAPWAKE_TABLE` is set; otherwise to an in-memory
//! store that dies with the process (a warning says so), which still shows what would happen.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Mutex;
use std::time::Duration;

use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use snapwake::agentkit::AgentKitClient;
use snapwake::config::Config;
use snapwake::invocation::Deadline;
use snapwake::store::dynamo::DynamoStore;
use snapwake::store::memory::MemoryStore;
use snapwake::store::AgentStore;
use snapwake_deploy::reconcile::{
    no_retry_policy, Catalogue, DeployOptions, DeploySettings, Deployer, EntryReport, Progress,
    Report,
};

use crate::error::CliError;

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["plan", "apply"])))]
pub struct DeployArgs {
    /// Read AgentKit and show what a deploy would do; write nothing.
    #[arg(long)]
    plan: bool,
    /// Reconcile: create and update Tools, then write the registry.
    #[arg(long)]
    apply: bool,
    /// A catalogue override document (JSON), instead of `SNAPWAKE_CATALOGUE`.
    #[arg(long, value_name = "FILE")]
    catalogue: Option<String>,
    /// Re-purpose a legacy single Tool per kind as the recoverable one.
    #[arg(long)]
    migrate_legacy: bool,
    /// Give up (reporting unfinished Tools as pending) after this many seconds.
    #[arg(long, default_value_t = 900)]
    timeout_s: u64,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: DeployArgs) -> Result<(), CliError> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(deploy(args))
}

async fn deploy(args: DeployArgs) -> Result<(), CliError> {
    let env = |name: &str| std::env::var(name).ok();
    let config = Config::from_env().map_err(|e| CliError::Usage(e.to_string()))?;
    let catalogue = match &args.catalogue {
        Some(path) => Catalogue::from_lookup(|name| {
            if name == "SNAPWAKE_CATALOGUE" {
                Some(path.clone())
            } else {
                env(name)
            }
        })?,
        None => Catalogue::from_lookup(env)?,
    };
    let agentkit = AgentKitClient::from_config(&config.agentkit)
        .await
        .map_err(snapwake::Error::from)?;
    let writer = agentkit.clone().with_retry_policy(no_retry_policy());
    let options = DeployOptions {
        dry_run: args.plan,
        migrate_legacy: args.migrate_legacy,
    };
    let deadline = Deadline::after(Duration::from_secs(args.timeout_s));
    let bars = Bars::default();
    let report = match &config.table {
        Some(table) => {
            let store = DynamoStore::from_env(table.clone()).await;
            // The deployment's AgentKit budget, as the deploy function takes it.
            let agentkit = snapwake::bootstrap::within_budget(agentkit, &config, store.clone());
            let writer = agentkit.clone().with_retry_policy(no_retry_policy());
            run_with(
                &store, &agentkit, &writer, &catalogue, &bars, options, deadline,
            )
            .await?
        }
        None => {
            eprintln!(
                "warning: SNAPWAKE_TABLE is not set; the registry goes to an in-memory store \
                 and is not persisted"
            );
            let store = MemoryStore::new();
            run_with(
                &store, &agentkit, &writer, &catalogue, &bars, options, deadline,
            )
            .await?
        }
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        print_table(&mut out, &report)?;
    }
    Ok(())
}

async fn run_with<S: AgentStore>(
    store: &S,
    agentkit: &AgentKitClient,
    writer: &AgentKitClient,
    catalogue: &Catalogue,
    progress: &dyn Progress,
    options: DeployOptions,
    deadline: Deadline,
) -> Result<Report, CliError> {
    let settings = DeploySettings::default();
    let deployer = Deployer {
        store,
        agentkit,
        writer,
        catalogue,
        settings: &settings,
        progress,
    };
    Ok(deployer.run(options, deadline).await?)
}

/// One spinner per Tool.
#[derive(Default)]
struct Bars {
    multi: MultiProgress,
    bars: Mutex<HashMap<String, ProgressBar>>,
}

impl Bars {
    fn bar(&self, key: &str) -> Option<ProgressBar> {
        let mut bars = self.bars.lock().ok()?;
        let bar = bars.entry(key.to_string()).or_insert_with(|| {
            let bar = self.multi.add(ProgressBar::new_spinner());
            if let Ok(style) = ProgressStyle::with_template("{spinner} {prefix:<18} {msg}") {
                bar.set_style(style);
            }
            bar.set_prefix(key.to_string());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Some(bar.clone())
    }
}

impl Progress for Bars {
    fn planned(&self, entry: &EntryReport) {
        if let Some(bar) = self.bar(&entry.key) {
            let steps = if entry.steps.is_empty() {
                "nothing to do".to_string()
            } else {
                entry.steps.join(" → ")
            };
            bar.set_message(format!("planned: {steps}"));
        }
    }

    fn step(&self, key: &str, step: &str) {
        if let Some(bar) = self.bar(key) {
            bar.set_message(step.to_string());
        }
    }

    fn finished(&self, entry: &EntryReport) {
        if let Some(bar) = self.bar(&entry.key) {
            bar.finish_with_message(format!("{:?}", entry.status).to_lowercase());
        }
    }
}

fn print_table(out: &mut impl Write, report: &Report) -> std::io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "{:<18} {:<10} {:<24} {:<56} REASON",
        "KEY", "STATUS", "TOOL", "NAME"
    )?;
    for e in &report.entries {
        let status = format!("{:?}", e.status).to_lowercase();
        let detail = match (&e.reason, e.steps.is_empty()) {
            (Some(r), _) => r.clone(),
            (None, false) => e.steps.join(", "),
            (None, true) => String::new(),
        };
        writeln!(
            out,
            "{:<18} {:<10} {:<24} {:<56} {}",
            e.key,
            status,
            e.tool_id.as_deref().unwrap_or("-"),
            e.name,
            detail
        )?;
        for note in &e.notes {
            writeln!(out, "{:<18} note: {note}", "")?;
        }
    }
    if let Some(message) = &report.message {
        writeln!(out, "\n{message}")?;
    }
    for w in &report.warnings {
        writeln!(out, "warning: {w}")?;
    }
    writeln!(
        out,
        "\n{:?}: {} writes, {} throttles, {} ms{}",
        report.outcome,
        report.writes,
        report.throttles,
        report.duration_ms,
        if report.registry_written {
            ", registry written"
        } else {
            ""
        }
    )
}
