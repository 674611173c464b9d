//! The `snapwake` processes of the stack: [`Proc`], whose output is drained as it runs and which
//! is killed when dropped, the [`Stack`] environment every command shares, and a free port.

use crate::setup::*;

/// A `snapwake` process; its stdout and stderr are drained into memory as it runs (so it never
/// blocks on a full pipe). Dropping it kills and reaps the process, whatever happened.
pub(crate) struct Proc {
    pub(crate) name: String,
    pub(crate) child: Child,
    pub(crate) stdout: Arc<Mutex<String>>,
    pub(crate) stderr: Arc<Mutex<String>>,
    pub(crate) drains: Vec<JoinHandle<()>>,
}

/// What a foreground command did.
pub(crate) struct Output {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Output {
    pub(crate) fn code(&self) -> Option<i32> {
        self.status.code()
    }

    pub(crate) fn describe(&self) -> String {
        format!(
            "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code(),
            self.stdout,
            self.stderr
        )
    }
}

pub(crate) fn drain(
    mut from: impl Read + Send + 'static,
    into: Arc<Mutex<String>>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if let Ok(mut text) = into.lock() {
                        text.push_str(&String::from_utf8_lossy(&buf[..n]));
                    }
                }
            }
        }
    })
}

impl Proc {
    pub(crate) fn spawn(name: &str, mut command: Command) -> Proc {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `{name}`: {e}"));
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let drains = vec![
            drain(child.stdout.take().expect("stdout"), stdout.clone()),
            drain(child.stderr.take().expect("stderr"), stderr.clone()),
        ];
        Proc {
            name: name.to_string(),
            child,
            stdout,
            stderr,
            drains,
        }
    }

    pub(crate) fn stdout(&self) -> String {
        self.stdout.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub(crate) fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub(crate) fn describe(&self) -> String {
        format!(
            "`{}`\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.name,
            self.stdout(),
            self.stderr()
        )
    }

    /// Panics (with what the process printed) when it has exited.
    pub(crate) fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            // Let the drains catch the last output.
            std::thread::sleep(Duration::from_millis(100));
            panic!("{status}: {} exited early\n{}", self.name, self.describe());
        }
    }

    /// Wait until the process has printed a whole line on stdout; returns every line so far.
    pub(crate) fn wait_for_first_line(&mut self) -> Vec<String> {
        let started = Instant::now();
        loop {
            let out = self.stdout();
            if out.contains('\n') {
                return out.lines().map(str::to_string).collect();
            }
            self.assert_running();
            assert!(
                started.elapsed() < START_TIMEOUT,
                "{} printed no line within {START_TIMEOUT:?}\n{}",
                self.name,
                self.describe()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Wait for the process to exit (killing it after [`COMMAND_TIMEOUT`]).
    pub(crate) fn finish(mut self) -> Output {
        let started = Instant::now();
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() > COMMAND_TIMEOUT => {
                    self.child.kill().ok();
                    self.child.wait().ok();
                    panic!(
                        "{} did not finish within {COMMAND_TIMEOUT:?}\n{}",
                        self.name,
                        self.describe()
                    );
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => panic!("cannot wait for {}: {e}", self.name),
            }
        };
        for handle in self.drains.drain(..) {
            handle.join().ok();
        }
        Output {
            status,
            stdout: self.stdout(),
            stderr: self.stderr(),
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// The environment every command of the stack shares.
pub(crate) struct Stack {
    pub(crate) table: String,
    pub(crate) agentkit: String,
}

impl Stack {
    /// `snapwake ARGS` with the stack's environment. Whatever snapwake, AgentKit and
    /// Volcengine settings the test runner has are dropped first, and so is `RUST_LOG`: an
    /// operator's defaults. The AWS settings (DynamoDB Local's) are inherited.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command.args(args);
        for (name, _) in std::env::vars_os() {
            let Some(name) = name.to_str() else { continue };
            if ["SNAPWAKE_", "AGENTKIT_", "VOLCENGINE_"]
                .iter()
                .any(|p| name.starts_with(p))
                || name == "RUST_LOG"
                || name == "AWS_LAMBDA_FUNCTION_NAME"
            {
                command.env_remove(name);
            }
        }
        command
            .env("SNAPWAKE_TABLE", &self.table)
            .env("AGENTKIT_ENDPOINT", &self.agentkit)
            .env("AGENTKIT_REGIONS", REGIONS)
            .env("VOLCENGINE_ACCESS_KEY", "sim-access-key")
            .env("VOLCENGINE_SECRET_KEY", "sim-secret-key");
        command
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.run_command(&args.join(" "), self.command(args))
    }

    pub(crate) fn run_command(&self, name: &str, command: Command) -> Output {
        let started = Instant::now();
        let out = Proc::spawn(&format!("snapwake {name}"), command).finish();
        eprintln!(
            "[local_stack] snapwake {name}: exit {:?} in {} ms",
            out.code(),
            started.elapsed().as_millis()
        );
        out
    }
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
