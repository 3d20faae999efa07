//! Module signing for a Secure Boot node, per distribution: where that distribution's DKMS keeps
//! the key it signs with (the certificate `mokutil --import` enrolls), how it makes one, and the
//! signed packages that need no enrolment at all (Ubuntu's own DOCA-OFED modules from 26.04).
//!
//! Sources: dell/dkms's `prepare_signing()` (dkms.in) and README: unless
//! `/etc/dkms/framework.conf` names a key, DKMS on Ubuntu signs with
//! `/var/lib/shim-signed/mok/MOK.priv` and `MOK.der` (made with `update-secureboot-policy
//! --new-key`), and everywhere else with `/var/lib/dkms/mok.key` and `mok.pub`, a self-signed
//! `CN=DKMS module signing key` it generates itself. RHEL/Rocky (EPEL) and SLES (Package Hub) are
//! assumed to run that upstream DKMS 3.x; DKMS 2.x did not sign at all.
//! Since DOCA 3.2 NVIDIA ships DOCA-Host only as DKMS and no longer signs its modules, so every
//! rebuilt rpcrdma needs the node's own key enrolled.

use crate::doctor::stack::{Family, Stack};
use crate::doctor::step::Step;

/// The DKMS certificate and how to make it, on one distribution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DkmsKey {
    pub certificate: &'static str,
    pub generate: &'static str,
}

/// Ubuntu (not Debian) ships its own DKMS configuration.
pub fn is_ubuntu(s: &Stack) -> bool {
    s.os.id.as_deref() == Some("ubuntu")
}

/// Ubuntu 26.04 or later, whose archive carries Canonical-signed DOCA-OFED modules.
fn ubuntu_signed_doca(s: &Stack) -> bool {
    is_ubuntu(s)
        && s.os
            .version_id
            .as_deref()
            .and_then(|v| v.split_once('.'))
            .and_then(|(major, _)| major.parse::<u32>().ok())
            .is_some_and(|major| major >= 26)
}

pub fn dkms_key(s: &Stack) -> DkmsKey {
    if is_ubuntu(s) {
        return DkmsKey {
            certificate: "/var/lib/shim-signed/mok/MOK.der",
            generate: "update-secureboot-policy --new-key   # Ubuntu's DKMS signs with /var/lib/shim-signed/mok/MOK.priv",
        };
    }
    DkmsKey {
        certificate: "/var/lib/dkms/mok.pub",
        generate: match s.family {
            Family::Rhel => "dkms generate_mok   # EPEL's DKMS 3.x: creates /var/lib/dkms/mok.key and mok.pub unless they exist (DKMS 2.x does not sign: `dnf upgrade dkms` first)",
            Family::Suse => "dkms generate_mok   # DKMS 3.x from SUSE Package Hub: creates /var/lib/dkms/mok.key and mok.pub unless they exist",
            _ => "dkms generate_mok   # DKMS 3.x: creates /var/lib/dkms/mok.key and mok.pub unless they exist",
        },
    }
}

/// The kernel enforces module signatures and a GDS module file is unsigned, or signed by a key
/// the node has not enrolled: DKMS signs what it builds with its key, which shim must trust.
pub(super) fn sign_modules_step(s: &Stack, kernel: &str) -> Step {
    let key = dkms_key(s);
    let mut commands = Vec::new();
    if ubuntu_signed_doca(s) {
        commands.push("# Ubuntu 26.04 and later: Canonical's signed DOCA-OFED modules need no MOK; after removing DOCA-OFED from NVIDIA's repository:".into());
        commands.push("apt-get install doca-ofed-generic   # or the meta-package of your kernel flavour; pulls linux-modules-doca-ofed-<ver>-<flavour>".into());
        commands.push("# or keep the DKMS builds and enroll this node's DKMS key:".into());
    }
    commands.push(key.generate.to_string());
    for package in ["mlnx-nfsrdma", "nvidia-fs"] {
        if let Some(e) = s.dkms_entry(package) {
            commands.push(format!(
                "dkms remove {p}/{v} -k {kernel} && dkms install {p}/{v} -k {kernel}   # rebuilt, and signed with that key",
                p = e.module,
                v = e.version
            ));
        }
    }
    commands.extend(crate::doctor::stacks::of(s).sign_note(s));
    commands.push(format!(
        "mokutil --import {}   # asks for a one-time password; a key /etc/dkms/framework.conf names in mok_certificate= wins",
        key.certificate
    ));
    commands.push(format!(
        "mokutil --test-key {}   # says whether it is already enrolled",
        key.certificate
    ));
    commands.push(
        "systemctl reboot   # then choose Enroll MOK in the MOK manager and enter that password"
            .into(),
    );
    Step::manual(
        "Sign the GDS modules with an enrolled Machine Owner Key",
        "the kernel enforces module signatures and the module modprobe would load is not signed by a key it trusts (unsigned, or a DKMS key not enrolled, as on a reimaged node whose DKMS key changed): it is refused with `Key was rejected by service`",
        commands,
    )
}
