//! The AgentKit client against the strict simulator over real HTTP: every action, filters,
//! pagination and its guards, errors, retries within a deadline, region fallback, and the
//! session → snapshot → resumed session lifecycle.

use std::time::Duration;

use snapwake::agentkit::answer::RetryPolicy;
use snapwake::agentkit::types::*;
use snapwake::agentkit::{list_all, AgentKitClient, AgentKitError, Credentials, Pager};
use snapwake::agentkit::{AgentKitConfig, CredentialsSource};
use snapwake::invocation::Deadline;
use snapwake_sim::{Fault, RunningSim, SeedTool, SimConfig, SimControl, Simulator};

const BEIJING: &str = "cn-beijing";
const SHANGHAI: &str = "cn-shanghai";

fn config(endpoint: &str, regions: &[&str]) -> AgentKitConfig {
    AgentKitConfig {
        endpoint: endpoint.to_string(),
        regions: regions.iter().map(|r| r.to_string()).collect(),
        credentials: CredentialsSource::Static(SimConfig::default().credentials),
        request_timeout: Duration::from_secs(5),
    }
}

/// Short backoffs keep the retry tests quick; `Retry-After` still wins when the sim sends it.
fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        base: Duration::from_millis(20),
        max_wait: Duration::from_secs(2),
    }
}

async fn start() -> (RunningSim, AgentKitClient) {
    let sim = Simulator::start(SimConfig::default()).await.unwrap();
    let client = AgentKitClient::new(
        &config(&sim.endpoint(), &[BEIJING, SHANGHAI]),
        SimConfig::default().credentials,
    )
    .unwrap()
    .with_retry_policy(fast_retries());
    (sim, client)
}

fn soon() -> Deadline {
    Deadline::after(Duration::from_secs(10))
}

fn seed_tool(ctl: &SimControl, region: &str, name: &str, snapshots: bool) -> String {
    ctl.seed_tool(region, SeedTool::code_env(name, snapshots))
        .unwrap()
}

fn metadata(owner: &str, name: &str) -> Vec<MetadataEntry> {
    vec![
        MetadataEntry::string("Username", owner),
        MetadataEntry::string("veadk_display_name", name),
        MetadataEntry::string("veadk_creator_name", owner),
    ]
}

mod actions;
mod errors_and_retries;
mod regions_and_limits;
mod budget;
