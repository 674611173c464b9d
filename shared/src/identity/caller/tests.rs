mod caller {
    use super::super::*;
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

mod claims {
    use super::super::*;
    use crate::identity::claims::parse_group_list;
    use serde_json::json;

    #[test]
    fn group_claims_parse_in_every_form() {
        let both = vec!["admins".to_string(), "devs".to_string()];
        assert_eq!(parse_group_list("[admins devs]"), both);
        assert_eq!(parse_group_list(" [admins  devs] "), both);
        assert_eq!(parse_group_list("[admins,devs]"), both);
        assert_eq!(parse_group_list(r#"["admins", "devs"]"#), both);
        assert_eq!(parse_group_list("admins, devs"), both);
        assert_eq!(parse_group_list("admins"), vec!["admins"]);
        assert_eq!(parse_group_list("[admins]"), vec!["admins"]);
        assert!(parse_group_list("").is_empty());
        assert!(parse_group_list("[]").is_empty());
        assert!(parse_group_list(" , ").is_empty());
    }

    #[test]
    fn lambda_values_are_normalised() {
        let fields = json!({
            "user_id": 42,
            "verified": true,
            "email": "a@example.com",
            "groups": ["admins", 7, null, {"x": 1}],
            "nothing": null,
            "nested": {"a": "b"}
        });
        let map = fields.as_object().unwrap();
        let claims = Claims::from_lambda(map.iter().map(|(k, v)| (k.as_str(), v)));
        assert_eq!(claims.text("user_id"), Some("42"));
        assert_eq!(claims.text("verified"), Some("true"));
        assert_eq!(claims.text("email"), Some("a@example.com"));
        assert_eq!(claims.groups("groups"), vec!["admins", "7"]);
        assert_eq!(claims.get("nothing"), None);
        assert_eq!(claims.get("nested"), None);
        // An array is not a scalar, so it never becomes an owner id.
        assert_eq!(claims.text("groups"), None);
    }

    #[test]
    fn blank_text_counts_as_absent() {
        let claims = Claims::from_jwt([("sub", "  "), ("email", "")]);
        assert_eq!(claims.text("sub"), None);
        assert_eq!(claims.text("email"), None);
        assert!(!claims.is_empty());
    }
}

mod access {
    use super::super::*;
    use crate::domain::Kind;

    fn caller(owner: &str, is_admin: bool) -> Caller {
        Caller::local(owner, is_admin)
    }

    #[test]
    fn owners_and_admins_may_act_others_may_not() {
        let id = mint("alice");
        let key = AgentKey::new(Kind::Codex, &id);
        assert!(may_act(&caller("alice", false), &key, None));
        assert!(!may_act(&caller("mallory", false), &key, None));
        assert!(may_act(&caller("root", true), &key, None));
        let snap = AgentKey::new(Kind::Codex, "snapshot-snap-1");
        assert!(!may_act(&caller("alice", false), &snap, None));
        assert!(may_act(&caller("root", true), &snap, None));
        let mut record = AgentRecord::absent(snap.clone());
        record.description.owner = Some("alice".into());
        assert!(may_act(&caller("alice", false), &snap, Some(&record)));
    }

    #[test]
    fn an_admin_is_never_recorded_as_someone_elses_owner() {
        let id = mint("alice");
        let key = AgentKey::new(Kind::Codex, &id);
        let place = |retention| Place {
            tool_id: "t-1",
            region: "r",
            retention,
        };
        let d = describe(
            &caller("root", true),
            &key,
            None,
            Some(place(Retention::Recoverable)),
            None,
        );
        assert_eq!(d.owner, None);
        assert!(d.owner_key.is_some());
        let d = describe(
            &caller("alice", false),
            &key,
            None,
            Some(place(Retention::Temporary)),
            None,
        );
        assert_eq!(d.tool_id.as_deref(), Some("t-1"));
        let unplaced = describe(&caller("alice", false), &key, None, None, None);
        assert_eq!((unplaced.tool_id, unplaced.retention), (None, None));
        assert_eq!(d.owner.as_deref(), Some("alice"));
        assert_eq!(d.retention, Some(Retention::Temporary));
    }
}
