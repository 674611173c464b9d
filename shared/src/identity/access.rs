//! Who may act on an agent, and whom a first write of its record names as its owner: the
//! rules every function that reads or changes one agent (resume, delete, list) shares.

use super::{usid, Caller};
use crate::agentkit::types::{metadata_value, Snapshot};
use crate::domain::Description;
use crate::domain::{AgentKey, AgentRecord, Retention};
use crate::identity::names::METADATA_DISPLAY_NAME_KEY;
use crate::identity::user_session_id;

/// Whether `caller` may see and act on `key`: admins always; others when the record names
/// them, or when the UserSessionId is theirs. `snapshot-<id>` agents are admin-only.
pub fn may_act(caller: &Caller, key: &AgentKey, record: Option<&AgentRecord>) -> bool {
    if caller.is_admin {
        return true;
    }
    if record.and_then(|r| r.description.owner.as_deref()) == Some(caller.owner.as_str()) {
        return true;
    }
    user_session_id(&key.agent_id).is_some_and(|id| usid::belongs_to(id, &caller.owner))
}

/// Where an agent lives, as a record describes it: its Tool, the Tool's region and retention.
#[derive(Clone, Copy, Debug)]
pub struct Place<'a> {
    pub tool_id: &'a str,
    pub region: &'a str,
    pub retention: Retention,
}

/// What the first write of an agent's record should say about it: the record's own fields
/// first, then what the UserSessionId and the snapshots' metadata tell. `place`, when known,
/// adds the Tool (a wake that has not located the agent yet writes it later).
pub fn describe(
    caller: &Caller,
    key: &AgentKey,
    record: Option<&AgentRecord>,
    place: Option<Place<'_>>,
    snapshots: Option<&[Snapshot]>,
) -> Description {
    let usid = user_session_id(&key.agent_id);
    // The raw owner is known only when it is the caller's own agent (an admin acting on
    // someone else's agent must not be recorded as its owner).
    let owner = record
        .and_then(|r| r.description.owner.clone())
        .or_else(|| {
            usid.filter(|id| usid::belongs_to(id, &caller.owner))
                .map(|_| caller.owner.clone())
        });
    let metadata_name = snapshots.and_then(|s| {
        s.iter().find_map(|s| {
            metadata_value(&s.session_metadata, METADATA_DISPLAY_NAME_KEY).map(str::to_string)
        })
    });
    Description {
        owner,
        owner_key: usid.and_then(|id| usid::UserSessionId::parse(id).owner_key()),
        display_name: record
            .and_then(|r| r.description.display_name.clone())
            .or(metadata_name),
        tool_id: place.map(|p| p.tool_id.to_string()),
        region: place.map(|p| p.region.to_string()),
        retention: record
            .and_then(|r| r.description.retention)
            .or(place.map(|p| p.retention)),
        ..Description::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Kind;

    fn caller(owner: &str, is_admin: bool) -> Caller {
        Caller::local(owner, is_admin)
    }

    #[test]
    fn owners_and_admins_may_act_others_may_not() {
        let id = usid::mint("alice");
        let key = AgentKey::new(Kind::Codex, &id);
        assert!(may_act(&caller("alice", false), &key, None));
        assert!(!may_act(&caller("mallory", false), &key, None));
        assert!(may_act(&caller("root", true), &key, None));
        let snap = AgentKey::new(Kind::Codex, "snapshot-snap-1");
        assert!(!may_act(&caller("alice", false), &snap, None));
        assert!(may_act(&caller("root", true), &snap, None));
        let mut record = AgentRecord::absent(snap.clone());
        record.description.owner = Some("alice".into());
        assert!(may_act(&caller("alice", false), &snap, Some(&record)));
    }

    #[test]
    fn an_admin_is_never_recorded_as_someone_elses_owner() {
        let id = usid::mint("alice");
        let key = AgentKey::new(Kind::Codex, &id);
        let place = |retention| Place {
            tool_id: "t-1",
            region: "r",
            retention,
        };
        let d = describe(
            &caller("root", true),
            &key,
            None,
            Some(place(Retention::Recoverable)),
            None,
        );
        assert_eq!(d.owner, None);
        assert!(d.owner_key.is_some());
        let d = describe(
            &caller("alice", false),
            &key,
            None,
            Some(place(Retention::Temporary)),
            None,
        );
        assert_eq!(d.tool_id.as_deref(), Some("t-1"));
        let unplaced = describe(&caller("alice", false), &key, None, None, None);
        assert_eq!((unplaced.tool_id, unplaced.retention), (None, None));
        assert_eq!(d.owner.as_deref(), Some("alice"));
        assert_eq!(d.retention, Some(Retention::Temporary));
    }
}
