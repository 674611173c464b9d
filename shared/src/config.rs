//! Environment → typed configuration, read and validated once at cold start: a bad value is a
//! [`ConfigError`] naming the variable (never echoing a secret), so a misconfigured deployment
//! fails loudly at start instead of answering odd errors later.

use std::time::Duration;

use crate::agentkit::types::Secret;
use crate::agentkit::Credentials;
use crate::agentkit::{AgentKitConfig, CredentialsSource};
use crate::http::edge::{normalise_base_path, BASE_PATH_VAR};
use crate::identity::{IdentityConfig, DEFAULT_OWNER_CLAIMS};
use crate::locate::ToolOverrides;
use crate::schedule::ScheduleRules;
use crate::wake::WakeSettings;

pub const DEFAULT_AGENTKIT_ENDPOINT: &str = "https://open.volcengineapi.com";
pub const DEFAULT_AGENTKIT_REGIONS: &str = "cn-beijing,cn-shanghai";
/// The port of the AWS Parameters and Secrets Lambda Extension when none is configured.
pub const DEFAULT_SECRETS_EXTENSION_PORT: u16 = 2773;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{var} is required but not set")]
    Missing { var: &'static str },
    #[error("{var} is invalid: {reason}")]
    Invalid { var: &'static str, reason: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub identity: IdentityConfig,
    pub agentkit: AgentKitConfig,
    /// The DynamoDB table (`SNAPWAKE_TABLE`); `None` runs on the in-memory store locally.
    pub table: Option<String>,
    /// Wake, sleep and keepalive timings (`SNAPWAKE_WAIT_S`, `SNAPWAKE_READY_TIMEOUT_S`,
    /// `SNAPWAKE_MAX_TTL_S`, `SNAPWAKE_SNAPSHOT_GRACE_S`, `SNAPWAKE_SNAPSHOT_TIMEOUT_S`) and idle
    /// sleep (`SNAPWAKE_IDLE_MINUTES`).
    pub wake: WakeSettings,
    /// Explicit Tool ids (`SNAPWAKE_TOOL_<KEY>`), laid over the registry.
    pub tool_overrides: ToolOverrides,
    /// Key of list cursors (`SNAPWAKE_CURSOR_KEY`, 32+ characters); `None`: random, in the table.
    pub cursor_key: Option<Secret>,
    pub retention: RetentionConfig,
    /// A custom domain's base path (`SNAPWAKE_BASE_PATH`, e.g. `/api`), stripped before routing.
    pub base_path: Option<String>,
    /// The EventBridge `source` values offboarding events are accepted from
    /// (`SNAPWAKE_OFFBOARDING_SOURCES`, comma list; default [`DEFAULT_OFFBOARDING_SOURCE`]).
    pub offboarding_sources: Vec<String>,
    /// Where a person works with an awake agent (`SNAPWAKE_OPEN_URL`); `None`: no `open_url`.
    pub open_url: Option<crate::domain::OpenUrl>,
    /// The bus state-change events go to (`SNAPWAKE_EVENT_BUS`, name or ARN); `None`: none.
    pub event_bus: Option<String>,
    /// The SQS queue for due occurrences (`SNAPWAKE_DUE_QUEUE_URL`); `None`: a channel in process.
    pub due_queue: Option<String>,
    /// What a schedule may ask for (`SNAPWAKE_SCHEDULE_MIN_INTERVAL_S`, default 3600).
    pub schedules: ScheduleRules,
    /// The AgentKit budget (`SNAPWAKE_AGENTKIT_LIMITS`, default `agentkit`; `off`: none).
    pub budget: Option<crate::budget::BudgetSettings>,
    /// Prices for usage's report (`SNAPWAKE_PRICES`, `SNAPWAKE_CURRENCY` default `USD`,
    /// docs/usage.md); `None`: the report shows time, not money.
    pub prices: Option<crate::usage::report::Prices>,
}

pub const DEFAULT_OFFBOARDING_SOURCE: &str = "snapwake.offboarding";

/// What the retention sweep keeps (docs/operations.md, "The retention sweep").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionConfig {
    /// The newest Ready snapshots kept per agent (`SNAPWAKE_KEEP_SNAPSHOTS`, default 3).
    pub keep_snapshots: usize,
    /// Snapshots older than this go too (`SNAPWAKE_SNAPSHOT_MAX_AGE_DAYS`; unset: no limit).
    pub max_age_days: Option<u64>,
    /// An agent with no live session and no snapshot newer than this is deleted as a whole
    /// (`SNAPWAKE_AGENT_MAX_IDLE_DAYS`; unset: never).
    pub max_idle_days: Option<u64>,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            keep_snapshots: 3,
            max_age_days: None,
            max_idle_days: None,
        }
    }
}

impl Config {
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// Read through `lookup`, so tests never touch the environment; empty counts as unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let open_url = get("SNAPWAKE_OPEN_URL")
            .map(|t| crate::domain::OpenUrl::parse(&t))
            .transpose()
            .map_err(|reason| ConfigError::Invalid {
                var: "SNAPWAKE_OPEN_URL",
                reason,
            })?;
        let budget = budget_settings(&get)?;
        Ok(Config {
            identity: identity_config(&get)?,
            agentkit: agentkit_config(&get)?,
            table: get("SNAPWAKE_TABLE").map(|t| t.trim().to_string()),
            wake: WakeSettings {
                open_url: open_url.clone(),
                ..wake_settings(&get)?
            },
            tool_overrides: ToolOverrides::from_lookup(get),
            cursor_key: cursor_key(&get)?,
            retention: retention_config(&get)?,
            base_path: base_path(&get)?,
            offboarding_sources: offboarding_sources(&get)?,
            open_url,
            event_bus: get("SNAPWAKE_EVENT_BUS").map(|b| b.trim().to_string()),
            due_queue: get("SNAPWAKE_DUE_QUEUE_URL").map(|q| q.trim().to_string()),
            budget: budget.clone(),
            prices: crate::usage::report::parse_prices(
                &get("SNAPWAKE_PRICES").unwrap_or_default(),
                get("SNAPWAKE_CURRENCY").as_deref().unwrap_or("USD").trim(),
            )
            .map_err(|reason| ConfigError::Invalid {
                var: "SNAPWAKE_PRICES",
                reason,
            })?,
            schedules: ScheduleRules {
                min_interval: Duration::from_secs(parse_number(
                    &get,
                    "SNAPWAKE_SCHEDULE_MIN_INTERVAL_S",
                    ScheduleRules::default().min_interval.as_secs(),
                )?),
                ..ScheduleRules::default()
            }
            .paced_by(budget.as_ref()),
        })
    }
}

fn identity_config(get: &impl Fn(&str) -> Option<String>) -> Result<IdentityConfig, ConfigError> {
    let owner_claims =
        split_list(&get("SNAPWAKE_OWNER_CLAIMS").unwrap_or_else(|| DEFAULT_OWNER_CLAIMS.join(",")));
    if owner_claims.is_empty() {
        return Err(ConfigError::Invalid {
            var: "SNAPWAKE_OWNER_CLAIMS",
            reason: "lists no claim".into(),
        });
    }
    let mut identity = IdentityConfig {
        owner_claims,
        admins: Vec::new(),
        admin_groups: split_list(&get("SNAPWAKE_ADMIN_GROUPS").unwrap_or_default()),
    };
    identity.admins = identity.parse_admins(&get("SNAPWAKE_ADMINS").unwrap_or_default());
    Ok(identity)
}

fn retention_config(get: &impl Fn(&str) -> Option<String>) -> Result<RetentionConfig, ConfigError> {
    let defaults = RetentionConfig::default();
    let keep = parse_number(
        get,
        "SNAPWAKE_KEEP_SNAPSHOTS",
        defaults.keep_snapshots as u64,
    )?;
    // Keeping none would let a sweep take an agent's only way back.
    if keep == 0 {
        return Err(ConfigError::Invalid {
            var: "SNAPWAKE_KEEP_SNAPSHOTS",
            reason: "must be at least 1".into(),
        });
    }
    Ok(RetentionConfig {
        keep_snapshots: usize::try_from(keep).unwrap_or(usize::MAX),
        max_age_days: days(get, "SNAPWAKE_SNAPSHOT_MAX_AGE_DAYS")?,
        max_idle_days: days(get, "SNAPWAKE_AGENT_MAX_IDLE_DAYS")?,
    })
}

fn days(
    get: &impl Fn(&str) -> Option<String>,
    var: &'static str,
) -> Result<Option<u64>, ConfigError> {
    match get(var) {
        None => Ok(None),
        Some(_) => Some(parse_number(get, var, 0)?)
            .filter(|d| *d > 0)
            .map(Some)
            .ok_or(ConfigError::Invalid {
                var,
                reason: "must be a positive number of days".into(),
            }),
    }
}

fn offboarding_sources(get: &impl Fn(&str) -> Option<String>) -> Result<Vec<String>, ConfigError> {
    let var = "SNAPWAKE_OFFBOARDING_SOURCES";
    let sources = split_list(&get(var).unwrap_or_else(|| DEFAULT_OFFBOARDING_SOURCE.into()));
    if sources.is_empty() {
        return Err(ConfigError::Invalid {
            var,
            reason: "lists no source".into(),
        });
    }
    Ok(sources)
}

fn base_path(get: &impl Fn(&str) -> Option<String>) -> Result<Option<String>, ConfigError> {
    let Some(raw) = get(BASE_PATH_VAR) else {
        return Ok(None);
    };
    let valid = raw.trim().trim_matches('/').split('/').all(|segment| {
        !segment.is_empty()
            && segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~'))
    });
    if !valid {
        return Err(ConfigError::Invalid {
            var: BASE_PATH_VAR,
            reason: "must be path segments of letters, digits, '-', '_', '.' or '~'".into(),
        });
    }
    Ok(normalise_base_path(&raw))
}

/// Shorter keys would make forged cursors guessable.
pub const MIN_CURSOR_KEY_LEN: usize = 32;

fn cursor_key(get: &impl Fn(&str) -> Option<String>) -> Result<Option<Secret>, ConfigError> {
    match get("SNAPWAKE_CURSOR_KEY") {
        Some(k) if k.trim().len() < MIN_CURSOR_KEY_LEN => Err(ConfigError::Invalid {
            var: "SNAPWAKE_CURSOR_KEY",
            reason: format!("must be at least {MIN_CURSOR_KEY_LEN} characters"),
        }),
        k => Ok(k.map(|k| Secret::new(k.trim()))),
    }
}

fn wake_settings(get: &impl Fn(&str) -> Option<String>) -> Result<WakeSettings, ConfigError> {
    let defaults = WakeSettings::default();
    let wait_s = parse_number(get, "SNAPWAKE_WAIT_S", defaults.wait.as_secs())?;
    let ready_s = parse_number(
        get,
        "SNAPWAKE_READY_TIMEOUT_S",
        defaults.ready_timeout.as_secs(),
    )?;
    // The most a `Prefer: wait` is granted: API Gateway cuts HTTP requests at 30 s, and the
    // holder's own step (reconcile, Resume, record) comes before the wait.
    if wait_s > crate::http::edge::MAX_WAIT.as_secs() {
        return Err(ConfigError::Invalid {
            var: "SNAPWAKE_WAIT_S",
            reason: "must be from 0 to 20 (API Gateway answers 504 after 30 s)".into(),
        });
    }
    // The holder's lease after a Resume must outlive the request that waits on it, or a
    // caller could take over a wake that is still being polled.
    if ready_s <= wait_s {
        return Err(ConfigError::Invalid {
            var: "SNAPWAKE_READY_TIMEOUT_S",
            reason: format!("must be longer than SNAPWAKE_WAIT_S ({wait_s} s)"),
        });
    }
    let max_ttl_s = parse_number(get, "SNAPWAKE_MAX_TTL_S", defaults.max_ttl.as_secs())?;
    // A keepalive asks for at least a minute; a week is far beyond any session AgentKit keeps.
    if !(crate::wake::MIN_TTL.as_secs()..=7 * 24 * 3600).contains(&max_ttl_s) {
        return Err(ConfigError::Invalid {
            var: "SNAPWAKE_MAX_TTL_S",
            reason: "must be between 60 and 604800 (seconds)".into(),
        });
    }
    let grace_s = parse_number(
        get,
        "SNAPWAKE_SNAPSHOT_GRACE_S",
        defaults.snapshot_grace.as_secs(),
    )?;
    let stuck_s = parse_number(
        get,
        "SNAPWAKE_SNAPSHOT_TIMEOUT_S",
        defaults.snapshot_stuck_after.as_secs(),
    )?;
    // A snapshot AgentKit has not even listed yet cannot be given up on as stuck sooner.
    if stuck_s < grace_s {
        return Err(ConfigError::Invalid {
            var: "SNAPWAKE_SNAPSHOT_TIMEOUT_S",
            reason: format!("must be at least SNAPWAKE_SNAPSHOT_GRACE_S ({grace_s} s)"),
        });
    }
    let idle_minutes = parse_number(get, "SNAPWAKE_IDLE_MINUTES", 0)?;
    let idle_minutes = u32::try_from(idle_minutes)
        .ok()
        .filter(|m| *m <= crate::domain::idle::MOST_MINUTES)
        .ok_or_else(|| ConfigError::Invalid {
            var: "SNAPWAKE_IDLE_MINUTES",
            reason: format!(
                "must be between 0 (off) and {} (minutes)",
                crate::domain::idle::MOST_MINUTES
            ),
        })?;
    Ok(WakeSettings {
        idle: crate::lock::IdlePolicy {
            default_minutes: idle_minutes,
        },
        wait: Duration::from_secs(wait_s),
        ready_timeout: Duration::from_secs(ready_s),
        max_ttl: Duration::from_secs(max_ttl_s),
        snapshot_grace: Duration::from_secs(grace_s),
        snapshot_stuck_after: Duration::from_secs(stuck_s),
        ..defaults
    })
}

/// `SNAPWAKE_AGENTKIT_LIMITS`: `agentkit` (the default), `tools` or `off`, then any
/// `,Action=N` or `,Action=off`, as the simulator's limits are written. `off` alone: no budget.
fn budget_settings(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Option<crate::budget::BudgetSettings>, ConfigError> {
    let var = "SNAPWAKE_AGENTKIT_LIMITS";
    let limits: crate::agentkit::RateLimits = match get(var) {
        None => crate::agentkit::RateLimits::agentkit(),
        Some(text) => text
            .parse()
            .map_err(|reason| ConfigError::Invalid { var, reason })?,
    };
    Ok(
        (!limits.0.is_empty()).then(|| crate::budget::BudgetSettings {
            limits,
            ..crate::budget::BudgetSettings::default()
        }),
    )
}

fn agentkit_config(get: &impl Fn(&str) -> Option<String>) -> Result<AgentKitConfig, ConfigError> {
    let endpoint = get("AGENTKIT_ENDPOINT").unwrap_or_else(|| DEFAULT_AGENTKIT_ENDPOINT.into());
    let endpoint = endpoint.trim_end_matches('/').to_string();
    match reqwest::Url::parse(&endpoint) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {}
        _ => {
            return Err(ConfigError::Invalid {
                var: "AGENTKIT_ENDPOINT",
                reason: format!("{endpoint:?} is not an http(s) URL"),
            })
        }
    }
    let regions = split_list(
        &get("AGENTKIT_REGIONS").unwrap_or_else(|| DEFAULT_AGENTKIT_REGIONS.to_string()),
    );
    if regions.is_empty() {
        return Err(ConfigError::Invalid {
            var: "AGENTKIT_REGIONS",
            reason: "lists no region".into(),
        });
    }
    if let Some(bad) = regions
        .iter()
        .find(|r| !r.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
    {
        return Err(ConfigError::Invalid {
            var: "AGENTKIT_REGIONS",
            reason: format!("{bad:?} is not a region name"),
        });
    }
    let request_timeout = Duration::from_millis(parse_number(get, "AGENTKIT_TIMEOUT_MS", 10_000)?);
    Ok(AgentKitConfig {
        endpoint,
        regions,
        credentials: credentials_source(get)?,
        request_timeout,
    })
}

/// The secret wins over static keys: in Lambda it is the preferred source (docs/agentkit.md).
fn credentials_source(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<CredentialsSource, ConfigError> {
    if let Some(secret_id) = get("AGENTKIT_CREDENTIALS_SECRET") {
        let aws_session_token = get("AWS_SESSION_TOKEN").ok_or(ConfigError::Missing {
            var: "AWS_SESSION_TOKEN",
        })?;
        let port = parse_number(
            get,
            "PARAMETERS_SECRETS_EXTENSION_HTTP_PORT",
            u64::from(DEFAULT_SECRETS_EXTENSION_PORT),
        )?;
        let port = u16::try_from(port).map_err(|_| ConfigError::Invalid {
            var: "PARAMETERS_SECRETS_EXTENSION_HTTP_PORT",
            reason: "not a port number".into(),
        })?;
        return Ok(CredentialsSource::SecretsExtension {
            secret_id,
            port,
            aws_session_token: aws_session_token.into(),
        });
    }
    let access_key = get("VOLCENGINE_ACCESS_KEY").ok_or(ConfigError::Missing {
        var: "VOLCENGINE_ACCESS_KEY",
    })?;
    let secret_key = get("VOLCENGINE_SECRET_KEY").ok_or(ConfigError::Missing {
        var: "VOLCENGINE_SECRET_KEY",
    })?;
    Ok(CredentialsSource::Static(Credentials::new(
        access_key,
        secret_key,
        get("VOLCENGINE_SESSION_TOKEN"),
    )))
}

fn parse_number(
    get: &impl Fn(&str) -> Option<String>,
    var: &'static str,
    default: u64,
) -> Result<u64, ConfigError> {
    match get(var) {
        None => Ok(default),
        Some(v) => v.trim().parse().map_err(|_| ConfigError::Invalid {
            var,
            reason: format!("{v:?} is not a whole number"),
        }),
    }
}

/// A comma-separated list, trimmed, without empty items.
pub fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests;
