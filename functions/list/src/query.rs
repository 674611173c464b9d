//! The query of `GET /v1/agents`: `kind`, `state`, `owner`, `limit` and `cursor`, checked.

use lambda_http::{Request, RequestExt};
use snapwake::domain::{AgentState, Kind};
use snapwake::error::{Error, Result};
use snapwake::http::edge;

/// The default and largest page of `owner=*`.
const DEFAULT_LIMIT: u32 = 50;
const MAX_LIMIT: u32 = 100;

/// The parsed query of `GET /v1/agents`.
pub(crate) struct ListQuery {
    pub kind: Option<Kind>,
    pub state: Option<AgentState>,
    pub owner: Option<String>,
    pub limit: u32,
    pub cursor: Option<String>,
}

/// `request`'s query: an unknown kind or state, or a `limit` outside 1–100, is a 400.
pub(crate) fn list_query(request: &Request) -> Result<ListQuery> {
    let params = request.query_string_parameters();
    let get = |name: &str| params.first(name).map(str::to_string);
    let kind = get("kind").map(|k| edge::parse_kind(&k)).transpose()?;
    let state = get("state")
        .map(|s| s.parse::<AgentState>().map_err(Error::bad_request))
        .transpose()?;
    let owner = get("owner").filter(|o| !o.trim().is_empty());
    let limit = match get("limit") {
        None => DEFAULT_LIMIT,
        Some(l) => match l.parse::<u32>() {
            Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
            _ => {
                return Err(Error::bad_request(
                    "limit must be a whole number from 1 to 100",
                ))
            }
        },
    };
    let cursor = get("cursor").filter(|c| !c.is_empty());
    Ok(ListQuery {
        kind,
        state,
        owner,
        limit,
        cursor,
    })
}
