//! Every action: the tool actions with the name filter and pages, the session and snapshot
//! actions with every filter across pages, and the session → snapshot → resumed session
//! lifecycle of an expiry on a recoverable tool.

use super::*;

#[tokio::test]
async fn tool_actions_round_trip_with_name_filter_and_pages() {
    let (sim, c) = start().await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let created = c
            .call(
                BEIJING,
                &CreateTool {
                    name: format!("veadk-studio-app-chat-{i}"),
                    tool_type: "CodeEnv".into(),
                    project_name: "default".into(),
                    cpu_milli: 4000,
                    memory_mb: 8192,
                    enable_snapshot: false,
                    authorizer_configuration: Some(AuthorizerConfiguration {
                        key_auth: KeyAuth {
                            api_key_name: "studio-0123456789abcdef".into(),
                            api_key_location: "Header".into(),
                        },
                    }),
                    network_configuration: Some(NetworkConfiguration {
                        enable_public_network: true,
                        enable_private_network: false,
                    }),
                    ..CreateTool::default()
                },
                soon(),
            )
            .await
            .unwrap();
        assert!(!created.tool_id.is_empty());
        ids.push(created.tool_id);
        // Stay under the simulator's 3 writes per second.
        tokio::time::sleep(Duration::from_millis(340)).await;
    }
    let tool = c
        .call(
            BEIJING,
            &GetTool {
                tool_id: ids[1].clone(),
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(tool.name.as_deref(), Some("veadk-studio-app-chat-1"));
    assert_eq!(tool.enable_snapshot, Some(false));

    c.call(
        BEIJING,
        &UpdateTool {
            tool_id: ids[1].clone(),
            enable_snapshot: Some(true),
            envs: Some(vec![EnvVar {
                key: "MODE".into(),
                value: "x".into(),
            }]),
        },
        soon(),
    )
    .await
    .unwrap();
    let tool = c
        .call(
            BEIJING,
            &GetTool {
                tool_id: ids[1].clone(),
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(tool.enable_snapshot, Some(true));
    assert_eq!(tool.envs.len(), 1);

    // Exact name filter.
    let found = c
        .call(
            BEIJING,
            &ListTools {
                project_name: "default".into(),
                filters: Some(vec![Filter::one("Name", "veadk-studio-app-chat-2")]),
                ..ListTools::default()
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(found.tools.len(), 1);
    assert_eq!(found.tools[0].tool_id.as_deref(), Some(ids[2].as_str()));

    // Three pages of one, then the end.
    let mut pager = Pager::new(
        &c,
        BEIJING,
        ListTools {
            project_name: "default".into(),
            max_results: Some(1),
            ..ListTools::default()
        },
        10,
    );
    let mut seen = Vec::new();
    while let Some(page) = pager.next_page(soon()).await.unwrap() {
        assert!(page.len() <= 1);
        seen.extend(page.into_iter().filter_map(|t| t.tool_id));
    }
    seen.sort();
    ids.sort();
    assert_eq!(seen, ids);
    assert!(pager.is_done() && pager.next_token().is_none());
    assert_eq!(sim.control().counters().succeeded("CreateTool"), 3);
}

#[tokio::test]
async fn session_and_snapshot_actions_with_every_filter_across_pages() {
    let (sim, c) = start().await;
    let ctl = sim.control();
    let tool = seed_tool(&ctl, BEIJING, "rec", true);
    // 12 sessions for alice (more than one page of 10), 3 for bob.
    let mut alice = Vec::new();
    for i in 0..15 {
        let owner = if i < 12 { "alice" } else { "bob" };
        let usid = format!("studio-{owner}-{i:032x}");
        let s = c
            .call(
                BEIJING,
                &CreateSession::new(&tool, &usid, metadata(owner, &format!("agent {i}"))),
                soon(),
            )
            .await
            .unwrap();
        assert_eq!(s.user_session_id.as_deref(), Some(usid.as_str()));
        if owner == "alice" {
            alice.push(s.session_id);
        }
    }
    let by_owner = ListSessions {
        tool_id: tool.clone(),
        metadata: Some(vec![MetadataFilter {
            key: "Username".into(),
            value: "alice".into(),
        }]),
        max_results: Some(5),
        ..ListSessions::default()
    };
    // list_all asks for the largest pages; walk small pages by hand too.
    let all = list_all(&c, BEIJING, by_owner.clone(), 10, soon())
        .await
        .unwrap();
    assert_eq!(all.len(), 12);
    let mut pager = Pager::new(&c, BEIJING, by_owner, 10);
    let mut pages = 0;
    let mut got = Vec::new();
    while let Some(page) = pager.next_page(soon()).await.unwrap() {
        pages += 1;
        got.extend(page.into_iter().filter_map(|s| s.session_id));
    }
    assert_eq!(pages, 3);
    got.sort();
    alice.sort();
    assert_eq!(got, alice);

    let one = c
        .call(
            BEIJING,
            &ListSessions {
                tool_id: tool.clone(),
                filters: Some(vec![Filter::one(
                    "UserSessionId",
                    format!("studio-bob-{:032x}", 13),
                )]),
                ..ListSessions::default()
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(one.session_infos.len(), 1);
    let bob13 = one.session_infos[0].session_id.clone().unwrap();

    let got = c
        .call(
            BEIJING,
            &GetSession {
                tool_id: tool.clone(),
                session_id: bob13.clone(),
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(metadata_value(&got.metadata, "Username"), Some("bob"));

    // Expire everything: 15 snapshots appear, filterable by UserSessionId and by SessionId.
    ctl.advance(Duration::from_secs(28_801));
    let snaps = list_all(
        &c,
        BEIJING,
        ListSessionSnapshots {
            tool_id: tool.clone(),
            ..ListSessionSnapshots::default()
        },
        10,
        soon(),
    )
    .await
    .unwrap();
    assert_eq!(snaps.len(), 15);
    let by_usid = c
        .call(
            BEIJING,
            &ListSessionSnapshots {
                tool_id: tool.clone(),
                user_session_id: Some(format!("studio-bob-{:032x}", 13)),
                ..ListSessionSnapshots::default()
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(by_usid.snapshots.len(), 1);
    let by_session = c
        .call(
            BEIJING,
            &ListSessionSnapshots {
                tool_id: tool.clone(),
                session_id: Some(bob13.clone()),
                ..ListSessionSnapshots::default()
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(by_session.snapshots, by_usid.snapshots);

    // Delete a snapshot; deleting again is NotFound.
    let snap_id = by_usid.snapshots[0].snapshot_id.clone().unwrap();
    let del = DeleteSessionSnapshot {
        tool_id: tool.clone(),
        snapshot_id: snap_id.clone(),
    };
    assert_eq!(
        c.call(BEIJING, &del, soon()).await.unwrap().snapshot_id,
        snap_id
    );
    assert!(c
        .call(BEIJING, &del, soon())
        .await
        .unwrap_err()
        .is_not_found());
}

#[tokio::test]
async fn expiry_on_a_recoverable_tool_leaves_a_snapshot_that_resumes_with_the_same_identity() {
    let (sim, c) = start().await;
    let ctl = sim.control();
    let rec = seed_tool(&ctl, BEIJING, "rec", true);
    let tmp = seed_tool(&ctl, BEIJING, "tmp", false);
    let usid = "studio-alice-0123456789abcdef0123456789abcdef";
    let md = metadata("alice", "Data helper");
    let first = c
        .call(BEIJING, &CreateSession::new(&rec, usid, md.clone()), soon())
        .await
        .unwrap();
    c.call(
        BEIJING,
        &CreateSession::new(&tmp, "studio-alice-temp", md.clone()),
        soon(),
    )
    .await
    .unwrap();

    // Past the expiry and the seconds AgentKit takes to finish the expiry snapshot.
    ctl.advance(Duration::from_secs(8 * 3600 + 10));

    // The session is gone on both Tools...
    for tool in [&rec, &tmp] {
        let live = c
            .call(
                BEIJING,
                &ListSessions {
                    tool_id: tool.to_string(),
                    ..ListSessions::default()
                },
                soon(),
            )
            .await
            .unwrap();
        assert!(live.session_infos.is_empty());
    }
    // ...only the recoverable one kept a snapshot.
    let none = c
        .call(
            BEIJING,
            &ListSessionSnapshots {
                tool_id: tmp.clone(),
                ..Default::default()
            },
            soon(),
        )
        .await
        .unwrap();
    assert!(none.snapshots.is_empty());
    let snaps = c
        .call(
            BEIJING,
            &ListSessionSnapshots {
                tool_id: rec.clone(),
                user_session_id: Some(usid.into()),
                ..Default::default()
            },
            soon(),
        )
        .await
        .unwrap()
        .snapshots;
    assert_eq!(snaps.len(), 1);
    let snap = &snaps[0];
    assert!(snap.is_wakeable());
    assert_eq!(snap.reason.as_deref(), Some("Expired"));
    assert_eq!(snap.session_id.as_deref(), Some(first.session_id.as_str()));
    assert_eq!(snap.user_session_id.as_deref(), Some(usid));
    assert_eq!(
        metadata_value(&snap.session_metadata, "veadk_display_name"),
        Some("Data helper")
    );

    let snap_id = snap.snapshot_id.clone().unwrap();
    let resumed = c
        .call(
            BEIJING,
            &ResumeSessionFromSnapshot::new(&rec, &snap_id),
            soon(),
        )
        .await
        .unwrap();
    assert_ne!(resumed.session_id, first.session_id);
    let s = c
        .call(
            BEIJING,
            &GetSession {
                tool_id: rec.clone(),
                session_id: resumed.session_id.clone(),
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(s.user_session_id.as_deref(), Some(usid));
    assert_eq!(metadata_value(&s.metadata, "Username"), Some("alice"));
    assert_eq!(
        metadata_value(&s.metadata, "veadk_display_name"),
        Some("Data helper")
    );

    // No de-duplication: a second resume is a second live session.
    c.call(
        BEIJING,
        &ResumeSessionFromSnapshot::new(&rec, &snap_id),
        soon(),
    )
    .await
    .unwrap();
    let counters = ctl.counters();
    assert_eq!(counters.resumes_of(&snap_id), 2);
    assert_eq!(counters.live_sessions_of(usid), 2);

    c.call(
        BEIJING,
        &DeleteSession {
            tool_id: rec.clone(),
            session_id: resumed.session_id.clone(),
        },
        soon(),
    )
    .await
    .unwrap();
    assert_eq!(ctl.counters().live_sessions_of(usid), 1);
    let gone = c
        .call(
            BEIJING,
            &GetSession {
                tool_id: rec,
                session_id: resumed.session_id,
            },
            soon(),
        )
        .await
        .unwrap_err();
    assert!(gone.is_not_found(), "{gone:?}");
}
