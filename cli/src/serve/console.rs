//! The My Agents page (`console/`, docs/console.md): its static files, compiled into the binary
//! so `snapwake serve` needs nothing beside it, served at `/`; and its `config.json`, which
//! this server writes itself: the API is on the same origin, identity is the local header, and
//! with `--demo` the demo's owners are offered in the page's "signed in as" picker.
//!
//! Every file is answered with its media type, `Cache-Control: no-cache` (a rebuilt binary is
//! seen at once) and a strict Content-Security-Policy: scripts, styles and requests from this
//! origin only, nothing inline, no framing.

use axum::http::header::{self, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use super::demo;

/// One file of `console/`.
struct Asset {
    /// The path under `console/`, which is also its path on the server.
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($path:literal, $content_type:expr) => {
        Asset {
            path: $path,
            content_type: $content_type,
            body: include_bytes!(concat!("../../../console/", $path)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file the page loads (the test below checks none is missing).
static ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("icon.svg", "image/svg+xml"),
    asset!("js/main.js", JS),
    asset!("js/api.js", JS),
    asset!("js/auth.js", JS),
    asset!("js/cards.js", JS),
    asset!("js/cron.js", JS),
    asset!("js/dialogs.js", JS),
    asset!("js/format.js", JS),
    asset!("js/identity.js", JS),
    asset!("js/schedule.js", JS),
    asset!("js/schedule-dialog.js", JS),
    asset!("js/tabs.js", JS),
    asset!("js/usage.js", JS),
    asset!("js/usage-chart.js", JS),
    asset!("js/usage-table.js", JS),
    // Chart.js, for the Usage view's chart, and its licence (console/vendor/README.md).
    asset!("vendor/chart.umd.min.js", JS),
    asset!("vendor/chart.js-LICENSE.txt", "text/plain; charset=utf-8"),
];

/// The policy of every page file: nothing but this origin, nothing inline.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; manifest-src 'self'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The local owners the page offers with `--demo`: the demo's owners and its admin.
fn demo_users() -> Value {
    let mut users: Vec<Value> = demo::OWNERS.iter().map(|o| json!({"id": o})).collect();
    users.push(json!({"id": demo::ADMIN, "admin": true}));
    Value::Array(users)
}

/// The page's configuration as this server answers it: same origin, local identity headers;
/// with `--demo` the demo's owners, opening as the first. `max_ttl_s` is the longest keepalive
/// the API accepts (`SNAPWAKE_MAX_TTL_S`), which bounds the page's "keep awake" buttons.
pub fn local_config(demo: bool, max_ttl_s: u64) -> Value {
    let (users, default) = if demo {
        (demo_users(), json!(demo::OWNERS[0]))
    } else {
        (json!([]), Value::Null)
    };
    json!({
        "mode": "local",
        "api_base": "",
        "max_ttl_s": max_ttl_s,
        "local": {"users": users, "default_user": default},
    })
}

fn answer(content_type: &'static str, body: impl Into<axum::body::Body>) -> Response {
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
        (
            HeaderName::from_static("cross-origin-opener-policy"),
            HeaderValue::from_static("same-origin"),
        ),
    ];
    (headers, body.into()).into_response()
}

/// The page's routes: `/` and `/index.html`, every file of [`ASSETS`], and `/config.json`.
pub fn router<S: Clone + Send + Sync + 'static>(config: Value) -> Router<S> {
    let index = &ASSETS[0];
    let mut router = Router::new().route(
        "/",
        get(move || async move { answer(index.content_type, index.body) }),
    );
    for asset in ASSETS {
        router = router.route(
            &format!("/{}", asset.path),
            get(move || async move { answer(asset.content_type, asset.body) }),
        );
    }
    let config = config.to_string();
    router.route(
        "/config.json",
        get(move || async move { answer("application/json", config) }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Every page file under `console/` (not its tests, not the deployment example) is
    /// compiled in: the page's own, and the libraries vendored with their licences.
    #[test]
    fn every_page_file_is_served() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../console");
        let mut files = Vec::new();
        for dir in [root.clone(), root.join("js"), root.join("vendor")] {
            for entry in std::fs::read_dir(&dir).expect("console/") {
                let path = entry.expect("entry").path();
                let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
                if ["html", "css", "js", "svg", "txt"].contains(&ext) {
                    let rel = path.strip_prefix(&root).expect("under console/");
                    files.push(rel.to_string_lossy().replace('\\', "/"));
                }
            }
        }
        files.sort();
        let mut served: Vec<String> = ASSETS.iter().map(|a| a.path.to_string()).collect();
        served.sort();
        assert_eq!(files, served);
        assert_eq!(ASSETS[0].path, "index.html");
    }

    /// Each vendored file is the one its README names by sha256: a library is updated on
    /// purpose, with its README, never by a stray edit.
    #[test]
    fn vendored_files_are_the_ones_their_readme_names() {
        use sha2::{Digest, Sha256};
        // The path from this file, then the one from the repository root (docs cite those).
        let readme = include_str!(concat!("../../../", "console/vendor/README.md"));
        for asset in ASSETS.iter().filter(|a| a.path.starts_with("vendor/")) {
            let name = asset.path.trim_start_matches("vendor/");
            let hex: String = Sha256::digest(asset.body)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            let named = readme
                .split(&format!("sha256 of `{name}`:"))
                .nth(1)
                .and_then(|rest| rest.split('`').nth(1));
            assert_eq!(named, Some(hex.as_str()), "{name}");
        }
    }

    #[test]
    fn the_demo_config_lists_its_owners_and_an_admin() {
        let c = local_config(true, 28800);
        assert_eq!(c["mode"], "local");
        assert_eq!(c["api_base"], "");
        assert_eq!(c["local"]["default_user"], "alice");
        let users = c["local"]["users"].as_array().expect("users");
        assert!(users.iter().any(|u| u["id"] == "bob"));
        assert!(users
            .iter()
            .any(|u| u["id"] == "root" && u["admin"] == true));
        let plain = local_config(false, 60);
        assert_eq!(plain["local"]["users"], json!([]));
        assert!(plain["local"]["default_user"].is_null());
        assert_eq!(plain["max_ttl_s"], 60);
    }

    #[test]
    fn the_policy_allows_nothing_inline() {
        assert!(!CONTENT_SECURITY_POLICY.contains("unsafe"));
        assert!(CONTENT_SECURITY_POLICY.contains("script-src 'self'"));
    }
}
