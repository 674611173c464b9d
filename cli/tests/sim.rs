//! `snapwake sim` starts the simulator, says where it listens, and serves its control surface.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

#[test]
fn sim_prints_its_address_and_serves() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_snapwake"))
        .args(["sim", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start snapwake sim");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read the first line");
    let endpoint = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    let addr = endpoint.trim_start_matches("http://");

    let mut stream = TcpStream::connect(addr).expect("connect");
    write!(
        stream,
        "GET /_sim/clock HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    child.kill().ok();
    child.wait().ok();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"now\""), "{answer}");
}
