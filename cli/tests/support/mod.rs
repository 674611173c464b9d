//! `snapwake` child processes for the CLI's tests: started on a free port (`--port 0`), their
//! address read from the first line they print, killed when dropped.

// Each test binary that includes this module uses a part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A `snapwake` command serving on loopback.
pub struct Serving {
    child: Child,
    pub endpoint: String,
    /// The first line it printed (the banner).
    pub banner: String,
}

/// A `snapwake sim`.
pub type Sim = Serving;

impl Serving {
    /// The embedded simulator's address, as `serve`'s banner names it.
    pub fn simulator(&self) -> String {
        self.banner
            .split("simulator at ")
            .nth(1)
            .and_then(|rest| rest.split([';', ',', ')']).next())
            .expect("the banner names the simulator")
            .trim()
            .to_string()
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// Start `snapwake <args>` without the variables in `cleared`, and wait for the first line it
/// prints: the one that names its `http://127.0.0.1:<port>` address.
pub fn serving(args: &[&str], cleared: &[&str]) -> Serving {
    serving_with(args, cleared, &[])
}

/// `snapwake serve --demo` on a port it picks itself and with no sweep, then `extra`.
pub fn demo<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["serve", "--demo", "--port", "0", "--sweep-every", "0s"];
    args.extend_from_slice(extra);
    args
}

/// [`serving`], with the variables in `set` set for it.
pub fn serving_with(args: &[&str], cleared: &[&str], set: &[(&str, &str)]) -> Serving {
    let mut command = Command::new(env!("CARGO_BIN_EXE_snapwake"));
    command.args(args);
    for var in cleared {
        command.env_remove(var);
    }
    command.envs(set.iter().copied());
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(match std::env::var_os("SNAPWAKE_TEST_SERVE_LOG") {
            // What the server logs, to a file, when a test needs looking into.
            Some(path) => std::fs::File::create(path)
                .map(Stdio::from)
                .unwrap_or_else(|_| Stdio::null()),
            None => Stdio::null(),
        })
        .spawn()
        .unwrap_or_else(|e| panic!("start snapwake {args:?}: {e}"));
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read the first line");
    let endpoint = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    Serving {
        child,
        endpoint,
        banner: line,
    }
}

/// Start `snapwake sim`, without the caller's Volcengine keys (it verifies its own).
pub fn sim() -> Sim {
    serving(
        &["sim", "--port", "0"],
        &["VOLCENGINE_ACCESS_KEY", "VOLCENGINE_SECRET_KEY"],
    )
}
