//! The stack catalogue: every stack that can provide rpcrdma, each declared once in its own file,
//! on the pattern of the check registry.
//!
//! A stack says how it is recognised from the host facts ([`RpcrdmaStack::detect`]), how doctor
//! describes it, and the steps that fix each kind of failure on it, per distribution family:
//! install or rebuild a hooked rpcrdma, rebuild against the installed RDMA ABI, export the hooks
//! GPL, sign the modules. What most stacks share (the inbox defaults, NVIDIA's OFED recipes) is in
//! [`ofed`]; the plan iterates [`ALL`] and asks the stack it found. Adding a stack is one file
//! here and its line in [`ALL`]. nvidia_fs has one alternative to the host's packages, the
//! GPU Operator's [`driver_container`].

/// Declares a stack of the catalogue: its type, and its id (`ID`, its name in doctor's JSON,
/// `stack.provenance`) as the stack answers it ([`StackId`]).
macro_rules! stack {
    ($name:ident, $id:literal) => {
        #[derive(Debug)]
        pub struct $name;

        /// Its name in doctor's JSON (`stack.provenance`).
        pub const ID: &str = $id;

        impl $crate::doctor::stacks::contract::StackId for $name {
            fn id(&self) -> &'static str {
                ID
            }
        }
    };
}

pub mod built_in;
pub mod conflicts;
pub mod contract;
pub mod driver_container;
pub mod inbox;
pub mod missing;
pub mod mofed_dkms;
pub mod mofed_package;
pub mod nvidia_kernel;
pub mod ofed;
pub mod other_out_of_tree;
pub mod remedy;
pub mod ubuntu_doca_ofed;
pub mod vastnfs;
pub mod weak_updates;

use super::stack::Stack;
use crate::host::facts::HostFacts;
use crate::host::stack_facts::StackFacts;
pub use contract::{Detection, RpcrdmaStack, StackId, ABI_WHY};
pub use remedy::Remedy;

/// Every stack, in the order they are asked: the first that recognises the rpcrdma modprobe
/// resolves provides it, so a narrow marker comes before the layout it shares with others.
pub const ALL: &[&dyn RpcrdmaStack] = &[
    &built_in::BuiltIn,
    &missing::Missing,
    &vastnfs::Vastnfs,
    &ubuntu_doca_ofed::UbuntuDocaOfed,
    &weak_updates::WeakUpdates,
    &nvidia_kernel::NvidiaKernel,
    &inbox::Inbox,
    &mofed_dkms::MofedDkms,
    &mofed_package::MofedPackage,
    &other_out_of_tree::OtherOutOfTree,
];

/// The stack that provides rpcrdma: the first of [`ALL`] that recognises it.
pub fn detect(d: &Detection) -> &'static dyn RpcrdmaStack {
    ALL.iter()
        .copied()
        .find(|s| s.detect(d))
        .unwrap_or(&missing::Missing)
}

/// The stack the host facts describe.
pub fn identify(facts: &HostFacts, found: &StackFacts) -> Stack {
    let provenance = detect(&Detection {
        resolution: facts.rpcrdma.resolution.as_ref(),
        release: facts.kernel.release.as_deref().unwrap_or(""),
        package: found.rpcrdma_package.as_deref(),
        dkms: &found.dkms,
        vastnfs: found.vastnfs_version.is_some(),
        file_hooked: file_hooked(facts),
    });
    let owners = facts.owners.clone().unwrap_or_default();
    Stack {
        os: found.os.clone(),
        family: found.os.family(),
        kernel_release: facts.kernel.release.clone(),
        arch: found.arch.clone(),
        ofed: found.ofed.clone(),
        dkms: found.dkms.clone(),
        rpcrdma_package: found.rpcrdma_package.clone(),
        provenance: provenance.id(),
        vastnfs_version: found.vastnfs_version.clone(),
        ofa_gds_config: found.ofa_gds_config.clone(),
        gpu_driver: facts.gpu_driver.clone(),
        gpu_operator: found.gpu_operator,
        operator_validations: found.operator_validations.clone(),
        kubernetes: found.kubernetes,
        owners,
        file_hooked: file_hooked(facts),
        ofed_packages: found.ofed_packages.clone(),
    }
}

/// The rpcrdma file modprobe resolves defines both nvfs hooks (the question `rpcrdma-hooks`
/// asks of it).
fn file_hooked(facts: &HostFacts) -> bool {
    facts
        .rpcrdma
        .inspected()
        .is_some_and(|f| f.has_symtab && f.symbols.iter().all(|s| s.defined))
}

/// The catalogue entry a stack names as its provenance.
pub fn of(stack: &Stack) -> &'static dyn RpcrdmaStack {
    ALL.iter()
        .copied()
        .find(|s| s.id() == stack.provenance)
        .unwrap_or(&missing::Missing)
}

/// Where rpcrdma comes from and the rest of the stack, in words (the `rpcrdma-source` finding).
pub fn describe(stack: &Stack) -> String {
    stack.describe(&of(stack).describe(stack))
}

#[cfg(test)]
pub(crate) mod test_support;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stack_is_listed_once_under_its_own_id() {
        let mut seen = std::collections::BTreeSet::new();
        for s in ALL {
            assert!(seen.insert(s.id()), "{} listed twice", s.id());
        }
    }

    #[test]
    fn every_resolution_finds_a_stack() {
        use crate::host::modules::Resolution;
        let missing = Resolution::NotFound {
            module: "rpcrdma".into(),
        };
        let builtin = Resolution::BuiltIn {
            module: "rpcrdma".into(),
        };
        let file = test_support::resolved("odd/place/rpcrdma.ko");
        let id = |r: Option<&Resolution>| {
            detect(&Detection {
                resolution: r,
                release: "",
                package: None,
                dkms: &[],
                vastnfs: false,
                file_hooked: false,
            })
            .id()
        };
        assert_eq!(id(None), missing::ID);
        assert_eq!(id(Some(&missing)), missing::ID);
        assert_eq!(id(Some(&builtin)), built_in::ID);
        assert_eq!(id(Some(&file)), other_out_of_tree::ID);
    }

    #[test]
    fn every_layout_gets_the_stack_of_its_family() {
        use crate::host::modules::module_place::{PackageFamily, PackageFamily::*, LAYOUTS};
        let expected = [
            inbox::ID,
            ubuntu_doca_ofed::ID,
            mofed_dkms::ID,
            mofed_dkms::ID,
            mofed_dkms::ID,
            mofed_package::ID,
            mofed_package::ID,
            weak_updates::ID,
            vastnfs::ID,
            vastnfs::ID,
            vastnfs::ID,
            other_out_of_tree::ID,
            other_out_of_tree::ID,
            ubuntu_doca_ofed::ID,
            mofed_dkms::ID,
            mofed_dkms::ID,
            mofed_package::ID,
            mofed_package::ID,
            other_out_of_tree::ID,
        ];
        assert_eq!(expected.len(), LAYOUTS.len());
        for (path, want) in LAYOUTS.iter().zip(expected) {
            let id = test_support::detected(&test_support::resolved(path), None);
            assert_eq!(id, want, "{path}");
            // The stack and the family the ownership checks see are one answer.
            let family = PackageFamily::of_path(path);
            let agrees = match id {
                vastnfs::ID => family == Vastnfs,
                ubuntu_doca_ofed::ID => matches!(family, UbuntuDoca(_)),
                inbox::ID | nvidia_kernel::ID => family == Distribution,
                mofed_dkms::ID | mofed_package::ID => family == NvidiaOfed,
                other_out_of_tree::ID => matches!(family, Other(_)),
                // A link's family is its target's, which the path does not show.
                weak_updates::ID => true,
                _ => false,
            };
            assert!(agrees, "{path}: stack {id}, family {family:?}");
        }
    }
}
