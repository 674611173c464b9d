//! What the local stack is started with: the binary, the person, the regions, how long a step
//! may take; and what every part of the test uses.

pub use std::collections::BTreeMap;
pub use std::io::{Read, Write};
pub use std::net::TcpStream;
pub use std::process::{Child, Command, ExitStatus, Stdio};
pub use std::sync::{Arc, Mutex};
pub use std::thread::JoinHandle;
pub use std::time::{Duration, Instant};

pub use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_snapwake");
pub const USER: &str = "alice";
pub const REGIONS: &str = "cn-beijing,cn-shanghai";
/// The longest one foreground command may run.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest a background process may take to say where it listens and answer.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);
