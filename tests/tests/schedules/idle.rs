//! Idle sleep (docs/idle.md) through the deployed functions, on one simulated clock: the
//! simulated deployment's (every function in process, the strict simulator, tokio's paused
//! clock), the tick invoked at each whole minute as EventBridge Scheduler invokes it, people
//! as clients (a 202 or a retryable answer asked again after its `Retry-After`).

use std::future::Future;

use snapwake::domain::{Announce, Trigger};
use snapwake::fanout::Fanout;
use snapwake::wake::IdlePolicy;
use snapwake_sim::SimConfig;
use snapwake_tests::deployment::Deployment;

use super::*;

pub(crate) const MINUTE: u64 = 60_000;
/// Monday 2026-11-23, 07:50 UTC.
pub(crate) const START_S: i64 = 1_795_392_000 + 7 * 3600 + 50 * 60;

/// `test` in a studio whose idle time is `minutes` (see [`studio`]), on a thread and a runtime
/// of its own, its clock paused and the deployment's (as `snapwake_tests::deployment::run`
/// runs the simulation).
pub(crate) fn in_a_studio<F, Fut>(minutes: u32, test: F)
where
    F: FnOnce(Deployment) -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    std::thread::Builder::new()
        .stack_size(256 * 1024 * 1024)
        .spawn(move || {
            snapwake::ambient::seed_this_thread(24);
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .start_paused(true)
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let start = time::OffsetDateTime::from_unix_timestamp(START_S).expect("a Monday");
                snapwake::ambient::simulate_from(start);
                test(studio(minutes).await).await;
            });
        })
        .expect("a thread")
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
}

/// A deployment whose idle time is `minutes`, its Tools deployed.
async fn studio(minutes: u32) -> Deployment {
    let mut d = Deployment::new(
        SimConfig {
            session_ready_delay: Duration::from_secs(20),
            ..SimConfig::default()
        },
        24,
    );
    let idle = IdlePolicy {
        default_minutes: minutes,
    };
    d.api.resume.wake.idle = idle;
    d.api.create.settings.idle = idle;
    d.sim.set_snapshot_ready_delay(Duration::from_secs(8));
    d.deploy_tools().await.expect("the Tools deployed");
    d
}

pub(crate) fn now() -> u64 {
    snapwake::ambient::now_ms()
}

/// `method path` as alice, asked again while the answer says to (202, retryable).
pub(crate) async fn ask(
    d: &Deployment,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, Value) {
    for _ in 0..60 {
        let mut req = request(method, path, Who::User("alice"), body);
        if body.is_some() {
            req = with_header(req, "content-type", "application/json");
        }
        let resp = d.api.handle(req).await;
        let (status, body) = answer(&resp);
        if status != 202 && body["retryable"] != true {
            return (status, body);
        }
        let after = header_of(&resp, "retry-after")
            .and_then(|s| s.parse().ok())
            .unwrap_or(1);
        tokio::time::sleep(Duration::from_secs(after)).await;
    }
    panic!("{method} {path} never settled");
}

/// Alice's new agent (awake), as the Studio creates it.
pub(crate) async fn created(d: &Deployment, retention: &str) -> AgentKey {
    let body =
        format!(r#"{{"kind": "codex", "display_name": "Helper", "retention": "{retention}"}}"#);
    let (status, view) = ask(d, "POST", "/v1/agents", Some(&body)).await;
    assert_eq!(status, 201, "{view}");
    AgentKey::new(Kind::Codex, view["agent_id"].as_str().unwrap())
}

pub(crate) fn path(key: &AgentKey, tail: &str) -> String {
    format!("/v1/agents/{}/{}{tail}", key.kind, key.agent_id)
}

pub(crate) async fn view(d: &Deployment, key: &AgentKey) -> Value {
    let (status, view) = ask(d, "GET", &path(key, ""), None).await;
    assert_eq!(status, 200, "{view}");
    view
}

/// Tick at each whole minute after now, up to and including `until_ms`, as the Scheduler does; the
/// queue's consumer works what each tick hands it, in the tick's invocation.
async fn tick_until(d: &Deployment, until_ms: u64) {
    minutes_until(d, until_ms, false).await;
}

/// [`tick_until`], and with `refresh` the minute refresh after each tick, as deployed (what
/// records a session AgentKit's clock ended).
pub(crate) async fn minutes_until(d: &Deployment, until_ms: u64, refresh: bool) {
    loop {
        // The next whole minute strictly after now: the one just ticked is done.
        let next = (now() / MINUTE + 1) * MINUTE;
        if next > until_ms {
            return;
        }
        tokio::time::sleep(Duration::from_millis(next - now())).await;
        d.api
            .resume
            .tick_and_consume(next, Deadline::after(Duration::from_secs(28)))
            .await
            .expect("a tick");
        if refresh {
            d.api
                .delete
                .refresh(Deadline::after(Duration::from_secs(28)))
                .await
                .expect("a refresh");
        }
    }
}

/// The sessions AgentKit keeps alive for `key`.
fn live(d: &Deployment, key: &AgentKey) -> usize {
    live_sessions(&d.sim, &key.agent_id).len()
}

/// The state changes announced of `key`, as (what, trigger), in order.
async fn announced(d: &Deployment, key: &AgentKey) -> Vec<(Announce, Trigger)> {
    d.relay().await;
    let published = d.bus.published.lock().unwrap().clone();
    published
        .iter()
        .filter(|e| e.detail.agent_id == key.agent_id)
        .map(|e| {
            let what = e.detail_type.trim_start_matches("snapwake.agent.").parse();
            (what.expect("a state change"), e.detail.trigger)
        })
        .collect()
}

#[test]
fn an_agent_left_alone_sleeps_at_its_idle_time_and_wakes_again_from_its_snapshot() {
    in_a_studio(30, |d| async move {
        let key = created(&d, "recoverable").await;
        let made = now();
        let shown = view(&d, &key).await;
        let sleeps_at = at(shown["idle_sleep_at"]
            .as_str()
            .expect("its idle time shown"));
        assert_eq!(sleeps_at / 1000, (made + 30 * MINUTE) / 1000, "{shown}");

        // Up to its idle time it stays awake; the tick after it puts it to sleep.
        tick_until(&d, made + 29 * MINUTE).await;
        assert_eq!(view(&d, &key).await["state"], "awake");
        tick_until(&d, made + 31 * MINUTE).await;
        // The snapshot takes 8 s: its consumer follows the sleep up until it is asleep.
        tokio::time::sleep(Duration::from_secs(30)).await;
        let asleep = view(&d, &key).await;
        assert_eq!(asleep["state"], "asleep", "{asleep}");
        assert_eq!(asleep["snapshots"][0]["status"], "Ready", "{asleep}");
        assert!(asleep.get("idle_sleep_at").is_none(), "{asleep}");
        assert_eq!(live(&d, &key), 0);
        // Announced as idle sleep's, within a minute of its idle time (and the snapshot's 8 s).
        d.relay().await;
        let slept_at = d
            .bus
            .published
            .lock()
            .unwrap()
            .iter()
            .find(|e| e.detail.agent_id == key.agent_id && e.detail_type == "snapwake.agent.asleep")
            .map(|e| (e.detail.trigger, at(&e.detail.at)));
        let (trigger, slept_at) = slept_at.expect("its sleep announced");
        assert_eq!(trigger, Trigger::Idle);
        assert!(
            (sleeps_at..=sleeps_at + MINUTE + 10_000).contains(&slept_at),
            "asleep {} s after its idle time",
            (slept_at as i64 - sleeps_at as i64) / 1000
        );

        // Woken again, from that snapshot, and idle again from then.
        let snapshot = asleep["snapshots"][0]["snapshot_id"].clone();
        let (status, woke) = ask(&d, "POST", &path(&key, "/resume"), None).await;
        assert_eq!((status, &woke["state"]), (200, &json!("awake")), "{woke}");
        assert_eq!(live(&d, &key), 1);
        let resumed =
            d.sim.sessions().into_iter().find(|s| {
                s.user_session_id.as_deref() == Some(key.agent_id.as_str()) && s.is_active()
            });
        assert!(resumed.is_some());
        let kept = view(&d, &key).await;
        assert!(
            kept["snapshots"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["snapshot_id"] == snapshot),
            "the snapshot it woke from is kept: {kept}"
        );
        assert!(kept["idle_sleep_at"].is_string(), "{kept}");
    });
}

#[test]
fn activity_every_ten_minutes_keeps_it_awake_and_it_sleeps_once_that_stops() {
    in_a_studio(30, |d| async move {
        let key = created(&d, "recoverable").await;
        let start = now();
        let mut last = start;
        while now() < start + 120 * MINUTE {
            let (status, body) = ask(&d, "POST", &path(&key, "/activity"), None).await;
            assert_eq!(status, 204, "{body}");
            last = now();
            tick_until(&d, last + 10 * MINUTE).await;
            assert_eq!(view(&d, &key).await["state"], "awake");
        }
        assert_eq!(live(&d, &key), 1);
        assert!(
            !announced(&d, &key)
                .await
                .iter()
                .any(|(w, _)| *w == Announce::Asleep),
            "never put to sleep while in use"
        );
        // Nobody uses it from here: asleep within its idle time and a minute of the last use
        // (the last write of it was at most a minute before).
        tick_until(&d, last + 31 * MINUTE).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(view(&d, &key).await["state"], "asleep");
        assert!(announced(&d, &key)
            .await
            .contains(&(Announce::Asleep, Trigger::Idle)));
    });
}

#[test]
fn inside_its_schedules_awake_window_it_stays_awake() {
    in_a_studio(15, |d| async move {
        let key = created(&d, "recoverable").await;
        let (status, set) = ask(
            &d,
            "PUT",
            &path(&key, "/schedule"),
            Some(r#"{"timezone": "UTC", "wake": "0 8 * * *", "sleep": "0 18 * * *"}"#),
        )
        .await;
        assert_eq!(status, 200, "{set}");
        // 08:00 to 18:00 is its owner's: awake all day, nobody using it.
        let eighteen = (START_S as u64 + 10 * 60) * 1000 + 10 * 60 * MINUTE;
        tick_until(&d, eighteen - MINUTE).await;
        assert_eq!(view(&d, &key).await["state"], "awake");
        tick_until(&d, eighteen + 2 * MINUTE).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(view(&d, &key).await["state"], "asleep");
        let changes = announced(&d, &key).await;
        assert!(
            changes.contains(&(Announce::Asleep, Trigger::Schedule)),
            "{changes:?}"
        );
        assert!(
            !changes.contains(&(Announce::Asleep, Trigger::Idle)),
            "never by idle sleep inside the window: {changes:?}"
        );
    });
}

#[test]
fn the_owners_idle_time_and_never_are_honoured() {
    in_a_studio(30, |d| async move {
        let quick = created(&d, "recoverable").await;
        let never = created(&d, "recoverable").await;
        let (status, set) = ask(&d, "PUT", &path(&quick, "/idle"), Some(r#"{"minutes": 5}"#)).await;
        assert_eq!(status, 200, "{set}");
        assert_eq!(
            (
                &set["minutes"],
                &set["effective_minutes"],
                &set["deployment_minutes"]
            ),
            (&json!(5), &json!(5), &json!(30)),
            "{set}"
        );
        let set_at = now();
        let (status, off) = ask(&d, "PUT", &path(&never, "/idle"), Some(r#"{"minutes": 0}"#)).await;
        assert_eq!(
            (status, &off["idle_sleep_at"]),
            (200, &Value::Null),
            "{off}"
        );
        let (status, read) = ask(&d, "GET", &path(&never, "/idle"), None).await;
        assert_eq!(
            (status, &read["effective_minutes"]),
            (200, &json!(0)),
            "{read}"
        );

        tick_until(&d, set_at + 6 * MINUTE).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(view(&d, &quick).await["state"], "asleep");
        // Activity reported for an agent asleep is refused: wake it first.
        let (status, asleep) = ask(&d, "POST", &path(&quick, "/activity"), None).await;
        assert_eq!(
            (status, &asleep["code"]),
            (422, &json!("NOT_AWAKE")),
            "{asleep}"
        );
        tick_until(&d, set_at + 120 * MINUTE).await;
        assert_eq!(view(&d, &never).await["state"], "awake");

        // Bad settings are refused, and say why.
        let (status, bad) = ask(
            &d,
            "PUT",
            &path(&never, "/idle"),
            Some(r#"{"minutes": 99999}"#),
        )
        .await;
        assert_eq!(status, 422, "{bad}");
        let (status, bad) = ask(&d, "PUT", &path(&never, "/idle"), Some(r#"{"minute": 5}"#)).await;
        assert_eq!(status, 400, "{bad}");
        let (status, bad) = ask(&d, "PUT", &path(&never, "/idle"), Some("{}")).await;
        assert_eq!(status, 400, "minutes is required: {bad}");
        let (status, bad) = ask(&d, "POST", &path(&never, "/activity"), Some(r#"{"x": 1}"#)).await;
        assert_eq!(status, 400, "activity takes no fields: {bad}");
        // JSON has one number type: 15.0 is fifteen minutes.
        let (status, set) = ask(
            &d,
            "PUT",
            &path(&never, "/idle"),
            Some(r#"{"minutes": 15.0}"#),
        )
        .await;
        assert_eq!((status, &set["minutes"]), (200, &json!(15)), "{set}");
    });
}

#[test]
fn a_temporary_agent_stays_awake_and_turning_it_on_is_refused() {
    in_a_studio(15, |d| async move {
        let key = created(&d, "temporary").await;
        let start = now();
        tick_until(&d, start + 60 * MINUTE).await;
        let shown = view(&d, &key).await;
        assert_eq!(shown["state"], "awake", "{shown}");
        assert!(shown.get("idle_sleep_at").is_none(), "{shown}");
        let (status, refused) =
            ask(&d, "PUT", &path(&key, "/idle"), Some(r#"{"minutes": 5}"#)).await;
        assert_eq!(
            (status, &refused["code"]),
            (422, &json!("NOT_SLEEPABLE")),
            "{refused}"
        );
    });
}

#[test]
fn a_wake_racing_the_idle_sleep_ends_with_one_session_and_the_snapshot_kept() {
    in_a_studio(10, |d| async move {
        let key = created(&d, "recoverable").await;
        let made = now();
        tick_until(&d, made + 10 * MINUTE - MINUTE).await;
        // The tick that finds it idle, and its owner asking for it at the same moment.
        let at_tick = (made + 10 * MINUTE).div_ceil(MINUTE) * MINUTE;
        tokio::time::sleep(Duration::from_millis(at_tick - now())).await;
        let tick = d
            .api
            .resume
            .tick_and_consume(at_tick, Deadline::after(Duration::from_secs(28)));
        let resume = path(&key, "/resume");
        let wake = ask(&d, "POST", &resume, None);
        let (ticked, (status, woke)) = tokio::join!(tick, wake);
        ticked.expect("a tick");
        assert_eq!((status, &woke["state"]), (200, &json!("awake")), "{woke}");
        tokio::time::sleep(Duration::from_secs(60)).await;
        tick_until(&d, now() + MINUTE).await;
        let shown = view(&d, &key).await;
        assert_eq!(shown["state"], "awake", "{shown}");
        assert_eq!(live(&d, &key), 1, "one session");
        // Whichever came first: no snapshot lost, none failed.
        for s in shown["snapshots"].as_array().unwrap() {
            assert_eq!(s["status"], "Ready", "{shown}");
        }
    });
}

#[test]
fn a_studio_idle_at_once_is_handed_over_in_line_a_minute_of_the_lane_at_a_time() {
    in_a_studio(30, |mut d| async move {
        // A lane of one snapshot a second: a tick hands over at most 60, one a second.
        d.api.resume.schedules.idle_sleeps_per_second = 1;
        let d = d;
        let keys: Vec<AgentKey> =
            futures::future::join_all((0..62).map(|_| created(&d, "recoverable"))).await;
        let mut idle_at = Vec::new();
        for key in &keys {
            let shown = view(&d, key).await;
            idle_at.push(at(shown["idle_sleep_at"].as_str().expect("an idle time")));
        }
        let minute = idle_at.iter().max().unwrap() / MINUTE * MINUTE;
        assert!(
            idle_at.iter().all(|at| *at > minute),
            "idle in the same minute"
        );
        tick_until(&d, minute).await;
        let next = minute + MINUTE;
        tokio::time::sleep(Duration::from_millis(next - now())).await;
        let deadline = Deadline::after(Duration::from_secs(28));
        let first = d.api.resume.tick(next, deadline).await.expect("a tick");
        assert_eq!(first.idle, 60, "{first:?}");
        let Fanout::Channel(queue) = &d.api.resume.fanout else {
            panic!("the deployment's fan-out is a channel");
        };
        assert_eq!(queue.counts().delayed, 59, "each after the one before it");
        // The queue's consumer works them as they come; the next tick finds the other two.
        let f = &d.api.resume;
        queue
            .drain(snapwake::fanout::AT_ONCE, |due| async move {
                let deadline = Deadline::after(Duration::from_secs(28));
                f.due(&due, deadline).await.is_ok()
            })
            .await;
        tick_until(&d, next + 3 * MINUTE).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
        d.relay().await;
        let published = d.bus.published.lock().unwrap().clone();
        let mut slept: Vec<u64> = published
            .iter()
            .filter(|e| e.detail_type == "snapwake.agent.asleep")
            .map(|e| {
                assert_eq!(e.detail.trigger, Trigger::Idle);
                at(&e.detail.at)
            })
            .collect();
        slept.sort_unstable();
        assert_eq!(slept.len(), keys.len(), "every agent asleep once");
        for key in &keys {
            assert_eq!(live(&d, key), 0, "{key} still has a session");
        }
        // In line: the 60 of the first tick over its minute, not at once.
        assert!(
            slept[59] - slept[0] >= 50_000,
            "the first 60 asleep within {} ms of each other",
            slept[59] - slept[0]
        );
    });
}
