use super::*;
use crate::agentkit::types::ListToolsResult;
use std::time::Duration;

/// A service that always answers the same NextToken: a listing that would never end.
struct Looping;

impl AgentKit for Looping {
    async fn call<A: Action + 'static>(
        &self,
        _region: &str,
        _request: &A,
        _deadline: Deadline,
    ) -> Result<A::Output, AgentKitError> {
        let page = ListToolsResult {
            tools: vec![Tool::default()],
            next_token: Some("same".into()),
        };
        serde_json::from_value(serde_json::to_value(page).unwrap()).map_err(|e| {
            AgentKitError::InvalidResponse {
                action: A::NAME,
                detail: e.to_string(),
            }
        })
    }

    fn regions(&self) -> &[String] {
        &[]
    }
}

#[tokio::test]
async fn a_repeated_next_token_is_an_error_not_a_loop() {
    let deadline = Deadline::after(Duration::from_secs(5));
    let err = list_all(&Looping, "r", ListTools::default(), 100, deadline)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("NextToken repeated"), "{err}");
}
