//! How strictly a failing check is treated: the vocabulary the policy file, the registry's
//! default levels and the verdict share.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How a failing check is treated. Ordered from strictest to loosest, so the looser of two
/// levels is their `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Refuse the mount (before mounting, or by unmounting what was just mounted).
    Enforce,
    /// Mount, and say loudly what is wrong.
    Warn,
    /// Do not run the check.
    Off,
}

impl Level {
    /// Every level, strictest first.
    pub const ALL: [Level; 3] = [Level::Enforce, Level::Warn, Level::Off];

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Enforce => "enforce",
            Level::Warn => "warn",
            Level::Off => "off",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a policy level (enforce, warn or off)")]
pub struct BadLevel(pub String);

impl FromStr for Level {
    type Err = BadLevel;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Level::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| BadLevel(s.to_string()))
    }
}
