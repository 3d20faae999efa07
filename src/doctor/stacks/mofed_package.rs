//! mlnx-nfsrdma from a prebuilt MLNX_OFED / DOCA-OFED package (`extra/mlnx-nfsrdma/`,
//! `kmod-mlnx-nfsrdma`): reinstalled from the repository of the installed OFED, and signed by
//! NVIDIA rather than by a local key.

use super::contract::{Detection, RpcrdmaStack, ABI_WHY};
use super::ofed;
use super::remedy::Remedy;
use crate::doctor::stack::{Family, Stack};
use crate::doctor::step::Step;
use crate::host::modules::module_place::PackageFamily;

stack!(MofedPackage, "mofed-package");

impl RpcrdmaStack for MofedPackage {
    /// An mlnx-nfsrdma directory or package, or any other file of NVIDIA's OFED that DKMS did
    /// not build (the catalogue asks [`MofedDkms`](super::mofed_dkms::MofedDkms) first).
    fn detect(&self, d: &Detection) -> bool {
        d.names_mlnx_nfsrdma() || d.family() == Some(PackageFamily::NvidiaOfed)
    }

    fn describe(&self, _s: &Stack) -> String {
        "rpcrdma comes from a prebuilt mlnx-nfsrdma package".into()
    }

    fn hooked(&self, s: &Stack) -> Remedy {
        ofed::rebuild_with_gds(s)
    }

    fn abi(&self, s: &Stack, _hooked: bool) -> Remedy {
        Remedy::manual(Step::manual(
            "Install the mlnx-nfsrdma package of the installed MOFED version",
            ABI_WHY,
            vec![
                "ofed_info -s   # the installed MLNX_OFED / DOCA-OFED version".into(),
                match s.family {
                    Family::Debian => "apt-get install --reinstall mlnx-nfsrdma   # from the same DOCA-Host / MLNX_OFED repository".into(),
                    Family::Suse => "zypper install --force mlnx-nfsrdma-kmp-default   # from the same DOCA-Host / MLNX_OFED repository".into(),
                    Family::Rhel | Family::Other => "dnf reinstall mlnx-nfsrdma   # from the same DOCA-Host / MLNX_OFED repository".into(),
                },
            ],
        ))
    }

    fn sign_note(&self, _s: &Stack) -> Option<String> {
        Some("# prebuilt MLNX_OFED / DOCA kmods are signed by NVIDIA: enroll the public key the package ships instead".into())
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{detected, resolved};

    #[test]
    fn the_kmod_package_is_prebuilt() {
        let r = resolved("extra/mlnx-nfsrdma/rpcrdma.ko");
        assert_eq!(detected(&r, None), super::ID);
        let r = resolved("extra/rpcrdma.ko");
        assert_eq!(
            detected(
                &r,
                Some("kmod-mlnx-nfsrdma-24.10-OFED.24.10.1.1.4.1.rhel9u4.x86_64")
            ),
            super::ID
        );
    }
}
