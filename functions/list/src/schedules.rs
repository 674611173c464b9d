//! The `schedule` of each agent a listing shows: one batch read of the page's schedule items
//! (docs/schedules.md). A listing never fails for it: a schedule that cannot be read is
//! shown as none, and the log says why.

use snapwake::domain::{AgentKey, AgentView};
use snapwake::schedule::summary;
use snapwake::store::ScheduleStore;

/// Fill `views`' `schedule` from the store.
pub(crate) async fn attach<S: ScheduleStore>(store: &S, views: &mut [AgentView]) {
    if views.is_empty() {
        return;
    }
    let keys: Vec<AgentKey> = views
        .iter()
        .map(|v| AgentKey::new(v.kind, v.agent_id.clone()))
        .collect();
    match store.get_schedules(&keys).await {
        Ok(schedules) => {
            for schedule in schedules {
                let Some(key) = schedule.key.as_ref() else {
                    continue;
                };
                if let Some(view) = views
                    .iter_mut()
                    .find(|v| v.kind == key.kind && v.agent_id == key.agent_id)
                {
                    view.schedule = Some(summary(&schedule));
                }
            }
        }
        Err(e) => tracing::warn!(error = %e, "schedules not shown: the store could not read them"),
    }
}
