//! Does a kernel refuse unsigned modules? Secure Boot, lockdown and `sig_enforce` evidence.
//!
//! An unsigned DKMS rpcrdma or nvidia-fs is refused at load time ("Key was rejected by service")
//! when the kernel enforces module signatures. It does when any of these holds:
//! - `sig_enforce` is on: built in (`CONFIG_MODULE_SIG_FORCE=y`) or `module.sig_enforce=1` on
//!   the command line; the running kernel shows it in `/sys/module/module/parameters/sig_enforce`;
//! - lockdown is `integrity` or `confidentiality` (`/sys/kernel/security/lockdown` shows the
//!   mode in brackets): forced at build time, `lockdown=` on the command line, or, in the
//!   distribution kernels built with `CONFIG_LOCK_DOWN_IN_EFI_SECURE_BOOT`, because the firmware
//!   booted with Secure Boot on (the EFI variable `SecureBoot-8be4df61-…`: 4 attribute bytes,
//!   then 1 for on).
//!
//! The running kernel's live state decides for it; a kernel that is not running (the next boot)
//! is judged from its configuration, its command line and the firmware's Secure Boot state.
//! [`judge_running`] and [`judge_boot`] are pure; [`SignatureEvidence::read`] gathers.

use serde::Serialize;

use crate::host::kernel_cmdline::kernel_words;
use crate::host::modules::gpl_rule::Enforcement;
use crate::host::modules::kernel_config::KernelConfig;

/// The kernel configuration options these judgements read.
pub const CONFIG_OPTIONS: &[&str] = &[
    "CONFIG_MODULE_SIG",
    "CONFIG_MODULE_SIG_FORCE",
    "CONFIG_SECURITY_LOCKDOWN_LSM",
    "CONFIG_LOCK_DOWN_KERNEL_FORCE_INTEGRITY",
    "CONFIG_LOCK_DOWN_KERNEL_FORCE_CONFIDENTIALITY",
    "CONFIG_LOCK_DOWN_IN_EFI_SECURE_BOOT",
];
use crate::host::io::error::HostError;
use crate::host::io::root::{read_first_line, Root};

/// `SecureBoot`: 1 when the firmware verifies what it boots.
pub const SECURE_BOOT_VAR: &str =
    "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0a9f7a9b0ae";
/// `/sys/kernel/security/lockdown`.
pub const LOCKDOWN_PATH: &str = "/sys/kernel/security/lockdown";
/// The running kernel's `sig_enforce`; only kernels with `CONFIG_MODULE_SIG` have it.
pub const SIG_ENFORCE_PARAM: &str = "/sys/module/module/parameters/sig_enforce";

/// A lockdown mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lockdown {
    None,
    Integrity,
    Confidentiality,
}

impl Lockdown {
    fn from_word(w: &str) -> Option<Self> {
        match w {
            "none" => Some(Lockdown::None),
            "integrity" => Some(Lockdown::Integrity),
            "confidentiality" => Some(Lockdown::Confidentiality),
            _ => None,
        }
    }

    /// Whether this mode refuses unsigned modules.
    pub fn refuses_unsigned(self) -> bool {
        self != Lockdown::None
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Lockdown::None => "none",
            Lockdown::Integrity => "integrity",
            Lockdown::Confidentiality => "confidentiality",
        }
    }
}

/// An EFI boolean variable as efivarfs shows it: 4 bytes of attributes, then the value byte.
pub fn parse_efi_bool(bytes: &[u8]) -> Result<bool, String> {
    match bytes.get(4) {
        Some(0) => Ok(false),
        Some(1) => Ok(true),
        Some(v) => Err(format!("value byte is {v}, neither 0 nor 1")),
        None => Err(format!(
            "{} bytes; expected 4 attribute bytes and a value",
            bytes.len()
        )),
    }
}

/// The bracketed mode of `/sys/kernel/security/lockdown` (`none [integrity] confidentiality`).
pub fn parse_lockdown(text: &str) -> Option<Lockdown> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .and_then(Lockdown::from_word)
}

/// A kernel boolean parameter's text: `Y`/`N` (sysfs), `1`/`0`, `y`/`n`, `on`/`off`.
pub fn parse_kernel_bool(text: &str) -> Option<bool> {
    match text.trim() {
        "Y" | "y" | "1" | "on" | "true" => Some(true),
        "N" | "n" | "0" | "off" | "false" => Some(false),
        _ => None,
    }
}

/// `module.sig_enforce` on a kernel command line (the last one wins; bare means on).
pub fn cmdline_sig_enforce(cmdline: &str) -> Option<bool> {
    kernel_words(cmdline)
        .filter_map(|w| match w.split_once('=') {
            None if w == "module.sig_enforce" => Some(Some(true)),
            Some(("module.sig_enforce", v)) => Some(parse_kernel_bool(v)),
            _ => None,
        })
        .last()
        .flatten()
}

/// `lockdown=` on a kernel command line.
pub fn cmdline_lockdown(cmdline: &str) -> Option<Lockdown> {
    kernel_words(cmdline)
        .filter_map(|w| w.strip_prefix("lockdown="))
        .filter_map(Lockdown::from_word)
        .last()
}

/// What the firmware says about Secure Boot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum SecureBoot {
    On,
    Off,
    /// The machine did not boot through EFI (`/sys/firmware/efi` is absent): no Secure Boot.
    NotEfi,
    /// EFI, but the variable could not be read (efivarfs not mounted, or malformed).
    Unknown {
        reason: String,
    },
}

/// Everything that bears on signature enforcement, as read from the host.
#[derive(Debug, Clone, Serialize)]
pub struct SignatureEvidence {
    pub secure_boot: SecureBoot,
    /// The running kernel's lockdown mode; `None` when the file is absent.
    pub lockdown: Option<Lockdown>,
    /// The running kernel's `sig_enforce`; `None` when absent (no `CONFIG_MODULE_SIG`) or unreadable.
    pub sig_enforce: Option<bool>,
    /// `/proc/cmdline`.
    pub cmdline: Option<String>,
}

impl SignatureEvidence {
    /// Reads the firmware variable and the running kernel's state.
    pub fn read(root: &Root) -> Result<Self, HostError> {
        let secure_boot = read_secure_boot(root)?;
        let lockdown = root
            .read_text(LOCKDOWN_PATH)?
            .and_then(|t| parse_lockdown(&t));
        let sig_enforce =
            read_first_line(root, SIG_ENFORCE_PARAM)?.and_then(|t| parse_kernel_bool(&t));
        let cmdline = read_first_line(root, "/proc/cmdline")?;
        Ok(SignatureEvidence {
            secure_boot,
            lockdown,
            sig_enforce,
            cmdline,
        })
    }
}

/// The firmware's Secure Boot state.
pub fn read_secure_boot(root: &Root) -> Result<SecureBoot, HostError> {
    if !root.exists("/sys/firmware/efi") {
        return Ok(SecureBoot::NotEfi);
    }
    Ok(match root.read_bytes(SECURE_BOOT_VAR)? {
        None => SecureBoot::Unknown {
            reason: format!("{SECURE_BOOT_VAR} is absent (efivarfs not mounted?)"),
        },
        Some(bytes) => match parse_efi_bool(&bytes) {
            Ok(true) => SecureBoot::On,
            Ok(false) => SecureBoot::Off,
            Err(e) => SecureBoot::Unknown {
                reason: format!("{SECURE_BOOT_VAR}: {e}"),
            },
        },
    })
}

/// The answer and the evidence that decided it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignatureEnforcement {
    pub enforcement: Enforcement,
    /// One sentence naming the evidence (and, when unknown, what was missing).
    pub evidence: String,
}

fn answer(enforcement: Enforcement, evidence: impl Into<String>) -> SignatureEnforcement {
    SignatureEnforcement {
        enforcement,
        evidence: evidence.into(),
    }
}

/// The running kernel: its live `sig_enforce` and lockdown mode decide; where they are not
/// readable, its configuration and command line (as for a boot) fill in.
pub fn judge_running(
    evidence: &SignatureEvidence,
    config: Option<&KernelConfig>,
) -> SignatureEnforcement {
    if evidence.sig_enforce == Some(true) {
        return answer(
            Enforcement::Enforced,
            format!("{SIG_ENFORCE_PARAM} is Y: the running kernel refuses unsigned modules"),
        );
    }
    if let Some(l) = evidence.lockdown.filter(|l| l.refuses_unsigned()) {
        return answer(
            Enforcement::Enforced,
            format!(
                "{LOCKDOWN_PATH} is [{}]: lockdown refuses unsigned modules",
                l.as_str()
            ),
        );
    }
    match (evidence.sig_enforce, evidence.lockdown) {
        (Some(false), Some(Lockdown::None)) => answer(
            Enforcement::NotEnforced,
            format!("{SIG_ENFORCE_PARAM} is N and {LOCKDOWN_PATH} is [none]: unsigned modules load (tainting the kernel)"),
        ),
        (Some(false), None) => {
            // sig_enforce is off; only lockdown could still refuse, and its file is not there.
            let boot = judge_lockdown_at_boot(&evidence.secure_boot, evidence.cmdline.as_deref(), config);
            match boot {
                Some(b) => b,
                None => answer(
                    Enforcement::Unknown,
                    format!("{SIG_ENFORCE_PARAM} is N, but {LOCKDOWN_PATH} is not readable and nothing else tells whether lockdown is on"),
                ),
            }
        }
        _ => {
            let mut b = judge_boot(&evidence.secure_boot, evidence.cmdline.as_deref(), config);
            if evidence.sig_enforce.is_none() {
                b.evidence = format!("{SIG_ENFORCE_PARAM} is absent; {}", b.evidence);
            }
            b
        }
    }
}

/// A kernel as it will boot: from its configuration, the command line it will get, and the
/// firmware's Secure Boot state (which persists across the reboot).
pub fn judge_boot(
    secure_boot: &SecureBoot,
    cmdline: Option<&str>,
    config: Option<&KernelConfig>,
) -> SignatureEnforcement {
    if let Some(c) = config {
        if c.is_yes("CONFIG_MODULE_SIG_FORCE") {
            return answer(
                Enforcement::Enforced,
                format!("{}: CONFIG_MODULE_SIG_FORCE=y", c.path),
            );
        }
    }
    let module_sig = config.map(|c| c.is_yes("CONFIG_MODULE_SIG"));
    if module_sig == Some(false) {
        let c = config.map(|c| c.path.as_str()).unwrap_or_default();
        return answer(
            Enforcement::NotEnforced,
            format!("{c}: CONFIG_MODULE_SIG is not set: this kernel checks no module signatures"),
        );
    }
    if let Some(line) = cmdline {
        if cmdline_sig_enforce(line) == Some(true) {
            return answer(
                Enforcement::Enforced,
                "module.sig_enforce=1 on the kernel command line",
            );
        }
    }
    if let Some(b) = judge_lockdown_at_boot(secure_boot, cmdline, config) {
        return b;
    }
    let why = match (config, secure_boot) {
        (None, _) => "no kernel configuration is installed to tell CONFIG_MODULE_SIG_FORCE".to_string(),
        (Some(_), SecureBoot::Unknown { reason }) => format!("the Secure Boot state is unknown ({reason})"),
        (Some(c), SecureBoot::On) => format!("Secure Boot is on, but {} does not say whether the kernel locks down under it (no CONFIG_LOCK_DOWN_IN_EFI_SECURE_BOOT)", c.path),
        (Some(_), _) => "nothing decided".to_string(),
    };
    answer(Enforcement::Unknown, why)
}

/// Lockdown at boot, when the evidence decides it: forced by the build or the command line,
/// or Secure Boot with a kernel that locks down under it; not enforced when Secure Boot is off
/// and nothing else requires signatures. `None` when undecided.
fn judge_lockdown_at_boot(
    secure_boot: &SecureBoot,
    cmdline: Option<&str>,
    config: Option<&KernelConfig>,
) -> Option<SignatureEnforcement> {
    if let Some(c) = config {
        for forced in [
            "CONFIG_LOCK_DOWN_KERNEL_FORCE_INTEGRITY",
            "CONFIG_LOCK_DOWN_KERNEL_FORCE_CONFIDENTIALITY",
        ] {
            if c.is_yes(forced) {
                return Some(answer(
                    Enforcement::Enforced,
                    format!("{}: {forced}=y: lockdown refuses unsigned modules", c.path),
                ));
            }
        }
    }
    if let Some(l) = cmdline.and_then(cmdline_lockdown) {
        if l.refuses_unsigned() && config.is_none_or(|c| c.is_yes("CONFIG_SECURITY_LOCKDOWN_LSM")) {
            return Some(answer(
                Enforcement::Enforced,
                format!(
                    "lockdown={} on the kernel command line: lockdown refuses unsigned modules",
                    l.as_str()
                ),
            ));
        }
    }
    match (secure_boot, config) {
        (SecureBoot::On, Some(c)) if c.is_yes("CONFIG_LOCK_DOWN_IN_EFI_SECURE_BOOT") => Some(answer(
            Enforcement::Enforced,
            format!("Secure Boot is on ({SECURE_BOOT_VAR}) and {}: CONFIG_LOCK_DOWN_IN_EFI_SECURE_BOOT=y: the kernel locks down and refuses unsigned modules", c.path),
        )),
        (SecureBoot::Off | SecureBoot::NotEfi, Some(c)) => {
            let sb = if *secure_boot == SecureBoot::Off {
                format!("Secure Boot is off ({SECURE_BOOT_VAR})")
            } else {
                "the machine did not boot through EFI (no Secure Boot)".to_string()
            };
            Some(answer(
                Enforcement::NotEnforced,
                format!("{sb}, {}: CONFIG_MODULE_SIG_FORCE is not set and the command line requires no signatures", c.path),
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> KernelConfig {
        KernelConfig::scan(
            "/boot/config-6.1.0-50-amd64",
            text.as_bytes(),
            CONFIG_OPTIONS,
        )
    }

    const DEBIAN: &str = "CONFIG_MODULE_SIG=y\n# CONFIG_MODULE_SIG_FORCE is not set\nCONFIG_SECURITY_LOCKDOWN_LSM=y\nCONFIG_LOCK_DOWN_IN_EFI_SECURE_BOOT=y\n";

    #[test]
    fn efi_variable_is_attributes_then_value() {
        assert_eq!(parse_efi_bool(&[6, 0, 0, 0, 1]), Ok(true));
        assert_eq!(parse_efi_bool(&[6, 0, 0, 0, 0]), Ok(false));
        assert!(parse_efi_bool(&[6, 0, 0, 0])
            .unwrap_err()
            .contains("4 bytes"));
        assert!(parse_efi_bool(&[6, 0, 0, 0, 7]).unwrap_err().contains('7'));
    }

    #[test]
    fn lockdown_mode_is_the_bracketed_word() {
        assert_eq!(
            parse_lockdown("none [integrity] confidentiality\n"),
            Some(Lockdown::Integrity)
        );
        assert_eq!(
            parse_lockdown("[none] integrity confidentiality"),
            Some(Lockdown::None)
        );
        assert_eq!(parse_lockdown("none integrity confidentiality"), None);
    }

    #[test]
    fn command_line_parameters() {
        assert_eq!(
            cmdline_sig_enforce("BOOT_IMAGE=/vmlinuz ro module.sig_enforce=1 quiet"),
            Some(true)
        );
        assert_eq!(cmdline_sig_enforce("module.sig_enforce"), Some(true));
        assert_eq!(
            cmdline_sig_enforce("module.sig_enforce=1 module.sig_enforce=0"),
            Some(false)
        );
        assert_eq!(
            cmdline_sig_enforce("ro quiet -- module.sig_enforce=1"),
            None
        );
        assert_eq!(
            cmdline_lockdown("ro lockdown=confidentiality"),
            Some(Lockdown::Confidentiality)
        );
        assert_eq!(cmdline_lockdown("ro lockdown=bogus"), None);
    }

    fn live(
        sb: SecureBoot,
        lockdown: Option<Lockdown>,
        sig: Option<bool>,
        cmdline: &str,
    ) -> SignatureEvidence {
        SignatureEvidence {
            secure_boot: sb,
            lockdown,
            sig_enforce: sig,
            cmdline: Some(cmdline.into()),
        }
    }

    #[test]
    fn running_kernel_live_state_decides() {
        let c = config(DEBIAN);
        let r = judge_running(
            &live(SecureBoot::Off, Some(Lockdown::None), Some(true), "ro"),
            Some(&c),
        );
        assert_eq!(r.enforcement, Enforcement::Enforced);
        assert!(r.evidence.contains("sig_enforce is Y"), "{}", r.evidence);
        let r = judge_running(
            &live(SecureBoot::On, Some(Lockdown::Integrity), Some(false), "ro"),
            Some(&c),
        );
        assert_eq!(r.enforcement, Enforcement::Enforced);
        assert!(r.evidence.contains("[integrity]"), "{}", r.evidence);
        // Secure Boot on, but this kernel runs without lockdown: the live state wins.
        let r = judge_running(
            &live(SecureBoot::On, Some(Lockdown::None), Some(false), "ro"),
            Some(&c),
        );
        assert_eq!(r.enforcement, Enforcement::NotEnforced);
        assert!(r.evidence.contains("[none]"), "{}", r.evidence);
    }

    #[test]
    fn running_kernel_without_lockdown_file_falls_back_to_secure_boot() {
        let c = config(DEBIAN);
        let r = judge_running(&live(SecureBoot::On, None, Some(false), "ro"), Some(&c));
        assert_eq!(r.enforcement, Enforcement::Enforced);
        assert!(
            r.evidence.contains("CONFIG_LOCK_DOWN_IN_EFI_SECURE_BOOT=y"),
            "{}",
            r.evidence
        );
        let r = judge_running(&live(SecureBoot::On, None, Some(false), "ro"), None);
        assert_eq!(r.enforcement, Enforcement::Unknown);
        let r = judge_running(&live(SecureBoot::NotEfi, None, None, "ro"), Some(&c));
        assert_eq!(r.enforcement, Enforcement::NotEnforced);
        assert!(
            r.evidence.contains("sig_enforce is absent"),
            "{}",
            r.evidence
        );
    }

    #[test]
    fn a_boot_is_judged_from_config_cmdline_and_firmware() {
        let forced = config("CONFIG_MODULE_SIG=y\nCONFIG_MODULE_SIG_FORCE=y\n");
        assert_eq!(
            judge_boot(&SecureBoot::Off, None, Some(&forced)).enforcement,
            Enforcement::Enforced
        );
        let c = config(DEBIAN);
        let r = judge_boot(&SecureBoot::Off, Some("ro module.sig_enforce=1"), Some(&c));
        assert_eq!(r.enforcement, Enforcement::Enforced);
        assert!(r.evidence.contains("command line"));
        let r = judge_boot(&SecureBoot::Off, Some("ro lockdown=integrity"), Some(&c));
        assert_eq!(r.enforcement, Enforcement::Enforced);
        assert_eq!(
            judge_boot(&SecureBoot::On, Some("ro"), Some(&c)).enforcement,
            Enforcement::Enforced
        );
        let r = judge_boot(&SecureBoot::Off, Some("ro"), Some(&c));
        assert_eq!(r.enforcement, Enforcement::NotEnforced);
        assert!(r.evidence.contains("Secure Boot is off"), "{}", r.evidence);
        let no_sig = config("# CONFIG_MODULE_SIG is not set\n");
        assert_eq!(
            judge_boot(&SecureBoot::On, Some("module.sig_enforce=1"), Some(&no_sig)).enforcement,
            Enforcement::NotEnforced
        );
        let r = judge_boot(&SecureBoot::Off, Some("ro"), None);
        assert_eq!(r.enforcement, Enforcement::Unknown);
        assert!(
            r.evidence.contains("no kernel configuration"),
            "{}",
            r.evidence
        );
        let vendor = config("CONFIG_MODULE_SIG=y\n");
        let r = judge_boot(&SecureBoot::On, Some("ro"), Some(&vendor));
        assert_eq!(r.enforcement, Enforcement::Unknown);
    }
}
