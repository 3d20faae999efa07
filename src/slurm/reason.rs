//! The drain reason: one line of at most [`MAX_BYTES`] bytes, `nfs-gds: CHECK SUBJECT`, where
//! CHECK is the failing check's id and SUBJECT the mount point or module it failed on. Tools
//! that read `sinfo -R` parse it by the documented pattern `^nfs-gds: [a-z-]+ \S+`, and the
//! health check knows its own drains by the prefix [`PREFIX`]. The subject is written with
//! printable ASCII alone, no quotes or backslashes (a mount point's space or newline becomes
//! `_`), and a long one keeps its end, the part that tells mounts apart.

use crate::checks::CheckId;

/// What every reason nfs-gds gives starts with.
pub const PREFIX: &str = "nfs-gds:";

/// The longest reason, in bytes.
pub const MAX_BYTES: usize = 128;

/// Marks a subject cut at its start.
const CUT: &str = "...";

/// A drain reason, valid by construction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainReason(String);

impl DrainReason {
    /// The reason for `check` failing on `subject` (a mount point, or a module).
    pub fn new(check: CheckId, subject: &str) -> Self {
        let head = format!("{PREFIX} {} ", check.as_str());
        let mut clean: String = subject
            .chars()
            .map(|c| {
                if c.is_ascii_graphic() && !matches!(c, '"' | '\'' | '`' | '\\') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if clean.is_empty() {
            clean.push('_');
        }
        let room = MAX_BYTES.saturating_sub(head.len());
        if clean.len() > room {
            // ASCII by now: every index is a character boundary.
            let keep = room.saturating_sub(CUT.len());
            clean = format!("{CUT}{}", &clean[clean.len() - keep..]);
        }
        DrainReason(head + &clean)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for DrainReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether slurmctld's reason for a node is one nfs-gds gave.
pub fn is_ours(reason: &str) -> bool {
    reason.starts_with(PREFIX)
}

/// The module a node check is about, for the reason's subject; `node` for a check of the node
/// as a whole (the IOMMU, the PCIe path, cuFile's configuration).
pub fn module_of(check: CheckId) -> &'static str {
    let id = check.as_str();
    if id.starts_with("rpcrdma") {
        "rpcrdma"
    } else if id.starts_with("nvidia-fs") || id.starts_with("nvfs") {
        "nvidia_fs"
    } else if id == "gpu-driver" {
        "nvidia"
    } else {
        "node"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::{rpcrdma_hooks, transport_trap};

    /// The documented pattern `^nfs-gds: [a-z-]+ \S+`, and the rest of the contract.
    fn assert_valid(r: &DrainReason) {
        let s = r.as_str();
        assert!(s.len() <= MAX_BYTES, "{} bytes: {s}", s.len());
        let rest = s.strip_prefix("nfs-gds: ").expect(s);
        let (check, subject) = rest.split_once(' ').expect(s);
        assert!(!check.is_empty() && check.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'));
        assert!(
            !subject.is_empty() && !subject.contains(char::is_whitespace),
            "{s}"
        );
        assert!(!s.contains(['"', '\'', '\n', '\r', '\\', '`']), "{s}");
        assert!(is_ours(s));
    }

    #[test]
    fn a_reason_names_the_check_and_its_mount_or_module() {
        let r = DrainReason::new(transport_trap::ID, "/mnt/gds");
        assert_eq!(r.as_str(), "nfs-gds: transport-trap /mnt/gds");
        assert_valid(&r);
        let r = DrainReason::new(rpcrdma_hooks::ID, module_of(rpcrdma_hooks::ID));
        assert_eq!(r.as_str(), "nfs-gds: rpcrdma-hooks rpcrdma");
        assert_valid(&r);
    }

    #[test]
    fn a_long_mount_point_keeps_its_end_within_128_bytes() {
        let long = format!("/mnt/{}/tail-that-tells", "deep/".repeat(40));
        let r = DrainReason::new(transport_trap::ID, &long);
        assert_eq!(r.as_str().len(), MAX_BYTES, "{r}");
        assert!(r.as_str().ends_with("/tail-that-tells"), "{r}");
        assert!(
            r.as_str().starts_with("nfs-gds: transport-trap ...deep/"),
            "{r}"
        );
        assert_valid(&r);
    }

    #[test]
    fn quotes_spaces_newlines_and_non_ascii_never_reach_the_reason() {
        for hostile in [
            "/mnt/my data",
            "/mnt/\"quoted\"",
            "/mnt/a\nState=RESUME",
            "/mnt/it's",
            "/mnt/ünïcode/日本",
            "",
            "\\",
        ] {
            let r = DrainReason::new(transport_trap::ID, hostile);
            assert_valid(&r);
        }
        assert_eq!(
            DrainReason::new(transport_trap::ID, "/mnt/a\nState=RESUME").as_str(),
            "nfs-gds: transport-trap /mnt/a_State=RESUME"
        );
    }

    #[test]
    fn a_reason_is_ours_by_its_prefix_alone() {
        assert!(is_ours("nfs-gds: rpcrdma-hooks rpcrdma"));
        assert!(!is_ours("NHC: nfs-gds: rpcrdma-hooks rpcrdma"));
        assert!(!is_ours("bad DIMM"));
        assert!(!is_ours(""));
    }
}
