//! Who is calling (owner id, display name, admin), and who may act on an agent.

use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext;
use lambda_http::request::RequestContext;
use lambda_http::RequestExt;

use super::claims::Claims;
use super::names::{user_session_id, METADATA_DISPLAY_NAME_KEY};
use super::settings::IdentityConfig;
use super::usid;
use crate::agentkit::types::{metadata_value, Snapshot};
use crate::domain::{AgentKey, AgentRecord, Description, Retention};
use crate::error::{Error, Result};

/// Claims tried in order for the display name (docs/identity.md).
pub const DISPLAY_NAME_CLAIMS: [&str; 5] =
    ["email", "preferred_username", "username", "login", "name"];

/// Claims that may carry group names.
pub const GROUP_CLAIMS: [&str; 2] = ["cognito:groups", "groups"];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The stable id that scopes every agent (never empty).
    pub owner: String,
    pub display_name: String,
    /// Admins see and act on every owner's agents.
    pub is_admin: bool,
}

impl Caller {
    /// A caller of the local development server, which trusts its own headers; never in Lambda.
    pub fn local(owner: impl Into<String>, is_admin: bool) -> Caller {
        let owner = owner.into();
        Caller {
            display_name: owner.clone(),
            owner,
            is_admin,
        }
    }

    /// The caller of an API Gateway HTTP API (payload 2.0) request; without that request
    /// context there is no verified identity: [`Error::Unauthenticated`].
    pub fn from_request(request: &lambda_http::Request, config: &IdentityConfig) -> Result<Caller> {
        match request.request_context_ref() {
            Some(RequestContext::ApiGatewayV2(ctx)) => Caller::from_request_context(ctx, config),
            _ => Err(Error::Unauthenticated),
        }
    }

    /// The caller of an HTTP API request context: its JWT or Lambda authorizer's claims.
    pub fn from_request_context(
        ctx: &ApiGatewayV2httpRequestContext,
        config: &IdentityConfig,
    ) -> Result<Caller> {
        let authorizer = ctx.authorizer.as_ref().ok_or(Error::Unauthenticated)?;
        Caller::from_claims(&Claims::from_authorizer(authorizer), config)
    }

    /// The caller that verified claims describe (docs/identity.md): the owner id is the first
    /// non-blank of `config.owner_claims` (none: unauthenticated), the display name the first of
    /// [`DISPLAY_NAME_CLAIMS`], else the owner id. Admin when an [`AdminEntry`](super::AdminEntry)
    /// matches or a group claim names one of `config.admin_groups`, compared exactly: identity
    /// providers treat group names as case-sensitive. Nobody is an admin unless configured.
    pub fn from_claims(claims: &Claims, config: &IdentityConfig) -> Result<Caller> {
        let (owner_claim, owner) = config
            .owner_claims
            .iter()
            .find_map(|name| Some((name.as_str(), claims.text(name)?)))
            .ok_or(Error::Unauthenticated)?;
        let owner = owner.to_string();
        let display_name = DISPLAY_NAME_CLAIMS
            .iter()
            .find_map(|name| claims.text(name))
            .map_or_else(|| owner.clone(), str::to_string);
        let is_admin = is_admin(claims, owner_claim, config);
        Ok(Caller {
            owner,
            display_name,
            is_admin,
        })
    }

    /// This caller's owner-index keys, current and legacy (docs/identity.md, "Owner keys").
    pub fn owner_keys(&self) -> [String; 2] {
        usid::owner_keys(&self.owner)
    }

    /// Whether this caller may act on the agent with `user_session_id` (admins: every agent).
    pub fn may_access(&self, user_session_id: Option<&str>) -> bool {
        self.is_admin || user_session_id.is_some_and(|id| usid::belongs_to(id, &self.owner))
    }
}

fn is_admin(claims: &Claims, owner_claim: &str, config: &IdentityConfig) -> bool {
    let by_identifier = config
        .admins
        .iter()
        .any(|entry| entry.matches(claims, owner_claim));
    let by_group = !config.admin_groups.is_empty()
        && GROUP_CLAIMS
            .iter()
            .flat_map(|name| claims.groups(name))
            .any(|group| config.admin_groups.contains(&group));
    by_identifier || by_group
}

// ---- Who may act on an agent, and whom the first write of its record names as owner.

/// Whether `caller` may see and act on `key`: admins always; others when the record names
/// them, or when the UserSessionId is theirs. `snapshot-<id>` agents are admin-only.
pub fn may_act(caller: &Caller, key: &AgentKey, record: Option<&AgentRecord>) -> bool {
    if caller.is_admin {
        return true;
    }
    if record.and_then(|r| r.description.owner.as_deref()) == Some(caller.owner.as_str()) {
        return true;
    }
    user_session_id(&key.agent_id).is_some_and(|id| usid::belongs_to(id, &caller.owner))
}

/// Where an agent lives, as a record describes it: its Tool, the Tool's region and retention.
#[derive(Clone, Copy, Debug)]
pub struct Place<'a> {
    pub tool_id: &'a str,
    pub region: &'a str,
    pub retention: Retention,
}

/// What the first write of an agent's record should say: the record's own fields first, then
/// what the UserSessionId and the snapshots' metadata tell; `place` adds the Tool when known.
pub fn describe(
    caller: &Caller,
    key: &AgentKey,
    record: Option<&AgentRecord>,
    place: Option<Place<'_>>,
    snapshots: Option<&[Snapshot]>,
) -> Description {
    let usid = user_session_id(&key.agent_id);
    // Only the caller's own agent names its raw owner: an admin must not be recorded as owner.
    let owner = record
        .and_then(|r| r.description.owner.clone())
        .or_else(|| {
            usid.filter(|id| usid::belongs_to(id, &caller.owner))
                .map(|_| caller.owner.clone())
        });
    let metadata_name = snapshots.and_then(|s| {
        s.iter().find_map(|s| {
            metadata_value(&s.session_metadata, METADATA_DISPLAY_NAME_KEY).map(str::to_string)
        })
    });
    Description {
        owner,
        owner_key: usid.and_then(|id| usid::UserSessionId::parse(id).owner_key()),
        display_name: record
            .and_then(|r| r.description.display_name.clone())
            .or(metadata_name),
        tool_id: place.map(|p| p.tool_id.to_string()),
        region: place.map(|p| p.region.to_string()),
        retention: record
            .and_then(|r| r.description.retention)
            .or(place.map(|p| p.retention)),
        ..Description::default()
    }
}

#[cfg(test)]
mod tests;
