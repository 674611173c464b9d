//! The deploy reconciler and function end to end: the simulator with its 3-per-second tool
//! write throttle ON, the registry and the deploy lock on DynamoDB Local.

use std::sync::Arc;
use std::time::{Duration, Instant};

use snapwake::agentkit::types::{MetadataEntry, UpdateTool};
use snapwake::agentkit::{AgentKit, AgentKitClient};
use snapwake::domain::{Kind, Retention, ToolRegistry};
use snapwake::identity::caller;
use snapwake::invocation::Deadline;
use snapwake::locate::{RegistryCache, ToolOverrides};
use snapwake::store::AgentStore;
use snapwake::wake::WakeSettings;
use snapwake_deploy::reconcile::catalogue::tool_name;
use snapwake_deploy::reconcile::plan::find_by_name;
use snapwake_deploy::reconcile::{
    no_retry_policy, Catalogue, DeployOptions, DeploySettings, EntryStatus, Report, RunOutcome,
    WriteLimiter,
};
use snapwake_deploy::Deploy;
use snapwake_resume::Resume;
use snapwake_sim::{SeedSnapshot, SeedTool, SimConfig, SimControl, Simulator};
use snapwake_tests::*;

const APP: &str = "Acme Studio";

/// Quick polling for tests; everything else as in production.
fn settings() -> DeploySettings {
    DeploySettings {
        poll_interval: Duration::from_millis(100),
        finish_margin: Duration::from_millis(300),
        ..DeploySettings::default()
    }
}

fn catalogue(overrides: &[(&str, &str)]) -> Catalogue {
    let mut c = Catalogue::default_for(Some(APP));
    let map = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    c.apply_overrides(&ToolOverrides(map));
    c
}

fn deploy_fn<S: AgentStore + snapwake::store::ScheduleStore>(
    store: S,
    endpoint: &str,
    catalogue: Catalogue,
) -> Deploy<S, AgentKitClient> {
    Deploy {
        store,
        agentkit: client(endpoint),
        writer: client(endpoint).with_retry_policy(no_retry_policy()),
        catalogue,
        settings: settings(),
    }
}

async fn run<S: AgentStore + snapwake::store::ScheduleStore>(
    f: &Deploy<S, AgentKitClient>,
    options: DeployOptions,
    budget: Duration,
) -> Report {
    f.run(options, Deadline::after(budget)).await.unwrap()
}

fn apply() -> DeployOptions {
    DeployOptions::default()
}

fn tool_writes(ctl: &SimControl) -> u64 {
    let c = ctl.counters();
    c.received("CreateTool") + c.received("UpdateTool")
}

/// Every catalogue name matches exactly one Tool.
async fn assert_one_tool_per_name(endpoint: &str, catalogue: &Catalogue) {
    let c = client(endpoint);
    for e in &catalogue.entries {
        let found = find_by_name(&c, REGION, &e.name, Deadline::after(Duration::from_secs(5)))
            .await
            .unwrap();
        assert_eq!(found.len(), 1, "{} Tools named {}", found.len(), e.name);
    }
}

async fn sim(tool_ready_delay: Duration) -> snapwake_sim::RunningSim {
    Simulator::start(SimConfig {
        tool_ready_delay,
        ..SimConfig::default()
    })
    .await
    .unwrap()
}

mod reconciling;
mod throttle;
mod legacy;
