//! State-change events end to end (docs/events.md): every function writing to DynamoDB Local,
//! the table's own stream relayed as the deployed announce function relays it, through
//! snapwake's real EventBridge publisher (SigV4, `PutEvents`) to a recording EventBridge double
//! over HTTP, AgentKit simulated. One event per change, counted; the same `change_id` on every
//! delivery of one change; a failing or slow bus never changes the answer of the change it
//! reports, and loses nothing; never an endpoint or a secret in a body.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use snapwake::agentkit::AgentKit;
use snapwake::domain::{AgentKey, Kind};
use snapwake::store::dynamo::DynamoStore;
use snapwake::store::{AgentStore, ScheduleStore};
use snapwake_tests::event_bus::*;
use snapwake_tests::relay::Relay;
use snapwake_tests::*;

mod changes;
mod delivery;
mod kills;
mod learned;
mod triggers;

type Store = Arc<DynamoStore>;

/// A fresh table whose stream is relayed to a fresh bus double.
async fn announcing(test: &str) -> (Store, EventBusDouble, Relay) {
    let bus = EventBusDouble::start().await;
    let store = Arc::new(dynamo_store_streamed(test).await);
    let relay = Relay::of_table(&store, bus.publisher()).await;
    (store, bus, relay)
}

/// [`announcing`], with a [`World`] whose registry is written in the table.
async fn deployed_announcing(
    test: &str,
    session_ready_delay: Duration,
) -> (Store, World, EventBusDouble, Relay) {
    let (store, bus, relay) = announcing(test).await;
    let world = World::registered(session_ready_delay, &store).await;
    (store, world, bus, relay)
}

fn key(agent_id: &str) -> AgentKey {
    AgentKey::new(Kind::Codex, agent_id)
}

/// `method` on `/v1/agents/codex/<agent_id>[/<verb>]` as alice, through the API's routing.
async fn call<S: AgentStore + ScheduleStore + snapwake::store::UsageStore, K: AgentKit>(
    api: &Api<S, K>,
    method: &str,
    agent_id: &str,
    verb: &str,
) -> (u16, Value) {
    let path = if verb.is_empty() {
        format!("/v1/agents/codex/{agent_id}")
    } else {
        format!("/v1/agents/codex/{agent_id}/{verb}")
    };
    answer(&api.handle(alices_request(method, &path)).await)
}

/// POST `verb` until settled, which must leave the agent `state` (200).
async fn settle_to<S: AgentStore + ScheduleStore + snapwake::store::UsageStore, K: AgentKit>(
    api: &Api<S, K>,
    agent_id: &str,
    verb: &str,
    state: &str,
) {
    let (status, body) = settle_alices(api, agent_id, verb, Duration::from_secs(30)).await;
    assert_eq!(
        (status, body["state"].as_str()),
        (200, Some(state)),
        "{verb}: {body}"
    );
}

/// The accepted events about `agent_id`, by detail-type, once the relay has handed over every
/// change written so far.
async fn published_about(
    relay: &Relay,
    bus: &EventBusDouble,
    agent_id: &str,
) -> BTreeMap<String, Vec<Delivery>> {
    relay.caught_up().await;
    let mut by_type: BTreeMap<String, Vec<Delivery>> = BTreeMap::new();
    for d in bus.published() {
        if d.detail["agent_id"] == agent_id {
            by_type.entry(d.detail_type.clone()).or_default().push(d);
        }
    }
    by_type
}

/// What every delivery must be: from snapwake, to the configured bus, a detail of the
/// documented fields only, and nothing in the body a caller must never see.
fn assert_well_formed(bus: &EventBusDouble, world: &World) {
    let allowed = [
        "kind",
        "agent_id",
        "owner",
        "session_id",
        "snapshot_id",
        "error_code",
        "at",
        "trigger",
        "change_id",
    ];
    let sim_endpoint = world.sim.endpoint();
    let deliveries = bus.deliveries();
    assert!(!deliveries.is_empty(), "nothing was published");
    assert_eq!(bus.bad_signatures(), 0, "every request signed right");
    for d in &deliveries {
        assert_eq!((d.source.as_str(), d.bus.as_str()), ("snapwake", BUS_NAME));
        assert!(d.detail_type.starts_with("snapwake.agent."), "{d:?}");
        let fields = d.detail.as_object().expect("an object");
        assert!(
            fields.keys().all(|k| allowed.contains(&k.as_str())),
            "{d:?}"
        );
        let change = d.detail["change_id"].as_str().unwrap_or_default();
        let agent = d.detail["agent_id"].as_str().unwrap_or_default();
        assert!(
            change.starts_with(&format!(
                "{}/{agent}/",
                d.detail["kind"].as_str().unwrap_or("?")
            )),
            "{d:?}"
        );
        for secret in [
            sim_endpoint.as_str(),
            // A simulated session's endpoint: https://<session>.sandbox.example/?auth=<token>.
            "sandbox.example",
            "auth=",
            "Endpoint",
            BUS_SECRET_KEY,
            "X-Amz-Signature",
            "Signature=",
            "ApiKey",
        ] {
            assert!(!d.body.contains(secret), "{secret:?} in {}", d.body);
        }
    }
}

/// One whole sweep pass of `f`, as its schedule runs it.
async fn sweep<S, K>(f: &snapwake_delete::Delete<S, K>) -> snapwake_delete::SweepReport
where
    S: AgentStore + ScheduleStore + snapwake::store::UsageStore,
    K: AgentKit,
{
    let report = f
        .sweep(
            snapwake::invocation::Deadline::after(Duration::from_secs(120)),
            false,
            &snapwake_delete::Quiet,
        )
        .await
        .expect("a sweep");
    assert!(report.completed, "{report:?}");
    report
}

/// The record version a `change_id` names.
fn version_of(delivery: &Delivery) -> u64 {
    delivery.detail["change_id"]
        .as_str()
        .and_then(|c| c.rsplit('/').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no version in {delivery:?}"))
}
