//! One function per AgentKit action, over the [`World`], and the table that dispatches to them.
//!
//! Each function receives the typed request of `snapwake::agentkit::types` and the request's context (its
//! region, the simulated now, the token signer) and answers the typed result or a
//! [`SimError`]. Choices where the spec is silent are written on each function.
//!
//! This file owns the dispatch table; `context.rs` the request's context. The actions live by resource
//! (`sessions.rs`, `snapshots.rs`, `tools.rs`); the checks they share on request parameters
//! are in `params.rs`, and what every List action shares (cursor, filters) in `listing.rs`.

mod context;
mod listing;
mod params;
mod sessions;
mod snapshots;
mod tools;

use serde_json::Value;

use super::error::SimError;
use super::state::World;
pub(crate) use context::Ctx;
use sessions::{create_session, delete_session, get_session, list_sessions, set_session_ttl};
use snapshots::{
    create_session_snapshot, delete_session_snapshot, get_session_snapshot, list_session_snapshots,
    resume_session_from_snapshot,
};
use snapwake::agentkit::types::*;
use tools::{create_tool, get_tool, list_tools, update_tool};

fn call<A: Action>(
    w: &mut World,
    cx: &Ctx<'_>,
    body: &[u8],
    f: fn(&mut World, &Ctx<'_>, A) -> Result<A::Output, SimError>,
) -> Result<Value, SimError> {
    let req: A = serde_json::from_slice(body)
        .map_err(|e| SimError::invalid(format!("malformed {} request: {e}", A::NAME)))?;
    let out = f(w, cx, req)?;
    serde_json::to_value(out).map_err(|_| SimError::internal("could not encode the result"))
}

macro_rules! actions {
    ($($t:ty => $f:ident),* $(,)?) => {
        /// Every action's name.
        pub(crate) const ACTIONS: &[&str] = &[$(<$t>::NAME),*];

        /// Run the action `name` on `body` (JSON of its request type).
        pub(crate) fn run(
            name: &str,
            w: &mut World,
            cx: &Ctx<'_>,
            body: &[u8],
        ) -> Result<Value, SimError> {
            $(if name == <$t>::NAME {
                return call::<$t>(w, cx, body, $f);
            })*
            Err(SimError::new(400, "InvalidAction", "unknown action"))
        }
    };
}

actions! {
    ListSessions => list_sessions,
    GetSession => get_session,
    CreateSession => create_session,
    DeleteSession => delete_session,
    ListSessionSnapshots => list_session_snapshots,
    ResumeSessionFromSnapshot => resume_session_from_snapshot,
    DeleteSessionSnapshot => delete_session_snapshot,
    CreateSessionSnapshot => create_session_snapshot,
    GetSessionSnapshot => get_session_snapshot,
    SetSessionTtl => set_session_ttl,
    ListTools => list_tools,
    GetTool => get_tool,
    CreateTool => create_tool,
    UpdateTool => update_tool,
}

/// The action's static name, if it is an action.
pub(crate) fn lookup(name: &str) -> Option<&'static str> {
    ACTIONS.iter().copied().find(|n| *n == name)
}
