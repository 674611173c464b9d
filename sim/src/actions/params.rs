//! Checks every action makes on its request parameters: required fields, the Tool in the
//! request's region, and TTLs.

use super::context::Ctx;
use crate::error::SimError;
use crate::state::{ToolRec, World};

pub(super) fn required(field: &str, value: &str) -> Result<(), SimError> {
    if value.is_empty() {
        Err(SimError::invalid(format!("{field} is required")))
    } else {
        Ok(())
    }
}

/// The Tool, if it exists in the request's region: a Tool of another region is NotFound, as in
/// AgentKit, so a client's region fallback can be tested.
pub(super) fn tool_here<'w>(
    w: &'w World,
    cx: &Ctx<'_>,
    tool_id: &str,
) -> Result<&'w ToolRec, SimError> {
    required("ToolId", tool_id)?;
    w.tools
        .get(tool_id)
        .filter(|t| t.region == cx.region)
        .ok_or_else(|| {
            SimError::not_found(format!("Tool {tool_id} not found in region {}", cx.region))
        })
}

/// The longest a session lives from its start or its last SetSessionTtl: 8 hours. AgentKit's
/// sessions last 8 h (the Studio's `Ttl` is 28800 s); a longer `Ttl` is taken, and cut to this,
/// as the hardest thing the service could do to a client that asked for more.
pub const MAX_SESSION_TTL: time::Duration = time::Duration::hours(8);

/// `Ttl` × `TtlUnit` (`second`, `minute` or `hour`, case-insensitive) as a duration > 0, at most
/// [`MAX_SESSION_TTL`].
pub(super) fn ttl(ttl: u64, unit: &str) -> Result<time::Duration, SimError> {
    let per = match unit.to_ascii_lowercase().as_str() {
        "second" | "seconds" | "s" => 1,
        "minute" | "minutes" | "m" => 60,
        "hour" | "hours" | "h" => 3600,
        _ => return Err(SimError::invalid("TtlUnit must be second, minute or hour")),
    };
    let secs = ttl
        .checked_mul(per)
        .and_then(|s| i64::try_from(s).ok())
        .filter(|s| *s > 0 && *s <= 10 * 365 * 86_400)
        .ok_or_else(|| SimError::invalid("Ttl must be positive and at most 10 years"))?;
    Ok(time::Duration::seconds(secs).min(MAX_SESSION_TTL))
}
