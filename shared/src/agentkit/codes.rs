//! The error codes of AgentKit's answers that snapwake reads (docs/agentkit.md): what the
//! envelope classifies an error by, and what an error reports as its code.

/// The object (or the Tool in this region) does not exist.
pub const NOT_FOUND: &str = "InvalidResource.NotFound";
/// CreateSession may have half-succeeded.
pub const CREATE_SESSION_FAIL: &str = "ErrCreateSessionFail";
/// What AgentKit (and the simulator) answer when a request is throttled.
pub const THROTTLED: &str = "Throttling";
/// A request whose signature does not verify.
pub const SIGNATURE_DOES_NOT_MATCH: &str = "SignatureDoesNotMatch";

/// Codes that say AgentKit did not accept who signed the request: Volcengine's common
/// (gateway) error codes for a missing, unknown or disabled key, a signature made with another
/// secret, a bad STS token, and the simulator's `InvalidSecurityToken`. Not the clock-skew
/// codes (`InvalidTimestamp`, the simulator's `SignatureExpired`): other credentials would not
/// help, and `AccessDenied` is a missing permission, not a bad key.
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

/// Whether an error code means the credentials (key, secret or token) were refused.
pub fn is_auth_code(code: &str) -> bool {
    AUTH_CODES.contains(&code)
}
