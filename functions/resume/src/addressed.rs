//! What every route of the function starts from: the caller, the agent it names, the agent's
//! record (a consistent read), the Tool registry and where the record says the agent lives.
//! An agent the caller may not act on is a 404, exactly like one that does not exist.

use std::sync::Arc;

use lambda_http::Request;
use snapwake::agentkit::AgentKit;
use std::time::Duration;

use snapwake::deadline::Budget;
use snapwake::domain::Description;
use snapwake::domain::{AgentKey, AgentRecord, ToolRegistry};
use snapwake::error::{Error, Result};
use snapwake::http::prefer;
use snapwake::http::request::{self as req, Matched};
use snapwake::identity::{describe, may_act, Caller, Place};
use snapwake::locate::{home_of, Home};
use snapwake::lock::AgentLock;
use snapwake::store::{AgentStore, Within};

use crate::Resume;

/// An agent the caller may act on, as the table has it.
pub(crate) struct Addressed {
    pub caller: Caller,
    pub key: AgentKey,
    pub record: Option<AgentRecord>,
    pub registry: Arc<ToolRegistry>,
    /// Where the record says the agent lives (any Tool of its kind the registry knows).
    pub home: Option<Home>,
    /// By when the request answers, and until when it may wait (docs/wake-protocol.md, "Short
    /// requests"): no wait unless the client said `Prefer: wait`.
    pub budget: Budget,
    /// The wait a `Prefer: wait` was granted (for `Preference-Applied`); `None`: none asked.
    pub applied_wait: Option<Duration>,
}

impl Addressed {
    /// The descriptive fields an acquire writes (owner, name, Tool, ...).
    pub fn describe(&self) -> Description {
        describe(
            &self.caller,
            &self.key,
            self.record.as_ref(),
            self.home.as_ref().map(|h| Place {
                tool_id: &h.tool_id,
                region: &h.region,
                retention: h.retention,
            }),
            None,
        )
    }
}

/// The caller and the agent the path names, before anything is read.
pub(crate) struct Named {
    caller: Caller,
    key: AgentKey,
}

impl Named {
    /// The agent named (not yet authorised).
    pub(crate) fn key(&self) -> &AgentKey {
        &self.key
    }
}

impl<S: AgentStore, K: AgentKit> Resume<S, K> {
    /// Authenticate the caller and parse the path (before the body: no identity is a 401
    /// whatever the body says).
    pub(crate) fn named(&self, request: &Request, matched: &Matched) -> Result<Named> {
        let caller = Caller::from_request(request, &self.identity)?;
        let kind = req::parse_kind(&matched.params[0])?;
        let agent_id = req::parse_id(&matched.params[1])?;
        Ok(Named {
            caller,
            key: AgentKey::new(kind, agent_id),
        })
    }

    /// Read the record and authorise, within this request's budget.
    pub(crate) async fn address(&self, request: &Request, named: Named) -> Result<Addressed> {
        let Named { caller, key } = named;
        let asked = prefer::wait(request.headers());
        let wait = self.wake.wait_for(asked);
        let budget = Budget::for_request(request, wait);
        let applied_wait = asked.map(|_| wait.min(budget.work.remaining()));
        let deadline = budget.work;
        // Every store call of the request takes its time from the request's budget.
        let record = AgentLock::new(&self.store, &self.wake.lock, deadline)
            .read(&key)
            .await?;
        if !may_act(&caller, &key, record.as_ref()) {
            return Err(Error::AgentNotFound);
        }
        let registry = self
            .registry
            .get(&Within::new(&self.store, deadline))
            .await?;
        let home = record.as_ref().and_then(|r| home_of(&registry, r));
        Ok(Addressed {
            caller,
            key,
            record,
            registry,
            home,
            budget,
            applied_wait,
        })
    }
}
