//! [`Secret`]: a string never shown (a credential, a token, a key, a session Endpoint). `Debug`
//! prints `<redacted>` and there is no `Display`, so no `{:?}` of a type holding one can leak it
//! into a log line (docs/security.md). [`Secret::expose`] names the moment it leaves.

use serde::{Deserialize, Serialize};

/// Serialises as the bare string: AgentKit sends and expects it so.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value itself, for the one place that must send or use it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn into_exposed(self) -> String {
        self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Secret {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Secret {
        Secret(value.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_value_and_serde_keeps_it() {
        let s = Secret::new("https://s.example/?auth=canary");
        assert_eq!(format!("{s:?}"), "<redacted>");
        assert_eq!(format!("{:?}", Some(&s)), "Some(<redacted>)");
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, r#""https://s.example/?auth=canary""#);
        assert_eq!(serde_json::from_str::<Secret>(&json).unwrap(), s);
        assert_eq!(s.expose(), "https://s.example/?auth=canary");
    }
}
