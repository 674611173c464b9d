//! Everyone, paged from the index: over 2,000 snapshots of 100 owners, every agent exactly once,
//! every page but the last full, no AgentKit call; and snapwake's own writes (a wake, a sleep,
//! a snapshot delete, a delete) show on the next admin page.

use super::*;

/// An admin's pages of everyone come from the index: over 2,000 snapshots of 100 owners, every
/// agent exactly once, every page but the last full, and not one AgentKit call for any page.
/// An agent woken, its snapshot deleted, or deleted through snapwake shows so on the next
/// admin page, without waiting for a sweep.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everyone_is_paged_from_the_index_once_full_and_current() {
    const OWNERS: usize = 100;
    const AGENTS_PER_OWNER: usize = 10;
    let (store, world, _) = deployed_shared("list-everyone", Duration::ZERO).await;
    let base = time::OffsetDateTime::now_utc() - Duration::from_secs(48 * 3600);
    let mut seeds = Vec::new();
    let mut everyone = BTreeSet::new();
    let mut owner_of = std::collections::BTreeMap::new();
    for o in 0..OWNERS {
        let owner = format!("owner-{o:03}");
        for a in 0..AGENTS_PER_OWNER {
            let id = caller::mint(&owner);
            everyone.insert(id.clone());
            owner_of.insert(id.clone(), owner.clone());
            for s in 0..2u64 {
                seeds.push(SeedSnapshot {
                    tool_id: world.recoverable.clone(),
                    user_session_id: Some(id.clone()),
                    created_at: Some(base + Duration::from_secs((o * 100 + a * 2) as u64 + s)),
                    session_metadata: vec![MetadataEntry::string("Username", &owner)],
                    ..SeedSnapshot::default()
                });
            }
        }
    }
    assert_eq!(seeds.len(), 2_000);
    let ctl = world.sim.control();
    ctl.seed_snapshots(seeds).unwrap();
    assert!(sync(&store, &world, &world.registry()).await.completed);
    let f = list_fn(store.clone(), world.client(), ListSettings::default());
    let admin = Who::Admin("root");

    /// Every page of everyone: (sizes of the pages, the agents by id).
    async fn all_pages<
        S: AgentStore + snapwake::store::ScheduleStore + snapwake::store::UsageStore,
    >(
        f: &List<S, AgentKitClient>,
        admin: Who<'_>,
        limit: &str,
    ) -> (Vec<usize>, Vec<Value>) {
        let mut sizes = Vec::new();
        let mut agents = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut q = vec![("owner", "*"), ("limit", limit)];
            if let Some(c) = cursor.as_deref() {
                q.push(("cursor", c));
            }
            let (status, page) = get(f, "/v1/agents", &q, admin).await;
            assert_eq!(status, 200, "{page}");
            assert_eq!(page["partial"], serde_json::json!([]), "{page}");
            let list = page["agents"].as_array().unwrap().clone();
            sizes.push(list.len());
            agents.extend(list);
            assert!(sizes.len() < 200, "paging does not end");
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => return (sizes, agents),
            }
        }
    }

    ctl.reset_counters();
    let (sizes, agents) = all_pages(&f, admin, "50").await;
    let seen: Vec<String> = agents
        .iter()
        .map(|a| a["agent_id"].as_str().unwrap().to_string())
        .collect();
    let unique: BTreeSet<String> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), seen.len(), "an agent appeared twice");
    assert_eq!(unique, everyone, "every agent, and nothing else");
    let (last, full) = sizes.split_last().unwrap();
    assert!(
        full.iter().all(|n| *n == 50),
        "every page but the last is full: {sizes:?}"
    );
    assert!(*last <= 50);
    let calls: u64 = ctl.counters().actions.values().map(|a| a.received).sum();
    assert_eq!(calls, 0, "listing everyone asks AgentKit nothing");
    for a in &agents {
        let id = a["agent_id"].as_str().unwrap();
        assert_eq!(a["owner"], owner_of[id].as_str());
        assert_eq!(a["state"], "asleep");
        assert_eq!(a["snapshots"].as_array().unwrap().len(), 2);
        assert!(a["as_of"].is_string(), "{a}");
    }

    // Snapwake's own writes show on the next admin page: a wake, a sleep (of an agent woken
    // first), a snapshot delete, a delete.
    let mut ids = everyone.iter();
    let (woken, slept, trimmed, deleted) = (
        ids.next().unwrap().clone(),
        ids.next().unwrap().clone(),
        ids.next().unwrap().clone(),
        ids.next().unwrap().clone(),
    );
    let api = Api::new(store.clone(), world.client(), identity());
    let owner = |id: &str| Who::User(owner_of[id].as_str());
    let (status, body) = answer(
        &api.resume
            .handle(request(
                "POST",
                &format!("/v1/agents/codex/{woken}/resume"),
                owner(&woken),
                None,
            ))
            .await,
    );
    assert_eq!(status, 200, "{body}");
    let before_sleep = world.snapshots_of(&slept);
    for verb in ["resume", "sleep"] {
        let (status, answered) = answer(
            &api.resume
                .handle(request(
                    "POST",
                    &format!("/v1/agents/codex/{slept}/{verb}"),
                    owner(&slept),
                    None,
                ))
                .await,
        );
        assert_eq!(status, 200, "{verb}: {answered}");
    }
    let sleep_snapshot = world
        .snapshots_of(&slept)
        .into_iter()
        .find(|s| !before_sleep.contains(s))
        .expect("the sleep took a snapshot");
    let trimmed_snapshot = world.snapshots_of(&trimmed)[0].clone();
    let (status, _) = answer(
        &api.delete
            .handle(request(
                "DELETE",
                &format!("/v1/agents/codex/{trimmed}/snapshots/{trimmed_snapshot}"),
                owner(&trimmed),
                None,
            ))
            .await,
    );
    assert_eq!(status, 204);
    let (status, _) = answer(
        &api.delete
            .handle(request(
                "DELETE",
                &format!("/v1/agents/codex/{deleted}"),
                owner(&deleted),
                None,
            ))
            .await,
    );
    assert_eq!(status, 204);
    let (_, agents) = all_pages(&f, admin, "100").await;
    let find = |id: &str| agents.iter().find(|a| a["agent_id"] == id);
    assert_eq!(find(&woken).unwrap()["state"], "awake");
    assert_eq!(
        find(&woken).unwrap()["session"]["session_id"],
        body["session"]["session_id"]
    );
    let asleep = find(&slept).unwrap();
    assert_eq!(asleep["state"], "asleep", "{asleep}");
    assert!(asleep["session"].is_null(), "{asleep}");
    assert_eq!(
        asleep["snapshots"][0]["snapshot_id"],
        sleep_snapshot.as_str(),
        "{asleep}"
    );
    let left = find(&trimmed).unwrap()["snapshots"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(left.len(), 1);
    assert_ne!(left[0]["snapshot_id"], trimmed_snapshot.as_str());
    assert!(
        find(&deleted).is_none(),
        "a deleted agent is gone from the pages"
    );
    assert_eq!(agents.len(), everyone.len() - 1);
}
