//! The NFS protocol versions a GDS mount may ask for.
//!
//! RDMA works with NFSv3 and every NFSv4 minor version. An exact `vers=4.x` is what the helper
//! passes by default: with a bare `vers=4` or none, `mount.nfs` negotiates downwards and may end
//! on a version the admin did not choose. NFSv2 is refused: nothing that runs GDS speaks it.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NfsVersion {
    V3,
    /// NFSv4 with an exact minor version, or `None` for a bare `4` (minor negotiated).
    V4(Option<u8>),
}

impl NfsVersion {
    /// The version `mount.nfs` would otherwise pick itself, and the helper's built-in default.
    pub const DEFAULT: NfsVersion = NfsVersion::V4(Some(2));

    /// Every version a mount may ask for, as `vers=` spells them (the helper's completion offers
    /// these).
    pub const ALL: [NfsVersion; 5] = [
        NfsVersion::V3,
        NfsVersion::V4(None),
        NfsVersion::V4(Some(0)),
        NfsVersion::V4(Some(1)),
        NfsVersion::V4(Some(2)),
    ];

    pub fn is_v4(self) -> bool {
        matches!(self, NfsVersion::V4(_))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("NFS version {0:?} is not one nfs-gds mounts over RDMA (use 3, 4, 4.0, 4.1 or 4.2)")]
pub struct BadVersion(pub String);

impl FromStr for NfsVersion {
    type Err = BadVersion;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        NfsVersion::ALL
            .into_iter()
            .find(|v| v.to_string() == s)
            .ok_or_else(|| BadVersion(s.to_string()))
    }
}

impl fmt::Display for NfsVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NfsVersion::V3 => f.write_str("3"),
            NfsVersion::V4(None) => f.write_str("4"),
            NfsVersion::V4(Some(m)) => write!(f, "4.{m}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_round_trip_and_v2_is_refused() {
        for v in ["3", "4", "4.0", "4.1", "4.2"] {
            assert_eq!(v.parse::<NfsVersion>().unwrap().to_string(), v);
        }
        assert_eq!(
            NfsVersion::ALL.map(|v| v.to_string()),
            ["3", "4", "4.0", "4.1", "4.2"]
        );
        assert!("2".parse::<NfsVersion>().is_err());
        assert!("4.3".parse::<NfsVersion>().is_err());
        assert!("".parse::<NfsVersion>().is_err());
        assert!(NfsVersion::DEFAULT.is_v4());
        assert!(!NfsVersion::V3.is_v4());
    }
}
