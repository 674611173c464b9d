//! What every List action shares: where a page starts (the `NextToken` cursor), walking an
//! index from there, and the canonical form of `{Name, Values}` filters.

use std::collections::BTreeSet;
use std::ops::Bound;

use super::context::Ctx;
use crate::error::SimError;
use crate::pagination::Key;
use snapwake::agentkit::types::Filter;

/// The start of a listing: after the token's key, or from the beginning.
pub(super) fn cursor(
    cx: &Ctx<'_>,
    scope: &str,
    token: Option<&str>,
) -> Result<Bound<Key>, SimError> {
    match token.filter(|t| !t.is_empty()) {
        None => Ok(Bound::Unbounded),
        Some(t) => Ok(Bound::Excluded(cx.tokens.open(scope, t)?)),
    }
}

pub(super) fn range<'s>(
    set: Option<&'s BTreeSet<Key>>,
    from: &Bound<Key>,
) -> impl Iterator<Item = &'s Key> {
    let from = from.clone();
    set.into_iter()
        .flat_map(move |s| s.range((from.clone(), Bound::Unbounded)))
}

/// The value sets of `{Name, Values}` filters that may only name `allowed`, each sorted and
/// de-duplicated (any-of within a filter, all-of across filters), in a canonical order so a
/// NextToken can be tied to them.
pub(super) fn filter_values(
    filters: Option<Vec<Filter>>,
    action: &str,
    allowed: &str,
) -> Result<Vec<Vec<String>>, SimError> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for f in filters.unwrap_or_default() {
        if f.name != allowed {
            return Err(SimError::invalid(format!(
                "unknown {action} filter {}",
                f.name
            )));
        }
        if f.values.is_empty() {
            return Err(SimError::invalid("a filter needs at least one value"));
        }
        let mut v = f.values;
        v.sort();
        v.dedup();
        out.push(v);
    }
    out.sort();
    Ok(out)
}
