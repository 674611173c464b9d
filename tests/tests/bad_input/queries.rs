//! Bad query parameters and forged list cursors.

use super::*;

#[tokio::test]
async fn bad_queries_and_forged_cursors_are_refused() {
    let (world, api) = world_and_api("bad-input-queries").await;
    for i in 0..3 {
        world.asleep_agent(&format!("owner{i}"), "Paged");
    }
    // Admin pages come from the index: sync it, as the sweep does.
    let synced = snapwake::index_sync::sync_index(
        &api.list.store,
        &world.client(),
        &world.registry(),
        snapwake::invocation::Deadline::after(std::time::Duration::from_secs(30)),
    )
    .await;
    assert!(synced.completed);
    let list = |query: &str, who: Who<'_>| {
        let mut ev = event("GET", "/v1/agents", who, None);
        ev["rawQueryString"] = query.into();
        ev
    };
    let admin = Who::Admin("root");

    // A real cursor, to tamper with.
    let resp = api
        .handle(from_event(&list("owner=*&limit=1", admin)))
        .await;
    let (status, page) = answer(&resp);
    assert_eq!(status, 200, "{page}");
    let cursor = page["next_cursor"]
        .as_str()
        .unwrap_or_else(|| panic!("three agents in pages of one: {page}"))
        .to_string();
    let (payload, tag) = cursor.split_once('.').expect("payload.tag");
    let mut json = BASE64URL_NOPAD.decode(payload.as_bytes()).unwrap();
    // Change one byte of the payload, keep the tag.
    let at = json.iter().position(u8::is_ascii_digit).unwrap_or(0);
    json[at] = if json[at] == b'9' { b'1' } else { json[at] + 1 };
    let changed = format!("{}.{tag}", BASE64URL_NOPAD.encode(&json));
    let mut flipped_tag = tag.to_string().into_bytes();
    flipped_tag[0] = if flipped_tag[0] == b'A' { b'B' } else { b'A' };
    let flipped = format!("{payload}.{}", String::from_utf8(flipped_tag).unwrap());

    let query_cases: Vec<(String, Who<'_>, u16, &str)> = vec![
        ("kind=gpt".into(), ALICE, 400, "INVALID_REQUEST"),
        ("kind=Codex".into(), ALICE, 400, "INVALID_REQUEST"),
        ("kind=codex%00".into(), ALICE, 400, "INVALID_REQUEST"),
        // `sleeping` is a state now (a sleep in flight); these are not.
        ("state=dozing".into(), ALICE, 400, "INVALID_REQUEST"),
        ("state=Sleeping".into(), ALICE, 400, "INVALID_REQUEST"),
        ("state=gone".into(), ALICE, 400, "INVALID_REQUEST"),
        ("limit=0".into(), admin, 400, "INVALID_REQUEST"),
        ("limit=101".into(), admin, 400, "INVALID_REQUEST"),
        ("limit=-1".into(), admin, 400, "INVALID_REQUEST"),
        ("limit=ten".into(), admin, 400, "INVALID_REQUEST"),
        (
            "limit=99999999999999999999".into(),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        ("owner=*&limit=1.5".into(), admin, 400, "INVALID_REQUEST"),
        ("cursor=abc".into(), ALICE, 400, "INVALID_REQUEST"),
        (
            format!("owner=alice&cursor={cursor}"),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        (
            "owner=*&cursor=forged".into(),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        ("owner=*&cursor=.".into(), admin, 400, "INVALID_REQUEST"),
        (
            "owner=*&cursor=%00%0A".into(),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        (
            format!("owner=*&cursor={changed}"),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        (
            format!("owner=*&cursor={flipped}"),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        (
            format!("owner=*&cursor={payload}"),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        (
            format!("owner=*&cursor={cursor}{cursor}"),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        (
            format!("owner=*&cursor={}", "A".repeat(5000)),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        // A cursor of another listing (the kind filter differs).
        (
            format!("owner=*&kind=codex&limit=1&cursor={cursor}"),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        // owner=* from someone who is not an admin: that listing does not exist for them.
        (
            format!("owner=*&cursor={cursor}"),
            ALICE,
            404,
            "AGENT_NOT_FOUND",
        ),
    ];
    let cases: Vec<Case> = query_cases
        .into_iter()
        .map(|(q, who, want, code)| {
            Case::new(format!("GET /v1/agents?{q:.80}"), list(&q, who), want, code)
        })
        .collect();
    let n = cases.len();
    assert_none_failed(failures(&api, cases).await, n);

    // `sleeping` is a valid filter now.
    let resp = api.handle(from_event(&list("state=sleeping", ALICE))).await;
    assert_eq!(resp.status().as_u16(), 200, "{:?}", answer(&resp).1);

    // The untouched cursor still pages: the refusals above are about the forgery, not the key.
    let resp = api
        .handle(from_event(&list(
            &format!("owner=*&limit=1&cursor={cursor}"),
            admin,
        )))
        .await;
    assert_eq!(resp.status().as_u16(), 200, "{:?}", answer(&resp).1);
}
