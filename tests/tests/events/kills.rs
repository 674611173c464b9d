//! A function killed between any two steps: after its write lands and before it answers, or
//! before the write. The change it made is announced all the same (the stream has it), and one
//! it did not make is not. Over a soak of wakes, sleeps and deletes with random kills, every
//! change that landed is announced, none that did not, and each agent's in version order.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

use snapwake::domain::{AgentRecord, WakeState};
use snapwake::store::{Answer, Call, Changes, Layer};

use super::*;

/// The table as a function sees it, which dies at the `n`-th write it makes (armed by
/// [`Dying::die_at`]): before the write leaves, or after it lands, never answering; and which
/// notes every announcing write that landed (the truth the events are held to).
struct Dying {
    inner: Store,
    /// Writes left before the one it dies at (`<= 0`: disarmed).
    left: AtomicI64,
    /// Whether it dies after the write lands (else before it leaves).
    after: AtomicU64,
    /// An agent write it dies after: noted as landed first (`written`), then no answer.
    dying_after: AtomicU64,
    landed: Mutex<BTreeSet<String>>,
}

impl Dying {
    fn new(inner: Store) -> Self {
        Dying {
            inner,
            left: AtomicI64::new(0),
            after: AtomicU64::new(0),
            dying_after: AtomicU64::new(0),
            landed: Mutex::new(BTreeSet::new()),
        }
    }

    fn die_at(&self, write: i64, after_it_lands: bool) {
        self.after.store(after_it_lands as u64, Ordering::SeqCst);
        self.left.store(write, Ordering::SeqCst);
    }

    /// Whether this write is the one to die at.
    fn dies_now(&self) -> bool {
        self.left.fetch_sub(1, Ordering::SeqCst) == 1
    }
}

impl Layer for Dying {
    type Inner = Store;

    fn inner(&self) -> &Store {
        &self.inner
    }

    fn around<'a, T: Send + 'a>(&'a self, call: Call<'a>, answer: Answer<'a, T>) -> Answer<'a, T> {
        Box::pin(async move {
            if call.writes() && self.dies_now() {
                let after = self.after.load(Ordering::SeqCst) == 1;
                if after && matches!(call, Call::Update(..)) {
                    // It lands, is noted, then dies (`written`).
                    self.dying_after.store(1, Ordering::SeqCst);
                    return answer.await;
                }
                if after {
                    let _landed = answer.await;
                }
                // Killed: no answer, ever (the test's deadline drops it, as Lambda would).
                return std::future::pending().await;
            }
            answer.await
        })
    }

    fn written<'a>(
        &'a self,
        changes: &'a Changes,
        record: &'a AgentRecord,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            if changes.announce.is_some() {
                let id = format!(
                    "{}/{}/{}",
                    record.key.kind, record.key.agent_id, record.version
                );
                self.landed.lock().unwrap().insert(id);
            }
            if self.dying_after.swap(0, Ordering::SeqCst) == 1 {
                std::future::pending::<()>().await;
            }
        })
    }
}

/// A killed invocation: alice's `method` on `path` answered by `api` unless it dies first
/// (5 s).
async fn killable<F: HttpFunction>(api: &F, method: &str, path: &str) -> Option<(u16, Value)> {
    tokio::time::timeout(
        Duration::from_secs(5),
        api.respond(alices_request(method, path)),
    )
    .await
    .ok()
    .map(|r| answer(&r))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_killed_after_its_write_lands_still_has_it_announced() {
    let (store, world, bus, relay) = deployed_announcing("events-killed", Duration::ZERO).await;
    let dying = Arc::new(Dying::new(store.clone()));
    let api = Api::new(dying.clone(), world.client(), identity());
    let (agent_id, _) = world.asleep_agent("alice", "Killed");

    // The wake's writes: the lock taken (waking), the Resume's mark, the completion. It dies
    // right after the completion lands, before it answers or anything else.
    let path = format!("/v1/agents/codex/{agent_id}/resume");
    let mut write = 1;
    loop {
        dying.die_at(write, true);
        let died = killable(&api, "POST", &path).await.is_none();
        let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
        if died && record.state == WakeState::Awake {
            break;
        }
        assert!(write < 10, "the wake never completed: {record:?}");
        // Not yet the completion: the next attempt (after the lease) dies one write later.
        dying.die_at(0, false);
        outcome_forgotten().await;
        let _ = settle_alices(&api, &agent_id, "sleep", Duration::from_secs(30)).await;
        write += 1;
    }
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    let events = published_about(&relay, &bus, &agent_id).await;
    let awake = &events["snapwake.agent.awake"];
    let last = awake.last().expect("the killed wake's event");
    assert_eq!(version_of(last), record.version, "{events:#?}");
    assert_eq!(world.live_sessions_of(&agent_id), 1);
    assert_well_formed(&bus, &world);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_soak_with_random_kills_announces_every_change_once_in_order() {
    const AGENTS: usize = 3;
    const STEPS: usize = 36;
    let (store, world, bus, relay) = deployed_announcing("events-kill-soak", Duration::ZERO).await;
    let dying = Arc::new(Dying::new(store.clone()));
    let api = Api::new(dying.clone(), world.client(), identity());
    let agents: Vec<String> = (0..AGENTS)
        .map(|i| world.asleep_agent("alice", &format!("Soak {i}")).0)
        .collect();
    let seed: u64 = std::env::var("SNAPWAKE_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261206);
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut kills = 0;
    for step in 0..STEPS {
        let agent = &agents[rng.usize(0..AGENTS)];
        let verb = ["resume", "sleep"][rng.usize(0..2)];
        // One step in three dies at one of its first writes, before it leaves or after it lands.
        if rng.usize(0..3) == 0 {
            dying.die_at(rng.i64(1..=4), rng.bool());
        } else {
            dying.die_at(0, false);
        }
        let path = format!("/v1/agents/codex/{agent}/{verb}");
        if killable(&api, "POST", &path).await.is_none() {
            kills += 1;
        }
        // Then as a client: asked again until it settles (a killed holder's lease runs out).
        dying.die_at(0, false);
        let (status, body) = settle_alices(&api, agent, verb, Duration::from_secs(40)).await;
        assert!(
            matches!(status, 200 | 409 | 502),
            "step {step} (seed {seed}): {verb} {status} {body}"
        );
    }
    // The end: each agent deleted, some of them killed on the way.
    for agent in &agents {
        dying.die_at(rng.i64(0..=3), rng.bool());
        if killable(&api, "DELETE", &format!("/v1/agents/codex/{agent}"))
            .await
            .is_none()
        {
            kills += 1;
        }
        dying.die_at(0, false);
        let until = tokio::time::Instant::now() + Duration::from_secs(40);
        loop {
            let (status, _) = call(&api, "DELETE", agent, "").await;
            if matches!(status, 204 | 404) || tokio::time::Instant::now() > until {
                assert!(matches!(status, 204 | 404), "delete {agent}: {status}");
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    assert!(
        kills >= 5,
        "the soak killed too little to say anything: {kills}"
    );

    relay.caught_up().await;
    let landed = dying.landed.lock().unwrap().clone();
    // First delivery of each change, in the order the bus took them.
    let mut seen = BTreeSet::new();
    let mut order: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for d in bus.published() {
        let id = d.detail["change_id"].as_str().unwrap().to_string();
        if seen.insert(id.clone()) {
            let agent = d.detail["agent_id"].as_str().unwrap().to_string();
            order.entry(agent).or_default().push(version_of(&d));
        }
    }
    let missing: Vec<&String> = landed.difference(&seen).collect();
    let invented: Vec<&String> = seen.difference(&landed).collect();
    assert!(
        missing.is_empty(),
        "changes never announced (seed {seed}): {missing:?}"
    );
    assert!(
        invented.is_empty(),
        "announced, never made (seed {seed}): {invented:?}"
    );
    for (agent, versions) in &order {
        assert!(
            versions.windows(2).all(|w| w[0] < w[1]),
            "{agent} out of order (seed {seed}): {versions:?}"
        );
    }
    assert!(landed.len() >= AGENTS * 2, "{landed:?}");
    assert_well_formed(&bus, &world);
}
