//! `GET /v1/usage` (docs/usage.md): a person's usage, or an admin's for one owner or everyone
//! (`owner=*`), by day or by agent, over `from..=to` (UTC days, at most a year and a day), as
//! JSON or, for `Accept: text/csv`, CSV.
//!
//! Choices where the specification is silent: the range defaults to the last 7 days up to
//! today; every well-formed range is answered (a date is a date): days before 1970 read as
//! 1970-01-01 (nothing was kept before), a range longer than [`MOST_DAYS`] keeps its last
//! [`MOST_DAYS`] days (the answer's `from` says so), and `from` after `to` is a range of no day;
//! `owner` naming someone else from a non-admin answers 404, as the list does; a range holding
//! more rows than one answer can carry is a 422 (ask for fewer days).

use lambda_http::{Body, Request, RequestExt, Response};
use snapwake::agentkit::AgentKit;
use snapwake::ambient::now_s;
use snapwake::domain::usage::DAY_S;
use snapwake::domain::AgentRecord;
use snapwake::error::{Error, Result};
use snapwake::http::edge;
use snapwake::identity::{owner_keys, Caller};
use snapwake::store::usage::MOST_ROWS;
use snapwake::store::{AgentStore, UsageStore, Within};
use snapwake::usage::report::{report, Asked, By};

use crate::List;

/// The longest range one report covers, in days.
const MOST_DAYS: u64 = 367;
/// The range when none is asked for: the last week, today included.
const DEFAULT_DAYS: u64 = 7;
/// Records read per page for what is still open.
const PAGE: u32 = 100;

/// The parsed query of `GET /v1/usage`.
struct UsageQuery {
    from: u64,
    to: u64,
    by: By,
    owner: Option<String>,
}

fn usage_query(request: &Request, today: u64) -> Result<UsageQuery> {
    let params = request.query_string_parameters();
    let day = |name: &str| -> Result<Option<u64>> {
        params
            .first(name)
            .map(|d| {
                days_since_1970(d).ok_or_else(|| {
                    Error::bad_request(format!("{name} must be a date as YYYY-MM-DD, not {d:?}"))
                })
            })
            .transpose()
    };
    let to = day("to")?.unwrap_or(today);
    let from = day("from")?
        .unwrap_or(to.saturating_sub(DEFAULT_DAYS - 1))
        .max(to.saturating_sub(MOST_DAYS - 1));
    let by = match params.first("by") {
        None | Some("day") => By::Day,
        Some("agent") => By::Agent,
        Some(other) => {
            return Err(Error::bad_request(format!(
                "by must be day or agent, not {other:?}"
            )))
        }
    };
    let owner = params
        .first("owner")
        .filter(|o| !o.trim().is_empty())
        .map(str::to_string);
    Ok(UsageQuery {
        from,
        to,
        by,
        owner,
    })
}

/// `YYYY-MM-DD` as days since 1970-01-01, a date before it as 0 (none: not a date).
fn days_since_1970(s: &str) -> Option<u64> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let date = time::Date::parse(s, &format).ok()?;
    let epoch = time::Date::from_julian_day(2_440_588).ok()?;
    Some(u64::try_from((date - epoch).whole_days()).unwrap_or(0))
}

/// Whether the caller asked for CSV rather than JSON.
fn wants_csv(request: &Request) -> bool {
    edge::header(request, "accept")
        .is_some_and(|a| a.split(',').any(|part| part.trim().starts_with("text/csv")))
}

impl<S: AgentStore + UsageStore, K: AgentKit> List<S, K> {
    pub(crate) async fn usage(
        &self,
        store: &Within<'_, S>,
        request: &Request,
        caller: &Caller,
    ) -> Result<Response<Body>> {
        let now = u64::try_from(now_s()).unwrap_or(0);
        let q = usage_query(request, now / DAY_S)?;
        let owner = match q.owner.as_deref() {
            None => caller.owner.clone(),
            Some(o) if o == caller.owner => caller.owner.clone(),
            Some(_) if !caller.is_admin => return Err(Error::AgentNotFound),
            Some(o) => o.to_string(),
        };
        let keys = (owner != "*").then(|| owner_keys(&owner).to_vec());
        let rows = store.usage_rows(q.from, q.to, keys.as_deref()).await?;
        if rows.len() > MOST_ROWS {
            return Err(Error::unprocessable(
                "the range holds more usage than one answer carries: ask for fewer days",
            ));
        }
        let records = match &keys {
            Some(keys) => owner_records(store, keys).await?,
            None => every_record(store).await?,
        };
        let asked = Asked {
            from: q.from,
            to: q.to,
            by: q.by,
            owner,
            now_s: now,
            prices: self.prices.as_ref(),
        };
        let report = report(&asked, &rows, &records);
        if !wants_csv(request) {
            return Ok(edge::json(200, &report.to_json()));
        }
        let csv = report
            .to_csv()
            .map_err(|e| Error::Internal(format!("usage as CSV: {e}")))?;
        let name = format!(
            "snapwake-usage-{}-{}.csv",
            snapwake::domain::usage::day_name(q.from),
            snapwake::domain::usage::day_name(q.to)
        );
        Response::builder()
            .status(200)
            .header("content-type", "text/csv; charset=utf-8")
            .header(
                "content-disposition",
                format!("attachment; filename=\"{name}\""),
            )
            .body(Body::Text(csv))
            .map_err(|e| Error::Internal(format!("usage response: {e}")))
    }
}

/// Every record of the owner's keys: what is open on them counts up to now.
async fn owner_records<S: AgentStore>(store: &S, keys: &[String]) -> Result<Vec<AgentRecord>> {
    let mut records = Vec::new();
    for key in keys {
        let mut cursor: Option<String> = None;
        loop {
            let page = store.query_owner(key, PAGE, cursor.as_deref()).await?;
            records.extend(page.records);
            match page.cursor {
                Some(next) if records.len() <= MOST_ROWS => cursor = Some(next),
                _ => break,
            }
        }
    }
    Ok(records)
}

/// Every agent record, for `owner=*`.
async fn every_record<S: AgentStore>(store: &S) -> Result<Vec<AgentRecord>> {
    let mut records = Vec::new();
    let mut after = None;
    loop {
        let page = store.scan_agents(None, PAGE, after.as_ref()).await?;
        records.extend(page.records);
        match page.next {
            Some(next) if records.len() <= MOST_ROWS => after = Some(next),
            _ => break,
        }
    }
    Ok(records)
}
