//! The matrix itself: the callers (the columns), and one [`Row`] per route with the agent it
//! acts on and the status each caller must get.

use snapwake_tests::Who;

/// The callers of every row, in column order.
pub(crate) const CALLERS: [(&str, Who<'static>); 4] = [
    ("owner", Who::User("alice")),
    ("another user", Who::User("bob")),
    ("an admin", Who::Admin("root")),
    ("no identity", Who::Nobody),
];

/// The agent a row acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Subject {
    /// No agent in the path.
    None,
    /// Alice's agent created through `POST /v1/agents` (a record and a live session); shared.
    Created,
    /// Alice's asleep agent known only to AgentKit (no record); shared.
    Asleep,
    /// An ownerless legacy `snapshot-<SnapshotId>` agent; shared.
    Legacy,
    /// A new asleep agent of Alice for every cell.
    FreshAsleep,
    /// A new legacy agent for every cell.
    FreshLegacy,
    /// A new awake agent of Alice for every cell: a live session on the recoverable Tool,
    /// known only to AgentKit (no record).
    FreshAwake,
}

/// One row: a route (the path a template over `{agent}` and `{snapshot}`) and what each caller
/// must get.
pub(crate) struct Row {
    pub(crate) method: &'static str,
    pub(crate) path: &'static str,
    pub(crate) query: &'static str,
    pub(crate) body: Option<&'static str>,
    pub(crate) subject: Subject,
    /// Status per caller, in [`CALLERS`] order.
    pub(crate) want: [u16; 4],
    /// For lists: whether the caller's answer lists the shared created agent.
    pub(crate) lists_created: Option<[bool; 4]>,
}

pub(crate) const CREATE_BODY: &str = r#"{"kind":"codex","display_name":"Matrix"}"#;
pub(crate) const KEEPALIVE_BODY: &str = r#"{"ttl_s":600}"#;

pub(crate) fn rows() -> Vec<Row> {
    let row = |method, path, subject, want| Row {
        method,
        path,
        query: "",
        body: None,
        subject,
        want,
        lists_created: None,
    };
    vec![
        row(
            "GET",
            "/v1/capabilities",
            Subject::None,
            [200, 200, 200, 401],
        ),
        Row {
            lists_created: Some([true, false, false, false]),
            ..row("GET", "/v1/agents", Subject::Created, [200, 200, 200, 401])
        },
        Row {
            query: "owner=alice",
            lists_created: Some([true, false, true, false]),
            ..row("GET", "/v1/agents", Subject::Created, [200, 404, 200, 401])
        },
        Row {
            query: "owner=*&limit=100",
            ..row("GET", "/v1/agents", Subject::Created, [404, 404, 200, 401])
        },
        Row {
            query: "owner=*&cursor=forged",
            ..row("GET", "/v1/agents", Subject::None, [404, 404, 400, 401])
        },
        row(
            "GET",
            "/v1/agents/codex/{agent}",
            Subject::Created,
            [200, 404, 200, 401],
        ),
        row(
            "GET",
            "/v1/agents/codex/{agent}",
            Subject::Asleep,
            [200, 404, 200, 401],
        ),
        row(
            "GET",
            "/v1/agents/codex/{agent}",
            Subject::Legacy,
            [404, 404, 200, 401],
        ),
        Row {
            body: Some(CREATE_BODY),
            ..row("POST", "/v1/agents", Subject::None, [201, 201, 201, 401])
        },
        row(
            "POST",
            "/v1/agents/codex/{agent}/resume",
            Subject::FreshAsleep,
            [200, 404, 200, 401],
        ),
        Row {
            body: Some(r#"{"snapshot_id":"{snapshot}"}"#),
            ..row(
                "POST",
                "/v1/agents/codex/{agent}/resume",
                Subject::FreshAsleep,
                [200, 404, 200, 401],
            )
        },
        row(
            "POST",
            "/v1/agents/codex/{agent}/resume",
            Subject::FreshLegacy,
            [404, 404, 200, 401],
        ),
        row(
            "POST",
            "/v1/agents/codex/{agent}/sleep",
            Subject::FreshAwake,
            [200, 404, 200, 401],
        ),
        // Asleep already: 200 (nothing to do), for whoever may act on it.
        row(
            "POST",
            "/v1/agents/codex/{agent}/sleep",
            Subject::FreshAsleep,
            [200, 404, 200, 401],
        ),
        row(
            "POST",
            "/v1/agents/codex/{agent}/sleep",
            Subject::FreshLegacy,
            [404, 404, 200, 401],
        ),
        Row {
            body: Some(KEEPALIVE_BODY),
            ..row(
                "POST",
                "/v1/agents/codex/{agent}/keepalive",
                Subject::FreshAwake,
                [200, 404, 200, 401],
            )
        },
        Row {
            body: Some(KEEPALIVE_BODY),
            ..row(
                "POST",
                "/v1/agents/codex/{agent}/keepalive",
                Subject::Created,
                [200, 404, 200, 401],
            )
        },
        // Only an admin gets past authorisation, to learn it has no session to keep alive.
        Row {
            body: Some(KEEPALIVE_BODY),
            ..row(
                "POST",
                "/v1/agents/codex/{agent}/keepalive",
                Subject::FreshLegacy,
                [404, 404, 422, 401],
            )
        },
        row(
            "DELETE",
            "/v1/agents/codex/{agent}/snapshots/{snapshot}",
            Subject::FreshAsleep,
            [204, 404, 204, 401],
        ),
        row(
            "DELETE",
            "/v1/agents/codex/{agent}/snapshots/{snapshot}",
            Subject::FreshLegacy,
            [404, 404, 204, 401],
        ),
        row(
            "DELETE",
            "/v1/agents/codex/{agent}",
            Subject::FreshAsleep,
            [204, 404, 204, 401],
        ),
        row(
            "DELETE",
            "/v1/agents/codex/{agent}",
            Subject::FreshLegacy,
            [404, 404, 204, 401],
        ),
    ]
}
