//! The item layout both adapters share (docs/table.md): agent keys as `pk`/`sk`, the owner
//! index keys (`gsi1pk`/`gsi1sk`) and its opaque cursor. The in-memory adapter pages by the same
//! `gsi1sk` and cursor, so both answer `query_owner` identically.

use std::collections::BTreeMap;

use data_encoding::BASE64URL_NOPAD;

use super::StoreError;
use crate::domain::{AgentKey, Kind};

pub const AGENT_SK: &str = "AGENT";
pub const REGISTRY_PK: &str = "REGISTRY";
pub const REGISTRY_SK: &str = "TOOLS";
pub const OWNER_INDEX: &str = "by_owner";
/// The sparse index of schedules' next due times (GSI on `due_pk`/`due_at`).
pub const DUE_INDEX: &str = "by_due";
pub const DUE_PK: &str = "DUE";
pub const SCHEDULE_SK: &str = "SCHEDULE";
pub const BUDGET_SK: &str = "BUDGET";

/// `BUDGET#<bucket>`: one item per AgentKit limit and lane (`crate::budget`).
pub fn budget_pk(bucket: &str) -> String {
    format!("BUDGET#{bucket}")
}

/// `gsi1sk`'s start for a record with no `created_at`: fixed, or records would jump between
/// pages on every write; it sorts before every RFC 3339 time, so such records come last.
pub const NO_CREATED_AT: &str = "0000";

/// `AGENT#<kind>#<agent_id>`.
pub fn agent_pk(key: &AgentKey) -> String {
    format!("AGENT#{}#{}", key.kind, key.agent_id)
}

/// The inverse of [`agent_pk`]. The agent id may itself contain `#`: only the first two separate.
pub fn parse_agent_pk(pk: &str) -> Result<AgentKey, StoreError> {
    let mut parts = pk.splitn(3, '#');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("AGENT"), Some(kind), Some(agent_id)) if !agent_id.is_empty() => {
            let kind: Kind = kind
                .parse()
                .map_err(|e| StoreError::Corrupt(format!("pk {pk:?}: {e}")))?;
            Ok(AgentKey::new(kind, agent_id))
        }
        _ => Err(StoreError::Corrupt(format!(
            "pk {pk:?} is not AGENT#<kind>#<agent_id>"
        ))),
    }
}

/// `SCHEDULE#<kind>#<agent_id>`: not `AGENT#…`, which every agent reader takes for a record.
pub fn schedule_pk(key: &AgentKey) -> String {
    format!("SCHEDULE#{}#{}", key.kind, key.agent_id)
}

pub fn parse_schedule_pk(pk: &str) -> Result<AgentKey, StoreError> {
    match pk.strip_prefix("SCHEDULE#") {
        Some(rest) => parse_agent_pk(&format!("AGENT#{rest}")),
        None => Err(StoreError::Corrupt(format!(
            "pk {pk:?} is not SCHEDULE#<kind>#<agent_id>"
        ))),
    }
}

/// `OWNER#<owner_key>`.
pub fn owner_gsi_pk(owner_key: &str) -> String {
    format!("OWNER#{owner_key}")
}

/// `<created_at>#<kind>#<agent_id>`: unique per agent, so a cursor names exactly one position.
pub fn owner_gsi_sk(created_at: Option<&str>, key: &AgentKey) -> String {
    format!(
        "{}#{}#{}",
        created_at.unwrap_or(NO_CREATED_AT),
        key.kind,
        key.agent_id
    )
}

/// Where an owner's next page starts: `by_owner`'s `LastEvaluatedKey`, as base64url JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerCursor {
    pub pk: String,
    pub sk: String,
    pub gsi1pk: String,
    pub gsi1sk: String,
}

impl OwnerCursor {
    pub fn encode(&self) -> String {
        let map: BTreeMap<&str, &str> = [
            ("pk", self.pk.as_str()),
            ("sk", self.sk.as_str()),
            ("gsi1pk", self.gsi1pk.as_str()),
            ("gsi1sk", self.gsi1sk.as_str()),
        ]
        .into_iter()
        .collect();
        // Serialising a map of strings cannot fail.
        let json = serde_json::to_vec(&map).unwrap_or_default();
        BASE64URL_NOPAD.encode(&json)
    }

    /// Decode a cursor a caller sent back; it is valid only for the owner key it was issued for.
    pub fn decode(cursor: &str, owner_key: &str) -> Result<OwnerCursor, StoreError> {
        let invalid = |why: &str| StoreError::InvalidCursor(why.to_string());
        let bytes = BASE64URL_NOPAD
            .decode(cursor.as_bytes())
            .map_err(|_| invalid("not base64url"))?;
        let mut map: BTreeMap<String, String> =
            serde_json::from_slice(&bytes).map_err(|_| invalid("not a cursor"))?;
        let mut take = |name: &str| map.remove(name).ok_or_else(|| invalid("not a cursor"));
        let c = OwnerCursor {
            pk: take("pk")?,
            sk: take("sk")?,
            gsi1pk: take("gsi1pk")?,
            gsi1sk: take("gsi1sk")?,
        };
        if !map.is_empty() {
            return Err(invalid("not a cursor"));
        }
        if c.gsi1pk != owner_gsi_pk(owner_key) {
            return Err(invalid("cursor of another listing"));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pk_round_trips_with_hash_in_agent_id() {
        let key = AgentKey::new(Kind::Codex, "a#b#c");
        assert_eq!(agent_pk(&key), "AGENT#codex#a#b#c");
        assert_eq!(parse_agent_pk(&agent_pk(&key)).unwrap(), key);
        assert!(parse_agent_pk("AGENT#codex#").is_err());
        assert!(parse_agent_pk("AGENT#nope#x").is_err());
        assert!(parse_agent_pk("REGISTRY").is_err());
    }

    #[test]
    fn cursor_round_trips_and_rejects_garbage() {
        let c = OwnerCursor {
            pk: "AGENT#codex#a".into(),
            sk: AGENT_SK.into(),
            gsi1pk: owner_gsi_pk("studio-x"),
            gsi1sk: "2026-01-01T00:00:00Z#codex#a".into(),
        };
        let s = c.encode();
        assert_eq!(OwnerCursor::decode(&s, "studio-x").unwrap(), c);
        assert!(matches!(
            OwnerCursor::decode(&s, "studio-y"),
            Err(StoreError::InvalidCursor(_))
        ));
        for bad in ["", "!!!", "e30", &BASE64URL_NOPAD.encode(b"[1,2]")] {
            assert!(matches!(
                OwnerCursor::decode(bad, "studio-x"),
                Err(StoreError::InvalidCursor(_))
            ));
        }
    }
}
