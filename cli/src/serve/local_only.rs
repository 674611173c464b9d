//! What keeps `snapwake serve` a local tool (docs/security.md, "The local server").
//!
//! The server trusts `X-Snapwake-User` and `X-Snapwake-Admin`: whoever can send it a request
//! is whoever they say. It listens on 127.0.0.1 only, but a web page the developer visits can
//! still reach it by DNS rebinding: `evil.example` resolves to the attacker's host, then, once
//! the page is loaded, to 127.0.0.1, and the browser sends the page's requests here with
//! `Host: evil.example`. So a request must name a loopback host; a rebinding page cannot,
//! because its requests carry its own name.
//!
//! And when the header identity is in force against a real AWS table or a real AgentKit, the
//! server says so loudly at start: anyone on this machine can act as anyone there.

use std::net::IpAddr;

use axum::extract::Request;
use axum::http::header::HOST;
use axum::middleware::Next;
use axum::response::Response;

/// Whether `host` (a `Host` header: a name or address, with or without a port) names this
/// machine's loopback: `localhost` or a name under `.localhost` (RFC 6761 reserves them for
/// loopback), an address in 127.0.0.0/8, or `::1`.
pub fn is_loopback_host(host: &str) -> bool {
    let host = host.trim();
    let name = match host.strip_prefix('[') {
        // `[::1]:8080`
        Some(rest) => match rest.split_once(']') {
            Some((addr, port))
                if port.is_empty() || port.strip_prefix(':').is_some_and(is_port) =>
            {
                addr
            }
            _ => return false,
        },
        None => match host.rsplit_once(':') {
            Some((name, port)) if !name.contains(':') => {
                if !is_port(port) {
                    return false;
                }
                name
            }
            // A bare IPv6 address has more than one colon and no brackets.
            _ => host,
        },
    };
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    if let Ok(ip) = name.parse::<IpAddr>() {
        return ip.is_loopback();
    }
    name == "localhost" || name.ends_with(".localhost")
}

fn is_port(text: &str) -> bool {
    text.parse::<u16>().is_ok()
}

/// Refuses a request whose `Host` is not a loopback name, before any handler sees it.
pub async fn loopback_host_only(request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()))
        .unwrap_or("");
    if is_loopback_host(host) {
        return next.run(request).await;
    }
    tracing::warn!(
        host = %host.chars().take(100).collect::<String>(),
        "refused a request for a host that is not loopback (DNS rebinding?)"
    );
    let problem = snapwake::Error::bad_request(
        "snapwake serve answers requests for a loopback host only (localhost, 127.0.0.1, [::1]); \
         this request names another host",
    );
    super::adapter::axum_response(problem.into_response(None))
}

/// What the header identity reaches, when that is something real: the warning to print at
/// start, or `None` for a wholly local server.
pub fn exposure_warning(
    table: Option<&str>,
    aws_endpoint: Option<&str>,
    agentkit_endpoint: Option<&str>,
) -> Option<String> {
    let mut real = Vec::new();
    if let Some(table) = table {
        if !aws_endpoint.is_some_and(is_loopback_url) {
            real.push(format!("the DynamoDB table {table:?} in AWS"));
        }
    }
    if let Some(endpoint) = agentkit_endpoint {
        if !is_loopback_url(endpoint) {
            real.push(format!("AgentKit at {endpoint}"));
        }
    }
    if real.is_empty() {
        return None;
    }
    Some(format!(
        "WARNING: snapwake serve trusts the X-Snapwake-User and X-Snapwake-Admin headers, and it \
         is serving {}. Any program on this machine can act there as any user, admin included. \
         Use it against local engines, or deploy the functions behind API Gateway.",
        real.join(" and ")
    ))
}

/// `http://127.0.0.1:9100`, `http://localhost:8000/`: a loopback URL.
fn is_loopback_url(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    is_loopback_host(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_pass_and_others_do_not() {
        for host in [
            "localhost",
            "localhost:8080",
            "LOCALHOST:8080",
            "localhost.",
            "app.localhost:3000",
            "127.0.0.1",
            "127.0.0.1:8080",
            "127.1.2.3:80",
            "[::1]",
            "[::1]:8080",
            "::1",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "",
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "evillocalhost",
            "127.0.0.1.evil.example",
            "0.0.0.0:8080",
            "10.0.0.1:8080",
            "[::2]:8080",
            "[::1]x",
            "[::1]8080",
            "localhost:http",
            "192.168.1.5",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn the_warning_names_what_is_real() {
        assert_eq!(exposure_warning(None, None, None), None);
        assert_eq!(
            exposure_warning(
                Some("snapwake"),
                Some("http://127.0.0.1:8000"),
                Some("http://127.0.0.1:9100")
            ),
            None
        );
        let w = exposure_warning(Some("snapwake"), None, None).unwrap();
        assert!(
            w.contains("\"snapwake\" in AWS") && w.starts_with("WARNING"),
            "{w}"
        );
        let w = exposure_warning(None, None, Some("https://open.volcengineapi.com")).unwrap();
        assert!(
            w.contains("AgentKit at https://open.volcengineapi.com"),
            "{w}"
        );
        let w = exposure_warning(
            Some("t"),
            Some("https://dynamodb.us-east-1.amazonaws.com"),
            Some("https://open.volcengineapi.com"),
        )
        .unwrap();
        assert!(w.contains(" and "), "{w}");
    }
}
