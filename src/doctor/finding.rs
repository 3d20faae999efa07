//! What doctor noticed that is not a pass/fail check: a finding, context for the admin.

use serde::Serialize;

/// Something doctor noticed that is not a pass/fail check: context for the admin.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub topic: String,
    pub text: String,
}

pub(super) fn finding(topic: &str, text: impl Into<String>) -> Finding {
    Finding {
        topic: topic.to_string(),
        text: text.into(),
    }
}
