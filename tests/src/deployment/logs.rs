//! What the functions log during a simulated run, kept in memory: the last lines, stamped with
//! the simulated time, so that a failure can show what snapwake itself said about the agents
//! it names.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Mutex};

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::fmt::MakeWriter;

/// The last lines logged.
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<VecDeque<String>>>);

impl Logs {
    const KEPT: usize = 20_000;

    /// A subscriber of this thread writing here: info and above of snapwake's own crates, or
    /// what `SNAPWAKE_SIM_LOG` says (targets, as `RUST_LOG` names them).
    pub fn install(&self) -> tracing::subscriber::DefaultGuard {
        use tracing_subscriber::layer::SubscriberExt;
        let targets: tracing_subscriber::filter::Targets = std::env::var("SNAPWAKE_SIM_LOG")
            .ok()
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| {
                "warn,snapwake=info,snapwake_resume=info,snapwake_delete=info,snapwake_create=info,snapwake_list=info"
                    .parse()
                    .expect("targets")
            });
        let layer = tracing_subscriber::fmt::layer()
            .with_timer(SimulatedTime)
            .with_ansi(false)
            .with_target(false)
            .with_writer(self.clone());
        let subscriber = tracing_subscriber::registry().with(layer).with(targets);
        tracing::subscriber::set_default(subscriber)
    }

    /// The lines that mention any of `words`, the last `n`.
    pub fn mentioning(&self, words: &[&str], n: usize) -> Vec<String> {
        let lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut found: Vec<String> = lines
            .iter()
            .rev()
            .filter(|l| words.iter().any(|w| l.contains(w)))
            .take(n)
            .cloned()
            .collect();
        found.reverse();
        found
    }
}

/// The words whose lines a failure shows: the agents, sessions and snapshots its violation
/// names, offboardings when it is one's, and whatever `SNAPWAKE_SIM_SAY` adds (comma-separated),
/// to follow a replay.
pub fn named_in(violation: &str) -> Vec<String> {
    let mut named: Vec<String> = violation
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .filter(|w| w.starts_with("studio") || w.starts_with("sess-") || w.starts_with("snap-"))
        .map(str::to_string)
        .collect();
    if violation.contains("offboarding") {
        named.push("offboard".into());
    }
    let asked = std::env::var("SNAPWAKE_SIM_SAY").unwrap_or_default();
    named.extend(
        asked
            .split(',')
            .filter(|w| !w.is_empty())
            .map(str::to_string),
    );
    named
}

/// One line on its way into the kept lines.
pub struct Line {
    logs: Logs,
    buffer: Vec<u8>,
}

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.buffer).trim_end().to_string();
        let mut lines = self.logs.0.lock().unwrap_or_else(|p| p.into_inner());
        lines.push_back(text);
        while lines.len() > Logs::KEPT {
            lines.pop_front();
        }
    }
}

impl<'a> MakeWriter<'a> for Logs {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line {
            logs: self.clone(),
            buffer: Vec::new(),
        }
    }
}

/// The simulation's time on every line.
struct SimulatedTime;

impl FormatTime for SimulatedTime {
    fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
        write!(
            w,
            "{}",
            snapwake::ambient::format_ms(snapwake::ambient::now_ms())
        )
    }
}
