//! The catalogue: the desired Tools (docs/agentkit.md, "The catalogue"), their names, and the
//! JSON document that overrides them (`SNAPWAKE_CATALOGUE`: the JSON or a path to it).
//!
//! Names follow the reference Studio's rule, so an existing Studio deployment's Tools are adopted
//! rather than duplicated. The CRC-32 suffix is taken over the raw app name (the specification is
//! silent): only that tells apart apps whose readable part normalises alike (`My App`, `my-app`).
//!
//! Each document entry is merged over the default of its key; an unknown key adds an entry. Env
//! values are literal or `{"from_env": "VAR"}` (read once, here) and are never logged.

use std::collections::BTreeMap;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use snapwake::agentkit::types::EnvVar;
use snapwake::domain::{Kind, Retention};
use snapwake::error::Error;
use snapwake::locate::ToolOverrides;

/// The `ProjectName` of every Tool.
pub const PROJECT_NAME: &str = "default";
pub const CPU_MILLI: u32 = 4000;
pub const MEMORY_MB: u32 = 8192;
pub const MODEL_AGENT_NAME: &str = "doubao-seed-evolving";
/// `<app>` when the app name normalises to nothing.
pub const FALLBACK_APP: &str = "studio";
const APP_MAX_CHARS: usize = 30;

/// Desired `Envs` of a Tool; `Debug` shows keys only (values may be secrets).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct DesiredEnvs(pub Vec<EnvVar>);

impl std::fmt::Debug for DesiredEnvs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|e| &e.key))
            .finish()
    }
}

/// Where an explicit Tool id came from (reports name it so an operator can find it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdSource {
    /// `SNAPWAKE_TOOL_<KEY>`.
    Env(String),
    Catalogue,
}

impl std::fmt::Display for IdSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IdSource::Env(var) => f.write_str(var),
            IdSource::Catalogue => f.write_str("the catalogue"),
        }
    }
}

/// One Tool of the desired state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    /// The kind it serves in the registry (`None`: not a kind's Tool, e.g. `skill_creator`).
    pub kind: Option<Kind>,
    pub tool_type: String,
    /// `EnableSnapshot`: a recoverable Tool.
    pub recoverable: bool,
    pub purpose: String,
    pub name: String,
    /// An explicit id: verified, never renamed or recreated.
    pub tool_id: Option<String>,
    pub id_source: Option<IdSource>,
    pub model_agent_name: Option<String>,
    /// Merged into the Tool's `Envs` (sorted by key).
    pub envs: DesiredEnvs,
}

impl Entry {
    pub fn retention(&self) -> Retention {
        if self.recoverable {
            Retention::Recoverable
        } else {
            Retention::Temporary
        }
    }

    /// `studio-` + 16 hex of SHA-256 of the Tool name: stable per Tool across runs.
    pub fn api_key_name(&self) -> String {
        api_key_name(&self.name)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Catalogue {
    /// The raw app name the names derive from.
    pub app: String,
    pub entries: Vec<Entry>,
}

const DEFAULTS: [(&str, Option<Kind>, bool, &str); 7] = [
    ("codex", Some(Kind::Codex), false, "chat-temporary"),
    ("codex_snapshot", Some(Kind::Codex), true, "chat-snapshot"),
    ("skill_creator", None, false, "skill"),
    (
        "openclaw",
        Some(Kind::Openclaw),
        false,
        "openclaw-temporary",
    ),
    (
        "openclaw_snapshot",
        Some(Kind::Openclaw),
        true,
        "openclaw-snapshot",
    ),
    ("hermes", Some(Kind::Hermes), false, "hermes-temporary"),
    (
        "hermes_snapshot",
        Some(Kind::Hermes),
        true,
        "hermes-snapshot",
    ),
];

pub fn normalise_app(app: &str) -> String {
    let mut out = String::new();
    let mut in_run = false;
    for c in app.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('-');
            in_run = true;
        }
    }
    let trimmed: String = out.trim_matches('-').chars().take(APP_MAX_CHARS).collect();
    // Cutting at 30 may leave a trailing '-'.
    let trimmed = trimmed.trim_matches('-');
    if trimmed.is_empty() {
        FALLBACK_APP.to_string()
    } else {
        trimmed.to_string()
    }
}

/// The reference Studio's Tool name for `purpose` in app `app` (raw name).
pub fn tool_name(app: &str, purpose: &str) -> String {
    format!(
        "veadk-studio-{}-{}-{:08x}",
        normalise_app(app),
        purpose,
        crc32fast::hash(app.as_bytes())
    )
}

pub fn api_key_name(tool_name: &str) -> String {
    let digest = Sha256::digest(tool_name.as_bytes());
    format!("studio-{}", &hex::encode(digest)[..16])
}

// The documents below hold env values (possibly secrets) as read: no `Debug`.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    #[serde(default)]
    app: Option<String>,
    #[serde(default)]
    entries: Vec<EntryDocument>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryDocument {
    key: String,
    #[serde(default)]
    kind: Option<Kind>,
    #[serde(default)]
    tool_type: Option<String>,
    #[serde(default)]
    enable_snapshot: Option<bool>,
    #[serde(default)]
    purpose: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    tool_id: Option<String>,
    #[serde(default)]
    model_agent_name: Option<String>,
    #[serde(default)]
    envs: BTreeMap<String, EnvValue>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum EnvValue {
    Literal(String),
    FromEnv { from_env: String },
}

fn invalid(detail: impl Into<String>) -> Error {
    Error::bad_request(format!("catalogue: {}", detail.into()))
}

impl Catalogue {
    /// The default catalogue for app `app` (`None`: unset).
    pub fn default_for(app: Option<&str>) -> Catalogue {
        let app = app
            .filter(|a| !a.trim().is_empty())
            .unwrap_or(FALLBACK_APP)
            .to_string();
        let entries = DEFAULTS
            .iter()
            .map(|(key, kind, recoverable, purpose)| {
                let tool_type = kind.unwrap_or(Kind::Codex).tool_type().to_string();
                Entry {
                    key: key.to_string(),
                    kind: *kind,
                    model_agent_name: model_agent_for(*kind),
                    tool_type,
                    recoverable: *recoverable,
                    purpose: purpose.to_string(),
                    name: tool_name(&app, purpose),
                    tool_id: None,
                    id_source: None,
                    envs: DesiredEnvs::default(),
                }
            })
            .collect();
        Catalogue { app, entries }
    }

    /// The catalogue of an environment (`SNAPWAKE_APP`, `SNAPWAKE_CATALOGUE`, `SNAPWAKE_TOOL_*`).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Catalogue, Error> {
        let document = match lookup("SNAPWAKE_CATALOGUE").filter(|v| !v.trim().is_empty()) {
            None => None,
            Some(v) if v.trim_start().starts_with('{') => Some(v),
            Some(path) => Some(std::fs::read_to_string(path.trim()).map_err(|e| {
                invalid(format!("cannot read SNAPWAKE_CATALOGUE file {path:?}: {e}"))
            })?),
        };
        let app = lookup("SNAPWAKE_APP");
        let mut catalogue = Catalogue::load(app.as_deref(), document.as_deref(), &lookup)?;
        catalogue.apply_overrides(&tool_overrides(&catalogue, &lookup));
        Ok(catalogue)
    }

    /// The default catalogue for `app` with the override `document` (JSON) merged in.
    pub fn load(
        app: Option<&str>,
        document: Option<&str>,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<Catalogue, Error> {
        let doc: Document = match document {
            None => Document::default(),
            Some(text) => serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?,
        };
        let app = doc.app.as_deref().or(app);
        let mut catalogue = Catalogue::default_for(app);
        for e in doc.entries {
            catalogue.merge(e, env)?;
        }
        Ok(catalogue)
    }

    fn merge(
        &mut self,
        doc: EntryDocument,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<(), Error> {
        if doc.key.is_empty()
            || !doc
                .key
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(invalid(format!(
                "entry key {:?} must be [a-z0-9_]+",
                doc.key
            )));
        }
        let index = match self.entries.iter().position(|e| e.key == doc.key) {
            Some(i) => i,
            None => {
                let tool_type = doc
                    .tool_type
                    .clone()
                    .or_else(|| doc.kind.map(|k| k.tool_type().to_string()))
                    .ok_or_else(|| invalid(format!("new entry {} needs tool_type", doc.key)))?;
                let purpose = doc
                    .purpose
                    .clone()
                    .ok_or_else(|| invalid(format!("new entry {} needs purpose", doc.key)))?;
                self.entries.push(Entry {
                    key: doc.key.clone(),
                    kind: doc.kind,
                    model_agent_name: model_agent_for(doc.kind),
                    tool_type,
                    recoverable: false,
                    name: tool_name(&self.app, &purpose),
                    purpose,
                    tool_id: None,
                    id_source: None,
                    envs: DesiredEnvs::default(),
                });
                self.entries.len() - 1
            }
        };
        let app = self.app.clone();
        let entry = &mut self.entries[index];
        if let Some(kind) = doc.kind {
            entry.kind = Some(kind);
            entry.tool_type = kind.tool_type().to_string();
        }
        if let Some(t) = doc.tool_type {
            entry.tool_type = t;
        }
        if let Some(s) = doc.enable_snapshot {
            entry.recoverable = s;
        }
        if let Some(p) = doc.purpose {
            entry.name = tool_name(&app, &p);
            entry.purpose = p;
        }
        if let Some(n) = doc.name.filter(|n| !n.trim().is_empty()) {
            entry.name = n;
        }
        if let Some(id) = doc.tool_id.filter(|i| !i.trim().is_empty()) {
            entry.tool_id = Some(id.trim().to_string());
            entry.id_source = Some(IdSource::Catalogue);
        }
        if let Some(m) = doc.model_agent_name {
            entry.model_agent_name = Some(m).filter(|m| !m.is_empty());
        }
        if let Some(kind) = entry.kind {
            if entry.tool_type != kind.tool_type() {
                return Err(invalid(format!(
                    "entry {} serves {kind} but has ToolType {}",
                    entry.key, entry.tool_type
                )));
            }
        }
        let mut envs = std::mem::take(&mut entry.envs.0);
        for (key, value) in doc.envs {
            let value = match value {
                EnvValue::Literal(v) => v,
                EnvValue::FromEnv { from_env } => env(&from_env).ok_or_else(|| {
                    invalid(format!(
                        "env {key} of entry {} reads {from_env}, which is not set",
                        entry.key
                    ))
                })?,
            };
            envs.retain(|e| e.key != key);
            envs.push(EnvVar { key, value });
        }
        envs.sort_by(|a, b| a.key.cmp(&b.key));
        entry.envs = DesiredEnvs(envs);
        Ok(())
    }

    /// Lay explicit ids from the environment over the catalogue's: the environment wins.
    pub fn apply_overrides(&mut self, overrides: &ToolOverrides) {
        for entry in &mut self.entries {
            let key = entry.key.to_uppercase();
            if let Some(id) = overrides.0.get(&key) {
                entry.tool_id = Some(id.clone());
                entry.id_source = Some(IdSource::Env(format!("SNAPWAKE_TOOL_{key}")));
            }
        }
    }

    pub fn entry(&self, kind: Kind, retention: Retention) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.kind == Some(kind) && e.retention() == retention)
    }
}

/// `SNAPWAKE_TOOL_<KEY>` for every entry, not only the six kind keys.
fn tool_overrides(
    catalogue: &Catalogue,
    lookup: &impl Fn(&str) -> Option<String>,
) -> ToolOverrides {
    let mut overrides = ToolOverrides::from_lookup(lookup);
    for e in &catalogue.entries {
        let key = e.key.to_uppercase();
        if let Some(id) = lookup(&format!("SNAPWAKE_TOOL_{key}")).filter(|v| !v.trim().is_empty()) {
            overrides.0.insert(key, id.trim().to_string());
        }
    }
    overrides
}

fn model_agent_for(kind: Option<Kind>) -> Option<String> {
    matches!(kind, Some(Kind::Openclaw | Kind::Hermes)).then(|| MODEL_AGENT_NAME.to_string())
}

#[cfg(test)]
mod tests;
