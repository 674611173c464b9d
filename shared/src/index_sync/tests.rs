//! Unit tests of `index_sync`.

use super::upsert::{changes_for, missing, wanted};
use super::*;
use crate::agentkit::types::{MetadataEntry, Session, Snapshot};
use crate::ambient::now_ms;
use crate::domain::{AgentKey, AgentRecord, Description, Kind, Retention, WakeState};
use crate::lock::LockSettings;
use crate::store::{AgentStore, Condition};

fn snap(usid: Option<&str>, at: &str, meta: &[(&str, &str)]) -> Snapshot {
    Snapshot {
        snapshot_id: Some(format!("snap-{at}")),
        user_session_id: usid.map(str::to_string),
        created_at: Some(at.into()),
        session_metadata: meta
            .iter()
            .map(|(k, v)| MetadataEntry::string(*k, *v))
            .collect(),
        ..Snapshot::default()
    }
}

fn listing(snapshots: Vec<Snapshot>, sessions: Vec<Session>) -> ToolListing {
    ToolListing {
        kind: Kind::Codex,
        tool_id: "t-1".into(),
        region: "r".into(),
        retention: Retention::Recoverable,
        snapshots,
        sessions,
        listed_at_ms: now_ms(),
        partial: false,
    }
}

#[test]
fn agents_take_the_oldest_time_the_newest_name_and_only_a_matching_owner() {
    let id = "studio-alice-0123";
    let l = listing(
        vec![
            snap(
                Some(id),
                "2026-12-02T00:00:00Z",
                &[("veadk_display_name", "New")],
            ),
            snap(
                Some(id),
                "2026-12-01T00:00:00Z",
                &[("veadk_display_name", "Old")],
            ),
            snap(Some(id), "2026-12-03T00:00:00Z", &[("Username", "mallory")]),
            snap(Some(id), "2026-12-04T00:00:00Z", &[("Username", "alice")]),
            snap(None, "2026-12-05T00:00:00Z", &[]),
        ],
        Vec::new(),
    );
    let agents = agents_of(&l);
    let key = AgentKey::new(Kind::Codex, id);
    let d = wanted(&key, &l, &agents[&key]);
    assert_eq!(d.created_at.as_deref(), Some("2026-12-01T00:00:00Z"));
    assert_eq!(d.display_name.as_deref(), Some("New"));
    assert_eq!(
        d.owner.as_deref(),
        Some("alice"),
        "mallory's claim is ignored"
    );
    assert_eq!(d.owner_key.as_deref(), Some("studio-alice"));
    let ownerless = AgentKey::new(Kind::Codex, "snapshot-snap-2026-12-05T00:00:00Z");
    assert!(wanted(&ownerless, &l, &agents[&ownerless])
        .owner_key
        .is_none());
}

#[cfg(feature = "memory")]
#[tokio::test]
async fn a_live_session_is_indexed_on_a_record_at_rest_only() {
    let id = "studio-alice-0456";
    let session = Session {
        session_id: Some("s-1".into()),
        user_session_id: Some(id.into()),
        status: Some("Ready".into()),
        created_at: Some("2026-12-02T00:00:00Z".into()),
        expire_at: Some("2026-12-02T08:00:00Z".into()),
        ..Session::default()
    };
    let l = listing(
        vec![snap(Some(id), "2026-12-01T00:00:00Z", &[])],
        vec![session],
    );
    let agents = agents_of(&l);
    let key = AgentKey::new(Kind::Codex, id);
    let lock = LockSettings::default();
    let fresh = changes_for(None, &key, &l, &agents[&key], &lock).unwrap();
    assert_eq!(fresh.state, Some(WakeState::Awake));
    assert_eq!(fresh.session_id, Some(Some("s-1".into())));
    assert_eq!(fresh.snapshots.as_ref().map(Vec::len), Some(1));
    let learned = fresh.announce.expect("learned awake: announced");
    assert_eq!(
        (learned.what, learned.trigger),
        (
            crate::domain::Announce::Awake,
            crate::domain::Trigger::Agentkit
        )
    );

    // A record that says all of it already: nothing to write.
    let store = crate::store::memory::MemoryStore::new();
    let mut r = store
        .update(&key, &Condition::Absent, &fresh)
        .await
        .unwrap();
    assert!(changes_for(Some(&r), &key, &l, &agents[&key], &lock).is_none());
    // Awake on another session: the session moves, the state does not; nothing announced.
    let mut other = r.clone();
    other.session_id = Some("s-0".into());
    // Written before the listing began (a newer record would know better than the listing).
    other.updated_at = Some("2026-12-01T00:00:00Z".into());
    let moved = changes_for(Some(&other), &key, &l, &agents[&key], &lock).unwrap();
    assert_eq!(moved.session_id, Some(Some("s-1".into())));
    assert_eq!(moved.announce, None);
    // A wake in flight is left alone.
    r.state = WakeState::Waking;
    r.session_id = None;
    r.lease_until_ms = now_ms() + 60_000;
    assert!(changes_for(Some(&r), &key, &l, &agents[&key], &lock).is_none());
}

#[test]
fn a_record_written_since_the_listing_began_keeps_its_state_and_snapshots() {
    // The listing saw the agent awake with one old snapshot; then a sleep ended the
    // session and recorded the snapshot it took.
    let id = "studio-alice-0789";
    let session = Session {
        session_id: Some("s-1".into()),
        user_session_id: Some(id.into()),
        status: Some("Ready".into()),
        ..Session::default()
    };
    let mut l = listing(
        vec![snap(Some(id), "2026-12-01T00:00:00Z", &[])],
        vec![session],
    );
    l.listed_at_ms = now_ms() - 5_000;
    let agents = agents_of(&l);
    let key = AgentKey::new(Kind::Codex, id);
    let lock = LockSettings::default();
    let summary = |id: &str| crate::domain::SnapshotView {
        snapshot_id: id.into(),
        source_session_id: Some("s-1".into()),
        status: Some("Ready".into()),
        reason: None,
        created_at: None,
    };
    let mut r = AgentRecord::absent(key.clone());
    r.version = 4;
    r.state = WakeState::Asleep;
    r.snapshots = vec![summary("snap-new"), summary("snap-2026-12-01T00:00:00Z")];
    r.updated_at = Some(crate::ambient::now());
    let kept = changes_for(Some(&r), &key, &l, &agents[&key], &lock);
    assert!(
        kept.as_ref()
            .is_none_or(|c| c.state.is_none() && c.session_id.is_none() && c.snapshots.is_none()),
        "{kept:?}"
    );
    // Written before the listing began: the listing's word stands.
    r.updated_at = Some(crate::ambient::format_ms(now_ms() - 60_000));
    let c = changes_for(Some(&r), &key, &l, &agents[&key], &lock).unwrap();
    assert_eq!(c.state, Some(WakeState::Awake));
    assert_eq!(c.snapshots.map(|s| s.len()), Some(1));
}

#[test]
fn only_missing_fields_are_filled() {
    let key = AgentKey::new(Kind::Codex, "studio-alice-0123");
    let mut r = AgentRecord::absent(key);
    r.description.owner = Some("alice".into());
    r.description.display_name = Some("Mine".into());
    let want = Description {
        owner: Some("alice".into()),
        display_name: Some("Theirs".into()),
        tool_id: Some("t".into()),
        ..Description::default()
    };
    let d = missing(&r, &want).unwrap();
    assert_eq!(d.tool_id.as_deref(), Some("t"));
    assert!(d.display_name.is_none() && d.owner.is_none());
    r.description.tool_id = Some("t".into());
    assert!(missing(&r, &want).is_none());
}

#[test]
fn a_refresh_adds_what_is_new_and_keeps_what_it_did_not_read() {
    // The record summarises an old snapshot; the refresh lists only a new one, and the old
    // one's status moving on.
    let id = "studio-alice-0abc";
    let key = AgentKey::new(Kind::Codex, id);
    let mut old = snap(Some(id), "2026-12-01T00:00:00Z", &[]);
    old.status = Some("Creating".into());
    let mut r = AgentRecord::absent(key.clone());
    r.version = 2;
    r.snapshots = crate::view::snapshot_views(&[old.clone()]);
    r.updated_at = Some(crate::ambient::format_ms(now_ms() - 60_000));
    old.status = Some("Ready".into());
    let new = snap(Some(id), "2026-12-02T00:00:00Z", &[]);
    let mut l = listing(vec![new, old], Vec::new());
    l.partial = true;
    let agents = agents_of(&l);
    let lock = LockSettings::default();
    let c = changes_for(Some(&r), &key, &l, &agents[&key], &lock).unwrap();
    let summaries = c.snapshots.expect("summaries");
    let got: Vec<(&str, Option<&str>)> = summaries
        .iter()
        .map(|s| (s.snapshot_id.as_str(), s.status.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            ("snap-2026-12-02T00:00:00Z", None),
            ("snap-2026-12-01T00:00:00Z", Some("Ready"))
        ]
    );
    // Only what the refresh read: an old snapshot it did not list stays summarised.
    let mut only_new = listing(
        vec![snap(Some(id), "2026-12-03T00:00:00Z", &[])],
        Vec::new(),
    );
    only_new.partial = true;
    let agents = agents_of(&only_new);
    let c = changes_for(Some(&r), &key, &only_new, &agents[&key], &lock).unwrap();
    assert_eq!(c.snapshots.map(|s| s.len()), Some(2));
    // A record written since the listing began (a delete, say) is left as it is.
    r.updated_at = Some(crate::ambient::now());
    let kept = changes_for(Some(&r), &key, &only_new, &agents[&key], &lock);
    assert!(
        kept.as_ref().is_none_or(|c| c.snapshots.is_none()),
        "{kept:?}"
    );
}

#[test]
fn a_list_is_as_fresh_as_its_least_recently_read_tool() {
    let status = IndexStatus {
        completed_at_ms: 1_000,
        tools: vec!["t-1".into(), "t-2".into()],
    };
    let mut marks = Freshness::default();
    marks.tools.insert(
        "t-1".into(),
        ToolMark {
            refreshed_at_ms: 5_000,
            after: None,
        },
    );
    // t-1 refreshed since the sync, t-2 not: the sync's time is t-2's.
    assert_eq!(marks.as_of(&status, ["t-1", "t-2"]), 1_000);
    assert_eq!(marks.as_of(&status, ["t-1"]), 5_000);
    // A Tool neither the sync nor a refresh read makes nothing fresh.
    assert_eq!(marks.as_of(&status, ["t-1", "t-3"]), 0);
    assert_eq!(marks.as_of(&status, []), 1_000);
}
