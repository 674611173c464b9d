//! One scenario's world: the faulty store, the simulated AgentKit [`Kit`] that notes every
//! DeleteSession, and the three functions in an [`Env`].

use super::checks::*;
use super::faulty_store::*;
use super::*;

// ---------------------------------------------------------------------------------------------
// One scenario's world: the faulty store, the simulator, the three functions

/// The simulated AgentKit, which injects `on_resume` into the simulator the moment a Resume
/// is sent (so a fault can hit only the calls that come after it), and notes every
/// DeleteSession with what the snapshots of that session were at that moment (so a sleep that
/// ended a session whose snapshot was not Ready is caught in the act).
pub(crate) type Kit = Hooked<AgentKitClient, Notes>;

/// What a [`Kit`] does around each call: the faults it injects and the endings it notes.
#[derive(Clone)]
pub(crate) struct Notes {
    pub(crate) ctl: SimControl,
    pub(crate) on_resume: Arc<Mutex<Option<Fault>>>,
    /// Injected the moment a CreateSessionSnapshot is sent, as `on_resume` for a Resume.
    pub(crate) on_snapshot: Arc<Mutex<Option<Fault>>>,
    pub(crate) ended: Arc<Mutex<Vec<Ending>>>,
}

/// One DeleteSession as it was sent: the session, and (id, status) of each of its snapshots
/// just before.
#[derive(Clone, Debug)]
pub(crate) struct Ending {
    pub(crate) session: String,
    pub(crate) snapshots: Vec<(String, String)>,
}

impl Ending {
    pub(crate) fn had_a_ready_snapshot(&self) -> bool {
        self.snapshots.iter().any(|(_, status)| status == "Ready")
    }
}

/// The [`Kit`] of `world`, injecting `on_resume` when a Resume is sent.
pub(crate) fn kit_of(world: &World, on_resume: Option<Fault>) -> Kit {
    Hooked {
        inner: world.client(),
        hook: Notes {
            ctl: world.sim.control(),
            on_resume: Arc::new(Mutex::new(on_resume)),
            on_snapshot: Arc::default(),
            ended: Arc::default(),
        },
    }
}

impl Notes {
    /// Every DeleteSession sent so far.
    pub(crate) fn endings(&self) -> Vec<Ending> {
        self.ended.lock().unwrap().clone()
    }
}

impl AgentKitHook for Notes {
    async fn around<A: Action, C: AgentKitCall>(&self, request: &A, call: C) -> C::Output {
        if A::NAME == RESUME {
            let fault = self.on_resume.lock().unwrap().take();
            if let Some(fault) = fault {
                self.ctl.inject(fault).unwrap();
            }
        }
        if A::NAME == "CreateSessionSnapshot" {
            let fault = self.on_snapshot.lock().unwrap().take();
            if let Some(fault) = fault {
                self.ctl.inject(fault).unwrap();
            }
        }
        if A::NAME == "DeleteSession" {
            let (session, snapshots) = ending_of(&self.ctl, request);
            self.ended
                .lock()
                .unwrap()
                .push(Ending { session, snapshots });
        }
        call.await
    }
}

pub(crate) type Store = Arc<FaultyStore>;

/// A delete's request budget here (the default is 25 s).
pub(crate) const DELETE_BUDGET: Duration = Duration::from_secs(5);
/// A create's request budget here.
pub(crate) const CREATE_BUDGET: Duration = Duration::from_secs(5);
/// What a call may take beyond its budget: the lock's store grace (1 s) and a margin.
pub(crate) const SLACK: Duration = Duration::from_secs(3);
/// How long a flow may retry one operation before it must have settled.
pub(crate) const PATIENCE: Duration = Duration::from_secs(40);

pub(crate) struct Env {
    pub(crate) world: World,
    pub(crate) store: Store,
    pub(crate) kit: Kit,
    pub(crate) resume: Resume<Store, Kit>,
    pub(crate) delete: Delete<Store, Kit>,
    pub(crate) create: Create<Store, Kit>,
    pub(crate) wait: Duration,
    /// Every answer: what was called, its status, how long it took.
    pub(crate) log: Mutex<Vec<(String, u16, Duration)>>,
}

/// One request.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Resume(String),
    DeleteAgent(String),
    DeleteSnapshot(String, String),
    Create(String),
    Sleep(String),
}

impl Env {
    pub(crate) async fn new(table: &str, session_ready_delay: Duration, wake: WakeSettings) -> Env {
        let world = World::start(session_ready_delay).await;
        let store = Arc::new(FaultyStore::new(dynamo_store(table).await));
        world.register(&store).await;
        let kit = kit_of(&world, None);
        let wait = wake.wait;
        let delete = DeleteSettings {
            lock: wake.lock.clone(),
            budget: DELETE_BUDGET,
            ..DeleteSettings::default()
        };
        let create = CreateSettings {
            budget: CREATE_BUDGET,
            // A short lease (still well above the budget), so a create left holding the record
            // is taken over within the test's patience.
            lock: quick_lock(Duration::from_secs(8)),
            // And a short unsettled window, so an unsettled CreateSession is waited out within
            // it too.
            unsettled_window: Duration::from_secs(3),
            ..CreateSettings::default()
        };
        Env {
            resume: resume_fn(store.clone(), kit.clone(), wake),
            delete: delete_fn(store.clone(), kit.clone(), delete),
            create: create_fn(store.clone(), kit.clone(), create),
            world,
            store,
            kit,
            wait,
            log: Mutex::new(Vec::new()),
        }
    }

    /// One call, timed against its budget and checked for a well-formed answer; no agent has
    /// two live sessions afterwards.
    pub(crate) async fn call(&self, op: &Op) -> (u16, Value) {
        let started = Instant::now();
        let (budget, resp) = match op {
            Op::Resume(agent) => {
                let path = format!("/v1/agents/codex/{agent}/resume");
                let req = alices_request("POST", &path);
                (self.wait, self.resume.handle(req).await)
            }
            Op::DeleteAgent(agent) => {
                let path = format!("/v1/agents/codex/{agent}");
                let req = alices_request("DELETE", &path);
                (DELETE_BUDGET, self.delete.handle(req).await)
            }
            Op::DeleteSnapshot(agent, snapshot) => {
                let path = format!("/v1/agents/codex/{agent}/snapshots/{snapshot}");
                let req = alices_request("DELETE", &path);
                (DELETE_BUDGET, self.delete.handle(req).await)
            }
            Op::Create(key) => {
                let body = r#"{"kind":"codex","display_name":"Ambiguous"}"#;
                let req = create_request(Who::User("alice"), body, Some(key));
                (CREATE_BUDGET, self.create.handle(req).await)
            }
            // A sleep's holder waits for its snapshot (`Prefer: wait`), so that every write
            // site of the holder is reached; resumes stay short requests, the default.
            Op::Sleep(agent) => {
                let path = format!("/v1/agents/codex/{agent}/sleep");
                let req = prefer_wait(alices_request("POST", &path), self.wait.as_secs());
                (self.wait, self.resume.handle(req).await)
            }
        };
        let took = started.elapsed();
        let (status, body) = answer(&resp);
        self.log
            .lock()
            .unwrap()
            .push((format!("{op:?}"), status, took));
        assert!(
            took <= budget + SLACK,
            "{op:?} answered {status} after {took:?}, beyond its budget {budget:?} (+{SLACK:?})"
        );
        if let Some(why) = malformed(&resp) {
            panic!("{op:?} answered {status}, not well-formed: {why}");
        }
        let live = self.world.sim.control().counters().live_sessions;
        assert!(
            live.values().all(|n| *n <= 1),
            "two live sessions of one agent after {op:?} ({status}): {live:?}"
        );
        (status, body)
    }

    /// Call `op` until it answers `settled`, for at most [`PATIENCE`] (a pause between calls,
    /// as a client honouring `Retry-After` would, only faster). Every answer before must be
    /// one of `meanwhile`. Answers the settled body.
    pub(crate) async fn until(&self, op: &Op, settled: u16, meanwhile: &[u16]) -> Value {
        let started = Instant::now();
        let mut seen = Vec::new();
        while started.elapsed() < PATIENCE {
            let (status, body) = self.call(op).await;
            seen.push(status);
            if status == settled {
                return body;
            }
            assert!(
                meanwhile.contains(&status),
                "{op:?} answered {status} (answers so far {seen:?}): {body}"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        panic!("{op:?} never answered {settled} within {PATIENCE:?}: {seen:?}");
    }

    pub(crate) async fn record(&self, agent_id: &str) -> Option<AgentRecord> {
        self.store
            .inner
            .get(&AgentKey::new(Kind::Codex, agent_id))
            .await
            .unwrap()
    }

    pub(crate) fn resumes(&self) -> u64 {
        self.world.received(RESUME)
    }

    /// A sleep of `agent`'s `session` that went through: `creates` CreateSessionSnapshot in
    /// all, exactly one new Ready snapshot (of that session) and none still being made, no
    /// live session, and every DeleteSession sent was for that session, once a snapshot of it
    /// was Ready. Answers the new snapshot.
    pub(crate) fn assert_slept(
        &self,
        agent: &str,
        session: &str,
        before: &[String],
        creates: u64,
    ) -> String {
        let ctl = self.world.sim.control();
        let counters = ctl.counters();
        assert_eq!(
            counters.received("CreateSessionSnapshot"),
            creates,
            "CreateSessionSnapshot sent ({})",
            self.answers()
        );
        let new: Vec<Snapshot> = ctl
            .snapshots()
            .into_iter()
            .filter(|s| s.user_session_id.as_deref() == Some(agent))
            .filter(|s| {
                s.snapshot_id
                    .as_ref()
                    .is_some_and(|id| !before.contains(id))
            })
            .collect();
        let ready: Vec<&Snapshot> = new.iter().filter(|s| s.is_wakeable()).collect();
        assert_eq!(ready.len(), 1, "one new Ready snapshot: {new:?}");
        assert!(
            new.iter().all(|s| !s.is_in_progress()),
            "no snapshot still being made: {new:?}"
        );
        assert_eq!(ready[0].session_id.as_deref(), Some(session), "{new:?}");
        assert_eq!(counters.live_sessions_of(agent), 0, "no live session");
        assert!(
            ctl.session(session).is_none_or(|s| !s.is_active()),
            "the session ended"
        );
        let endings = self.kit.endings();
        assert!(!endings.is_empty(), "no DeleteSession was sent");
        for e in &endings {
            assert_eq!(
                e.session, session,
                "a DeleteSession of another session: {endings:?}"
            );
            assert!(
                e.had_a_ready_snapshot(),
                "the session was ended while its snapshot was not Ready: {endings:?}"
            );
        }
        ready[0].snapshot_id.clone().unwrap_or_default()
    }

    /// A sleep that started over after its first attempt's lease lapsed (the attempt could
    /// not name its snapshot): two CreateSessionSnapshot, the record names the second, which is
    /// Ready and of `session`; no live session, and every DeleteSession followed a Ready
    /// snapshot of that session. The first snapshot is left for the sweep. Answers the second.
    pub(crate) async fn assert_slept_anew(
        &self,
        agent: &str,
        session: &str,
        before: &[String],
    ) -> String {
        let ctl = self.world.sim.control();
        let counters = ctl.counters();
        assert_eq!(
            counters.received("CreateSessionSnapshot"),
            2,
            "CreateSessionSnapshot sent ({})",
            self.answers()
        );
        let record = self.record(agent).await.expect("a record");
        let named = record.snapshots.first().map(|s| s.snapshot_id.clone());
        let named = named.expect("the record names the snapshot the sleep took");
        assert!(!before.contains(&named), "{record:?}");
        let snapshot = ctl.snapshot(&named).expect("the named snapshot exists");
        assert!(snapshot.is_wakeable(), "{snapshot:?}");
        assert_eq!(snapshot.session_id.as_deref(), Some(session));
        assert_eq!(counters.live_sessions_of(agent), 0, "no live session");
        for e in &self.kit.endings() {
            assert_eq!(e.session, session);
            assert!(e.had_a_ready_snapshot(), "ended without a Ready snapshot");
        }
        named
    }

    /// The answers so far, for a failure's message.
    pub(crate) fn answers(&self) -> String {
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|(op, status, took)| format!("{op} -> {status} ({took:.1?})"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}
