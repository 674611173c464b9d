//! Unit tests of request parsing: the query string and `X-Date`.

use super::auth::parse_x_date;
use super::*;

#[test]
fn query_is_percent_decoded() {
    assert_eq!(
        parse_query(Some("Action=List%20Tools&Version=2025-10-30&x")),
        vec![
            ("Action".to_string(), "List Tools".to_string()),
            ("Version".to_string(), "2025-10-30".to_string()),
            ("x".to_string(), String::new()),
        ]
    );
    assert!(parse_query(None).is_empty());
}

#[test]
fn x_date_parses() {
    assert_eq!(
        parse_x_date("20261202T100000Z"),
        Some(time::macros::datetime!(2026-12-02 10:00:00 UTC))
    );
    assert_eq!(parse_x_date("2026-12-02"), None);
}
