//! `module-signature`: where the kernel enforces module signatures (Secure Boot lockdown,
//! `module.sig_enforce`, CONFIG_MODULE_SIG_FORCE), the rpcrdma and nvidia_fs files modprobe
//! would load are signed, so they are not refused with "Key was rejected by service".

use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level, Status};
use crate::host::modules::gpl_rule::Enforcement;
use crate::host::modules::kernel_log::{parse_load_failures, LoadFailureKind};
use crate::host::HostFacts;
use crate::kmod::load_facts::{LoadFacts, SignatureFacts};
use crate::kmod::NVIDIA_FS;
use crate::kmod::RPCRDMA;

pub const ID: CheckId = CheckId::new("module-signature");

pub static CHECK: Check = Check {
    id: ID,
    doc: "the rpcrdma and nvidia_fs files are signed where the kernel enforces module signatures (Secure Boot, `sig_enforce`, lockdown)",
    scope: Scope::Node(run),
    default_level: Level::Enforce,
    waitable: false,
};

/// What the MOK step says, for remedies outside doctor.
const MOK_FIX: &str = "sign the module with a key the kernel trusts: let DKMS sign what it builds (`dkms generate_mok`, then rebuild the module) and enroll its key with `mokutil --import /var/lib/dkms/mok.pub` and a reboot";

/// One module's verdict.
struct Judged {
    status: Status,
    line: String,
}

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let load = &facts.rpcrdma_load;
    let enforcement = match &load.signatures {
        Ok(s) => s,
        Err(e) => {
            return CheckResult::unknown(
                id,
                format!("whether the kernel enforces module signatures could not be read: {e}"),
            )
        }
    };
    let loaded_nvfs = facts.nvidia_fs.loaded;
    let files: Vec<(&str, &LoadFacts, bool)> = [
        (RPCRDMA, load.file.as_ref(), facts.rpcrdma.loaded),
        (NVIDIA_FS, load.nvidia_fs_file.as_ref(), loaded_nvfs),
    ]
    .into_iter()
    .filter_map(|(m, f, loaded)| match f {
        Some(Ok(f)) => Some((m, f, loaded)),
        _ => None,
    })
    .collect();
    let rejected_in_log = key_rejections(facts);
    if files.is_empty() {
        return CheckResult::skip(id, "no rpcrdma or nvidia_fs module file to check")
            .with("enforcement", enforcement.evidence.clone());
    }
    let judged: Vec<(&str, &LoadFacts, Judged)> = files
        .iter()
        .map(|(m, f, loaded)| {
            let signed = matches!(f.signature, SignatureFacts::Signed(_));
            let rejected = rejected_in_log.iter().any(|(lm, kind, _)| {
                lm.as_deref().is_none_or(|n| n == *m) && can_concern(kind, signed)
            });
            (
                *m,
                *f,
                judge(m, f, *loaded, enforcement.enforcement, rejected),
            )
        })
        .collect();
    let worst = judged
        .iter()
        .map(|(_, _, j)| j.status)
        .max()
        .unwrap_or(Status::Pass);
    let lines: Vec<&str> = judged
        .iter()
        .filter(|(_, _, j)| j.status == worst)
        .map(|(_, _, j)| j.line.as_str())
        .collect();
    let mut r = CheckResult::new(id, worst, lines.join("; "));
    if worst == Status::Fail {
        r = r.fix(Fix::SignModules).remedy(MOK_FIX);
    } else if worst == Status::Warn {
        r = r.remedy(MOK_FIX);
    }
    r = r.with(
        "enforcement",
        format!(
            "{}: {}",
            enforcement.enforcement.as_str(),
            enforcement.evidence
        ),
    );
    for (m, f, _) in &judged {
        r = r.with(
            format!("{m} file"),
            format!("{}: {}", f.path.display(), signature_words(&f.signature)),
        );
    }
    rejected_in_log
        .into_iter()
        .fold(r, |r, (_, _, line)| r.with("kernel log", line))
}

fn judge(module: &str, f: &LoadFacts, loaded: bool, e: Enforcement, rejected: bool) -> Judged {
    let name = f
        .path
        .file_name()
        .map_or_else(|| module.to_string(), |n| n.to_string_lossy().into_owned());
    let j = |status, line: String| Judged { status, line };
    match (&f.signature, e) {
        (SignatureFacts::Signed(s), _) if rejected && !loaded => j(
            Status::Fail,
            format!(
                "{name} is signed by {}, but the kernel log shows a key rejected: that key is not enrolled",
                s.signer.as_deref().unwrap_or("an unnamed signer")
            ),
        ),
        (SignatureFacts::Signed(s), _) => j(
            Status::Pass,
            format!(
                "{name} is signed by {}{}",
                s.signer.as_deref().unwrap_or("an unnamed signer"),
                s.key_id.as_deref().map(|k| format!(" (key {k})")).unwrap_or_default()
            ),
        ),
        (_, Enforcement::NotEnforced) => j(
            Status::Pass,
            format!("{name} is not signed, which this kernel accepts (it taints itself)"),
        ),
        (sig, Enforcement::Enforced) => {
            let what = match sig {
                SignatureFacts::Unreadable { reason } => format!("has an unreadable signature ({reason})"),
                _ => "is not signed".to_string(),
            };
            if loaded {
                j(Status::Warn, format!("{name} {what} and the kernel enforces signatures: the loaded {module} serves now, but its next load is refused (Key was rejected by service)"))
            } else {
                j(Status::Fail, format!("{name} {what} and the kernel enforces signatures: modprobe fails with `Key was rejected by service`"))
            }
        }
        (_, _) => j(
            Status::Warn,
            format!("{name} is not signed, and whether the kernel enforces signatures is not known"),
        ),
    }
}

fn signature_words(s: &SignatureFacts) -> String {
    match s {
        SignatureFacts::Unsigned => "unsigned".into(),
        SignatureFacts::Signed(s) => format!(
            "signed ({}), signer {}, key {}, digest {}",
            s.id_type.as_str(),
            s.signer.as_deref().unwrap_or("unnamed"),
            s.key_id.as_deref().unwrap_or("none"),
            s.hash_algorithm.as_deref().unwrap_or("unknown")
        ),
        SignatureFacts::Unreadable { reason } => format!("unreadable signature: {reason}"),
    }
}

/// Signature refusals of rpcrdma or nvidia_fs (or of an unnamed module) in the kernel log.
fn key_rejections(facts: &HostFacts) -> Vec<(Option<String>, LoadFailureKind, String)> {
    let Some(log) = &facts.kernel_log else {
        return Vec::new();
    };
    parse_load_failures(log, &[RPCRDMA, NVIDIA_FS])
        .into_iter()
        .filter(|f| {
            matches!(
                f.kind,
                LoadFailureKind::KeyRejected
                    | LoadFailureKind::SignatureRejected { .. }
                    | LoadFailureKind::LockdownRestricted { .. }
            )
        })
        .map(|f| (f.module, f.kind, f.line))
        .collect()
}

/// Whether a refusal in the log can be about a file that is (or is not) signed. The log keeps
/// refusals of files that have since been replaced, and the kernel's own lines name no module:
/// `Loading of unsigned module is rejected` and lockdown's `unsigned module loading is
/// restricted` were about an unsigned file, so they say nothing against a signed one (the signed
/// inbox rpcrdma put back after a refused unsigned build). `Key was rejected by service` and
/// `Loading of module with unavailable key is rejected` can be about either.
fn can_concern(kind: &LoadFailureKind, signed: bool) -> bool {
    match kind {
        LoadFailureKind::SignatureRejected { reason } => !signed || !reason.contains("unsigned"),
        LoadFailureKind::LockdownRestricted { .. } => !signed,
        _ => true,
    }
}
