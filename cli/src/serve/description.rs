//! The API description, `infra/openapi.yaml`, served as JSON at `/v1/openapi.json`: clients
//! and the conformance run (scripts/conformance.sh) read it from the server they talk to.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// The description, compiled in: the server always serves the one it was built with.
const OPENAPI_YAML: &str = include_str!("../../../infra/openapi.yaml");

/// The description as JSON.
pub fn openapi() -> Result<serde_json::Value, serde_yaml::Error> {
    serde_yaml::from_str(OPENAPI_YAML)
}

/// `GET /v1/openapi.json`.
pub async fn serve() -> Response {
    match openapi() {
        Ok(json) => (
            [(header::CONTENT_TYPE, "application/json")],
            json.to_string(),
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "the compiled-in API description does not parse");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_description_is_openapi_3_1_with_every_path() {
        let json = super::openapi().expect("infra/openapi.yaml parses");
        assert_eq!(json["openapi"], "3.1.0");
        let paths = json["paths"].as_object().expect("paths");
        assert!(paths.contains_key("/v1/agents/{kind}/{agent_id}/keepalive"));
        assert_eq!(paths.len(), 7);
    }
}
