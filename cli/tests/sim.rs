//! `snapwake sim` starts the simulator, says where it listens, and serves its control surface.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;

use support::sim;

#[test]
fn sim_prints_its_address_and_serves() {
    let sim = sim();
    let endpoint = sim.endpoint.clone();
    let addr = endpoint.trim_start_matches("http://");

    let mut stream = TcpStream::connect(addr).expect("connect");
    write!(
        stream,
        "GET /_sim/clock HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    drop(sim);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"now\""), "{answer}");
}
