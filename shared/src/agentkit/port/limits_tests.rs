use super::*;

#[test]
fn limits_read_from_text() {
    assert_eq!("tools".parse::<RateLimits>(), Ok(RateLimits::tool_writes()));
    assert_eq!("off".parse::<RateLimits>(), Ok(RateLimits::off()));
    let l: RateLimits = "agentkit, ResumeSessionFromSnapshot=5, GetSession=off"
        .parse()
        .unwrap();
    assert_eq!(l.per_second("ResumeSessionFromSnapshot"), Some(5));
    assert_eq!(l.per_second("GetSession"), None);
    assert_eq!(l.per_second("ListSessions"), Some(50));
    assert_eq!(l.per_second("UpdateTool"), Some(3));
    let l: RateLimits = "off,UpdateTool=7".parse().unwrap();
    assert_eq!(l.0.get(TOOL_WRITES), Some(&7));
    for bad in [
        "fast",
        "agentkit,Resume=5",
        "agentkit,GetSession",
        "off,GetSession=x",
        "off,GetSession=0",
    ] {
        assert!(bad.parse::<RateLimits>().is_err(), "{bad}");
    }
}
