//! The list function end to end: API Gateway v2 requests into the handler, records on DynamoDB
//! Local, AgentKit simulated over HTTP; and the index sync that lets a list of one owner skip
//! the scan of every snapshot.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use data_encoding::BASE64URL_NOPAD;
use serde_json::Value;
use snapwake::agentkit::types::MetadataEntry;
use snapwake::agentkit::AgentKitClient;
use snapwake::domain::Description;
use snapwake::domain::{AgentKey, AgentRecord, Kind, Retention, ToolRegistry, WakeState};
use snapwake::identity::caller;
use snapwake::index_sync::{sync_index, IndexSyncReport};
use snapwake::invocation::Deadline;

use snapwake::ambient::{now_ms, now_s};
use snapwake::store::{AgentStore, Changes, Condition};
use snapwake_list::{List, ListSettings};
use snapwake_sim::{Fault, SeedSession, SeedSnapshot, SeedTool};
use snapwake_tests::counting::CountingStore;
use snapwake_tests::*;

async fn get<S: AgentStore + snapwake::store::ScheduleStore + snapwake::store::UsageStore>(
    f: &List<S, AgentKitClient>,
    path: &str,
    query: &[(&str, &str)],
    who: Who<'_>,
) -> (u16, Value) {
    answer(&f.handle(request_query("GET", path, query, who)).await)
}

async fn sync<S: AgentStore + snapwake::store::ScheduleStore + snapwake::store::UsageStore>(
    store: &S,
    world: &World,
    registry: &ToolRegistry,
) -> IndexSyncReport {
    sync_index(
        store,
        &world.client(),
        registry,
        Deadline::after(Duration::from_secs(120)),
    )
    .await
}

/// What both list paths must agree on, per agent, in order.
fn summary(body: &Value) -> Vec<(String, String, String, String, Value, Value)> {
    body["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["kind"].as_str().unwrap().to_string(),
                a["agent_id"].as_str().unwrap().to_string(),
                a["state"].as_str().unwrap().to_string(),
                a["display_name"].as_str().unwrap().to_string(),
                a["wake"]["state"].clone(),
                a["owner"].clone(),
            )
        })
        .collect()
}

fn ids(body: &Value) -> BTreeSet<String> {
    body["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent_id"].as_str().unwrap().to_string())
        .collect()
}

fn agent<'a>(body: &'a Value, id: &str) -> &'a Value {
    body["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent_id"] == id)
        .unwrap_or_else(|| panic!("{id} not listed in {body}"))
}

mod seeds;
mod capabilities;
mod scan_and_index;
mod admins;
mod queries_and_single_agents;
mod budget;
mod everyone;
mod usage;
