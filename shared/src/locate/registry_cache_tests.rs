use super::*;
use crate::domain::KindTools;
use crate::store::memory::MemoryStore;
use crate::store::AgentStore;

fn with_recoverable(id: &str) -> ToolRegistry {
    let mut r = ToolRegistry::default();
    r.kinds.insert(
        Kind::Codex,
        KindTools {
            recoverable: Some(id.into()),
            ..KindTools::default()
        },
    );
    r
}

#[tokio::test]
async fn a_warm_container_reads_the_registry_once_per_ttl() {
    let store = MemoryStore::new();
    let cache = RegistryCache::new(ToolOverrides::default());
    assert_eq!(cache.get(&store).await.unwrap().kinds.len(), 0, "none yet");
    store
        .put_registry(&with_recoverable("t-1"), 0)
        .await
        .unwrap();
    // Still the cached (empty) registry within the TTL...
    assert_eq!(cache.get(&store).await.unwrap().kinds.len(), 0);
    // ...until invalidated or expired.
    cache.invalidate();
    let r = cache.get(&store).await.unwrap();
    assert_eq!(r.tool(Kind::Codex, Retention::Recoverable), Some("t-1"));

    let short = RegistryCache::with_ttl(ToolOverrides::default(), Duration::ZERO);
    assert_eq!(
        short
            .get(&store)
            .await
            .unwrap()
            .tool(Kind::Codex, Retention::Recoverable),
        Some("t-1")
    );
    store
        .put_registry(&with_recoverable("t-2"), 1)
        .await
        .unwrap();
    assert_eq!(
        short
            .get(&store)
            .await
            .unwrap()
            .tool(Kind::Codex, Retention::Recoverable),
        Some("t-2"),
        "an expired entry is read again"
    );
}
