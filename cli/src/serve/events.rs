//! `GET /v1/events` (admins): the last state-change events this server published, oldest
//! first, so they can be seen locally (docs/events.md). Deployed, they go to EventBridge and
//! this route does not exist; here a non-admin is answered as for any unknown route.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, Uri};
use snapwake::events::recorded::Recorded;
use snapwake::identity::{Caller, IdentityConfig};

use super::adapter;

pub async fn last(
    events: Arc<Recorded>,
    identity: IdentityConfig,
    uri: Uri,
    headers: HeaderMap,
) -> axum::response::Response {
    let request_id = uuid::Uuid::new_v4().simple().to_string();
    let event = adapter::event(&Method::GET, &uri, &headers, &Bytes::new(), &request_id);
    let answer = match adapter::lambda_request(&event)
        .map_err(|e| snapwake::Error::bad_request(format!("unreadable request: {e}")))
        .and_then(|request| Caller::from_request(&request, &identity))
    {
        Ok(caller) if caller.is_admin => {
            snapwake::http::edge::json(200, &serde_json::json!({ "events": events.events() }))
        }
        Ok(_) => snapwake::Error::RouteNotFound.into_response(Some(&request_id)),
        Err(e) => e.into_response(Some(&request_id)),
    };
    adapter::axum_response(answer)
}
