//! The checks that do not stop the flow, collected and reported together at the end.

/// Checks that do not stop the flow: each failure is printed as it happens and all of them
/// fail the test at the end.
#[derive(Default)]
pub(crate) struct Findings(pub(crate) Vec<String>);

impl Findings {
    pub(crate) fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            let what = what();
            eprintln!("[local_stack] FAILED CHECK: {what}");
            self.0.push(what);
        }
    }
}
