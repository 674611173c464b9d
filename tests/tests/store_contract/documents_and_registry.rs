//! Documents (CAS and expiry) and the tool registry (CAS).

use crate::support::*;

pub(crate) async fn documents_cas_and_expiry<S: AgentStore + snapwake::store::ScheduleStore>(
    store: Arc<S>,
) {
    use snapwake::store::DocumentKey;
    let key = DocumentKey {
        pk: "IDEM#alice#k1",
        sk: "IDEM",
    };
    let other = DocumentKey {
        pk: "IDEM#alice#k2",
        sk: "IDEM",
    };
    assert_eq!(store.get_document(key).await.unwrap(), None);
    let doc = serde_json::json!({"state": "running", "fingerprint": "abc"});
    let v1 = store
        .put_document(key, &doc, 0, Some(now_s() + 3600))
        .await
        .unwrap();
    assert_eq!(v1.version, 1);
    assert_eq!(store.get_document(key).await.unwrap(), Some(v1.clone()));
    assert_eq!(
        store.get_document(other).await.unwrap(),
        None,
        "keys are separate"
    );

    // A second create loses and sees the first.
    match store
        .put_document(key, &serde_json::json!({}), 0, None)
        .await
    {
        Err(StoreError::DocumentConflict { current }) => {
            assert_eq!(current.map(|b| *b), Some(v1.clone()))
        }
        other => panic!("expected DocumentConflict, got {other:?}"),
    }
    // CAS on the version; a stale version loses.
    let done = serde_json::json!({"state": "done"});
    let v2 = store.put_document(key, &done, 1, None).await.unwrap();
    assert_eq!((v2.version, v2.expires_at), (2, None));
    assert!(matches!(
        store.put_document(key, &doc, 1, None).await,
        Err(StoreError::DocumentConflict { current: Some(_) })
    ));

    // An expired document reads as absent and can be created anew; its version carries on.
    let lapsed = store
        .put_document(other, &doc, 0, Some(now_s() - 10))
        .await
        .unwrap();
    assert_eq!(store.get_document(other).await.unwrap(), None);
    match store.put_document(other, &doc, lapsed.version, None).await {
        Err(StoreError::DocumentConflict { current: None }) => {}
        other => panic!("an expired document cannot be CASed on: {other:?}"),
    }
    let again = store.put_document(other, &done, 0, None).await.unwrap();
    assert!(again.version > lapsed.version);
    assert_eq!(again.value, done);
}

pub(crate) async fn registry_cas<S: AgentStore + snapwake::store::ScheduleStore>(store: Arc<S>) {
    let mut registry = ToolRegistry {
        region: Some("cn-beijing".into()),
        ..Default::default()
    };
    registry.kinds.insert(
        Kind::Codex,
        KindTools {
            temporary: Some("t-tmp".into()),
            recoverable: Some("t-rec".into()),
            legacy_snapshot_tools: vec!["t-old".into()],
        },
    );
    // Nothing stored: only 0 is the expected version.
    match store.put_registry(&registry, 1).await {
        Err(StoreError::RegistryConflict { current: None }) => {}
        other => panic!("expected RegistryConflict without current, got {other:?}"),
    }
    let v1 = store.put_registry(&registry, 0).await.unwrap();
    assert_eq!(v1.version, 1);
    assert_eq!(v1.kinds, registry.kinds);
    assert_eq!(store.get_registry().await.unwrap(), Some(v1.clone()));

    let mut next = v1.clone();
    next.kinds.insert(Kind::Hermes, KindTools::default());
    match store.put_registry(&next, 0).await {
        Err(StoreError::RegistryConflict { current }) => {
            assert_eq!(current.map(|b| *b), Some(v1.clone()))
        }
        other => panic!("expected RegistryConflict, got {other:?}"),
    }
    let v2 = store.put_registry(&next, 1).await.unwrap();
    assert_eq!(v2.version, 2);
    match store.put_registry(&registry, 1).await {
        Err(StoreError::RegistryConflict { current }) => {
            assert_eq!(current.map(|b| *b), Some(v2.clone()))
        }
        other => panic!("expected RegistryConflict, got {other:?}"),
    }
    assert_eq!(store.get_registry().await.unwrap(), Some(v2));
}
