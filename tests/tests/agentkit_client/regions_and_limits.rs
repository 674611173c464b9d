//! Region fallback (only on NotFound), the page cap on a long listing, and answers over the
//! size cap refused, declared or chunked.

use super::*;

#[tokio::test]
async fn region_fallback_moves_on_only_when_not_found() {
    let (sim, c) = start().await;
    let ctl = sim.control();
    let tool = seed_tool(&ctl, SHANGHAI, "far", false);
    let found = c
        .call_any_region(
            &GetTool {
                tool_id: tool.clone(),
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(found.region, SHANGHAI);
    assert_eq!(found.value.tool_id.as_deref(), Some(tool.as_str()));
    assert_eq!(ctl.counters().received("GetTool"), 2);

    // A server error in the first region is not "elsewhere": no fallback.
    ctl.inject(Fault::error(Some("GetTool"), "InternalError", 500).next(1))
        .unwrap();
    let err = c
        .call_any_region(
            &GetTool {
                tool_id: tool.clone(),
            },
            soon(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, AgentKitError::Provider { status: 500, .. }),
        "{err:?}"
    );
    assert_eq!(ctl.counters().received("GetTool"), 3);

    // Not found anywhere: NotFound.
    let err = c
        .call_any_region(
            &GetTool {
                tool_id: "t-missing".into(),
            },
            soon(),
        )
        .await
        .unwrap_err();
    assert!(err.is_not_found());
}

#[tokio::test]
async fn the_page_cap_stops_a_long_listing() {
    let (sim, c) = start().await;
    let ctl = sim.control();
    for i in 0..5 {
        seed_tool(&ctl, BEIJING, &format!("t{i}"), false);
    }
    let mut pager = Pager::new(
        &c,
        BEIJING,
        ListTools {
            project_name: "default".into(),
            max_results: Some(1),
            ..ListTools::default()
        },
        2,
    );
    assert!(pager.next_page(soon()).await.unwrap().is_some());
    assert!(pager.next_page(soon()).await.unwrap().is_some());
    let err = pager.next_page(soon()).await.unwrap_err();
    assert!(err.to_string().contains("more than 2 pages"), "{err}");
}

/// A server that answers every request with `size` bytes of a JSON-looking body, declared in
/// `Content-Length` or sent chunked.
async fn oversized_answers(size: usize, chunked: bool) -> String {
    use axum::body::Body;
    let app = axum::Router::new().fallback(move || async move {
        let body = if chunked {
            let chunk = vec![b' '; 64 * 1024];
            let chunks = size.div_ceil(chunk.len());
            Body::from_stream(futures::stream::iter(
                (0..chunks).map(move |_| Ok::<_, std::io::Error>(chunk.clone())),
            ))
        } else {
            Body::from(vec![b' '; size])
        };
        axum::response::Response::builder()
            .header("content-type", "application/json")
            .body(body)
            .expect("a response")
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// ListTools against a server answering `size` bytes (see [`oversized_answers`]).
async fn list_tools_answered_with(
    size: usize,
    chunked: bool,
) -> Result<ListToolsResult, AgentKitError> {
    let endpoint = oversized_answers(size, chunked).await;
    AgentKitClient::new(
        &config(&endpoint, &[BEIJING]),
        SimConfig::default().credentials,
    )
    .unwrap()
    .with_retry_policy(fast_retries())
    .call(BEIJING, &ListTools::default(), soon())
    .await
}

/// An answer over 4 MiB is refused, declared or chunked, with a clear error and without
/// reading it whole; one under the cap is read (and here is not an envelope).
#[tokio::test]
async fn answers_over_the_cap_are_refused_with_a_clear_error() {
    use snapwake::agentkit::MAX_ANSWER_BYTES;
    for chunked in [false, true] {
        let err = list_tools_answered_with(MAX_ANSWER_BYTES + 1, chunked)
            .await
            .expect_err("an oversized answer");
        assert!(
            matches!(&err, AgentKitError::InvalidResponse { detail, .. } if detail.contains("larger than 4 MiB")),
            "chunked: {chunked}: {err:?}"
        );

        let err = list_tools_answered_with(MAX_ANSWER_BYTES - 1, chunked)
            .await
            .expect_err("blank is no envelope");
        assert!(
            matches!(&err, AgentKitError::InvalidResponse { detail, .. } if !detail.contains("larger than")),
            "chunked: {chunked}: read under the cap: {err:?}"
        );
    }
}
