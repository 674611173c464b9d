//! The files one resume request runs (docs/architecture.md, "A resume's walk"), measured rather
//! than read: `scripts/walk.sh` builds this test with coverage and `--cfg walk`, and lists every
//! source file of the workspace that ran between the two marks below. Without that cfg the file
//! is empty, so `cargo test` never builds it.
//!
//! The request is the common one: the owner resumes an agent asleep on a recoverable Tool, the
//! function built as its `main.rs` builds it (the DynamoDB store, the AgentKit client within the
//! budget), invoked as Lambda invokes it, to its 200, in a warm container (its registry read).
#![cfg(walk)]

use std::time::Duration;

use snapwake::config::Config;
use snapwake::domain::{AgentKey, Kind};
use snapwake::store::{AgentStore, Condition};
use snapwake_resume::{Answer, Invocation};
use snapwake_tests::*;

extern "C" {
    // The profiler runtime's own marks, linked in by `-C instrument-coverage`.
    fn __llvm_profile_reset_counters();
    fn __llvm_profile_set_filename(name: *const std::ffi::c_char);
    fn __llvm_profile_write_file() -> i32;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_resume_of_an_asleep_agent_by_its_owner() {
    let (store, world, _) = deployed_shared("walk", Duration::ZERO).await;
    let (agent_id, _) = world.asleep_agent("alice", "Walk");
    let key = AgentKey::new(Kind::Codex, &agent_id);
    store
        .update(&key, &Condition::Absent, &world.asleep_record("alice"))
        .await
        .expect("the asleep agent's record");
    // The deployment's defaults; AgentKit's keys are the simulator's (the client has them).
    let config = Config::from_lookup(|name| match name {
        "VOLCENGINE_ACCESS_KEY" | "VOLCENGINE_SECRET_KEY" => Some("walk".into()),
        _ => None,
    })
    .expect("the default configuration");
    let agentkit = snapwake::bootstrap::within_budget(world.client(), &config, store.clone());
    let mut resume = resume_fn(store.clone(), agentkit, config.wake.clone());
    resume.identity = identity();
    let event = event(
        "POST",
        &format!("/v1/agents/codex/{agent_id}/resume"),
        Who::User("alice"),
        None,
    );
    let invocation: Invocation = serde_json::from_value(event).expect("an API Gateway event");
    // A warm container: its registry already read (a minute's cache), as most requests find it.
    resume.registry.get(&store).await.expect("the registry");
    let mut context = lambda_http::Context::default();
    context.deadline = snapwake::ambient::now_ms() + 29_000;

    // SAFETY: the profiler runtime is linked in whenever this file is built (`--cfg walk` comes
    // only with `-C instrument-coverage`); both functions take no arguments and touch only its
    // counters and its output file.
    // The request's counters go to `SNAPWAKE_WALK_PROFILE`; the rest of the process (set-up
    // before, tear-down after) to the file `LLVM_PROFILE_FILE` names.
    let walk =
        std::env::var("SNAPWAKE_WALK_PROFILE").expect("SNAPWAKE_WALK_PROFILE (scripts/walk.sh)");
    let walk = std::ffi::CString::new(walk).expect("a path");
    let rest = std::ffi::CString::new(std::env::var("LLVM_PROFILE_FILE").unwrap_or_default())
        .expect("a path");
    unsafe { __llvm_profile_reset_counters() };
    let answered = resume.invoke(invocation, context).await.expect("an answer");
    unsafe {
        __llvm_profile_set_filename(walk.as_ptr());
        __llvm_profile_write_file();
        __llvm_profile_set_filename(rest.as_ptr());
    }

    let Answer::Http(response) = answered else {
        panic!("not an HTTP answer: {answered:?}");
    };
    assert_eq!(response.status_code, 200, "{:?}", response.body);
}
