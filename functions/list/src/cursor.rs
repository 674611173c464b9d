//! Opaque, tamper-evident cursors for `GET /v1/agents?owner=*`: `<payload>.<tag>`, both
//! base64url; the payload is JSON, the tag HMAC-SHA256 over it with a per-deployment key.
//! A cursor that does not verify or does not parse is a 400, never a panic or an AgentKit call.
//!
//! The key is `SNAPWAKE_CURSOR_KEY` when configured. Without it, the first container that
//! needs one writes 32 random bytes to the table (a document at [`KEY_DOCUMENT`], created with
//! a conditional write, so racing containers agree on one) and every container reads it from
//! there once: cursors stay valid across containers and cold starts. The consequence: anyone
//! who can read the table can forge cursors — which only lets them page the listing an admin
//! may page anyway, since AgentKit authenticates its own NextTokens inside.

use data_encoding::BASE64URL_NOPAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::de::DeserializeOwned;
use serde::Serialize;
use sha2::Sha256;
use snapwake::agentkit::types::Secret;
use snapwake::error::{Error, Result};
use snapwake::store::{AgentStore, DocumentKey, StoreError};
use tokio::sync::OnceCell;

/// Where the generated key lives when none is configured.
pub const KEY_DOCUMENT: DocumentKey<'static> = DocumentKey {
    pk: "KEY#cursor",
    sk: "KEY",
};

/// Longer cursors are refused before any work.
pub const MAX_CURSOR_LEN: usize = 4096;

/// Binds a tag to this use, so a key shared with anything else cannot produce cursors.
const DOMAIN: &[u8] = b"snapwake-list-cursor-v1.";

/// The cursor key of a warm container.
pub struct CursorKeys {
    configured: Option<Vec<u8>>,
    stored: OnceCell<Vec<u8>>,
}

impl CursorKeys {
    pub fn new(configured: Option<Secret>) -> Self {
        CursorKeys {
            configured: configured.map(|key| key.into_exposed().into_bytes()),
            stored: OnceCell::new(),
        }
    }

    /// The key: configured, else the table's (created on first use).
    pub async fn key<S: AgentStore>(&self, store: &S) -> Result<Signer> {
        if let Some(k) = &self.configured {
            return Ok(Signer(k.clone()));
        }
        let key = self
            .stored
            .get_or_try_init(|| async { stored_key(store).await })
            .await?;
        Ok(Signer(key.clone()))
    }
}

async fn stored_key<S: AgentStore>(store: &S) -> Result<Vec<u8>> {
    let read = |doc: &snapwake::store::Document| {
        doc.value
            .get("hmac_key_hex")
            .and_then(|v| v.as_str())
            .and_then(|h| hex::decode(h).ok())
            .filter(|k| k.len() >= 32)
            .ok_or_else(|| Error::Internal("the stored cursor key is unreadable".into()))
    };
    if let Some(doc) = store.get_document(KEY_DOCUMENT).await? {
        return read(&doc);
    }
    let mut fresh = Vec::with_capacity(32);
    fresh.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    fresh.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    let value = serde_json::json!({"hmac_key_hex": hex::encode(&fresh)});
    match store.put_document(KEY_DOCUMENT, &value, 0, None).await {
        Ok(_) => Ok(fresh),
        // Another container wrote one first: use theirs.
        Err(StoreError::DocumentConflict { current: Some(doc) }) => read(&doc),
        Err(e) => Err(e.into()),
    }
}

/// Seals and opens cursors with one key.
pub struct Signer(Vec<u8>);

impl Signer {
    fn tag(&self, payload: &str) -> Result<Hmac<Sha256>> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0)
            .map_err(|_| Error::Internal("cursor key rejected".into()))?;
        mac.update(DOMAIN);
        mac.update(payload.as_bytes());
        Ok(mac)
    }

    /// `value` as an opaque cursor.
    pub fn seal<T: Serialize>(&self, value: &T) -> Result<String> {
        let json = serde_json::to_vec(value).map_err(|e| Error::Internal(e.to_string()))?;
        let payload = BASE64URL_NOPAD.encode(&json);
        let tag = self.tag(&payload)?.finalize().into_bytes();
        Ok(format!("{payload}.{}", BASE64URL_NOPAD.encode(&tag)))
    }

    /// The value of a cursor this key sealed; anything else → 400.
    pub fn open<T: DeserializeOwned>(&self, cursor: &str) -> Result<T> {
        let bad = || Error::bad_request("cursor is malformed or was not issued by this service");
        if cursor.len() > MAX_CURSOR_LEN {
            return Err(bad());
        }
        let (payload, tag) = cursor.split_once('.').ok_or_else(bad)?;
        let tag = BASE64URL_NOPAD.decode(tag.as_bytes()).map_err(|_| bad())?;
        self.tag(payload)?.verify_slice(&tag).map_err(|_| bad())?;
        let json = BASE64URL_NOPAD
            .decode(payload.as_bytes())
            .map_err(|_| bad())?;
        serde_json::from_slice(&json).map_err(|_| bad())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use snapwake::store::memory::MemoryStore;

    #[test]
    fn sealed_cursors_open_and_any_change_is_refused() {
        let s = Signer(b"k".repeat(32));
        let c = s.seal(&serde_json::json!({"t": "tool", "n": 3})).unwrap();
        let v: serde_json::Value = s.open(&c).unwrap();
        assert_eq!(v["n"], 3);
        let (payload, tag) = c.split_once('.').unwrap();
        let forged_payload = BASE64URL_NOPAD.encode(br#"{"t":"tool","n":4}"#);
        for bad in [
            format!("{forged_payload}.{tag}"),
            format!("{payload}.AAAA"),
            payload.to_string(),
            "".into(),
            "..".into(),
            "x".repeat(MAX_CURSOR_LEN + 1),
        ] {
            let err = s.open::<serde_json::Value>(&bad).unwrap_err();
            assert!(matches!(err, Error::InvalidRequest { status: 400, .. }));
        }
        let other = Signer(b"j".repeat(32));
        assert!(other.open::<serde_json::Value>(&c).is_err());
    }

    #[tokio::test]
    async fn without_configuration_containers_share_the_stored_key() {
        let store = MemoryStore::default();
        let a = CursorKeys::new(None).key(&store).await.unwrap();
        let b = CursorKeys::new(None).key(&store).await.unwrap();
        let c = a.seal(&1).unwrap();
        assert_eq!(b.open::<i32>(&c).unwrap(), 1);
        let configured = CursorKeys::new(Some("z".repeat(32).into()))
            .key(&store)
            .await
            .unwrap();
        assert!(configured.open::<i32>(&c).is_err());
    }
}
