//! The machinery of the day-after-day test: an AgentKit that notes every DeleteSession
//! ([`Watched`]), one wake or sleep step retried by concurrent callers, and one agent's rounds.

use super::*;

// ---------------------------------------------------------------------------------------------
// Wake, sleep, wake: agents cycling under 20% bare 503s and 10% 429s

pub(crate) const CYCLE_AGENTS: usize = 24;
pub(crate) const CYCLE_CALLERS: usize = 3;
/// Sleeps per agent (each followed by a wake).
pub(crate) const CYCLE_ROUNDS: usize = 4;
/// How long the callers of one step (one wake or one sleep of one agent) may retry.
pub(crate) const CYCLE_PATIENCE: Duration = Duration::from_secs(30);

/// A hook that notes every DeleteSession as it is sent: the session, and the statuses of
/// that session's snapshots at that moment (a sleep must never end a session whose snapshot
/// is not Ready).
pub(crate) struct Watched {
    pub(crate) ctl: SimControl,
    pub(crate) ended: Mutex<Vec<(String, Vec<String>)>>,
}

impl AgentKitHook for Watched {
    async fn around<A: Action, C: AgentKitCall>(&self, request: &A, call: C) -> C::Output {
        if A::NAME == "DeleteSession" {
            let (session, snapshots) = ending_of(&self.ctl, request);
            let statuses = snapshots.into_iter().map(|(_, status)| status).collect();
            self.ended.lock().unwrap().push((session, statuses));
        }
        call.await
    }
}

/// `POST …/{verb}` (`resume` or `sleep`) of `agent_id` once as its `owner`, judged as
/// [`resume_once`] judges a resume: a 200 is JSON showing the agent `awake` with its session
/// (`asleep` without one, for a sleep), a 202 is JSON with `Retry-After` and `Location`, and
/// 409, 429, 502 and 503 are retryable problem+json answers; any other status is malformed.
pub(crate) async fn call_once<S: AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
    function: &Resume<S, K>,
    owner: &str,
    agent_id: &str,
    verb: &str,
) -> Answer {
    let raw_path = format!("/v1/agents/codex/{agent_id}/{verb}");
    let event = event("POST", &raw_path, Who::User(owner), None);
    let request_id = request_id_of(&event);
    let resp = function.handle(from_event(&event)).await;
    let (status, body) = answer(&resp);
    let content_type = header_of(&resp, "content-type").unwrap_or("");
    let json = content_type == "application/json" && body.is_object();
    let sleep = verb == "sleep";
    let (session, malformed, inconsistent) = match status {
        200 => {
            let session = text(&body["session"]["session_id"]);
            let bad = (!json || (!sleep && session.is_empty()))
                .then(|| format!("{verb} 200 {content_type} {body}"));
            let want = if sleep { "asleep" } else { "awake" };
            let wrong = (body["state"] != want || (sleep && !session.is_empty()))
                .then(|| format!("{verb} 200 with state {}: {body}", body["state"]));
            (session, bad, wrong)
        }
        202 => {
            let headers =
                header_of(&resp, "retry-after").is_some() && header_of(&resp, "location").is_some();
            let bad = (!json || !headers).then(|| format!("{verb} 202 {content_type} {body}"));
            (String::new(), bad, None)
        }
        409 | 429 | 502 | 503 => {
            let bad = problem_fault(&resp, status, Some(&request_id)).or_else(|| {
                (body["retryable"] != true).then(|| format!("{verb} not retryable: {body}"))
            });
            (String::new(), bad, None)
        }
        s => (
            String::new(),
            Some(format!("{verb}: unexpected status {s}: {body}")),
            None,
        ),
    };
    Answer::judged(&resp, &body, session, malformed, inconsistent)
}

/// One retrying caller: `verb` until 200, pausing after 202, 409, 429, 502 and 503, giving
/// up at `give_up`. Answers every answer it got.
pub(crate) async fn retrying<S: AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
    function: Arc<Resume<S, K>>,
    owner: &'static str,
    agent_id: String,
    verb: &'static str,
    give_up: Instant,
) -> Vec<Answer> {
    let mut answers = Vec::new();
    loop {
        let a = call_once(&function, owner, &agent_id, verb).await;
        let done = a.status == 200 || Instant::now() > give_up;
        let settled = !matches!(a.status, 202 | 409 | 429 | 502 | 503);
        answers.push(a);
        if done || settled {
            return answers;
        }
        pause(100, 300).await;
    }
}

/// [`CYCLE_CALLERS`] callers of `verb` at once (a few ms apart), each until 200.
pub(crate) async fn step<S, K>(
    function: &Arc<Resume<S, K>>,
    owner: &'static str,
    agent_id: &str,
    verb: &'static str,
) -> Vec<Vec<Answer>>
where
    S: AgentStore + snapwake::store::ScheduleStore + Send + Sync + 'static,
    K: AgentKit + Send + Sync + 'static,
{
    let give_up = Instant::now() + CYCLE_PATIENCE;
    let callers: Vec<_> = (0..CYCLE_CALLERS)
        .map(|j| {
            let (function, agent_id) = (function.clone(), agent_id.to_string());
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(20 * j as u64)).await;
                retrying(function, owner, agent_id, verb, give_up).await
            })
        })
        .collect();
    let mut all = Vec::new();
    for caller in callers {
        all.push(caller.await.expect("a caller panicked"));
    }
    all
}

/// What one agent's cycle saw.
#[derive(Default)]
pub(crate) struct Cycle {
    /// Everything that went wrong, in words.
    pub(crate) problems: Vec<String>,
    pub(crate) answers: Vec<Answer>,
    /// The session of the last wake.
    pub(crate) session: String,
    /// The snapshots the sleeps took, in order.
    pub(crate) taken: Vec<String>,
    /// Extra snapshots: taken by a sleep whose CreateSessionSnapshot outcome could not be
    /// confirmed (it answered 502, the agent stayed awake, and the retry took a fresh one).
    pub(crate) orphans: Vec<String>,
}

/// The agent's snapshots in the simulator.
pub(crate) fn snapshots_of(ctl: &SimControl, agent_id: &str) -> Vec<Snapshot> {
    ctl.snapshots()
        .into_iter()
        .filter(|s| s.user_session_id.as_deref() == Some(agent_id))
        .collect()
}

/// Wake `agent_id` (asleep on `seeded`), then [`CYCLE_ROUNDS`] times put it to sleep and wake
/// it again, each step by [`CYCLE_CALLERS`] concurrent retrying callers, checking after every
/// step what it must have left behind.
pub(crate) async fn cycle<S, K>(
    function: Arc<Resume<S, K>>,
    ctl: SimControl,
    owner: &'static str,
    agent_id: String,
    seeded: String,
) -> Cycle
where
    S: AgentStore + snapwake::store::ScheduleStore + Send + Sync + 'static,
    K: AgentKit + Send + Sync + 'static,
{
    let mut c = Cycle::default();
    // The snapshot the next wake must come from.
    let mut newest = seeded;
    for round in 0..=CYCLE_ROUNDS {
        // Wake.
        let callers = step(&function, owner, &agent_id, "resume").await;
        let mut sessions: Vec<String> = Vec::new();
        for answers in &callers {
            match answers.last() {
                Some(a) if a.status == 200 => sessions.push(a.session.clone()),
                last => c.problems.push(format!(
                    "round {round}: a resume never got 200 (last {:?})",
                    last.map(|a| (a.status, a.code.clone()))
                )),
            }
        }
        c.answers.extend(callers.into_iter().flatten());
        sessions.sort();
        sessions.dedup();
        if sessions.len() != 1 {
            c.problems.push(format!(
                "round {round}: the wake's callers got {sessions:?}"
            ));
        }
        c.session = sessions.first().cloned().unwrap_or_default();
        let counters = ctl.counters();
        let live = counters.live_sessions_of(&agent_id);
        let resumes = counters.resumes_of(&newest);
        if live != 1 || resumes != 1 {
            c.problems.push(format!(
                "round {round}: after the wake {live} live sessions, {resumes} Resumes of the \
                 newest snapshot {newest} (Resumes per snapshot {:?})",
                snapshots_of(&ctl, &agent_id)
                    .iter()
                    .filter_map(|s| s.snapshot_id.clone())
                    .map(|id| {
                        let n = counters.resumes_of(&id);
                        (id, n)
                    })
                    .collect::<Vec<_>>()
            ));
        }
        if round == CYCLE_ROUNDS || !c.problems.is_empty() {
            break;
        }
        pause(0, 300).await;

        // Sleep.
        let before: Vec<String> = snapshots_of(&ctl, &agent_id)
            .into_iter()
            .filter_map(|s| s.snapshot_id)
            .collect();
        let callers = step(&function, owner, &agent_id, "sleep").await;
        for answers in &callers {
            if answers.last().is_none_or(|a| a.status != 200) {
                c.problems.push(format!(
                    "round {round}: a sleep never got 200 (last {:?})",
                    answers.last().map(|a| (a.status, a.code.clone()))
                ));
            }
        }
        let unconfirmed = callers.iter().flatten().any(|a| a.status == 502);
        c.answers.extend(callers.into_iter().flatten());
        let new: Vec<Snapshot> = snapshots_of(&ctl, &agent_id)
            .into_iter()
            .filter(|s| {
                s.snapshot_id
                    .as_ref()
                    .is_some_and(|id| !before.contains(id))
            })
            .collect();
        let live = ctl.counters().live_sessions_of(&agent_id);
        // The snapshot the sleep ended the session on: the one the record names.
        let named = function
            .store
            .get(&AgentKey::new(Kind::Codex, &agent_id))
            .await
            .ok()
            .flatten()
            .and_then(|r| r.snapshot_id);
        let of_this_session = new
            .iter()
            .all(|s| s.session_id.as_deref() == Some(c.session.as_str()));
        let named_ready = new
            .iter()
            .any(|s| s.snapshot_id == named && s.is_wakeable());
        // One new snapshot; more only after a 502 that left one unconfirmed.
        let counted = new.len() == 1 || (unconfirmed && new.len() > 1);
        if live != 0 || !of_this_session || !named_ready || !counted {
            c.problems.push(format!(
                "round {round}: after the sleep of {} {live} live sessions, the record naming \
                 {named:?}, a 502 met: {unconfirmed}, and new snapshots {:?}",
                c.session,
                new.iter()
                    .map(|s| (
                        s.snapshot_id.clone(),
                        s.session_id.clone(),
                        s.status.clone()
                    ))
                    .collect::<Vec<_>>()
            ));
            break;
        }
        newest = named.unwrap_or_default();
        c.orphans.extend(
            new.iter()
                .filter_map(|s| s.snapshot_id.clone())
                .filter(|id| *id != newest),
        );
        c.taken.push(newest.clone());
        pause(0, 300).await;
    }
    c
}
