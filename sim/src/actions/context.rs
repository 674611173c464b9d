//! What a request runs in: its region, the simulated now, the token signer.

use time::OffsetDateTime;

use crate::pagination::Tokens;

/// What a request runs in.
pub(crate) struct Ctx<'a> {
    /// The credential-scope region.
    pub(crate) region: &'a str,
    pub(crate) now: OffsetDateTime,
    pub(crate) tokens: &'a Tokens,
}
