//! Does this kernel refuse `__symbol_get` of symbols that are not exported GPL?
//!
//! Upstream commit 9011e49d54dc ("modules: only allow symbol_get of EXPORT_SYMBOL_GPL modules")
//! entered v6.6 and was backported to the stable series listed in [`STABLE_BACKPORTS`]. With it,
//! nvidia-fs cannot take a hook exported with plain `EXPORT_SYMBOL` and GDS silently falls back.
//!
//! Evidence, best first:
//! 1. the kernel image itself: when the rule is compiled in, the decompressed payload of
//!    `/boot/vmlinuz-<release>` contains the text of its warning ([`RULE_TEXT`]);
//! 2. the upstream version, when the distribution reveals it exactly (Debian, Ubuntu);
//! 3. the version at the start of the release string, which vendor kernels may contradict by
//!    backporting without saying (RHEL does) — so it can prove "enforced" but never "not enforced".

use serde::Serialize;

use crate::host::io::root::Root;
use crate::host::kernel::{KernelInfo, KernelVersion, VersionSource};
use crate::kmod::image_scan::ScanOutcome;

/// The text the rule's warning prints; present in every kernel image that has the rule.
pub const RULE_TEXT: &[u8] = b"failing symbol_get of non-GPLONLY symbol";

/// First release of each stable series that carries the rule (series without an entry and older
/// than 6.6 never got it).
///
/// Verified from the stable team's own mail (the `linux-stable-rc` / `linux-stable` push
/// notifications and the stable review series, all September 2023), where the backport is
/// "modules: only allow symbol_get of EXPORT_SYMBOL_GPL modules":
/// - 4.14.326: "[PATCH 4.14 004/186]" of the 4.14.326 review (2023-09-20); in `Linux 4.14.326-rc1`;
/// - 4.19.295: in `Linux 4.19.295-rc1` (linux-4.19.y push, 2023-09-17), 4.19.295 review 2023-09-20;
/// - 5.4.257: in `Linux 5.4.257-rc1` (2023-09-11) and the 5.4.257 release announcement (2023-09-23);
/// - 5.10.195: "[PATCH 5.10 006/406]" of the 5.10.195 review (2023-09-17);
/// - 5.15.131: the `linux-5.15.y` push that tagged `Linux 5.15.131` (2023-09-06);
/// - 6.1.52: "[PATCH 6.1 10/31]" of the 6.1.52 review (2023-09-04);
/// - 6.4.15: "[PATCH 6.4 10/32]" of the 6.4.15 review (2023-09-04);
/// - 6.5.2: "[PATCH 6.5 11/34]" of the 6.5.2 review (2023-09-04).
///
/// An earlier table from memory had 4.14.325, 4.19.294, 5.4.256 and 5.10.194: one release too
/// early each. Vendor trees do not follow this table either way: openEuler's OLK-5.10 carried the
/// backport and later reverted it (2024-03), RHEL backports without changing its version number;
/// that is why the kernel image itself is asked first.
pub const STABLE_BACKPORTS: [KernelVersion; 8] = [
    KernelVersion::new(4, 14, 326),
    KernelVersion::new(4, 19, 295),
    KernelVersion::new(5, 4, 257),
    KernelVersion::new(5, 10, 195),
    KernelVersion::new(5, 15, 131),
    KernelVersion::new(6, 1, 52),
    KernelVersion::new(6, 4, 15),
    KernelVersion::new(6, 5, 2),
];

/// Mainline release that introduced the rule.
pub const MAINLINE: KernelVersion = KernelVersion::new(6, 6, 0);

/// Whether an upstream version carries the rule by the version table.
pub fn version_has_rule(v: KernelVersion) -> bool {
    if v >= MAINLINE {
        return true;
    }
    STABLE_BACKPORTS
        .iter()
        .any(|b| b.major == v.major && b.minor == v.minor && v.patch >= b.patch)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Enforcement {
    Enforced,
    NotEnforced,
    Unknown,
}

impl Enforcement {
    pub fn as_str(self) -> &'static str {
        match self {
            Enforcement::Enforced => "enforced",
            Enforcement::NotEnforced => "not enforced",
            Enforcement::Unknown => "unknown",
        }
    }
}

/// The answer and what it rests on.
#[derive(Debug, Clone, Serialize)]
pub struct GplRule {
    pub enforcement: Enforcement,
    /// One sentence naming the evidence used (and, when unknown, why nothing decided).
    pub evidence: String,
}

/// Weighs the evidence. `image` is the outcome of scanning the kernel image, if one was found.
pub fn weigh(kernel: &KernelInfo, image: Option<(&str, &ScanOutcome)>) -> GplRule {
    let mut notes = Vec::new();
    if let Some((path, outcome)) = image {
        match outcome {
            ScanOutcome::Found { format } => {
                return GplRule {
                    enforcement: Enforcement::Enforced,
                    evidence: format!(
                        "the kernel image {path} ({format} payload) contains the rule's warning text"
                    ),
                }
            }
            ScanOutcome::NotFound { format } => {
                return GplRule {
                    enforcement: Enforcement::NotEnforced,
                    evidence: format!(
                        "the kernel image {path} ({format} payload) does not contain the rule's warning text"
                    ),
                }
            }
            ScanOutcome::NoPayload => notes.push(format!(
                "no gzip, xz, zstd or ELF payload could be read from {path}"
            )),
            ScanOutcome::Error(e) => notes.push(format!("{path} could not be scanned: {e}")),
        }
    } else {
        notes.push("no kernel image found under /boot".to_string());
    }
    match (kernel.upstream, kernel.upstream_source) {
        (Some(v), Some(source)) => {
            let from = match source {
                VersionSource::VersionSignature => "/proc/version_signature",
                VersionSource::ProcVersion => "the distribution version in /proc/version",
                VersionSource::Release => "the release string",
            };
            if version_has_rule(v) {
                GplRule {
                    enforcement: Enforcement::Enforced,
                    evidence: format!("upstream version {v} (from {from}) carries the rule"),
                }
            } else if source == VersionSource::Release {
                notes.push(format!(
                    "upstream version {v} from the release string predates the rule, but vendor kernels backport it without changing that number"
                ));
                GplRule {
                    enforcement: Enforcement::Unknown,
                    evidence: notes.join("; "),
                }
            } else {
                GplRule {
                    enforcement: Enforcement::NotEnforced,
                    evidence: format!("upstream version {v} (from {from}) predates the rule"),
                }
            }
        }
        _ => {
            notes.push("the upstream kernel version is unknown".to_string());
            GplRule {
                enforcement: Enforcement::Unknown,
                evidence: notes.join("; "),
            }
        }
    }
}

/// The kernel image for `release`: `/boot/vmlinuz-<release>`, else `/boot/vmlinux-<release>`,
/// else `/boot/Image-<release>`.
pub fn kernel_image(root: &Root, release: &str) -> Option<String> {
    ["vmlinuz", "vmlinux", "Image"]
        .iter()
        .map(|p| format!("/boot/{p}-{release}"))
        .find(|p| root.is_file(p))
}

/// Gathers the evidence from the host and judges it. The image scan is answered from the
/// module facts cache ([`crate::host::io::facts_cache`]) while the image file is unchanged.
pub fn read(root: &Root, kernel: &KernelInfo) -> GplRule {
    let image = kernel
        .release
        .as_deref()
        .and_then(|r| kernel_image(root, r));
    match image {
        Some(p) => {
            let cache = crate::host::io::facts_cache::FactsCache::of(root);
            let outcome = crate::host::modules::module_files::scan_file_with_cache(
                root,
                &root.join(&p),
                RULE_TEXT,
                cache.as_ref(),
            );
            weigh(kernel, Some((&p, &outcome)))
        }
        None => weigh(kernel, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_table() {
        assert!(version_has_rule(KernelVersion::new(6, 6, 0)));
        assert!(version_has_rule(KernelVersion::new(6, 12, 48)));
        assert!(version_has_rule(KernelVersion::new(6, 1, 176)));
        assert!(version_has_rule(KernelVersion::new(6, 1, 52)));
        assert!(!version_has_rule(KernelVersion::new(6, 1, 51)));
        assert!(!version_has_rule(KernelVersion::new(6, 2, 16)));
        assert!(version_has_rule(KernelVersion::new(5, 15, 131)));
        assert!(!version_has_rule(KernelVersion::new(5, 15, 130)));
        assert!(!version_has_rule(KernelVersion::new(5, 14, 0)));
        // The first releases of each older series, one past what was once assumed.
        assert!(!version_has_rule(KernelVersion::new(4, 14, 325)));
        assert!(version_has_rule(KernelVersion::new(4, 14, 326)));
        assert!(!version_has_rule(KernelVersion::new(4, 19, 294)));
        assert!(version_has_rule(KernelVersion::new(4, 19, 295)));
        assert!(!version_has_rule(KernelVersion::new(5, 4, 256)));
        assert!(version_has_rule(KernelVersion::new(5, 4, 257)));
        assert!(!version_has_rule(KernelVersion::new(5, 10, 194)));
        assert!(version_has_rule(KernelVersion::new(5, 10, 195)));
        assert!(!version_has_rule(KernelVersion::new(6, 4, 14)));
        assert!(version_has_rule(KernelVersion::new(6, 5, 2)));
        assert!(!version_has_rule(KernelVersion::new(6, 5, 1)));
    }

    #[test]
    fn image_evidence_wins() {
        let k = KernelInfo::from_parts(Some("5.14.0-427.el9.x86_64".into()), None, None);
        let r = weigh(
            &k,
            Some(("/boot/vmlinuz-x", &ScanOutcome::Found { format: "xz" })),
        );
        assert_eq!(r.enforcement, Enforcement::Enforced);
        assert!(r.evidence.contains("/boot/vmlinuz-x"));
    }

    #[test]
    fn release_string_cannot_prove_absence() {
        let k = KernelInfo::from_parts(Some("5.14.0-427.el9.x86_64".into()), None, None);
        let r = weigh(&k, None);
        assert_eq!(r.enforcement, Enforcement::Unknown);
        assert!(r.evidence.contains("backport"), "{}", r.evidence);
        let k = KernelInfo::from_parts(Some("6.8.0-45-generic".into()), None, None);
        assert_eq!(weigh(&k, None).enforcement, Enforcement::Enforced);
    }

    #[test]
    fn exact_distribution_version_can_prove_absence() {
        let k = KernelInfo::from_parts(
            Some("5.15.0-70-generic".into()),
            None,
            Some("Ubuntu 5.15.0-70.77-generic 5.15.92".into()),
        );
        assert_eq!(weigh(&k, None).enforcement, Enforcement::NotEnforced);
    }
}
