//! The UserSessionId codec against the reference Studio's vectors (kept here, in
//! `SPEC_VECTORS`; docs/identity.md explains the rules) and our own.
//!
//! Our vectors were computed independently of this code, with Python's standard library:
//!
//! ```python
//! def safe(o):
//!     s = o if re.fullmatch(r'[A-Za-z0-9_]+', o) and not o.startswith('u_') \
//!         else 'u_' + base64.b32encode(o.encode()).decode().rstrip('=')
//!     return s if len(s) <= 160 else s[:127] + '_' + hashlib.sha256(o.encode()).hexdigest()[:32]
//! fp = lambda o: hashlib.sha256(o.encode()).hexdigest()[:16]
//! name = lambda n: base64.urlsafe_b64encode(n.encode()).decode().rstrip('=')
//! ```

use std::collections::HashMap;

use proptest::prelude::*;
use snapwake::identity::caller::{self, UserSessionId};
use snapwake::identity::{belongs_to, display_name, mint, owner_keys, prefix, safe_owner};

/// The reference Studio's vectors.
const SPEC_VECTORS: [(&str, &str); 8] = [
    ("alice", "alice"),
    ("user_name", "user_name"),
    ("alice@example.com", "u_MFWGSY3FIBSXQYLNOBWGKLTDN5WQ"),
    ("张三", "u_4W6KBZFYRE"),
    ("alice-bob", "u_MFWGSY3FFVRG6YQ"),
    ("/", "u_F4"),
    ("_2F", "_2F"),
    ("u_x", "u_OVPXQ"),
];

/// Non-ASCII and other owners that take rule 2 (computed with the Python above).
const OUR_VECTORS: [(&str, &str); 7] = [
    ("José", "u_JJXXHQ5J"),
    ("Владимир", "u_2CJNBO6QWDILJUFY2C6NBOGRQA"),
    ("🦀", "u_6CP2NAA"),
    ("😀 ok", "u_6CPZRABAN5VQ"),
    ("-alice", "u_FVQWY2LDMU"),
    ("deadbeef", "deadbeef"),
    ("", "u_"),
];

#[test]
fn spec_and_our_safe_owner_vectors() {
    for (owner, safe) in SPEC_VECTORS.iter().chain(&OUR_VECTORS) {
        assert_eq!(safe_owner(owner), *safe, "owner {owner:?}");
        assert_eq!(prefix(owner), format!("studio-{safe}-"));
        assert!(belongs_to(&mint(owner), owner));
    }
}

/// Long owners: the boundary of rule 3 and its truncation hash.
#[test]
fn long_owner_vectors() {
    let a160 = "a".repeat(160);
    // Exactly 160 characters by rule 1: kept whole.
    assert_eq!(safe_owner(&a160), a160);
    // 161 characters by rule 1: first 127, `_`, 32 hex of SHA-256.
    assert_eq!(
        safe_owner(&"a".repeat(161)),
        format!("{}_1668eb4fad53ba7b37b233bcb819f4a0", "a".repeat(127))
    );
    assert_eq!(
        safe_owner(&"b".repeat(200)),
        format!("{}_aaebc35c4c4e2cc7ac7c65812a7fa476", "b".repeat(127))
    );
    // Rule 2 at its boundary: 98 bytes encode to 159 characters (kept), 99 bytes to 161.
    let o98 = format!("@{}", "a".repeat(97));
    let s98 = safe_owner(&o98);
    assert_eq!(s98.len(), 159);
    assert_eq!(
        s98,
        "u_IBQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWC"
    );
    assert_eq!(
        safe_owner(&format!("@{}", "a".repeat(98))),
        "u_IBQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWCYLBMFQWC_0a20280525b884ecda556997c13f44f3"
    );
    assert_eq!(
        safe_owner(&format!("x@{}", "y".repeat(200))),
        "u_PBAHS6LZPF4XS6LZPF4XS6LZPF4XS6LZPF4XS6LZPF4XS6LZPF4XS6LZPF4XS6LZPF4XS6LZPF4XS6LZPF4XS6LZPF4XS6LZPF4XS6LZPF4XS6LZPF4XS6LZPF4XS_ac5d0c715cc6ad905a062b3a38f87a06"
    );
    // Accented Latin long enough to truncate.
    assert_eq!(
        safe_owner(&"é".repeat(50)),
        "u_YOU4HKODVHB2TQ5JYOU4HKODVHB2TQ5JYOU4HKODVHB2TQ5JYOU4HKODVHB2TQ5JYOU4HKODVHB2TQ5JYOU4HKODVHB2TQ5JYOU4HKODVHB2TQ5JYOU4HKODVHB2T_2d18fe4b61f0113952aaa8999ee5cfed"
    );
    for owner in [
        "a".repeat(161),
        "é".repeat(50),
        "🦀".repeat(1000),
        format!("x@{}", "y".repeat(200)),
    ] {
        let id = mint(&owner);
        assert_eq!(id.len(), 200, "a truncated owner fills the id exactly");
        assert!(belongs_to(&id, &owner));
    }
}

#[test]
fn the_spec_legacy_vector() {
    let id = "studio2-2bd806c97f0e00af-random-QWxpY2UgT2xk";
    assert!(belongs_to(id, "alice"));
    for other in ["bob", "Alice", "alice ", "", "2bd806c97f0e00af"] {
        assert!(!belongs_to(id, other), "{other:?}");
    }
    let parsed = UserSessionId::parse(id);
    assert_eq!(
        parsed,
        UserSessionId::Legacy {
            fingerprint: "2bd806c97f0e00af".into(),
            random: "random".into(),
            name: Some("Alice Old".into()),
        }
    );
    assert_eq!(parsed.owner_key(), Some("studio2-2bd806c97f0e00af".into()));
    assert_eq!(display_name(None, None, Some(id), None), "Alice Old");
}

/// base64url uses `-` and `_`: a name whose encoding has dashes must survive the split.
#[test]
fn legacy_names_with_dashes_and_unicode() {
    // fp("bob") = 81b637d8fcd2c6da; name("~~~ data>?") = fn5-IGRhdGE-Pw
    let id = "studio2-81b637d8fcd2c6da-0123456789abcdef-fn5-IGRhdGE-Pw";
    assert!(belongs_to(id, "bob"));
    assert!(!belongs_to(id, "alice"));
    assert_eq!(UserSessionId::parse(id).legacy_name(), Some("~~~ data>?"));
    // fp("🦀") = 7224c588fa988754; name("助手-1") = 5Yqp5omLLTE
    let id = "studio2-7224c588fa988754-r-5Yqp5omLLTE";
    assert!(belongs_to(id, "🦀"));
    assert_eq!(UserSessionId::parse(id).legacy_name(), Some("助手-1"));
    // name("Ünïcødé ✓") = w5xuw69jw7hkw6kg4pyT
    let id = "studio2-81b637d8fcd2c6da-r-w5xuw69jw7hkw6kg4pyT";
    assert_eq!(UserSessionId::parse(id).legacy_name(), Some("Ünïcødé ✓"));
}

#[test]
fn owner_keys_match_parsed_keys() {
    // fp("alice@example.com") = ff8d9819fc0e12bf
    let owner = "alice@example.com";
    let keys = owner_keys(owner);
    assert_eq!(
        keys,
        [
            "studio-u_MFWGSY3FIBSXQYLNOBWGKLTDN5WQ".to_string(),
            "studio2-ff8d9819fc0e12bf".into()
        ]
    );
    assert_eq!(caller::fingerprint(owner), "ff8d9819fc0e12bf");
    let minted = UserSessionId::parse(&mint(owner));
    assert_eq!(minted.format_name(), "current");
    assert_eq!(minted.owner_key().as_ref(), Some(&keys[0]));
    let legacy = UserSessionId::parse("studio2-ff8d9819fc0e12bf-r-QQ");
    assert_eq!(legacy.owner_key().as_ref(), Some(&keys[1]));
    assert!(belongs_to("studio2-ff8d9819fc0e12bf-r-QQ", owner));
}

#[test]
fn older_and_foreign_ids_are_ownerless() {
    let older = "studio-1b4e28ba-2fa1-11d2-883f-0016d3cca427";
    assert_eq!(UserSessionId::parse(older).format_name(), "older");
    assert_eq!(UserSessionId::parse(older).owner_key(), None);
    assert!(!belongs_to(older, "alice"));
    // The documented ambiguity: an 8-hex owner matches older ids by prefix, as in the Studio.
    assert!(belongs_to(older, "1b4e28ba"));
    for id in ["snapshot-abc", "studio-alice", "studio-alice-", "x"] {
        assert!(!belongs_to(id, "alice"), "{id:?}");
        assert_eq!(UserSessionId::parse(id).owner_key(), None, "{id:?}");
    }
}

fn owner_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9_]{0,200}",
        "[A-Za-z0-9_@.+:/ -]{0,120}",
        "u_[A-Za-z0-9_]{0,40}",
        any::<String>(),
        "\\PC{0,250}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn codec_invariants(owner in owner_strategy(), other in owner_strategy()) {
        let safe = safe_owner(&owner);
        prop_assert!(!safe.contains('-'));
        prop_assert!(safe.len() <= caller::MAX_SAFE_OWNER_LEN);
        prop_assert!(safe.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
        let id = mint(&owner);
        prop_assert!(id.len() <= caller::MAX_LEN);
        prop_assert!(belongs_to(&id, &owner));
        prop_assert!(snapwake::identity::is_valid_agent_id(&id));
        let parsed = UserSessionId::parse(&id);
        prop_assert_eq!(parsed.owner_key(), Some(owner_keys(&owner)[0].clone()));
        if other != owner {
            prop_assert!(!belongs_to(&id, &other));
            prop_assert_ne!(prefix(&owner), prefix(&other));
        }
    }
}

/// No two owners in a large sample share a prefix, including adversarial long owners that
/// differ only at the end (so only the truncation hash tells them apart).
#[test]
fn no_prefix_collisions_in_a_large_sample() {
    let mut owners: Vec<String> = Vec::new();
    let mut rng_state: u64 = 0x5eed_cafe_f00d_beef;
    let mut next = move || {
        // xorshift64: deterministic, so a failure reproduces.
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        rng_state
    };
    const ALPHABET: &[char] = &[
        'a', 'b', 'Z', '0', '9', '_', '-', '@', '.', ' ', '/', 'é', 'ß', '张', 'Я', '🦀', 'u',
    ];
    for _ in 0..20_000 {
        let len = (next() % 48) as usize;
        let s: String = (0..len)
            .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
            .collect();
        owners.push(s);
    }
    for base in [
        "a".repeat(300),
        "é".repeat(150),
        format!("u_{}", "x".repeat(200)),
    ] {
        for tail in 0..500 {
            owners.push(format!("{base}{tail}"));
        }
    }
    // Long owners around the rule 3 boundary, differing only in their last character.
    for len in 155..=165 {
        for last in ['a', 'b', '_', '-'] {
            owners.push(format!("{}{last}", "q".repeat(len)));
        }
    }
    owners.sort();
    owners.dedup();
    let mut seen: HashMap<String, &str> = HashMap::new();
    for owner in &owners {
        if let Some(previous) = seen.insert(prefix(owner), owner) {
            panic!("{previous:?} and {owner:?} share a prefix");
        }
        assert!(belongs_to(&mint(owner), owner));
    }
    assert!(seen.len() > 20_000);
}
