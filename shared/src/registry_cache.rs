//! The tool registry as the functions read it: deploy's item with `SNAPWAKE_TOOL_<KEY>` ids laid
//! over it, cached a minute in a warm container so a burst of requests costs one read.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::domain::{Kind, Retention, ToolRegistry};
use crate::error::Error;
use crate::store::AgentStore;

/// How long a read registry is trusted.
pub const REGISTRY_TTL: Duration = Duration::from_secs(60);

/// Catalogue keys whose Tool id may be pinned by `SNAPWAKE_TOOL_<KEY>`, and what they name.
pub const TOOL_KEYS: [(&str, Kind, Retention); 6] = [
    ("CODEX", Kind::Codex, Retention::Temporary),
    ("CODEX_SNAPSHOT", Kind::Codex, Retention::Recoverable),
    ("OPENCLAW", Kind::Openclaw, Retention::Temporary),
    ("OPENCLAW_SNAPSHOT", Kind::Openclaw, Retention::Recoverable),
    ("HERMES", Kind::Hermes, Retention::Temporary),
    ("HERMES_SNAPSHOT", Kind::Hermes, Retention::Recoverable),
];

/// Explicit Tool ids from the environment, by catalogue key (`CODEX_SNAPSHOT`, ...).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolOverrides(pub BTreeMap<String, String>);

impl ToolOverrides {
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let mut map = BTreeMap::new();
        for (key, _, _) in TOOL_KEYS {
            if let Some(id) =
                lookup(&format!("SNAPWAKE_TOOL_{key}")).filter(|v| !v.trim().is_empty())
            {
                map.insert(key.to_string(), id.trim().to_string());
            }
        }
        ToolOverrides(map)
    }

    pub fn apply(&self, mut registry: ToolRegistry) -> ToolRegistry {
        for (key, kind, retention) in TOOL_KEYS {
            if let Some(id) = self.0.get(key) {
                let tools = registry.kinds.entry(kind).or_default();
                match retention {
                    Retention::Temporary => tools.temporary = Some(id.clone()),
                    Retention::Recoverable => tools.recoverable = Some(id.clone()),
                }
            }
        }
        registry
    }
}

#[derive(Debug)]
pub struct RegistryCache {
    overrides: ToolOverrides,
    ttl: Duration,
    cached: Mutex<Option<(Instant, Arc<ToolRegistry>)>>,
}

impl RegistryCache {
    pub fn new(overrides: ToolOverrides) -> Self {
        Self::with_ttl(overrides, REGISTRY_TTL)
    }

    pub fn with_ttl(overrides: ToolOverrides, ttl: Duration) -> Self {
        RegistryCache {
            overrides,
            ttl,
            cached: Mutex::new(None),
        }
    }

    /// The current registry, cached for a TTL; none written yet reads as empty (plus overrides).
    pub async fn get<S: AgentStore>(&self, store: &S) -> Result<Arc<ToolRegistry>, Error> {
        if let Some(hit) = self.fresh() {
            return Ok(hit);
        }
        let stored = store.get_registry().await?.unwrap_or_default();
        let registry = Arc::new(self.overrides.apply(stored));
        if let Ok(mut slot) = self.cached.lock() {
            *slot = Some((Instant::now(), registry.clone()));
        }
        Ok(registry)
    }

    /// Forget the cached registry (deploy calls this after writing a new one).
    pub fn invalidate(&self) {
        if let Ok(mut slot) = self.cached.lock() {
            *slot = None;
        }
    }

    fn fresh(&self) -> Option<Arc<ToolRegistry>> {
        let slot = self.cached.lock().ok()?;
        let (at, registry) = slot.as_ref()?;
        (at.elapsed() < self.ttl).then(|| registry.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::KindTools;

    #[test]
    fn overrides_win_over_the_stored_registry() {
        let mut stored = ToolRegistry::default();
        stored.kinds.insert(
            Kind::Codex,
            KindTools {
                temporary: Some("t-temp".into()),
                recoverable: Some("t-rec".into()),
                legacy_snapshot_tools: vec!["t-old".into()],
            },
        );
        let env = |k: &str| match k {
            "SNAPWAKE_TOOL_CODEX_SNAPSHOT" => Some("t-pinned".to_string()),
            "SNAPWAKE_TOOL_HERMES" => Some(" t-h ".to_string()),
            "SNAPWAKE_TOOL_OPENCLAW" => Some("".to_string()),
            _ => None,
        };
        let r = ToolOverrides::from_lookup(env).apply(stored);
        assert_eq!(
            r.tool(Kind::Codex, Retention::Recoverable),
            Some("t-pinned")
        );
        assert_eq!(r.tool(Kind::Codex, Retention::Temporary), Some("t-temp"));
        assert_eq!(r.tool(Kind::Hermes, Retention::Temporary), Some("t-h"));
        assert_eq!(r.tool(Kind::Openclaw, Retention::Temporary), None);
        assert!(r.is_snapshot_tool(Kind::Codex, "t-old"));
    }
}

#[cfg(all(test, feature = "memory"))]
mod cache_tests {
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
}
