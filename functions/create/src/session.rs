//! The AgentKit side of a create: CreateSession with its region fallback, the reconcile that
//! follows an answer whose outcome is unknown, and reading the new session back.

use snapwake::agentkit::port::AGENT_SESSION_PAGES;
use snapwake::agentkit::types::{
    newest_session, CreateSession, Filter, GetSession, ListSessions, MetadataEntry, Session,
};
use snapwake::agentkit::{list_all, AgentKit};
use snapwake::domain::AgentKey;
use snapwake::error::{Error, Result};
use snapwake::identity::caller::METADATA_DISPLAY_NAME_KEY;
use snapwake::invocation::Deadline;
use snapwake::store::AgentStore;
use snapwake::view::{METADATA_CREATOR_KEY, METADATA_OWNER_KEY};

use crate::plan::Plan;
use crate::Create;

/// What starting a session came to.
pub(crate) enum Started {
    /// AgentKit has the agent's session (created, or found after an ambiguous answer).
    Session { session: Session, region: String },
    /// Certainly nothing was created; the error says why.
    Nothing(Error),
    /// CreateSession's answer was lost and no session shows yet: AgentKit may still create it
    /// (crate::agent, "A CreateSession whose answer was lost may take effect later").
    Unsettled,
}

impl<S: AgentStore, K: AgentKit> Create<S, K> {
    /// Start the agent's session: CreateSession in the plan's regions, the registry's first
    /// (a region without the Tool is skipped). An answer whose outcome is unknown is reconciled
    /// by listing the agent's sessions there once; an empty or failed listing is no proof that
    /// nothing was created ([`Started::Unsettled`]).
    pub(crate) async fn start_session(
        &self,
        plan: &Plan,
        key: &AgentKey,
        deadline: Deadline,
    ) -> Result<Started> {
        let agent_id = key.agent_id.as_str();
        let metadata = vec![
            MetadataEntry::string(METADATA_OWNER_KEY, &plan.caller.owner),
            MetadataEntry::string(METADATA_DISPLAY_NAME_KEY, &plan.display_name),
            MetadataEntry::string(METADATA_CREATOR_KEY, &plan.caller.display_name),
        ];
        let request = CreateSession::new(&plan.tool_id, agent_id, metadata);
        for region in &plan.regions {
            match self.agentkit.call(region, &request, deadline).await {
                Ok(out) => {
                    tracing::info!(agent = %key, session_id = %out.session_id, region = %region, "session created");
                    let session = self
                        .read_session(plan, agent_id, &out.session_id, region, deadline)
                        .await;
                    return Ok(Started::Session {
                        session,
                        region: region.clone(),
                    });
                }
                Err(e) if e.is_not_found() => continue,
                Err(e) if e.outcome_unknown() => {
                    tracing::warn!(agent = %key, error = %e, "CreateSession may have half-succeeded; reconciling");
                    let found = self
                        .find_session(plan, agent_id, std::slice::from_ref(region), deadline)
                        .await;
                    return Ok(match found {
                        Ok(Some((session, region))) => {
                            tracing::info!(agent = %key, "reconciled: the session exists");
                            Started::Session { session, region }
                        }
                        // AgentKit may apply a CreateSession seconds after its answer was
                        // lost: an empty listing now is not its word that nothing was created.
                        Ok(None) => Started::Unsettled,
                        Err(listing) => {
                            tracing::warn!(agent = %key, error = %listing, "could not list the agent's sessions");
                            Started::Unsettled
                        }
                    });
                }
                Err(e) => return Ok(Started::Nothing(e.into())),
            }
        }
        Ok(Started::Nothing(Error::NotConfigured(format!(
            "the {} {} Tool was not found in any configured region",
            plan.kind,
            plan.retention.as_str()
        ))))
    }

    /// The newest active session of `agent_id` on the plan's Tool, trying `regions` in order
    /// (a region where the Tool does not exist is skipped).
    pub(crate) async fn find_session(
        &self,
        plan: &Plan,
        agent_id: &str,
        regions: &[String],
        deadline: Deadline,
    ) -> Result<Option<(Session, String)>> {
        for region in regions {
            let request = ListSessions {
                tool_id: plan.tool_id.clone(),
                filters: Some(vec![Filter::one("UserSessionId", agent_id)]),
                ..ListSessions::default()
            };
            match list_all(
                &self.agentkit,
                region,
                request,
                AGENT_SESSION_PAGES,
                deadline,
            )
            .await
            {
                Ok(sessions) => {
                    // Trust but verify the service's filter.
                    let active = sessions.into_iter().filter(|s| {
                        s.is_active() && s.user_session_id.as_deref() == Some(agent_id)
                    });
                    return Ok(newest_session(active).map(|s| (s, region.clone())));
                }
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(None)
    }

    /// The new session as AgentKit describes it; if that read fails, what CreateSession said
    /// (a new session starts as `Creating`).
    async fn read_session(
        &self,
        plan: &Plan,
        agent_id: &str,
        session_id: &str,
        region: &str,
        deadline: Deadline,
    ) -> Session {
        let request = GetSession {
            tool_id: plan.tool_id.clone(),
            session_id: session_id.to_string(),
        };
        match self.agentkit.call(region, &request, deadline).await {
            Ok(session) if session.session_id.is_some() => session,
            outcome => {
                if let Err(e) = outcome {
                    tracing::warn!(session_id, error = %e, "could not read the new session");
                }
                Session {
                    session_id: Some(session_id.to_string()),
                    user_session_id: Some(agent_id.to_string()),
                    status: Some("Creating".into()),
                    ..Session::default()
                }
            }
        }
    }
}
