//! The last lines of what happened in a simulated deployment, for a failure's message.

use std::collections::VecDeque;

/// The last lines of what happened, for a failure's message.
#[derive(Default)]
pub struct Trace {
    lines: VecDeque<String>,
    /// Lines noted in all.
    pub noted: u64,
}

impl Trace {
    const KEPT: usize = 60;

    pub fn note(&mut self, line: String) {
        let at = snapwake::ambient::format_ms(snapwake::ambient::now_ms());
        self.lines.push_back(format!("{at} {line}"));
        self.noted += 1;
        while self.lines.len() > Self::KEPT {
            self.lines.pop_front();
        }
    }

    pub fn lines(&self) -> Vec<String> {
        self.lines.iter().cloned().collect()
    }
}
