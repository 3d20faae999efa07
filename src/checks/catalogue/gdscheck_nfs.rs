//! `gdscheck-nfs`: where doctor ran NVIDIA's `gdscheck -p` (bounded; or read its saved output
//! from a bundle), its `NFS :` line says libcufile would use nvidia-fs for NFS: `Supported`
//! before GDS 1.16, `nvfs` among the mode words from 1.16. `Unsupported`, `compat` alone, or
//! `p2pdma` alone fail: libcufile has no P2PDMA route for NFS, so `p2pdma` on that line (printed
//! when `properties.use_pci_p2pdma` is set globally) is never GPU-direct. Only doctor runs
//! gdscheck; everywhere else this check skips. Why gdscheck and the other checks agree or not is
//! doctor's `gdscheck` finding.

use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Level};
use crate::host::platform::gdscheck::NfsLine;
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("gdscheck-nfs");

pub static CHECK: Check = Check {
    id: ID,
    doc: "doctor only, where gdscheck is installed: `gdscheck -p` (bounded, or its output saved in a bundle) says NFS uses nvidia-fs (`Supported` before GDS 1.16, `nvfs` from 1.16); `Unsupported`, `compat` or `p2pdma` alone fail (NFS has no P2PDMA route)",
    scope: Scope::Node(run),
    default_level: Level::Enforce,
    waitable: false,
};

/// Why `p2pdma` on the NFS line does not count.
pub const P2PDMA_WHY: &str = "libcufile has no P2PDMA route for NFS (non-NVMe mounts go through nvidia-fs); gdscheck prints `p2pdma` on a filesystem line when properties.use_pci_p2pdma is set globally";

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let Some(g) = &facts.gdscheck else {
        return CheckResult::skip(
            id,
            "gdscheck was not run: doctor runs `gdscheck -p` where it is installed",
        );
    };
    let answer = match &g.answer {
        Ok(a) => a,
        Err(e) => return CheckResult::unknown(id, e.clone()),
    };
    let release = answer.release.as_deref().unwrap_or("release unknown");
    let with = |r: CheckResult, line: &str| {
        r.with("gdscheck", format!("{} ({release})", g.program))
            .with("NFS line", line.to_string())
    };
    let Some((line, nfs)) = &answer.nfs else {
        let e = answer
            .platform_error
            .as_deref()
            .unwrap_or("no `NFS :` line");
        return CheckResult::unknown(id, format!("gdscheck could not check the platform: {e}"))
            .with("gdscheck", format!("{} ({release})", g.program));
    };
    match nfs {
        _ if nfs.is_direct() => {
            let note = if nfs.names_p2pdma() {
                format!("; `p2pdma` on the line is not counted: {P2PDMA_WHY}")
            } else {
                String::new()
            };
            with(
                CheckResult::pass(
                    id,
                    format!("gdscheck {release} says NFS uses nvidia-fs (`{line}`){note}"),
                ),
                line,
            )
        }
        NfsLine::Unsupported => with(
            CheckResult::fail(
                id,
                format!("gdscheck {release} says `{line}`: libcufile would not use nvidia-fs for NFS, so GPU reads fall back to compat mode"),
            ),
            line,
        )
        .remedy("see doctor's `gdscheck` finding: it names the check that explains it, or what to look at when none does"),
        NfsLine::Modes { .. } if nfs.names_p2pdma() => with(
            CheckResult::fail(
                id,
                format!("gdscheck {release} says `{line}` with no `nvfs`: {P2PDMA_WHY}, so NFS is not GPU-direct"),
            ),
            line,
        )
        .remedy("set properties.use_pci_p2pdma to false for NFS-only nodes, and make nvidia-fs serve NFS (see doctor's `gdscheck` finding)"),
        NfsLine::Modes { .. } => with(
            CheckResult::fail(
                id,
                format!("gdscheck {release} says `{line}`: compat mode only, so NFS is not GPU-direct"),
            ),
            line,
        )
        .remedy("see doctor's `gdscheck` finding"),
        _ => with(
            CheckResult::unknown(
                id,
                format!("gdscheck {release} prints `{line}`, a value nfs-gds does not know"),
            ),
            line,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{says, seen};
    use crate::checks::Status;
    use crate::host::platform::gdscheck::{parse_gdscheck, GdscheckRun};

    fn with_output(text: &str) -> HostFacts {
        let answer = Ok(parse_gdscheck(text));
        HostFacts::builder()
            .with(|f| {
                f.gdscheck = Some(GdscheckRun {
                    program: "/usr/local/cuda-13.1/gds/tools/gdscheck".into(),
                    answer,
                })
            })
            .build()
    }

    fn nfs(value: &str) -> CheckResult {
        run(&with_output(&format!(
            " GDS release version: 1.16.1.26\n NFS                : {value}\n"
        )))
    }

    #[test]
    fn skips_where_gdscheck_was_not_run() {
        says(
            &run(&HostFacts::builder().build()),
            Status::Skip,
            &["doctor runs `gdscheck -p`"],
        );
    }

    #[test]
    fn nvfs_or_supported_pass_and_p2pdma_is_never_direct() {
        says(&nfs("nvfs, compat"), Status::Pass, &["NFS uses nvidia-fs"]);
        says(&nfs("Supported"), Status::Pass, &[]);
        let r = nfs("p2pdma, nvfs");
        says(&r, Status::Pass, &["`p2pdma` on the line is not counted"]);
        says(
            &nfs("p2pdma"),
            Status::Fail,
            &["no `nvfs`", "no P2PDMA route for NFS"],
        );
        says(&nfs("compat"), Status::Fail, &["compat mode only"]);
        let r = nfs("Unsupported");
        says(&r, Status::Fail, &["`NFS                : Unsupported`"]);
        assert_eq!(
            seen(&r, "gdscheck"),
            "/usr/local/cuda-13.1/gds/tools/gdscheck (1.16.1.26)"
        );
        says(&nfs("Maybe"), Status::Unknown, &["does not know"]);
    }

    #[test]
    fn a_failed_run_or_a_platform_error_is_unknown() {
        let facts = HostFacts::builder()
            .with(|f| {
                f.gdscheck = Some(GdscheckRun {
                    program: "gdscheck".into(),
                    answer: Err("gdscheck -p: did not finish within 60 s".into()),
                })
            })
            .build();
        says(&run(&facts), Status::Unknown, &["did not finish"]);
        says(
            &run(&with_output(
                " Platform verification error : Invalid argument\n",
            )),
            Status::Unknown,
            &["Platform verification error"],
        );
    }
}
