//! mlnx-nfsrdma built by DKMS from DOCA-OFED or MLNX_OFED: rebuilt with `dkms`, against an
//! mlnx-ofa_kernel configured with GDS.

use super::contract::{Detection, RpcrdmaStack, ABI_WHY};
use super::ofed;
use super::remedy::Remedy;
use crate::doctor::stack::Stack;
use crate::doctor::step::{Action, Step};
use crate::host::modules::module_place::PackageFamily;
use crate::host::modules::ModuleOrigin;

stack!(MofedDkms, "mofed-dkms");

impl RpcrdmaStack for MofedDkms {
    /// NVIDIA's file in a DKMS location while `dkms status` knows mlnx-nfsrdma, or where DKMS
    /// installs its builds (`updates/dkms/`, directly in `extra/` or `updates/`) with nothing
    /// naming a prebuilt package.
    fn detect(&self, d: &Detection) -> bool {
        let (Some((_, origin)), Some(place)) = (d.file(), d.place()) else {
            return false;
        };
        let dkms_dir = matches!(
            origin,
            ModuleOrigin::UpdatesDkms | ModuleOrigin::Extra | ModuleOrigin::Updates
        );
        place.family() == PackageFamily::NvidiaOfed
            && ((dkms_dir && d.dkms_has("mlnx-nfsrdma"))
                || (place.dkms_layout() && !d.names_mlnx_nfsrdma()))
    }

    fn describe(&self, _s: &Stack) -> String {
        "rpcrdma comes from mlnx-nfsrdma built by DKMS".into()
    }

    fn hooked(&self, s: &Stack) -> Remedy {
        ofed::rebuild_with_gds(s)
    }

    fn abi(&self, s: &Stack, hooked: bool) -> Remedy {
        let kernel = s.kernel();
        match s.dkms_entry("mlnx-nfsrdma") {
            Some(e) if !hooked => Remedy {
                steps: vec![Step::auto(
                    "Rebuild mlnx-nfsrdma against the installed mlnx-ofa_kernel",
                    ABI_WHY,
                    Action::DkmsRebuild {
                        module: e.module.clone(),
                        version: e.version.clone(),
                        kernel: kernel.to_string(),
                    },
                )],
                rebuilt: true,
            },
            Some(_) => Remedy::none(),
            None => Remedy::manual(Step::manual(
                "Rebuild mlnx-nfsrdma against the installed mlnx-ofa_kernel",
                ABI_WHY,
                vec![format!("dkms install mlnx-nfsrdma/<version> -k {kernel} --force   # the version of `dkms status mlnx-nfsrdma`")],
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{detected, resolved};

    #[test]
    fn a_dkms_build_without_a_package_name_is_dkms() {
        let r = resolved("updates/dkms/rpcrdma.ko");
        assert_eq!(detected(&r, None), super::ID);
    }
}
