//! Finding every agent of an owner: in the owner index (both owner keys, every page), in the
//! snapshot Tools and among the live sessions, each kept only when its UserSessionId proves
//! it the owner's.

use std::collections::BTreeMap;

use snapwake::agentkit::AgentKit;
use snapwake::domain::AgentKey;
use snapwake::error::Error;
use snapwake::identity::user_session_id;
use snapwake::identity::{belongs_to, owner_keys};
use snapwake::index_sync::{agents_of, list_tool, tools, SliceSettings};
use snapwake::invocation::Deadline;
use snapwake::store::{AgentStore, ScheduleStore};

use super::{Found, Offboard};

/// Owner-index pages read per owner key.
const INDEX_PAGES: usize = 50;

impl<S: AgentStore + ScheduleStore, K: AgentKit> Offboard<'_, S, K> {
    /// Every agent of `owner`: in the owner index, in the snapshot Tools, in the live sessions.
    pub(super) async fn find(
        &self,
        owner: &str,
        deadline: Deadline,
    ) -> Result<BTreeMap<AgentKey, Found>, Error> {
        let mut agents: BTreeMap<AgentKey, Found> = BTreeMap::new();
        for owner_key in owner_keys(owner) {
            let mut cursor: Option<String> = None;
            for _ in 0..INDEX_PAGES {
                let page = self
                    .store
                    .query_owner(&owner_key, 1000, cursor.as_deref())
                    .await?;
                for record in page.records {
                    // The index says whose it is, the UserSessionId proves it.
                    let ours = user_session_id(&record.key.agent_id)
                        .is_some_and(|id| belongs_to(id, owner));
                    if ours {
                        let key = record.key.clone();
                        agents.entry(key).or_default().record = Some(record);
                    }
                }
                match page.cursor {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
        }
        for (kind, tool, retention) in tools(self.registry) {
            let listing = match list_tool(
                self.agentkit,
                self.registry,
                (kind, &tool, retention),
                SliceSettings::default(),
                deadline,
            )
            .await
            {
                Ok(l) => l,
                Err(e) if e.is_not_found() => continue,
                // A Tool that cannot be read could hide an agent: not done, try again.
                Err(e) => return Err(e.into()),
            };
            for key in agents_of(&listing).into_keys() {
                let ours = user_session_id(&key.agent_id).is_some_and(|id| belongs_to(id, owner));
                if ours {
                    let found = agents.entry(key).or_default();
                    found.home.get_or_insert((
                        listing.tool_id.clone(),
                        listing.region.clone(),
                        listing.retention,
                    ));
                }
            }
        }
        Ok(agents)
    }
}
