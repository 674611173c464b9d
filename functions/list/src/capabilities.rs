//! `GET /v1/capabilities`: per kind, whether each retention can be chosen (a Tool of it is
//! deployed) and why not, and the default retention (docs/http-api.md).

use lambda_http::{Body, Response};
use snapwake::agentkit::AgentKit;
use snapwake::domain::{Kind, Retention, ToolRegistry};
use snapwake::error::Result;
use snapwake::http::edge;
use snapwake::store::{AgentStore, Within};

use crate::List;

impl<S: AgentStore, K: AgentKit> List<S, K> {
    pub(crate) async fn capabilities(&self, store: &Within<'_, S>) -> Result<Response<Body>> {
        let registry = self.registry.get(store).await?;
        Ok(edge::json(200, &document(&registry)))
    }
}

/// The capabilities document.
fn document(registry: &ToolRegistry) -> serde_json::Value {
    let kinds: Vec<serde_json::Value> = Kind::ALL
        .into_iter()
        .map(|kind| {
            let one = |retention: Retention| match registry.tool(kind, retention) {
                Some(_) => serde_json::json!({"enabled": true}),
                None => serde_json::json!({
                    "enabled": false,
                    "reason": format!("no {retention} Tool is deployed"),
                }),
            };
            let default = if registry.tool(kind, Retention::Recoverable).is_some() {
                Retention::Recoverable
            } else {
                Retention::Temporary
            };
            serde_json::json!({
                "kind": kind,
                "default_retention": default,
                "retention": {
                    "temporary": one(Retention::Temporary),
                    "recoverable": one(Retention::Recoverable),
                },
            })
        })
        .collect();
    serde_json::json!({ "kinds": kinds })
}
