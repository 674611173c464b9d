//! Who is who: which claims name a person, and who is an admin. Built by `crate::config` at
//! cold start; read by [`super::Caller`].

use super::caller::AdminEntry;

/// The default order of claims that identify a person (docs/identity.md).
pub const DEFAULT_OWNER_CLAIMS: [&str; 7] = [
    "sub",
    "user_id",
    "uid",
    "email",
    "preferred_username",
    "username",
    "login",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityConfig {
    /// Claims tried in order for the owner id (`SNAPWAKE_OWNER_CLAIMS`).
    pub owner_claims: Vec<String>,
    /// Who is an admin by an identifier (`SNAPWAKE_ADMINS`; see [`AdminEntry`]).
    pub admins: Vec<AdminEntry>,
    /// Group names that make a caller admin (`SNAPWAKE_ADMIN_GROUPS`).
    pub admin_groups: Vec<String>,
}

impl Default for IdentityConfig {
    fn default() -> Self {
        IdentityConfig {
            owner_claims: DEFAULT_OWNER_CLAIMS.iter().map(|c| c.to_string()).collect(),
            admins: Vec::new(),
            admin_groups: Vec::new(),
        }
    }
}

impl IdentityConfig {
    /// Reads a comma list of `SNAPWAKE_ADMINS` entries against these owner claims.
    pub fn parse_admins(&self, list: &str) -> Vec<AdminEntry> {
        list.split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| AdminEntry::parse(entry, &self.owner_claims))
            .collect()
    }
}
