use super::*;

#[test]
fn debug_hides_the_value_and_serde_keeps_it() {
    let s = Secret::new("https://s.example/?auth=canary");
    assert_eq!(format!("{s:?}"), "<redacted>");
    assert_eq!(format!("{:?}", Some(&s)), "Some(<redacted>)");
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(json, r#""https://s.example/?auth=canary""#);
    assert_eq!(serde_json::from_str::<Secret>(&json).unwrap(), s);
    assert_eq!(s.expose(), "https://s.example/?auth=canary");
}
