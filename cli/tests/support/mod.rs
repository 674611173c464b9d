//! A `snapwake sim` child process for the CLI's tests: started on a free port, its address
//! read from the first line it prints, killed when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

pub struct Sim {
    child: Child,
    pub endpoint: String,
}

impl Drop for Sim {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// Start `snapwake sim`, without the caller's Volcengine keys (it verifies its own).
pub fn sim() -> Sim {
    let mut child = Command::new(env!("CARGO_BIN_EXE_snapwake"))
        .args(["sim", "--port", "0"])
        .env_remove("VOLCENGINE_ACCESS_KEY")
        .env_remove("VOLCENGINE_SECRET_KEY")
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
    Sim { child, endpoint }
}
