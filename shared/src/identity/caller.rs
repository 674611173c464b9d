//! Who is calling: the owner id, the name shown as creator, and whether they are an admin.
//!
//! In Lambda the caller comes only from the verified claims in the API Gateway request context
//! ([`Caller::from_request`], [`Caller::from_request_context`]); headers are never read there.
//! The local server builds callers with [`Caller::local`] from its own development headers.

use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext;
use lambda_http::request::RequestContext;
use lambda_http::RequestExt;

use super::claims::Claims;
use super::usid;
use crate::error::{Error, Result};
use crate::identity::IdentityConfig;

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(admins: &[&str], groups: &[&str]) -> IdentityConfig {
        let mut config = IdentityConfig {
            admin_groups: groups.iter().map(|g| g.to_string()).collect(),
            ..IdentityConfig::default()
        };
        config.admins = config.parse_admins(&admins.join(","));
        config
    }

    fn jwt(claims: &[(&str, &str)]) -> Claims {
        Claims::from_jwt(claims.iter().copied())
    }

    #[test]
    fn owner_is_the_first_non_blank_owner_claim() {
        let c = Caller::from_claims(
            &jwt(&[("sub", ""), ("user_id", "u-1"), ("email", "a@x.io")]),
            &config(&[], &[]),
        )
        .unwrap();
        assert_eq!(c.owner, "u-1");
        assert_eq!(c.display_name, "a@x.io");
        assert!(!c.is_admin);
    }

    #[test]
    fn display_name_falls_back_to_the_owner() {
        let c = Caller::from_claims(&jwt(&[("sub", "abc")]), &config(&[], &[])).unwrap();
        assert_eq!(c.display_name, "abc");
        let c = Caller::from_claims(
            &jwt(&[("sub", "abc"), ("name", "Ann"), ("login", "ann")]),
            &config(&[], &[]),
        )
        .unwrap();
        assert_eq!(c.display_name, "ann");
    }

    #[test]
    fn no_owner_claim_is_unauthenticated() {
        for claims in [jwt(&[]), jwt(&[("name", "Ann")]), jwt(&[("sub", " ")])] {
            assert!(matches!(
                Caller::from_claims(&claims, &IdentityConfig::default()),
                Err(Error::Unauthenticated)
            ));
        }
    }

    #[test]
    fn admin_by_identifier_in_its_claim_and_by_group_exact() {
        let claims = jwt(&[
            ("sub", "s-1"),
            ("email", "Boss@Example.com"),
            ("email_verified", "true"),
            ("cognito:groups", "[Admins devs]"),
        ]);
        let is_admin = |admins: &[&str], groups: &[&str]| {
            Caller::from_claims(&claims, &config(admins, groups))
                .unwrap()
                .is_admin
        };
        assert!(!is_admin(&[], &[]), "nobody is admin by default");
        assert!(is_admin(&["email:boss@example.com"], &[]));
        // A bare value is looked for in the owner claim (`sub` here) only.
        assert!(!is_admin(&["boss@example.com"], &[]));
        assert!(is_admin(&["s-1"], &[]));
        assert!(is_admin(&["sub:S-1"], &[]));
        assert!(!is_admin(&["user_id:s-1"], &[]));
        assert!(is_admin(&[], &["devs"]));
        assert!(is_admin(&[], &["Admins"]));
        assert!(!is_admin(&[], &["admins"]));
        assert!(!is_admin(&["someone@else"], &["ops"]));
    }

    #[test]
    fn lambda_number_claims_identify_and_array_groups_count() {
        let fields = json!({"user_id": 42, "groups": ["ops", "admins"]});
        let map = fields.as_object().unwrap();
        let claims = Claims::from_lambda(map.iter().map(|(k, v)| (k.as_str(), v)));
        let c = Caller::from_claims(&claims, &config(&["42"], &[])).unwrap();
        assert_eq!((c.owner.as_str(), c.is_admin), ("42", true));
        assert!(
            Caller::from_claims(&claims, &config(&[], &["admins"]))
                .unwrap()
                .is_admin
        );
    }

    #[test]
    fn local_callers_and_access() {
        let alice = Caller::local("alice", false);
        assert_eq!(alice.display_name, "alice");
        assert!(alice.may_access(Some("studio-alice-0123")));
        assert!(!alice.may_access(Some("studio-bob-0123")));
        assert!(!alice.may_access(None));
        assert!(Caller::local("root", true).may_access(None));
        assert_eq!(
            alice.owner_keys(),
            [
                "studio-alice".to_string(),
                "studio2-2bd806c97f0e00af".into()
            ]
        );
    }
}
