//! AgentKit's account-wide rate limits as assumed (unpublished; docs/agentkit.md, *Rate limits*):
//! `crate::budget` paces calls by them; the simulator refuses what exceeds them.

use std::collections::BTreeMap;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The one limit CreateTool and UpdateTool share.
pub const TOOL_WRITES: &str = "ToolWrites";

/// Tool writes per second: observed at about 3.
pub const DEFAULT_TOOL_WRITE_LIMIT: u32 = 3;

/// The session writes, assumed limited to 20 a second each.
const SESSION_WRITES: [&str; 6] = [
    "CreateSession",
    "ResumeSessionFromSnapshot",
    "CreateSessionSnapshot",
    "DeleteSession",
    "DeleteSessionSnapshot",
    "SetSessionTtl",
];
/// The reads and listings, assumed limited to 50 a second each.
const READS: [&str; 6] = [
    "GetSession",
    "ListSessions",
    "ListSessionSnapshots",
    "GetSessionSnapshot",
    "ListTools",
    "GetTool",
];

pub fn limit_of(action: &str) -> &str {
    match action {
        "CreateTool" | "UpdateTool" => TOOL_WRITES,
        other => other,
    }
}

fn is_known(name: &str) -> bool {
    name == TOOL_WRITES
        || matches!(name, "CreateTool" | "UpdateTool")
        || SESSION_WRITES.contains(&name)
        || READS.contains(&name)
}

/// Requests per second per limit ([`limit_of`]); a limit not named is off.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateLimits(pub BTreeMap<String, u32>);

impl RateLimits {
    pub fn off() -> Self {
        RateLimits(BTreeMap::new())
    }

    pub fn tool_writes() -> Self {
        RateLimits::off().with(TOOL_WRITES, Some(DEFAULT_TOOL_WRITE_LIMIT))
    }

    /// Every action limited as AgentKit is assumed to limit it.
    pub fn agentkit() -> Self {
        let mut limits = RateLimits::tool_writes();
        for action in SESSION_WRITES {
            limits.set(action, Some(20));
        }
        for action in READS {
            limits.set(action, Some(50));
        }
        limits
    }

    /// These limits with `limit` (an action, or [`TOOL_WRITES`]) at `per_second` (`None`: off).
    pub fn with(mut self, limit: &str, per_second: Option<u32>) -> Self {
        self.set(limit, per_second);
        self
    }

    pub fn set(&mut self, limit: &str, per_second: Option<u32>) {
        match per_second {
            Some(n) => self.0.insert(limit_of(limit).to_string(), n),
            None => self.0.remove(limit_of(limit)),
        };
    }

    pub fn per_second(&self, action: &str) -> Option<u32> {
        self.0.get(limit_of(action)).copied()
    }

    /// `agentkit`, `tools` or `off`, then any number of `,Action=N` or `,Action=off`
    /// (`agentkit,ResumeSessionFromSnapshot=50`); `known` says which names may be limited.
    pub fn parse(text: &str, known: impl Fn(&str) -> bool) -> Result<Self, String> {
        let mut parts = text.split(',').map(str::trim);
        let mut limits = match parts.next().unwrap_or_default() {
            "agentkit" => RateLimits::agentkit(),
            "tools" | "" => RateLimits::tool_writes(),
            "off" => RateLimits::off(),
            other => {
                return Err(format!(
                    "{other:?} is not agentkit, tools or off (then Action=N, ...)"
                ))
            }
        };
        for part in parts.filter(|p| !p.is_empty()) {
            let (action, n) = part
                .split_once('=')
                .ok_or_else(|| format!("{part:?} is not Action=N or Action=off"))?;
            if !known(action) {
                return Err(format!("{action:?} is not an AgentKit action"));
            }
            let per_second = match n {
                "off" => None,
                n => Some(
                    n.parse()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| format!("{n:?} is not a number of requests per second"))?,
                ),
            };
            limits.set(action, per_second);
        }
        Ok(limits)
    }
}

impl FromStr for RateLimits {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        RateLimits::parse(text, is_known)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_from_text() {
        assert_eq!("tools".parse::<RateLimits>(), Ok(RateLimits::tool_writes()));
        assert_eq!("off".parse::<RateLimits>(), Ok(RateLimits::off()));
        let l: RateLimits = "agentkit, ResumeSessionFromSnapshot=5, GetSession=off"
            .parse()
            .unwrap();
        assert_eq!(l.per_second("ResumeSessionFromSnapshot"), Some(5));
        assert_eq!(l.per_second("GetSession"), None);
        assert_eq!(l.per_second("ListSessions"), Some(50));
        assert_eq!(l.per_second("UpdateTool"), Some(3));
        let l: RateLimits = "off,UpdateTool=7".parse().unwrap();
        assert_eq!(l.0.get(TOOL_WRITES), Some(&7));
        for bad in [
            "fast",
            "agentkit,Resume=5",
            "agentkit,GetSession",
            "off,GetSession=x",
            "off,GetSession=0",
        ] {
            assert!(bad.parse::<RateLimits>().is_err(), "{bad}");
        }
    }
}
