//! A rotated AgentKit key reaches warm clients: the client re-reads its secret through the
//! Parameters and Secrets extension after AgentKit refuses the credentials (or when they are
//! old), at most once per interval, one re-read for many concurrent refusals, and sends the
//! refused call once more only with credentials that changed (docs/agentkit.md,
//! "Credentials").
//!
//! Against the strict simulator (which verifies signatures, and whose key a test rotates) and a
//! fake extension on loopback that counts how often it is asked, can be slow, and can answer
//! a broken secret.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use snapwake_tests::captured_log::CapturedLog;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use axum::{Json, Router};
use snapwake::agentkit::types::{CreateSession, GetTool, MetadataEntry, Tool};
use snapwake::agentkit::{
    AgentKitClient, AgentKitConfig, AgentKitError, Credentials, CredentialsSource, Reread,
};
use snapwake::invocation::Deadline;
use snapwake_sim::{RunningSim, SeedTool, SimConfig, Simulator};

const BEIJING: &str = "cn-beijing";
const TOKEN: &str = "lambda-session-token";
const SECRET_ONE: &str = "canary-secret-one-5e0c";
const SECRET_TWO: &str = "canary-secret-two-91ab";
const SECRET_THREE: &str = "canary-secret-three-d7f2";

fn key(n: u8) -> Credentials {
    match n {
        1 => Credentials::new("AK-one", SECRET_ONE, None),
        2 => Credentials::new("AK-two", SECRET_TWO, None),
        _ => Credentials::new("AK-three", SECRET_THREE, None),
    }
}

/// The `SecretString` the operator stored for `c`.
fn secret_string(c: &Credentials) -> String {
    serde_json::json!({
        "access_key_id": c.access_key_id,
        "secret_access_key": c.secret_access_key(),
    })
    .to_string()
}

/// The AWS Parameters and Secrets Lambda Extension, as far as the client sees it.
struct Extension {
    secret_string: Mutex<String>,
    calls: AtomicUsize,
    /// Answer a secret that lacks its secret key (yet carries a canary value) instead.
    broken: AtomicBool,
    delay_ms: AtomicU64,
}

impl Extension {
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// The operator updated the secret (and the extension's cache expired).
    fn store(&self, c: &Credentials) {
        *self.secret_string.lock().unwrap() = secret_string(c);
    }
}

async fn extension_get(
    State(ext): State<Arc<Extension>>,
    headers: HeaderMap,
) -> Result<Json<serde_json::Value>, StatusCode> {
    if headers
        .get("X-Aws-Parameters-Secrets-Token")
        .and_then(|v| v.to_str().ok())
        != Some(TOKEN)
    {
        return Err(StatusCode::UNAUTHORIZED);
    }
    ext.calls.fetch_add(1, Ordering::SeqCst);
    let delay = ext.delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let secret_string = if ext.broken.load(Ordering::SeqCst) {
        serde_json::json!({"access_key_id": "AK-two", "oops": SECRET_TWO}).to_string()
    } else {
        ext.secret_string.lock().unwrap().clone()
    };
    Ok(Json(serde_json::json!({
        "Name": "snapwake/agentkit",
        "SecretString": secret_string,
        "VersionId": "v1",
    })))
}

/// A warm container: the simulator and the extension both hold key 1, and a client has
/// loaded it at cold start.
struct Warm {
    sim: RunningSim,
    ext: Arc<Extension>,
    client: AgentKitClient,
    tool: String,
}

impl Warm {
    async fn start(reread_interval: Option<Duration>) -> Warm {
        let sim = Simulator::start(SimConfig {
            credentials: key(1),
            ..SimConfig::default()
        })
        .await
        .unwrap();
        let ext = Arc::new(Extension {
            secret_string: Mutex::new(secret_string(&key(1))),
            calls: AtomicUsize::new(0),
            broken: AtomicBool::new(false),
            delay_ms: AtomicU64::new(0),
        });
        let app = Router::new()
            .route("/secretsmanager/get", get(extension_get))
            .with_state(ext.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });

        let config = AgentKitConfig {
            endpoint: sim.endpoint(),
            regions: vec![BEIJING.into()],
            credentials: CredentialsSource::SecretsExtension {
                secret_id: "snapwake/agentkit".into(),
                port,
                aws_session_token: TOKEN.into(),
            },
            request_timeout: Duration::from_secs(5),
        };
        let mut client = AgentKitClient::from_config(&config).await.unwrap();
        if let Some(interval) = reread_interval {
            client = client.with_credentials_reread_interval(interval);
        }
        let tool = sim
            .control()
            .seed_tool(BEIJING, SeedTool::code_env("codex", true))
            .unwrap();
        let warm = Warm {
            sim,
            ext,
            client,
            tool,
        };
        warm.get_tool().await.expect("a warm client works");
        assert_eq!(warm.ext.calls(), 1, "read once at cold start");
        warm
    }

    async fn get_tool(&self) -> Result<Tool, AgentKitError> {
        let deadline = Deadline::after(Duration::from_secs(10));
        let req = GetTool {
            tool_id: self.tool.clone(),
        };
        self.client.call(BEIJING, &req, deadline).await
    }

    /// The key AgentKit accepts from now on.
    fn rotate_agentkit(&self, c: Credentials) {
        self.sim.control().set_credentials(c);
    }

    fn refusals(&self) -> u64 {
        self.sim.control().counters().signature_failures
    }
}

fn reread_of(err: &AgentKitError) -> &Reread {
    match err {
        AgentKitError::Unauthorized { reread, .. } => reread,
        other => panic!("expected refused credentials, got {other:?}"),
    }
}

fn assert_no_secret(text: &str) {
    for secret in [SECRET_ONE, SECRET_TWO, SECRET_THREE] {
        assert!(!text.contains(secret), "a secret leaked: {text}");
    }
}

#[tokio::test]
async fn a_rotated_key_is_reread_after_one_refusal_and_the_call_succeeds() {
    let w = Warm::start(None).await;
    w.rotate_agentkit(key(2));
    w.ext.store(&key(2));

    w.get_tool().await.expect("re-read and sent again");
    assert_eq!(
        w.ext.calls(),
        2,
        "the extension was asked exactly once more"
    );
    assert_eq!(w.refusals(), 1, "refused once, internally");

    // The new key stays: no further refusal, no further read.
    w.get_tool().await.unwrap();
    assert_eq!((w.ext.calls(), w.refusals()), (2, 1));
}

#[tokio::test]
async fn a_refused_create_session_is_sent_once_more_and_starts_one_session() {
    let w = Warm::start(None).await;
    w.rotate_agentkit(key(2));
    w.ext.store(&key(2));

    let req = CreateSession::new(
        &w.tool,
        "agent-1",
        vec![MetadataEntry::string("Username", "alice")],
    );
    w.client
        .call(BEIJING, &req, Deadline::after(Duration::from_secs(10)))
        .await
        .expect("refused, re-read, sent again");
    let ctl = w.sim.control();
    assert_eq!(w.refusals(), 1);
    // The refused request was not applied: one session, one CreateSession received.
    assert_eq!(ctl.counters().received("CreateSession"), 1);
    assert_eq!(ctl.sessions().len(), 1);
}

#[tokio::test]
async fn a_refused_create_session_near_its_deadline_is_not_sent_again() {
    let w = Warm::start(None).await;
    w.rotate_agentkit(key(2));
    w.ext.store(&key(2));

    // Less time left than one attempt may take (the client's request timeout is 5 s): a
    // non-idempotent action is not sent with an answer the deadline could cut short.
    let req = CreateSession::new(&w.tool, "agent-1", vec![]);
    let err = w
        .client
        .call(BEIJING, &req, Deadline::after(Duration::from_secs(3)))
        .await
        .unwrap_err();
    assert_eq!(*reread_of(&err), Reread::ReplacedNotResent, "{err}");
    assert!(!err.outcome_unknown(), "refused: nothing was started");
    assert_eq!(w.sim.control().sessions().len(), 0);

    // The re-read credentials were kept for the next call.
    w.get_tool().await.unwrap();
    assert_eq!((w.ext.calls(), w.refusals()), (2, 1));
}

#[tokio::test]
async fn a_second_refusal_within_the_interval_is_not_reread_and_after_it_is() {
    let interval = Duration::from_secs(4);
    let w = Warm::start(Some(interval)).await;
    // AgentKit has the new key; the secret still holds the old one (the operator has not
    // updated it yet, or the extension still caches it).
    w.rotate_agentkit(key(2));

    let err = w.get_tool().await.unwrap_err();
    assert_eq!(*reread_of(&err), Reread::Unchanged, "{err}");
    assert_eq!(w.ext.calls(), 2);
    assert_eq!(w.refusals(), 1, "unchanged credentials are not sent again");
    let reread_at = std::time::Instant::now();

    let err = w.get_tool().await.unwrap_err();
    assert!(
        matches!(reread_of(&err), Reread::TooSoon { every, .. } if *every == interval),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("credentials refused: InvalidAccessKey (HTTP 401)")
            && text.contains("not re-read"),
        "a clear error: {text}"
    );
    assert_eq!(w.ext.calls(), 2, "no re-read within the interval");

    // Even once the secret holds the new key, not before the interval has passed.
    w.ext.store(&key(2));
    let err = w.get_tool().await.unwrap_err();
    assert!(matches!(reread_of(&err), Reread::TooSoon { .. }), "{err}");
    assert_eq!(w.ext.calls(), 2);
    assert!(
        reread_at.elapsed() < interval,
        "the machine was too slow for this test's interval"
    );

    tokio::time::sleep(interval.saturating_sub(reread_at.elapsed()) + Duration::from_millis(200))
        .await;
    w.get_tool().await.expect("re-read after the interval");
    assert_eq!(w.ext.calls(), 3);
    w.get_tool().await.unwrap();
    assert_eq!(w.ext.calls(), 3);
}

#[tokio::test]
async fn concurrent_refusals_share_one_reread() {
    const CALLS: usize = 8;
    let w = Warm::start(None).await;
    w.rotate_agentkit(key(2));
    w.ext.store(&key(2));
    // A slow re-read: every call is refused while the first one's re-read is under way.
    w.ext.delay_ms.store(500, Ordering::SeqCst);

    let results = futures::future::join_all((0..CALLS).map(|_| w.get_tool())).await;
    for r in results {
        r.expect("every call succeeds with the re-read key");
    }
    assert_eq!(w.ext.calls(), 2, "one re-read for all of them");
    assert_eq!(
        w.refusals(),
        CALLS as u64,
        "all were refused before the re-read ended"
    );
}

#[tokio::test]
async fn new_credentials_refused_again_are_not_looped_on() {
    let w = Warm::start(None).await;
    w.rotate_agentkit(key(2));
    // The secret holds a key AgentKit does not accept either.
    w.ext.store(&key(3));

    let err = w.get_tool().await.unwrap_err();
    assert_eq!(*reread_of(&err), Reread::RetriedOnce, "{err}");
    assert_eq!(w.ext.calls(), 2);
    assert_eq!(w.refusals(), 2, "the old key once, the re-read one once");
}

#[tokio::test]
async fn a_failing_extension_keeps_the_old_credentials_and_leaks_nothing() {
    // Everything logged on this test's thread (the client, the simulator and the fake
    // extension all run on it), at every level.
    let logs = CapturedLog::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let w = Warm::start(None).await;
    w.rotate_agentkit(key(2));
    w.ext.broken.store(true, Ordering::SeqCst);

    let err = w.get_tool().await.unwrap_err();
    match reread_of(&err) {
        Reread::Failed(why) => assert!(why.contains("lacks"), "{why}"),
        other => panic!("expected a failed re-read, got {other:?}"),
    }
    assert_eq!(w.ext.calls(), 2);
    assert_eq!(w.refusals(), 1);
    assert_no_secret(&err.to_string());
    assert_no_secret(&format!("{err:?}"));
    assert_no_secret(&format!("{:?}", w.client));

    // The old key was kept: once AgentKit takes it back, calls succeed with no re-read.
    w.rotate_agentkit(key(1));
    w.get_tool().await.expect("the old credentials were kept");
    assert_eq!((w.ext.calls(), w.refusals()), (2, 1));

    let logs = logs.text();
    assert!(logs.contains("re-read failed"), "the failure is logged");
    assert_no_secret(&logs);
}

#[tokio::test]
async fn credentials_older_than_the_interval_are_reread_before_a_call() {
    let interval = Duration::from_millis(500);
    let w = Warm::start(Some(interval)).await;
    tokio::time::sleep(interval + Duration::from_millis(100)).await;
    // Rotated with an overlap would look the same to the client: the secret has the new key
    // before AgentKit stops accepting the old one.
    w.ext.store(&key(2));
    w.rotate_agentkit(key(2));

    w.get_tool().await.unwrap();
    assert_eq!(w.ext.calls(), 2, "re-read because the credentials were old");
    assert_eq!(w.refusals(), 0, "before any refusal");
    w.get_tool().await.unwrap();
    assert_eq!(w.ext.calls(), 2, "not again within the interval");
}
