//! The AgentKit error codes snapwake reads (docs/agentkit.md).

/// The object (or the Tool in this region) does not exist.
pub const NOT_FOUND: &str = "InvalidResource.NotFound";
/// CreateSession may have half-succeeded.
pub const CREATE_SESSION_FAIL: &str = "ErrCreateSessionFail";
pub const THROTTLED: &str = "Throttling";
pub const SIGNATURE_DOES_NOT_MATCH: &str = "SignatureDoesNotMatch";

/// Codes refusing who signed: Volcengine's common (gateway) codes for a bad key, secret or STS
/// token, and the simulator's `InvalidSecurityToken`. Not clock skew (`InvalidTimestamp`,
/// `SignatureExpired`) nor `AccessDenied` (a permission): other credentials would not help.
pub const AUTH_CODES: &[&str] = &[
    "InvalidAccessKey",
    SIGNATURE_DOES_NOT_MATCH,
    "InvalidSecretToken",
    "InvalidSecurityToken",
    "MissingAuthenticationToken",
    "MissingSignature",
    "InvalidAuthorization",
    "InvalidCredential",
];

pub fn is_auth_code(code: &str) -> bool {
    AUTH_CODES.contains(&code)
}
