//! Whether the running kernel honours `nconnect=` for NFSv4.x over RDMA, known before mounting.
//!
//! Upstream commit b326df4a8ec6 ("NFS: enable nconnect for RDMA") added the RDMA transport to the
//! nconnect switch of `nfs4_set_client()`: mainline since 6.9, in 6.6-stable since 6.6.117, not in
//! 6.1.y. Without it an NFSv4.x mount over RDMA makes one connection whatever `nconnect` says,
//! silently (NFSv3 always honoured it). The version is the upstream one behind the release
//! ([`KernelInfo::upstream`]: Debian's `/proc/version`, Ubuntu's `/proc/version_signature`); a
//! distribution kernel that picks fixes on its own schedule (RHEL, SUSE, Ubuntu) may carry the
//! commit below those versions, so there the answer is "unknown" and the count of connections
//! after mounting (`mount-connections`) decides.

use crate::host::kernel::{KernelInfo, KernelVersion, VersionSource};

/// The commit that lets NFSv4.x use nconnect over RDMA.
pub const COMMIT: &str = "b326df4a8ec6";

/// The first mainline release with [`COMMIT`].
pub const MAINLINE: KernelVersion = KernelVersion::new(6, 9, 0);

/// The first 6.6-stable release with [`COMMIT`].
pub const STABLE_6_6: KernelVersion = KernelVersion::new(6, 6, 117);

/// What the running kernel does with `nconnect` for NFSv4.x over RDMA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NconnectRdma {
    /// The kernel has the commit (the reason says by which version).
    Honoured(String),
    /// The kernel predates the commit and carries no backport.
    Dropped(String),
    /// Not known before mounting: no upstream version, or a distribution kernel that may
    /// carry a backport.
    Unknown(String),
}

/// The distribution whose kernels take fixes by backport, as the release or the version
/// source shows it: `None` for Debian (it follows the stable series), mainline and stable builds.
fn backporting_distribution(kernel: &KernelInfo) -> Option<&'static str> {
    let release = kernel.release.as_deref().unwrap_or("");
    if kernel.upstream_source == Some(VersionSource::VersionSignature) {
        return Some("Ubuntu");
    }
    let el = release
        .match_indices(".el")
        .any(|(i, _)| release[i + 3..].starts_with(|c: char| c.is_ascii_digit()));
    if el && !release.contains("elrepo") {
        return Some("RHEL");
    }
    // SLES: `6.4.0-150600.23.25-default`, `5.14.21-150500.55.65-azure`.
    let suse = release
        .split_once('-')
        .is_some_and(|(_, rest)| rest.starts_with("150") || rest.starts_with("160"));
    if suse {
        return Some("SUSE");
    }
    None
}

/// The one decider: what the running kernel does with NFSv4.x nconnect over RDMA.
pub fn nconnect_rdma(kernel: &KernelInfo) -> NconnectRdma {
    let Some(v) = kernel.upstream else {
        return NconnectRdma::Unknown(
            "the running kernel's upstream version is unknown".to_string(),
        );
    };
    if v >= MAINLINE {
        return NconnectRdma::Honoured(format!("Linux {v} has {COMMIT} (mainline since 6.9)"));
    }
    if v.major == 6 && v.minor == 6 && v >= STABLE_6_6 {
        return NconnectRdma::Honoured(format!(
            "Linux {v} has {COMMIT} (6.6-stable since 6.6.117)"
        ));
    }
    if let Some(distribution) = backporting_distribution(kernel) {
        return NconnectRdma::Unknown(format!(
            "Linux {v} predates {COMMIT} upstream, but this {distribution} kernel may carry it as a backport"
        ));
    }
    NconnectRdma::Dropped(format!(
        "Linux {v} predates {COMMIT} (mainline 6.9, 6.6.117)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn debian(upstream: &str) -> KernelInfo {
        KernelInfo::from_parts(
            Some("6.1.0-50-amd64".into()),
            Some(format!(
                "Linux version 6.1.0-50-amd64 (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC Debian {upstream}-1 (2026-05-02)"
            )),
            None,
        )
    }

    fn plain(release: &str) -> KernelInfo {
        KernelInfo::from_parts(Some(release.into()), None, None)
    }

    /// `Honoured`, `Dropped` or `Unknown`, for comparing.
    fn word(n: NconnectRdma) -> &'static str {
        match n {
            NconnectRdma::Honoured(_) => "honoured",
            NconnectRdma::Dropped(_) => "dropped",
            NconnectRdma::Unknown(_) => "unknown",
        }
    }

    #[test]
    fn stable_and_mainline_versions_decide() {
        assert_eq!(word(nconnect_rdma(&debian("6.1.176"))), "dropped");
        for (release, expected) in [
            ("6.6.116", "dropped"),
            ("6.6.117", "honoured"),
            ("6.8.12", "dropped"),
            ("6.9.0", "honoured"),
            ("6.12.30", "honoured"),
        ] {
            assert_eq!(word(nconnect_rdma(&plain(release))), expected, "{release}");
        }
        let NconnectRdma::Dropped(why) = nconnect_rdma(&debian("6.1.176")) else {
            unreachable!()
        };
        assert!(why.contains("Linux 6.1.176 predates b326df4a8ec6"), "{why}");
    }

    #[test]
    fn distribution_kernels_that_backport_are_unknown_below_the_fix() {
        let ubuntu = KernelInfo::from_parts(
            Some("6.8.0-45-generic".into()),
            None,
            Some("Ubuntu 6.8.0-45.45-generic 6.8.12".into()),
        );
        for (k, who) in [
            (ubuntu, "Ubuntu"),
            (plain("5.14.0-427.13.1.el9_4.x86_64"), "RHEL"),
            (plain("6.4.0-150600.23.25-default"), "SUSE"),
        ] {
            match nconnect_rdma(&k) {
                NconnectRdma::Unknown(why) => assert!(why.contains(who), "{why}"),
                other => panic!("{who}: {other:?}"),
            }
        }
        // elrepo's kernel-ml is a mainline build; a new enough distribution kernel is known.
        assert_eq!(
            word(nconnect_rdma(&plain("6.8.9-1.el9.elrepo.x86_64"))),
            "dropped"
        );
        assert_eq!(
            word(nconnect_rdma(&plain("6.12.0-55.el10.x86_64"))),
            "honoured"
        );
        assert_eq!(
            word(nconnect_rdma(&KernelInfo::from_parts(None, None, None))),
            "unknown"
        );
    }
}
