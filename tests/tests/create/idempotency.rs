//! The Idempotency-Key: the same key and body replay one create, a duplicate in flight gets 409,
//! a key is per owner, a retryable failure releases it, and a first idempotency write whose
//! answer was lost goes on (or, also unreadable, is 503 and the retry goes on).

use super::*;

// ---------------------------------------------------------------------------------------------
// Idempotency-Key

async fn same_key_and_body_replay_one_create<S: AgentStore + snapwake::store::ScheduleStore>(
    store: S,
) {
    let world = World::registered(Duration::from_secs(30), &store).await;
    let function = create_fn(store, world.client(), CreateSettings::default());
    let req = || alices_create("Once", Some("key-1"));
    // The first answer is lost on its way back to the client.
    drop(function.handle(req()).await);
    let second = function.handle(req()).await;
    let third = function.handle(req()).await;
    assert_eq!(creates(&world), 1);
    let (status, view) = answer(&second);
    assert_eq!(status, 201, "{view}");
    for h in ["location", "etag", "content-type"] {
        assert_eq!(header_of(&second, h), header_of(&third, h), "{h}");
        assert!(header_of(&second, h).is_some(), "{h}");
    }
    assert_eq!(second.body(), third.body(), "replayed byte for byte");
    assert_eq!(world.live_sessions_of(&agent_id(&view)), 1);

    // A body that differs only by an omitted default is the same request.
    let same = function
        .handle(create_request(
            Who::User("alice"),
            &body("codex", " Once ", Some("recoverable")),
            Some("key-1"),
        ))
        .await;
    assert_eq!(same.body(), second.body());
    // Another body under the same key: 422.
    let other = function.handle(alices_create("Twice", Some("key-1"))).await;
    assert_problem(&other, 422, "INVALID_REQUEST");
    assert_eq!(creates(&world), 1);
}

#[tokio::test]
async fn same_key_and_body_replay_one_create_on_dynamodb() {
    same_key_and_body_replay_one_create(dynamo_store("create-idem").await).await;
}

#[tokio::test]
async fn same_key_and_body_replay_one_create_in_memory() {
    same_key_and_body_replay_one_create(MemoryStore::new()).await;
}

#[tokio::test]
async fn a_duplicate_in_flight_gets_409_with_retry_after() {
    let (store, world, _) = deployed_shared("create-inflight", Duration::from_secs(30)).await;
    world.inject(Fault::latency(Some("CreateSession"), 1500));
    let function = Arc::new(create_fn(
        store.clone(),
        world.client(),
        CreateSettings::default(),
    ));
    let req = || alices_create("Busy", Some("key-busy"));
    let first = spawn_request(&function, req());
    tokio::time::sleep(Duration::from_millis(400)).await;
    let second = function.handle(req()).await;
    assert_problem(&second, 409, "AGENT_BUSY");
    let (_, problem) = answer(&second);
    assert_eq!(problem["retryable"], true);
    assert!(problem["detail"]
        .as_str()
        .unwrap()
        .contains("still in progress"));
    assert!(header_of(&second, "retry-after").is_some());

    let first = first.await.unwrap();
    assert_eq!(answer(&first).0, 201);
    assert_eq!(creates(&world), 1);
    // Once it finished, the duplicate replays it.
    let later = function.handle(req()).await;
    assert_eq!(later.body(), first.body());
    assert_eq!(header_of(&later, "etag"), header_of(&first, "etag"));
    assert_eq!(creates(&world), 1);
}

#[tokio::test]
async fn a_key_is_per_owner() {
    let (store, world, _) = deployed_shared("create-owner-key", Duration::from_secs(30)).await;
    let function = create_fn(store.clone(), world.client(), CreateSettings::default());
    let alice = function
        .handle(alices_create("Mine", Some("shared-key")))
        .await;
    // Bob's key of the same name is his own, even with another body.
    let bob = function
        .handle(create_request(
            Who::User("bob"),
            &body("codex", "Also mine", None),
            Some("shared-key"),
        ))
        .await;
    let (sa, va) = answer(&alice);
    let (sb, vb) = answer(&bob);
    assert_eq!((sa, sb), (201, 201), "{va} {vb}");
    assert!(agent_id(&va).starts_with("studio-alice-"));
    assert!(agent_id(&vb).starts_with("studio-bob-"));
    assert_eq!(vb["owner"], "bob");
    assert_eq!(creates(&world), 2);
}

/// A create whose CreateSession failed with nothing shown releases its key (202 is not a final
/// answer). A retry inside the window sends nothing; once the window is over, the empty listing
/// is AgentKit's word, and the retry creates the agent with the first attempt's id.
#[tokio::test]
async fn a_retryable_failure_releases_the_key_and_the_retry_creates_the_same_agent() {
    let (store, world, _) = deployed_shared("create-release", Duration::from_secs(30)).await;
    world.inject(Fault::error(Some("CreateSession"), "ErrCreateSessionFail", 500).next(1));
    let mut function = create_fn(store.clone(), world.client(), CreateSettings::default());
    function.settings.unsettled_window = Duration::from_millis(1500);
    let req = || alices_create("Again", Some("key-retry"));
    let first = function.handle(req()).await;
    assert_eq!(answer(&first).0, 202, "{}", answer(&first).1);
    let pk = "IDEM#studio-alice#key-retry";
    let doc = store
        .get_document(DocumentKey { pk, sk: "IDEM" })
        .await
        .unwrap()
        .expect("the idempotency document");
    assert_eq!(doc.value["state"], "failed");
    let minted = doc.value["user_session_id"].as_str().unwrap().to_string();
    assert!(doc.expires_at.is_some());

    let inside = function.handle(req()).await;
    assert_eq!(answer(&inside).0, 202, "{}", answer(&inside).1);
    assert_eq!(creates(&world), 1, "nothing sent inside the window");

    tokio::time::sleep(Duration::from_millis(4000)).await;
    let second = function.handle(req()).await;
    let (status, view) = answer(&second);
    assert_eq!(status, 201, "{view}");
    assert_eq!(
        agent_id(&view),
        minted,
        "the retry keeps the first attempt's id"
    );
    assert_eq!(creates(&world), 2);
    assert_eq!(world.live_sessions_of(&minted), 1);
    let doc = store
        .get_document(DocumentKey { pk, sk: "IDEM" })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(doc.value["state"], "done");
    assert_eq!(doc.value["status"], 201);
}

/// The first idempotency write lands but its answer is lost: the document, re-read, is this
/// attempt's own, so the create goes on (201) instead of answering 503 and leaving a retry to
/// be told "still in progress" for a minute.
#[tokio::test]
async fn a_first_idempotency_write_whose_answer_was_lost_goes_on() {
    let store = Arc::new(LostAnswers::new(
        dynamo_store("create-idem-lost").await,
        |_, _| false,
        0,
    ));
    let world = World::registered(Duration::from_secs(30), &store).await;
    let function = create_fn(store.clone(), world.client(), CreateSettings::default());
    let req = || alices_create("Landed", Some("key-landed"));
    store.lose_documents.store(1, Ordering::SeqCst);
    let first = function.handle(req()).await;
    let (status, view) = answer(&first);
    assert_eq!(status, 201, "{view}");
    assert_eq!(creates(&world), 1);
    let again = function.handle(req()).await;
    assert_eq!(again.body(), first.body(), "replayed");
    assert_eq!(creates(&world), 1);
}

/// The first idempotency write lands, its answer is lost, and the re-read fails too: 503,
/// retryable. The retry with the same key finds a young `running` document whose attempt never
/// took the agent's lock (no agent record), takes it over at once and creates the agent with
/// the id in it — no 409 "still in progress" for a minute.
#[tokio::test]
async fn a_first_idempotency_write_lost_and_unreadable_is_503_and_the_retry_goes_on() {
    let store = Arc::new(LostAnswers::new(
        dynamo_store("create-idem-unreadable").await,
        |_, _| false,
        0,
    ));
    let world = World::registered(Duration::from_secs(30), &store).await;
    let function = create_fn(store.clone(), world.client(), CreateSettings::default());
    let req = || alices_create("Unreadable", Some("key-unreadable"));
    store.lose_documents.store(1, Ordering::SeqCst);
    store.fail_document_reads.store(1, Ordering::SeqCst);
    let first = function.handle(req()).await;
    assert_problem(&first, 503, "STORE_UNAVAILABLE");
    assert_eq!(answer(&first).1["retryable"], true);
    assert_eq!(creates(&world), 0);
    store.fail_document_reads.store(0, Ordering::SeqCst);
    let doc = store
        .get_document(DocumentKey {
            pk: "IDEM#studio-alice#key-unreadable",
            sk: "IDEM",
        })
        .await
        .unwrap()
        .expect("the first write landed");
    assert_eq!(doc.value["state"], "running");
    let minted = doc.value["user_session_id"].as_str().unwrap().to_string();

    let retry = function.handle(req()).await;
    let (status, view) = answer(&retry);
    assert_eq!(status, 201, "{view}");
    assert_eq!(agent_id(&view), minted, "the first attempt's id");
    assert_eq!(creates(&world), 1);
    assert_eq!(world.live_sessions_of(&minted), 1);
}
