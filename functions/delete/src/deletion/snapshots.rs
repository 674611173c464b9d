//! Deleting snapshots under the agent's lock: one (the HTTP route), or several under one
//! tenure (the retention sweep), the sweep's decided again under the lock from a fresh
//! listing so that the way back is never deleted on the word of a stale one.

use super::*;

impl<'a, S: AgentStore + ScheduleStore, K: AgentKit> Deleter<'a, S, K> {
    /// Delete one snapshot of `target` (its membership checked by the caller), deciding from
    /// `seen`, the record as the caller read it.
    pub async fn delete_snapshot(
        &self,
        target: &DeleteTarget,
        snapshot: &SnapshotRef,
        seen: Option<AgentRecord>,
        if_match: Option<u64>,
        deadline: Deadline,
    ) -> Result<Deleted, Error> {
        self.prune(
            target,
            Choice::These(std::slice::from_ref(snapshot)),
            seen,
            if_match,
            None,
            deadline,
        )
        .await
        .outcome()
    }

    /// Delete what `choice` says of `target`'s snapshots under one tenure of its lock, in
    /// order. Every deletion is idempotent; the first that fails stops the rest, hands the
    /// agent back and is the outcome.
    ///
    /// With `start_by`, a deletion is only started before that instant and while a quarter
    /// of the lease is left; the rest are left for the caller ([`Pruned::cut`]) instead of
    /// being cut off mid-call, so a run that stops early still has time to hand the agent
    /// back, and a long prune takes the lock again rather than outliving its lease.
    pub async fn prune(
        &self,
        target: &DeleteTarget,
        choice: Choice<'_>,
        seen: Option<AgentRecord>,
        if_match: Option<u64>,
        start_by: Option<Deadline>,
        deadline: Deadline,
    ) -> Pruned {
        let lock = self.lock(deadline);
        let mut held = match self.acquire(&lock, target, seen, if_match).await {
            Ok(Taken::Held(h)) => h,
            Ok(Taken::Gone) => return Pruned::nothing(Ok(Deleted::AlreadyGone)),
            Err(e) => return Pruned::nothing(Err(e)),
        };
        let (doomed, fresh) = match self.choose(target, choice, held.deadline).await {
            Ok(d) => d,
            Err(e) => {
                if let Err(release) = self.restore(&lock, &mut held, None).await {
                    tracing::warn!(agent = %target.key, error = %release, "could not release the lock after a failed listing");
                }
                return Pruned::nothing(Err(e));
            }
        };
        let mut pruned = Pruned::default();
        let quarter_lease = self.lock.lease / 4;
        for SnapshotRef {
            tool_id,
            region,
            snapshot_id,
        } in &doomed
        {
            if start_by.is_some_and(|by| by.is_past() || !held.lease_end.allows(quarter_lease)) {
                pruned.cut = true;
                break;
            }
            let one = async {
                self.delete_snapshot_call(region, tool_id, snapshot_id, held.deadline)
                    .await?;
                self.remember_deleted(&target.key, snapshot_id).await
            };
            match one.await {
                Ok(()) => pruned.deleted.push(snapshot_id.clone()),
                Err(e) => {
                    pruned.unanswered = Some(snapshot_id.clone());
                    pruned.outcome = Some(Err(e));
                    break;
                }
            }
        }
        // The index's copy of the agent's snapshots: the fresh listing when there is one,
        // less what was deleted.
        let gone = |id: &str| pruned.deleted.iter().any(|d| d == id);
        let summaries = match fresh {
            Some(listed) => {
                let left: Vec<Snapshot> = listed
                    .into_iter()
                    .filter(|s| !s.snapshot_id.as_deref().is_some_and(gone))
                    .collect();
                let views = snapwake::view::snapshot_views(&left);
                (views != held.held.record.snapshots).then_some(views)
            }
            None => {
                let before = &held.held.record.snapshots;
                let left: Vec<_> = before
                    .iter()
                    .filter(|s| !gone(&s.snapshot_id))
                    .cloned()
                    .collect();
                (left.len() != before.len()).then_some(left)
            }
        };
        let restored = self.restore(&lock, &mut held, summaries).await;
        if pruned.outcome.is_some() {
            return pruned;
        }
        match restored {
            Ok(true) => {}
            // The snapshots are deleted: that is what the caller asked for. The record stays
            // `deleting` until its lease expires (or another caller took it over already).
            Ok(false) => {
                tracing::warn!(agent = %target.key, "snapshots deleted, but the lock was lost")
            }
            Err(e) => {
                tracing::warn!(agent = %target.key, error = %e, "snapshots deleted, but the lock could not be released")
            }
        }
        if !pruned.deleted.is_empty() {
            tracing::info!(agent = %target.key, snapshots = ?pruned.deleted, cut = pruned.cut, "snapshots deleted");
        }
        pruned
    }

    /// The deletions `choice` makes, and the fresh listing it read (for [`Choice::ByPolicy`]).
    async fn choose(
        &self,
        target: &DeleteTarget,
        choice: Choice<'_>,
        deadline: Deadline,
    ) -> Result<(Vec<SnapshotRef>, Option<Vec<Snapshot>>), Error> {
        let (tool_id, region, policy, carried) = match choice {
            Choice::These(refs) => return Ok((refs.to_vec(), None)),
            Choice::ByPolicy {
                tool_id,
                region,
                policy,
                carried,
            } => (tool_id, region, policy, carried),
        };
        // A `snapshot-<id>` agent has one snapshot, which is its way back: nothing to prune.
        if target.user_session_id.is_none() {
            return Ok((Vec::new(), None));
        }
        let listed = self.snapshots_on(target, tool_id, region, deadline).await?;
        let at = |snapshot_id: &str| SnapshotRef {
            tool_id: tool_id.to_string(),
            region: region.to_string(),
            snapshot_id: snapshot_id.to_string(),
        };
        let listed_ids: Vec<&str> = listed
            .iter()
            .filter_map(|s| s.snapshot_id.as_deref())
            .collect();
        let mut doomed: Vec<SnapshotRef> = carried
            .iter()
            .filter(|id| !listed_ids.contains(&id.as_str()))
            .map(|id| at(id))
            .collect();
        doomed.extend(
            policy
                .to_prune(&listed, now_ms())
                .into_iter()
                .filter_map(|s| s.snapshot_id.as_deref())
                .map(at),
        );
        Ok((doomed, Some(listed)))
    }

    pub(super) async fn delete_snapshot_call(
        &self,
        region: &str,
        tool_id: &str,
        snapshot_id: &str,
        deadline: Deadline,
    ) -> Result<(), Error> {
        let req = DeleteSessionSnapshot {
            tool_id: tool_id.to_string(),
            snapshot_id: snapshot_id.to_string(),
        };
        match self.agentkit.call(region, &req, deadline).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
