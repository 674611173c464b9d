//! Whose a session without a UserSessionId is: each one a `snapshot-<id>` agent's wake learns of is
//! claimed (`CLAIM#<tool>#<session>`, only if absent), and an orphan of a lost Resume answer is
//! adopted only when it alone is unclaimed and its claim is won.

use crate::agentkit::types::{MetadataEntry, Session};
use crate::agentkit::AgentKit;
use crate::ambient::now_s;
use crate::domain::AgentKey;
use crate::error::Error;
use crate::invocation::Deadline;
use crate::store::{AgentStore, Document, DocumentKey, StoreError};

use super::questions::orphans_of;
use super::Home;

const CLAIM_SK: &str = "CLAIM";
/// A session lives 8 hours; a claim outlives it.
const CLAIM_TTL_S: i64 = 9 * 3600;

fn claim_pk(home: &Home, session_id: &str) -> String {
    format!("CLAIM#{}#{}", home.tool_id, session_id)
}

/// The agent that claimed `session_id` on `home`'s Tool, if any.
async fn claimant<S: AgentStore>(
    store: &S,
    home: &Home,
    session_id: &str,
) -> Result<Option<String>, StoreError> {
    let pk = claim_pk(home, session_id);
    let doc = store
        .get_document(DocumentKey {
            pk: &pk,
            sk: CLAIM_SK,
        })
        .await?;
    Ok(doc.as_ref().and_then(claimed_by))
}

fn claimed_by(doc: &Document) -> Option<String> {
    doc.value
        .get("agent")
        .and_then(|a| a.as_str())
        .map(str::to_string)
}

/// Claim `session_id` for `key`: `true` when it is `key`'s now (or was already).
pub async fn claim<S: AgentStore>(
    store: &S,
    home: &Home,
    session_id: &str,
    key: &AgentKey,
) -> Result<bool, StoreError> {
    let pk = claim_pk(home, session_id);
    let value = serde_json::json!({ "agent": key.to_string() });
    let doc_key = DocumentKey {
        pk: &pk,
        sk: CLAIM_SK,
    };
    match store
        .put_document(doc_key, &value, 0, Some(now_s() + CLAIM_TTL_S))
        .await
    {
        Ok(_) => Ok(true),
        Err(StoreError::DocumentConflict { current }) => {
            Ok(current.and_then(|d| claimed_by(&d)) == Some(key.to_string()))
        }
        Err(e) => Err(e),
    }
}

/// The session an unknown Resume of `key` started: the one unclaimed [`orphans_of`], claimed now.
/// None or several adopt nothing.
#[allow(clippy::too_many_arguments)]
pub async fn adopt_orphan<S: AgentStore, K: AgentKit>(
    store: &S,
    agentkit: &K,
    home: &Home,
    key: &AgentKey,
    sent_at_ms: u64,
    margin_ms: u64,
    metadata: &[MetadataEntry],
    deadline: Deadline,
) -> Result<Option<Session>, Error> {
    let mut unclaimed = Vec::new();
    for s in orphans_of(agentkit, home, sent_at_ms, margin_ms, metadata, deadline).await? {
        let Some(id) = s.session_id.as_deref() else {
            continue;
        };
        match claimant(store, home, id).await? {
            Some(other) if other != key.to_string() => {}
            _ => unclaimed.push(s),
        }
    }
    if unclaimed.len() != 1 {
        if unclaimed.len() > 1 {
            tracing::warn!(
                tool_id = %home.tool_id,
                candidates = unclaimed.len(),
                "several unclaimed sessions could be the orphan of an unknown Resume; adopting none"
            );
        }
        return Ok(None);
    }
    let session = unclaimed.remove(0);
    let id = session.session_id.clone().unwrap_or_default();
    Ok(claim(store, home, &id, key).await?.then_some(session))
}
