//! A create request, checked: who creates what, on which Tool. The checks answer the same
//! way every time, so they run before (and are never recorded under) an Idempotency-Key.

use lambda_http::Request;
use serde::Deserialize;
use snapwake::agentkit::AgentKit;
use snapwake::domain::{Kind, Retention};
use snapwake::error::{Error, Result};
use snapwake::http::edge;
use snapwake::identity::{validate_display_name, Caller};
use snapwake::invocation::Deadline;
use snapwake::locate;
use snapwake::store::{AgentStore, Within};

use crate::Create;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    kind: String,
    pub display_name: String,
    #[serde(default)]
    retention: Option<String>,
}

/// A checked request: who creates what, on which Tool.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub caller: Caller,
    pub kind: Kind,
    pub display_name: String,
    pub retention: Retention,
    pub tool_id: String,
    /// What API Gateway put before the route (stage, base path), for `Location`.
    pub prefix: String,
    /// Regions to try, the registry's first.
    pub regions: Vec<String>,
}

impl<S: AgentStore, K: AgentKit> Create<S, K> {
    /// Read and check `request` as `caller`'s, and resolve its Tool: the asked retention, else
    /// the kind's default. A retention whose Tool is not deployed is 503 `NOT_CONFIGURED`.
    pub(crate) async fn plan(
        &self,
        request: &Request,
        caller: Caller,
        deadline: Deadline,
    ) -> Result<Plan> {
        let body: CreateBody = edge::json_body(request)?;
        let kind = edge::parse_kind(&body.kind)?;
        let display_name = validate_display_name(&body.display_name)?;
        let asked = body.retention.as_deref().map(parse_retention).transpose()?;

        let registry = self
            .registry
            .get(&Within::new(&self.store, deadline))
            .await?;
        let retention = asked.unwrap_or_else(|| registry.default_retention(kind));
        let tool_id = registry
            .tool(kind, retention)
            .ok_or_else(|| {
                Error::NotConfigured(format!(
                    "no {} Tool is deployed for {kind}",
                    retention.as_str()
                ))
            })?
            .to_string();
        Ok(Plan {
            prefix: edge::prefix(request),
            regions: locate::regions(&registry, &self.agentkit)
                .into_iter()
                .map(str::to_string)
                .collect(),
            caller,
            kind,
            display_name,
            retention,
            tool_id,
        })
    }
}

fn parse_retention(raw: &str) -> Result<Retention> {
    Retention::ALL
        .into_iter()
        .find(|r| r.as_str() == raw)
        .ok_or_else(|| {
            Error::bad_request(format!(
                "unknown retention {raw:?}: expected temporary or recoverable"
            ))
        })
}
