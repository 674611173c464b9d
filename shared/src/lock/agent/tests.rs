use super::*;
use crate::domain::{Announce, Trigger};

#[test]
fn an_end_is_announced_after_an_awake_rest_or_any_lapsed_change_never_after_a_rest_asleep() {
    let awake = announced_end(Some(WakeState::Awake));
    assert_eq!(awake.map(|a| a.trigger), Some(Trigger::Agentkit));
    for lapsed in [
        WakeState::Waking,
        WakeState::Sleeping,
        WakeState::Creating,
        WakeState::Deleting,
    ] {
        let said = announced_end(Some(lapsed)).map(|a| a.what);
        assert_eq!(said, Some(Announce::Asleep), "{lapsed:?}");
    }
    for rest in [
        None,
        Some(WakeState::Asleep),
        Some(WakeState::Failed),
        Some(WakeState::Gone),
    ] {
        assert!(announced_end(rest).is_none(), "{rest:?}");
    }
}
