//! `NextToken`s: opaque, tamper-evident keyset cursors.
//!
//! Listings are ordered by `(CreatedAt, id)`, and a token names the last item of the page it
//! ended, so the next page starts strictly after it. Unlike an offset, this stays sane when
//! items are inserted or deleted between pages: nothing is skipped or repeated except the
//! inserted/deleted items themselves.
//!
//! A token is `base64url(payload ‖ tag)` where `payload` is JSON `[created_ns, id, scope]`,
//! `scope` is a SHA-256 of the request's action, region, Tool and filters (not `MaxResults`,
//! which may change between pages), and `tag` is an HMAC-SHA256 of the payload under a random
//! per-simulator key. A forged or altered token fails the tag; a token from another action,
//! Tool, region or filter set fails the scope; both answer `InvalidParameter.NextToken` (400).

use data_encoding::BASE64URL_NOPAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use super::error::SimError;

/// Page size when `MaxResults` is absent.
pub const DEFAULT_PAGE_SIZE: u32 = 10;
const TAG_LEN: usize = 16;

/// The position of an item in a listing: creation time in Unix nanoseconds, then id.
pub(crate) type Key = (i128, String);

/// Signs and checks tokens with one simulator's key.
#[derive(Clone)]
pub(crate) struct Tokens {
    key: [u8; 32],
}

impl Tokens {
    pub(crate) fn new(key: [u8; 32]) -> Self {
        Tokens { key }
    }

    fn tag(&self, payload: &[u8]) -> Vec<u8> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key)
            .expect("HMAC takes any key length");
        mac.update(payload);
        mac.finalize().into_bytes()[..TAG_LEN].to_vec()
    }

    /// A token that resumes after `last` within `scope`.
    pub(crate) fn issue(&self, scope: &str, last: &Key) -> String {
        let payload = serde_json::to_vec(&(last.0.to_string(), &last.1, scope))
            .expect("a tuple of strings serialises");
        let mut bytes = payload.clone();
        bytes.extend_from_slice(&self.tag(&payload));
        BASE64URL_NOPAD.encode(&bytes)
    }

    /// The key a token resumes after, if it is genuine and belongs to `scope`.
    pub(crate) fn open(&self, scope: &str, token: &str) -> Result<Key, SimError> {
        let bytes = BASE64URL_NOPAD
            .decode(token.as_bytes())
            .map_err(|_| SimError::bad_token())?;
        if bytes.len() <= TAG_LEN {
            return Err(SimError::bad_token());
        }
        let (payload, tag) = bytes.split_at(bytes.len() - TAG_LEN);
        let genuine: bool = subtle::ConstantTimeEq::ct_eq(self.tag(payload).as_slice(), tag).into();
        if !genuine {
            return Err(SimError::bad_token());
        }
        let (ns, id, token_scope): (String, String, String) =
            serde_json::from_slice(payload).map_err(|_| SimError::bad_token())?;
        if token_scope != scope {
            return Err(SimError::bad_token());
        }
        let ns: i128 = ns.parse().map_err(|_| SimError::bad_token())?;
        Ok((ns, id))
    }
}

/// A stable digest of what a listing request asks for. `parts` must already be canonical
/// (sorted where order does not matter).
pub(crate) fn scope(parts: &[&str]) -> String {
    let canonical = serde_json::to_string(parts).expect("strings serialise");
    hex::encode(&Sha256::digest(canonical.as_bytes())[..16])
}

/// The page size a request asks for: default when absent, 1..=100 otherwise.
pub(crate) fn page_size(max_results: Option<u32>) -> Result<usize, SimError> {
    match max_results {
        None => Ok(DEFAULT_PAGE_SIZE as usize),
        Some(n) if (1..=snapwake::agentkit::types::MAX_PAGE_SIZE).contains(&n) => Ok(n as usize),
        Some(n) => Err(SimError::invalid(format!(
            "MaxResults must be between 1 and 100, got {n}"
        ))),
    }
}

/// One page of `items` (already in order, starting after the cursor): at most `size` items,
/// and a token when more remain. `items` is consumed lazily, so a page costs O(size) beyond
/// the filter.
pub(crate) fn paginate<T>(
    tokens: &Tokens,
    scope: &str,
    size: usize,
    items: impl Iterator<Item = (Key, T)>,
) -> (Vec<T>, Option<String>) {
    let mut page = Vec::with_capacity(size.min(100));
    let mut last = None;
    for (key, item) in items {
        if page.len() == size {
            // One more exists beyond this page.
            return (page, last.map(|k| tokens.issue(scope, &k)));
        }
        last = Some(key);
        page.push(item);
    }
    (page, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_refuse_forgery_and_foreign_scopes() {
        let t = Tokens::new([7; 32]);
        let s = scope(&["ListSessions", "cn-beijing", "t-1"]);
        let tok = t.issue(&s, &(42, "sess-1".into()));
        assert_eq!(t.open(&s, &tok).unwrap(), (42, "sess-1".to_string()));
        // Another scope.
        let other = scope(&["ListSessions", "cn-beijing", "t-2"]);
        assert!(t.open(&other, &tok).is_err());
        // Another key.
        assert!(Tokens::new([8; 32]).open(&s, &tok).is_err());
        // Altered payload, garbage, empty.
        let mut bytes = BASE64URL_NOPAD.decode(tok.as_bytes()).unwrap();
        bytes[2] ^= 1;
        assert!(t.open(&s, &BASE64URL_NOPAD.encode(&bytes)).is_err());
        assert!(t.open(&s, "not a token!").is_err());
        assert!(t.open(&s, "").is_err());
    }

    #[test]
    fn pages_end_with_a_token_only_when_more_remain() {
        let t = Tokens::new([1; 32]);
        let items = |n: i128| (0..n).map(|i| ((i, format!("x{i}")), i));
        let (p, tok) = paginate(&t, "s", 3, items(3));
        assert_eq!(p, vec![0, 1, 2]);
        assert!(tok.is_none());
        let (p, tok) = paginate(&t, "s", 3, items(4));
        assert_eq!(p, vec![0, 1, 2]);
        assert_eq!(t.open("s", &tok.unwrap()).unwrap(), (2, "x2".to_string()));
        assert!(page_size(Some(101)).is_err() && page_size(Some(0)).is_err());
        assert_eq!(page_size(None).unwrap(), 10);
    }
}
