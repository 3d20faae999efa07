//! `module-signature`: where the kernel enforces module signatures (Secure Boot lockdown,
//! `module.sig_enforce`, CONFIG_MODULE_SIG_FORCE), the rpcrdma and nvidia_fs files modprobe
//! would load are signed by a key the node trusts, so they are not refused with "Key was
//! rejected by service": a key enrolled in shim's MOK list (matched by serial number, so a DKMS
//! key regenerated on a reimaged node is told from the enrolled one of the same name), one queued
//! for enrolment at the next boot, or one of the kernel's own keys.

use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level, Status};
use crate::host::modules::gpl_rule::Enforcement;
use crate::host::modules::kernel_log::{parse_load_failures, LoadFailureKind};
use crate::host::platform::module_keys::ModuleKeys;
use crate::host::HostFacts;
use crate::kmod::load_facts::{LoadFacts, SignatureFacts};
use crate::kmod::signature::ModuleSignature;
use crate::kmod::NVIDIA_FS;
use crate::kmod::RPCRDMA;

pub const ID: CheckId = CheckId::new("module-signature");

pub static CHECK: Check = Check {
    id: ID,
    doc: "the rpcrdma and nvidia_fs files are signed where the kernel enforces module signatures (Secure Boot, `sig_enforce`, lockdown; the evidence that decided is shown); the signer is reported",
    scope: Scope::Node(run),
    default_level: Level::Enforce,
    waitable: false,
};

/// What the MOK step says, for remedies outside doctor.
const MOK_FIX: &str = "sign the module with a key the kernel trusts: let DKMS sign what it builds (`dkms generate_mok`, then rebuild the module) and enroll its key with `mokutil --import /var/lib/dkms/mok.pub` (Ubuntu's DKMS: `/var/lib/shim-signed/mok/MOK.der`) and a reboot";

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
                judge(
                    m,
                    f,
                    *loaded,
                    enforcement.enforcement,
                    rejected,
                    &facts.module_keys,
                ),
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
    if let Some(keys) = enrolled_words(&facts.module_keys) {
        r = r.with("enrolled keys", keys);
    }
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

fn judge(
    module: &str,
    f: &LoadFacts,
    loaded: bool,
    e: Enforcement,
    rejected: bool,
    keys: &ModuleKeys,
) -> Judged {
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
        (SignatureFacts::Signed(s), Enforcement::Enforced | Enforcement::Unknown)
            if !matches!(trust(s, keys), Trust::Trusted(_) | Trust::Unknown) =>
        {
            let signed = format!(
                "{name} is signed by {} (key {})",
                s.signer.as_deref().unwrap_or("an unnamed signer"),
                s.key_id.as_deref().unwrap_or("unnamed")
            );
            let refused = if e == Enforcement::Enforced {
                "the kernel refuses it with `Key was rejected by service`"
            } else {
                "a kernel that enforces signatures refuses it"
            };
            let bad = if loaded || e != Enforcement::Enforced {
                Status::Warn
            } else {
                Status::Fail
            };
            match trust(s, keys) {
                Trust::Pending => j(
                    Status::Warn,
                    format!("{signed}, whose enrolment is pending: confirm it in the MOK manager at the next boot, or {refused}"),
                ),
                Trust::Replaced { enrolled } => j(
                    bad,
                    format!("{signed}, but the enrolled key of that name has serial {enrolled}: the signing key changed since its enrolment (a reimaged node's new DKMS key), so {refused}"),
                ),
                _ => j(
                    bad,
                    format!("{signed}, a key this node has not enrolled (in neither the MOK list nor the kernel's keyrings): {refused}"),
                ),
            }
        }
        (SignatureFacts::Signed(s), _) => j(
            Status::Pass,
            format!(
                "{name} is signed by {}{}{}",
                s.signer.as_deref().unwrap_or("an unnamed signer"),
                s.key_id.as_deref().map(|k| format!(" (key {k})")).unwrap_or_default(),
                match trust(s, keys) {
                    Trust::Trusted(how) => format!(", {how}"),
                    _ => String::new(),
                }
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

/// Whether the node trusts the key a signature names.
enum Trust {
    /// Enrolled in the MOK list, or a kernel key: the evidence.
    Trusted(String),
    /// Queued by `mokutil --import` for the next boot.
    Pending,
    /// The MOK list holds a key of the same name with another serial number.
    Replaced { enrolled: String },
    /// Neither the MOK list nor the keyrings name it.
    NotEnrolled,
    /// Nothing below the root says.
    Unknown,
}

fn trust(sig: &ModuleSignature, keys: &ModuleKeys) -> Trust {
    let same_key = |c: &crate::host::platform::module_keys::EnrolledCert| {
        sig.key_id.as_deref() == Some(c.serial.as_str())
            && (sig.signer.is_none() || c.issuer == sig.signer)
    };
    let list = keys.enrolled.as_ref().ok().and_then(|l| l.as_ref());
    if let Some(l) = list.filter(|l| l.certs.iter().any(same_key)) {
        return Trust::Trusted(format!("enrolled in {}", l.source));
    }
    if keys.pending.iter().any(same_key) {
        return Trust::Pending;
    }
    let same_name = list.and_then(|l| {
        l.certs
            .iter()
            .find(|c| sig.signer.is_some() && c.subject == sig.signer)
    });
    if let Some(c) = same_name {
        return Trust::Replaced {
            enrolled: c.serial.clone(),
        };
    }
    let kernel = keys.kernel_keys.as_deref().filter(|k| !k.is_empty());
    match (kernel, &sig.signer) {
        (Some(k), Some(signer)) if k.contains(signer) => {
            Trust::Trusted("a key in the kernel's keyrings (/proc/keys)".into())
        }
        (Some(_), Some(_)) => Trust::NotEnrolled,
        (None, Some(_)) if list.is_some() => Trust::NotEnrolled,
        _ => Trust::Unknown,
    }
}

/// The enrolled MOK certificates, when a list was read (or why it could not be).
fn enrolled_words(keys: &ModuleKeys) -> Option<String> {
    let name = |c: &crate::host::platform::module_keys::EnrolledCert| {
        format!(
            "{} (serial {})",
            c.subject.as_deref().unwrap_or("unnamed"),
            c.serial
        )
    };
    let mut words = match &keys.enrolled {
        Err(e) => format!("the MOK list could not be read: {e}"),
        Ok(None) => return None,
        Ok(Some(l)) if l.certs.is_empty() => format!("{}: no certificates", l.source),
        Ok(Some(l)) => format!(
            "{}: {}",
            l.source,
            l.certs.iter().map(name).collect::<Vec<_>>().join(", ")
        ),
    };
    if !keys.pending.is_empty() {
        words.push_str(&format!(
            "; pending for the next boot: {}",
            keys.pending.iter().map(name).collect::<Vec<_>>().join(", ")
        ));
    }
    Some(words)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::host::facts_builder::{self as b, DKMS_RPCRDMA};
    use crate::host::modules::sig_enforcement::SignatureEnforcement;
    use crate::host::platform::module_keys::{EnrolledCert, MokList};
    use crate::kmod::signature::SignatureIdType;

    fn signed_by(signer: &str) -> SignatureFacts {
        SignatureFacts::Signed(ModuleSignature {
            id_type: SignatureIdType::Pkcs7,
            signer: Some(signer.into()),
            key_id: Some("4f:2a".into()),
            hash_algorithm: Some("sha256".into()),
            signature_len: 512,
            signed_len: 90_000,
        })
    }

    /// The ordinary node whose rpcrdma file is signed as `signature`, under `enforcement`.
    fn node(signature: SignatureFacts, enforcement: Enforcement, loaded: bool) -> HostFacts {
        HostFacts::builder()
            .with(|f| {
                f.rpcrdma.loaded = loaded;
                f.rpcrdma_load.file = Some(Ok(b::load_facts(DKMS_RPCRDMA, signature)));
                f.rpcrdma_load.signatures = Ok(SignatureEnforcement {
                    enforcement,
                    evidence: "Secure Boot is on and the kernel is locked down".into(),
                });
            })
            .build()
    }

    #[test]
    fn passes_a_signed_file_and_names_the_signer() {
        let r = run(&node(
            signed_by("DKMS module signing key"),
            Enforcement::Enforced,
            false,
        ));
        says(
            &r,
            Status::Pass,
            &["rpcrdma.ko is signed by DKMS module signing key (key 4f:2a)"],
        );
        assert_eq!(
            seen(&r, "enforcement"),
            "enforced: Secure Boot is on and the kernel is locked down"
        );
        assert!(
            seen(&r, "rpcrdma file").ends_with("rpcrdma.ko: signed (PKCS#7), signer DKMS module signing key, key 4f:2a, digest sha256"),
            "{r:#?}"
        );
    }

    #[test]
    fn passes_an_unsigned_file_where_signatures_are_not_enforced() {
        let r = run(&node(
            SignatureFacts::Unsigned,
            Enforcement::NotEnforced,
            false,
        ));
        says(&r, Status::Pass, &["not signed, which this kernel accepts"]);
        assert!(seen(&r, "rpcrdma file").ends_with("unsigned"));
    }

    #[test]
    fn fails_an_unsigned_file_the_kernel_refuses() {
        let r = run(&node(
            SignatureFacts::Unsigned,
            Enforcement::Enforced,
            false,
        ));
        says(
            &r,
            Status::Fail,
            &["rpcrdma.ko is not signed", "Key was rejected by service"],
        );
        assert_eq!(r.fixes, vec![Fix::SignModules]);
        assert!(remedy(&r).contains("mokutil --import"));
    }

    #[test]
    fn an_unreadable_signature_fails_like_none() {
        let r = run(&node(
            SignatureFacts::Unreadable {
                reason: "truncated PKCS#7".into(),
            },
            Enforcement::Enforced,
            false,
        ));
        says(
            &r,
            Status::Fail,
            &["unreadable signature (truncated PKCS#7)"],
        );
    }

    #[test]
    fn a_loaded_unsigned_module_only_warns_of_its_next_load() {
        let r = run(&node(SignatureFacts::Unsigned, Enforcement::Enforced, true));
        says(
            &r,
            Status::Warn,
            &["the loaded rpcrdma serves now", "next load is refused"],
        );
        assert!(r.fixes.is_empty());
        assert!(remedy(&r).contains("mokutil"));
    }

    #[test]
    fn warns_when_enforcement_is_not_known() {
        let r = run(&node(SignatureFacts::Unsigned, Enforcement::Unknown, false));
        says(
            &r,
            Status::Warn,
            &["whether the kernel enforces signatures is not known"],
        );
    }

    #[test]
    fn a_key_rejected_in_the_log_fails_a_signed_file() {
        let mut facts = node(signed_by("Build key"), Enforcement::Enforced, false);
        facts.kernel_log = Some(
            "modprobe: ERROR: could not insert 'rpcrdma': Key was rejected by service\n".into(),
        );
        let r = run(&facts);
        says(
            &r,
            Status::Fail,
            &["signed by Build key", "key rejected", "not enrolled"],
        );
        assert!(seen(&r, "kernel log").contains("Key was rejected by service"));
    }

    #[test]
    fn judges_nvidia_fs_beside_rpcrdma_and_reports_the_worst() {
        let mut facts = node(signed_by("Build key"), Enforcement::Enforced, false);
        facts.rpcrdma_load.nvidia_fs_file = Some(Ok(b::load_facts(
            "updates/dkms/nvidia-fs.ko",
            SignatureFacts::Unsigned,
        )));
        let r = run(&facts);
        says(&r, Status::Fail, &["nvidia-fs.ko is not signed"]);
        assert!(
            !r.summary.contains("rpcrdma.ko"),
            "only the worst lines: {r:#?}"
        );
        assert!(seen(&r, "nvidia_fs file").ends_with("unsigned"));
        assert!(seen(&r, "rpcrdma file").contains("signer Build key"));
    }

    #[test]
    fn skips_without_files_and_is_unknown_without_enforcement() {
        let r = run(&HostFacts::builder().build());
        says(&r, Status::Skip, &["no rpcrdma or nvidia_fs module file"]);
        assert_eq!(
            seen(&r, "enforcement"),
            "no Secure Boot, no module.sig_enforce"
        );
        let r = run(&HostFacts::builder()
            .with(|f| {
                f.rpcrdma_load.signatures =
                    Err("/sys/kernel/security/lockdown: permission denied".into())
            })
            .build());
        says(
            &r,
            Status::Unknown,
            &["could not be read", "permission denied"],
        );
    }

    fn cert(subject: &str, serial: &str) -> EnrolledCert {
        EnrolledCert {
            subject: Some(subject.into()),
            issuer: Some(subject.into()),
            serial: serial.into(),
        }
    }

    /// The Secure Boot node whose unloaded rpcrdma is signed by the DKMS key `4f:2a`, with
    /// `enrolled` in its MOK list, `pending` queued and the keyrings naming `kernel`.
    fn keyed(
        enrolled: Vec<EnrolledCert>,
        pending: Vec<EnrolledCert>,
        kernel: &[&str],
    ) -> HostFacts {
        let mut facts = node(
            signed_by("DKMS module signing key"),
            Enforcement::Enforced,
            false,
        );
        facts.module_keys = ModuleKeys {
            enrolled: Ok(Some(MokList {
                source: "/sys/firmware/efi/mok-variables/MokListRT".into(),
                certs: enrolled,
            })),
            pending,
            kernel_keys: Some(kernel.iter().map(|k| k.to_string()).collect()),
        };
        facts
    }

    #[test]
    fn an_enrolled_dkms_key_passes_and_says_where_it_is_enrolled() {
        let r = run(&keyed(
            vec![cert("DKMS module signing key", "4f:2a")],
            vec![],
            &["Debian Secure Boot CA", "DKMS module signing key"],
        ));
        says(
            &r,
            Status::Pass,
            &["signed by DKMS module signing key (key 4f:2a), enrolled in /sys/firmware/efi/mok-variables/MokListRT"],
        );
        assert_eq!(
            seen(&r, "enrolled keys"),
            "/sys/firmware/efi/mok-variables/MokListRT: DKMS module signing key (serial 4f:2a)"
        );
    }

    #[test]
    fn a_regenerated_dkms_key_of_the_enrolled_name_fails_before_the_reboot() {
        let r = run(&keyed(
            vec![cert("DKMS module signing key", "11:22")],
            vec![],
            &["DKMS module signing key"],
        ));
        says(
            &r,
            Status::Fail,
            &[
                "key 4f:2a",
                "enrolled key of that name has serial 11:22",
                "signing key changed",
                "Key was rejected by service",
            ],
        );
        assert_eq!(r.fixes, vec![Fix::SignModules]);
    }

    #[test]
    fn a_key_never_enrolled_fails_and_a_pending_one_warns() {
        let r = run(&keyed(vec![], vec![], &["Debian Secure Boot CA"]));
        says(
            &r,
            Status::Fail,
            &[
                "a key this node has not enrolled",
                "Key was rejected by service",
            ],
        );
        let r = run(&keyed(
            vec![],
            vec![cert("DKMS module signing key", "4f:2a")],
            &[],
        ));
        says(
            &r,
            Status::Warn,
            &["enrolment is pending", "MOK manager at the next boot"],
        );
        assert!(seen(&r, "enrolled keys")
            .ends_with("pending for the next boot: DKMS module signing key (serial 4f:2a)"));
    }

    #[test]
    fn a_kernel_key_passes_and_nothing_known_keeps_the_old_answer() {
        let mut facts = keyed(vec![], vec![], &["DKMS module signing key"]);
        facts.module_keys.enrolled = Ok(None);
        says(
            &run(&facts),
            Status::Pass,
            &["a key in the kernel's keyrings"],
        );
        // No MOK list and no keyrings shown (an unprivileged reader): the signature is all there is.
        facts.module_keys = ModuleKeys::none();
        says(
            &run(&facts),
            Status::Pass,
            &["signed by DKMS module signing key (key 4f:2a)"],
        );
        // Where signatures are not enforced, an unknown key only taints.
        let mut facts = keyed(vec![], vec![], &["Debian Secure Boot CA"]);
        facts.rpcrdma_load.signatures = Ok(SignatureEnforcement {
            enforcement: Enforcement::NotEnforced,
            evidence: "no Secure Boot".into(),
        });
        says(&run(&facts), Status::Pass, &["signed by"]);
    }
}
