//! The README's demo flow, exactly as printed: `snapwake serve --demo` started as a process,
//! every `curl` command of the README's demo block run against it over real HTTP, each answer
//! checked. If the README and the server disagree, this fails.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// What each README command must answer: a status and fragments of the output.
const EXPECTED: [(u16, &[&str], &[&str]); 11] = [
    (
        200,
        &["Data helper", "Alice Old", "\"state\":\"awake\""],
        &["Bob's notebook", "auth="],
    ),
    (
        200,
        &["\"state\":\"awake\"", "\"resumed\":true", "Data helper"],
        &["auth="],
    ),
    (
        200,
        &["\"state\":\"awake\"", "\"ttl_s\":3600", "expire_at"],
        &["auth="],
    ),
    (
        200,
        &[
            "\"state\":\"asleep\"",
            "\"slept\":true",
            "\"session\":null",
            "Manual",
        ],
        &["auth="],
    ),
    (
        200,
        &["\"state\":\"awake\"", "\"resumed\":true", "Data helper"],
        &["auth="],
    ),
    (
        404,
        &["AGENT_NOT_FOUND", "urn:snapwake:problem:agent-not-found"],
        &[],
    ),
    (204, &[], &[]),
    (204, &[], &[]),
    (410, &["AGENT_GONE"], &[]),
    (
        201,
        &[
            "Inbox helper",
            "location: /v1/agents/hermes/studio-alice-",
            "\"retention\":\"recoverable\"",
        ],
        &["auth="],
    ),
    (200, &["\"agents\"", "next_cursor", "Bob's notebook"], &[]),
];

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `snapwake serve --demo` on `port` with the embedded defaults, and its first line (the
/// banner), read once it is listening.
fn start_demo_server(port: u16) -> (Server, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_snapwake"))
        .args(["serve", "--demo", "--port", &port.to_string()])
        .env_remove("AGENTKIT_ENDPOINT")
        .env_remove("SNAPWAKE_TABLE")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start snapwake serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the server's first line");
    (Server(child), line)
}

fn readme_commands() -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    let start = readme
        .find("<!-- demo-flow:start -->")
        .expect("demo block start");
    let end = readme
        .find("<!-- demo-flow:end -->")
        .expect("demo block end");
    readme[start..end]
        .lines()
        .filter(|l| l.starts_with("curl "))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_readme_demo_flow_works_as_printed() {
    let commands = readme_commands();
    assert_eq!(
        commands.len(),
        EXPECTED.len(),
        "one expectation per README command"
    );

    let port = free_port();
    let (_server, line) = start_demo_server(port);
    assert!(line.contains(&format!("127.0.0.1:{port}")), "{line}");

    for (command, (status, present, absent)) in commands.iter().zip(EXPECTED) {
        let command = command.replace("127.0.0.1:8080", &format!("127.0.0.1:{port}"));
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("{command} -w '\\n%{{http_code}}'"))
            .output()
            .expect("run curl");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let got: u16 = text
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or(0);
        assert_eq!(got, status, "{command}\n{text}");
        let lower = text.to_lowercase();
        for p in present {
            assert!(
                text.contains(p) || lower.contains(&p.to_lowercase()),
                "{command}: expected {p:?} in\n{text}"
            );
        }
        for a in absent {
            assert!(
                !text.contains(a),
                "{command}: {a:?} must not appear in\n{text}"
            );
        }
    }
}

/// One raw HTTP/1.1 request with exactly this `Host` header: its status code.
fn status_for_host(port: u16, host: &str) -> u16 {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        stream,
        "GET /v1/agents HTTP/1.1\r\nHost: {host}\r\nX-Snapwake-User: alice\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// A web page the developer visits can reach the local server by DNS rebinding; its requests
/// carry its own host name, which the server refuses (docs/security.md).
#[test]
fn requests_for_a_host_that_is_not_loopback_are_refused() {
    let port = free_port();
    let (_server, _) = start_demo_server(port);

    for host in [
        "evil.example",
        &format!("evil.example:{port}"),
        "localhost.evil.example",
    ] {
        assert_eq!(status_for_host(port, host), 400, "Host: {host}");
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "console.localhost".to_string(),
    ] {
        assert_eq!(status_for_host(port, &host), 200, "Host: {host}");
    }
}
