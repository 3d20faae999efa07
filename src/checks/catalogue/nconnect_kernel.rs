//! `nconnect-kernel`: before mounting, an NFSv4.x mount that asks for `nconnect=` over RDMA gets
//! the connections it asks for from the running kernel. Kernels without b326df4a8ec6 make one
//! connection, silently ([`nconnect_rdma`], the one decider); `mount-connections` counts them
//! after mounting, this check says it before: for the helper's `-o` options, and for `check` on
//! each `nfs-gds` line of fstab. Where a distribution kernel may carry the commit as a backport
//! the answer is unknown, and the count after mounting decides.

use crate::checks::asked::Asked;
use crate::checks::check::{Check, Detail, MountSubject, Scope};
use crate::checks::{CheckId, CheckResult, Level};
use crate::host::kernel::KernelInfo;
use crate::host::mounts::nconnect_rdma::{nconnect_rdma, NconnectRdma, COMMIT};
use crate::nfs::{NfsVersion, OptionDefaults};

pub const ID: CheckId = CheckId::new("nconnect-kernel");

pub static CHECK: Check = Check {
    id: ID,
    doc: "before mounting: an NFSv4.x mount asking for `nconnect=` (the helper's options; `check`: the `nfs-gds` fstab lines) is on a kernel that honours it over RDMA (upstream 6.9+, or 6.6.117+: b326df4a8ec6); unknown on RHEL, SUSE and Ubuntu kernels below that, which may carry it as a backport (advisory)",
    scope: Scope::Planned(run),
    default_level: Level::Warn,
    waitable: false,
};

fn run(subject: &MountSubject, _detail: Detail) -> CheckResult {
    match *subject {
        MountSubject::Planned {
            version,
            asked,
            kernel,
            ..
        } => match kernel {
            Some(k) => judge(k, &asked.iter().map(|a| (a, version)).collect::<Vec<_>>()),
            None => CheckResult::skip(ID, "the running kernel is not known here"),
        },
        MountSubject::Existing { .. } => CheckResult::skip(
            ID,
            "the mount exists: mount-connections counts its connections",
        ),
    }
}

/// The NFS version an ask names, else `default`: [`OptionDefaults::version_of`], the helper's
/// rule.
fn version_of(a: &Asked, default: NfsVersion) -> NfsVersion {
    let defaults = OptionDefaults {
        vers: default,
        ..OptionDefaults::default()
    };
    defaults.version_of(a.options.split(','))
}

/// Judges what each ask (with the version it mounts when it names none) will get from
/// `kernel`: one result for all of them.
pub fn judge(kernel: &KernelInfo, asks: &[(&Asked, NfsVersion)]) -> CheckResult {
    let id = ID;
    // (who asks, nconnect, vers) of every NFSv4.x ask for more than one connection.
    let mut wanting = Vec::new();
    for (a, default) in asks {
        let Some(n) = a.option("nconnect") else {
            continue;
        };
        let Ok(n) = n.parse::<u32>() else {
            return CheckResult::unknown(id, format!("nconnect={n} ({}) is not a number", a.by));
        };
        let v = version_of(a, *default);
        if n > 1 && v.is_v4() {
            wanting.push(format!("{}: nconnect={n}, NFSv4", a.by));
        }
    }
    if wanting.is_empty() {
        return CheckResult::skip(
            id,
            "no NFSv4.x mount asks for nconnect above 1 (NFSv3 always honours it over RDMA)",
        );
    }
    let asked = wanting.join("; ");
    let with = |r: CheckResult| {
        let r = r.with("asked", asked.clone());
        match &kernel.release {
            Some(release) => r.with("kernel", release.clone()),
            None => r,
        }
    };
    match nconnect_rdma(kernel) {
        NconnectRdma::Honoured(why) => with(CheckResult::pass(
            id,
            format!("{why}: NFSv4.x over RDMA makes the connections nconnect asks for"),
        )),
        NconnectRdma::Dropped(why) => with(CheckResult::warn(
            id,
            format!("{asked}: {why}, so NFSv4.x over RDMA makes one connection whatever nconnect says"),
        ))
        .remedy(format!("mount with vers=3 (NFSv3 honours nconnect over RDMA), or boot a kernel with upstream commit {COMMIT} (\"NFS: enable nconnect for RDMA\": 6.9 and later, 6.6.117 and later)")),
        NconnectRdma::Unknown(why) => with(CheckResult::unknown(
            id,
            format!("{asked}: {why}; whether nconnect is honoured is known only after mounting (mount-connections counts the connections)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::asked::AskedBy;
    use crate::checks::catalogue::expect::{says, seen};
    use crate::checks::Status;
    use crate::host::mounts::MountTable;
    use crate::nfs::ServerHost;

    fn kernel(upstream: &str) -> KernelInfo {
        KernelInfo::from_parts(Some(format!("{upstream}-amd64")), None, None)
    }

    fn planned(options: &str, version: NfsVersion, k: Option<&KernelInfo>) -> CheckResult {
        let server = ServerHost::parse("srv").unwrap();
        let table = MountTable::default();
        let asked = [Asked::new(AskedBy::Helper, options)];
        run(
            &MountSubject::Planned {
                server: &server,
                version,
                table: &table,
                asked: &asked,
                kernel: k,
            },
            Detail::Full,
        )
    }

    const V42: NfsVersion = NfsVersion::V4(Some(2));

    #[test]
    fn warns_before_mounting_on_kernels_that_drop_nconnect() {
        for k in ["6.1.176", "6.6.116", "6.8.12"] {
            let r = planned("rw,nconnect=4,proto=rdma", V42, Some(&kernel(k)));
            says(
                &r,
                Status::Warn,
                &[
                    "mount options: nconnect=4, NFSv4",
                    "predates b326df4a8ec6",
                    "one connection",
                ],
            );
            assert!(
                r.remedy.as_deref().unwrap_or("").contains("vers=3"),
                "{r:?}"
            );
        }
    }

    #[test]
    fn passes_kernels_with_the_commit() {
        for k in ["6.6.117", "6.9.0", "6.12.30"] {
            let r = planned("nconnect=4", V42, Some(&kernel(k)));
            says(&r, Status::Pass, &["b326df4a8ec6"]);
            assert_eq!(seen(&r, "asked"), "mount options: nconnect=4, NFSv4");
        }
    }

    #[test]
    fn nfsv3_and_single_connections_are_not_its_business() {
        let old = kernel("6.1.176");
        says(
            &planned("nconnect=4", NfsVersion::V3, Some(&old)),
            Status::Skip,
            &["NFSv3 always honours it"],
        );
        says(&planned("nconnect=1", V42, Some(&old)), Status::Skip, &[]);
        says(&planned("rw", V42, Some(&old)), Status::Skip, &[]);
        says(
            &planned("nconnect=lots", V42, Some(&old)),
            Status::Unknown,
            &["nconnect=lots (mount options) is not a number"],
        );
        says(
            &planned("nconnect=4", V42, None),
            Status::Skip,
            &["not known"],
        );
    }

    #[test]
    fn a_backporting_distribution_kernel_is_unknown_until_mounted() {
        let rhel = KernelInfo::from_parts(Some("5.14.0-427.13.1.el9_4.x86_64".into()), None, None);
        says(
            &planned("nconnect=8", V42, Some(&rhel)),
            Status::Unknown,
            &["RHEL kernel may carry it", "mount-connections counts"],
        );
    }

    #[test]
    fn an_fstab_line_naming_vers_3_is_judged_by_its_own_version() {
        let a = Asked::new(AskedBy::Fstab { line: 3 }, "_netdev,vers=3,nconnect=4");
        let b = Asked::new(AskedBy::Fstab { line: 4 }, "_netdev,nconnect=4");
        let r = judge(&kernel("6.1.176"), &[(&a, V42), (&b, V42)]);
        says(&r, Status::Warn, &["fstab line 4: nconnect=4, NFSv4"]);
        assert!(!r.summary.contains("fstab line 3"), "{r:?}");
    }
}
