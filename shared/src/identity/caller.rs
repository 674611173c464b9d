//! Who is calling: the owner id, the name shown as creator, and whether they are an admin.
//!
//! In Lambda the caller comes only from the verified claims in the API Gateway request context
//! ([`Caller::from_request`], [`Caller::from_request_context`]); headers are never read there.
//! The local server builds callers with [`Caller::local`] from its own development headers.

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

/// An authenticated caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The stable id that scopes every agent (never empty).
    pub owner: String,
    /// The name shown as the creator of agents.
    pub display_name: String,
    /// Admins see and act on every owner's agents.
    pub is_admin: bool,
}

impl Caller {
    /// A caller of the local development server, which trusts its own headers. Never used in
    /// Lambda. The display name is the owner id.
    pub fn local(owner: impl Into<String>, is_admin: bool) -> Caller {
        let owner = owner.into();
        Caller {
            display_name: owner.clone(),
            owner,
            is_admin,
        }
    }

    /// The caller of a Lambda request from API Gateway (HTTP API, payload 2.0).
    ///
    /// A request without an HTTP API request context (another event source, or a test request
    /// built without one) has no verified identity: [`Error::Unauthenticated`].
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

    /// The caller that verified claims describe (docs/identity.md):
    ///
    /// - owner id: the first non-blank claim of `config.owner_claims`; none → unauthenticated;
    /// - display name: the first non-blank of [`DISPLAY_NAME_CLAIMS`], else the owner id;
    /// - admin: one of `config.admins` matches ([`AdminEntry`](super::AdminEntry): in the
    ///   claim it names, else in the owner claim; ASCII case only; `email` only when
    ///   verified), or a group claim ([`GROUP_CLAIMS`]) names one of `config.admin_groups`
    ///   (group names compare exactly: identity providers treat them as case-sensitive, so
    ///   `Admins` is not `admins`).
    ///
    /// Nobody is an admin unless configured: empty `admins` and `admin_groups` make no admin.
    /// (The reference Studio made everybody an admin when no list was configured; snapwake
    /// deliberately does not.)
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

    /// The two owner-index keys under which this caller's agents are recorded: the current
    /// UserSessionId format and the legacy one (the owner index is queried for both:
    /// docs/identity.md, "Owner keys").
    pub fn owner_keys(&self) -> [String; 2] {
        usid::owner_keys(&self.owner)
    }

    /// Whether this caller may see and act on an agent whose UserSessionId is
    /// `user_session_id` (admins may act on every agent, including ownerless ones).
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

// ---- Who may act on an agent, and whom a first write of its record names as its owner: the
// rules every function that reads or changes one agent (resume, delete, list) shares.

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

/// What the first write of an agent's record should say about it: the record's own fields
/// first, then what the UserSessionId and the snapshots' metadata tell. `place`, when known,
/// adds the Tool (a wake that has not located the agent yet writes it later).
pub fn describe(
    caller: &Caller,
    key: &AgentKey,
    record: Option<&AgentRecord>,
    place: Option<Place<'_>>,
    snapshots: Option<&[Snapshot]>,
) -> Description {
    let usid = user_session_id(&key.agent_id);
    // The raw owner is known only when it is the caller's own agent (an admin acting on
    // someone else's agent must not be recorded as its owner).
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
