use super::*;

#[test]
fn the_span_is_the_one_the_log_setup_looks_for() {
    // A span is only built when a subscriber wants it: the registry wants every one.
    tracing::subscriber::with_default(tracing_subscriber::registry(), || {
        let span = begin(Some("aws-1"), Some("apigw-1"));
        let meta = span.metadata().expect("an enabled span");
        assert_eq!(meta.name(), SPAN_NAME);
        assert_eq!(meta.target(), TARGET);
        for field in [AWS_REQUEST_ID, APIGW_REQUEST_ID] {
            assert!(meta.fields().field(field).is_some(), "{field}");
        }
    });
}
