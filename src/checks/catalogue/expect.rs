//! What the catalogue's unit tests assert of a result: its status and the key words of its
//! summary, and what it saw. Each assertion prints the whole result when it fails.

use crate::checks::{CheckResult, Status};

/// Asserts the status and that the summary holds each of `words`.
#[track_caller]
pub fn says(r: &CheckResult, status: Status, words: &[&str]) {
    assert_eq!(r.status, status, "{r:#?}");
    for w in words {
        assert!(r.summary.contains(w), "summary lacks {w:?}: {r:#?}");
    }
}

/// What the evidence `what` saw (the first of that name).
#[track_caller]
pub fn seen<'a>(r: &'a CheckResult, what: &str) -> &'a str {
    r.evidence
        .iter()
        .find(|e| e.what == what)
        .map(|e| e.seen.as_str())
        .unwrap_or_else(|| panic!("no evidence {what:?}: {r:#?}"))
}

/// The remedy, which must be there.
#[track_caller]
pub fn remedy(r: &CheckResult) -> &str {
    r.remedy
        .as_deref()
        .unwrap_or_else(|| panic!("no remedy: {r:#?}"))
}
