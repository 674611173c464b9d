//! `snapwake usid`: the UserSessionId codec for support staff (docs/identity.md), as JSON on
//! stdout.
//!
//! Owners and ids may begin with `-` (`snapwake usid encode -- -alice`, or without `--`):
//! the positional values and `--owner` accept leading hyphens.

use std::io::Write;

use clap::{Args, Subcommand};
use serde::Serialize;
use snapwake::identity::{self, UserSessionId};

use crate::error::CliError;

#[derive(Debug, Args)]
pub struct UsidArgs {
    #[command(subcommand)]
    command: UsidCommand,
}

#[derive(Debug, Subcommand)]
enum UsidCommand {
    /// Print an owner's safe form, UserSessionId prefix and owner-index keys.
    Encode {
        /// The owner id (the value of the first configured owner claim, e.g. `sub`).
        #[arg(allow_hyphen_values = true)]
        owner: String,
    },
    /// Print a UserSessionId's format, owner-index key and legacy display name.
    Decode {
        /// The UserSessionId (the agent id of a snapwake agent).
        #[arg(allow_hyphen_values = true)]
        user_session_id: String,
        /// Also say whether the id belongs to this owner.
        #[arg(long, allow_hyphen_values = true)]
        owner: Option<String>,
    },
}

#[derive(Debug, Serialize)]
struct Encoded {
    owner: String,
    safe_owner: String,
    prefix: String,
    owner_keys: [String; 2],
}

#[derive(Debug, Serialize)]
struct Decoded {
    user_session_id: String,
    /// `current`, `legacy`, `older` or `unowned`.
    format: &'static str,
    /// `None` when the id belongs to no one.
    owner_key: Option<String>,
    /// The name decoded from a legacy id.
    display_name: Option<String>,
    /// Only when `--owner` is given.
    belongs_to_owner: Option<bool>,
}

pub fn run(args: UsidArgs) -> Result<(), CliError> {
    match args.command {
        UsidCommand::Encode { owner } => print_json(&encode(owner)?),
        UsidCommand::Decode {
            user_session_id,
            owner,
        } => print_json(&decode(user_session_id, owner)?),
    }
}

fn encode(owner: String) -> Result<Encoded, CliError> {
    // A request never yields an empty owner (it needs a non-blank claim), so encoding one
    // would only mislead.
    if owner.is_empty() {
        return Err(CliError::Usage("the owner must not be empty".into()));
    }
    Ok(Encoded {
        safe_owner: identity::safe_owner(&owner),
        prefix: identity::prefix(&owner),
        owner_keys: identity::owner_keys(&owner),
        owner,
    })
}

fn decode(user_session_id: String, owner: Option<String>) -> Result<Decoded, CliError> {
    if user_session_id.is_empty() {
        return Err(CliError::Usage(
            "the UserSessionId must not be empty".into(),
        ));
    }
    if owner.as_deref() == Some("") {
        return Err(CliError::Usage("--owner must not be empty".into()));
    }
    let parsed = UserSessionId::parse(&user_session_id);
    Ok(Decoded {
        format: parsed.format_name(),
        owner_key: parsed.owner_key(),
        display_name: parsed.legacy_name().map(str::to_string),
        belongs_to_owner: owner.map(|o| identity::belongs_to(&user_session_id, &o)),
        user_session_id,
    })
}

fn print_json(value: &impl Serialize) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}
