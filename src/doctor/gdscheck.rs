//! doctor's `gdscheck` finding: whether NVIDIA's `gdscheck -p` agrees with nfs-gds's own checks
//! about NFS, and when it does not, why — or what to look at when nfs-gds found nothing to
//! explain it. The `gdscheck-nfs` check judges gdscheck's line; this says how it relates to the
//! rest.

use super::finding::{finding, Finding};
use crate::checks::catalogue::gdscheck_nfs::{self, P2PDMA_WHY};
use crate::checks::{CheckResult, Status};
use crate::host::HostFacts;

/// A failing check in the words that explain an `NFS : Unsupported`.
fn explains(c: &CheckResult) -> String {
    let why = match c.id.as_str() {
        "rpcrdma-hook-export" => "the hooks are exported plain, the kernel refused them",
        "rpcrdma-hooks" => "the rpcrdma modprobe loads has no usable nvfs hooks",
        "rpcrdma-loaded" => "the loaded rpcrdma has no usable nvfs hooks",
        "nvidia-fs-loaded" => "nvidia-fs is not loaded",
        "nvidia-fs-devices" => "nvidia-fs has no device nodes",
        "nvfs-registration" => "rpcrdma did not register its hooks with nvidia-fs",
        "gpu-driver" => "the GPU driver nvidia-fs needs is missing",
        _ => "",
    };
    if why.is_empty() {
        format!("{}: {}", c.id, c.summary)
    } else {
        format!("{} ({})", why, c.id)
    }
}

/// The finding, where gdscheck was run (or its output read from a bundle).
pub fn findings(facts: &HostFacts, checks: &[CheckResult]) -> Vec<Finding> {
    let Some(run) = &facts.gdscheck else {
        return Vec::new();
    };
    let answer = match &run.answer {
        Ok(a) => a,
        Err(e) => return vec![finding("gdscheck", format!("no answer to compare: {e}"))],
    };
    let Some((line, nfs)) = &answer.nfs else {
        return vec![finding(
            "gdscheck",
            format!(
                "{} printed no NFS line{}: nothing to compare",
                run.program,
                answer
                    .platform_error
                    .as_deref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            ),
        )];
    };
    let failing: Vec<&CheckResult> = checks
        .iter()
        .filter(|c| c.status == Status::Fail && c.id != gdscheck_nfs::ID)
        .collect();
    let p2pdma = if nfs.names_p2pdma() {
        format!(" `p2pdma` on that line is never counted as direct: {P2PDMA_WHY}.")
    } else {
        String::new()
    };
    let text = match (nfs.is_direct(), failing.first()) {
        (false, Some(first)) => format!(
            "gdscheck agrees that NFS is not GPU-direct (`{line}`), and nfs-gds says why: {}.{p2pdma}",
            explains(first)
        ),
        (false, None) => format!(
            "gdscheck says `{line}` but nfs-gds found nothing wrong, so this node is not called ready until they agree. Look at /proc/driver/nvidia-fs/modules (rpcrdma must be listed; `nfs-gds doctor --probe` opens /dev/nvidia-fs0 so rpcrdma registers), the kernel log (`dmesg | grep -iE 'nvfs|nvidia_fs|symbol_get'`), and cufile.json's `fs.nfs` and `properties` (gdscheck reads the same file).{p2pdma}"
        ),
        (true, Some(_)) => format!(
            "gdscheck says `{line}`, but nfs-gds found {}: gdscheck reports what libcufile would try, not whether rpcrdma's hooks reach nvidia-fs or which transport a mount got, so these failures stand.{p2pdma}",
            failing.iter().map(|c| explains(c)).collect::<Vec<_>>().join("; ")
        ),
        (true, None) => format!("gdscheck agrees: `{line}`.{p2pdma}"),
    };
    vec![finding("gdscheck", text)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::CheckId;
    use crate::host::platform::gdscheck::{parse_gdscheck, GdscheckRun};

    fn facts(value: &str) -> HostFacts {
        let answer = Ok(parse_gdscheck(&format!(" NFS                : {value}\n")));
        HostFacts::builder()
            .with(|f| {
                f.gdscheck = Some(GdscheckRun {
                    program: "gdscheck".into(),
                    answer,
                })
            })
            .build()
    }

    fn text(value: &str, checks: &[CheckResult]) -> String {
        findings(&facts(value), checks)
            .into_iter()
            .map(|f| f.text)
            .collect()
    }

    #[test]
    fn unsupported_is_explained_by_the_failing_check_or_sends_the_admin_looking() {
        let plain = CheckResult::fail(CheckId::new("rpcrdma-hook-export"), "exported plain");
        let t = text("Unsupported", std::slice::from_ref(&plain));
        assert!(t.contains("nfs-gds says why: the hooks are exported plain, the kernel refused them (rpcrdma-hook-export)"), "{t}");
        let t = text("Unsupported", &[]);
        assert!(t.contains("nfs-gds found nothing wrong"), "{t}");
        assert!(t.contains("/proc/driver/nvidia-fs/modules"), "{t}");
        let t = text("nvfs", &[plain]);
        assert!(t.contains("these failures stand"), "{t}");
        let t = text("p2pdma, nvfs", &[]);
        assert!(t.starts_with("gdscheck agrees"), "{t}");
        assert!(t.contains("never counted as direct"), "{t}");
        assert!(findings(&HostFacts::builder().build(), &[]).is_empty());
    }
}
