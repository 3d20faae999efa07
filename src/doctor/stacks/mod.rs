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

        impl super::StackId for $name {
            fn id(&self) -> &'static str {
                ID
            }
        }
    };
}

pub mod built_in;
pub mod conflicts;
pub mod driver_container;
pub mod inbox;
pub mod missing;
pub mod mofed_dkms;
pub mod mofed_package;
pub mod nvidia_kernel;
pub mod ofed;
pub mod other_out_of_tree;
pub mod ubuntu_doca_ofed;
pub mod vastnfs;
pub mod weak_updates;

use super::stack::Stack;
use super::step::Step;
use crate::host::boot::dkms::DkmsEntry;
use crate::host::facts::HostFacts;
use crate::host::modules::module_place::{ModulePlace, PackageFamily};
use crate::host::modules::{ModuleOrigin, Resolution};
use crate::host::stack_facts::StackFacts;

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

/// What the host facts say about the rpcrdma file, for recognising its stack.
#[derive(Debug, Clone, Copy)]
pub struct Detection<'a> {
    /// What `modprobe rpcrdma` resolves to.
    pub resolution: Option<&'a Resolution>,
    /// The running kernel release (empty when unknown).
    pub release: &'a str,
    /// The package owning the rpcrdma file.
    pub package: Option<&'a str>,
    pub dkms: &'a [DkmsEntry],
    /// The running sunrpc says it is VAST's bundle.
    pub vastnfs: bool,
    /// The resolved module file defines both nvfs hooks.
    pub file_hooked: bool,
}

impl<'a> Detection<'a> {
    /// The resolved module file: its path below the release's module directory and its origin.
    pub fn file(&self) -> Option<(&'a str, &'a ModuleOrigin)> {
        match self.resolution {
            Some(Resolution::File {
                rel_path, origin, ..
            }) => Some((rel_path.as_str(), origin)),
            _ => None,
        }
    }

    /// Where the resolved file sits, taken apart by the one decider of who ships a module file.
    pub fn place(&self) -> Option<ModulePlace<'a>> {
        self.file().map(|(rel, _)| ModulePlace::of(rel))
    }

    /// Who ships the resolved file, from where it sits.
    pub fn family(&self) -> Option<PackageFamily> {
        self.place().map(|p| p.family())
    }

    /// The file sits in an mlnx-nfsrdma directory, or its package names mlnx-nfsrdma.
    pub fn names_mlnx_nfsrdma(&self) -> bool {
        self.place()
            .is_some_and(|p| p.in_directory_of("mlnx-nfsrdma"))
            || self.package.is_some_and(|p| p.contains("mlnx-nfsrdma"))
    }

    /// `dkms status` lists the module.
    pub fn dkms_has(&self, module: &str) -> bool {
        self.dkms.iter().any(|e| e.module == module)
    }
}

/// Steps for one kind of fix, and whether they rebuild module files (which then need a fresh
/// module index, an initramfs and a reload).
#[derive(Debug, Default)]
pub struct Remedy {
    pub steps: Vec<Step>,
    pub rebuilt: bool,
}

impl Remedy {
    pub fn manual(step: Step) -> Self {
        Remedy {
            steps: vec![step],
            rebuilt: false,
        }
    }

    pub fn none() -> Self {
        Remedy::default()
    }
}

/// Why an rpcrdma built against other ib_core/rdma_cm CRCs must be replaced.
pub const ABI_WHY: &str = "the rpcrdma modprobe loads was built against other ib_core/rdma_cm symbol CRCs than the installed modules export: modprobe refuses it (`disagrees about version of symbol`) and mount.nfs then reports a misleading \"incorrect mount option\"";

/// A stack's name in doctor's JSON (`stack.provenance`); [`stack!`] declares it.
pub trait StackId {
    fn id(&self) -> &'static str;
}

/// One stack that can provide rpcrdma. The provided methods are the distribution-inbox answers:
/// install NVIDIA's mlnx-nfsrdma, upgrade NVIDIA's OFED for GPL exports.
pub trait RpcrdmaStack: StackId + Sync + std::fmt::Debug {
    /// Whether it provides the rpcrdma modprobe resolves.
    fn detect(&self, d: &Detection) -> bool;

    /// Where rpcrdma comes from, in words: the start of the `rpcrdma-source` finding.
    fn describe(&self, s: &Stack) -> String;

    /// Whether it is NVIDIA's or a vendor's (not the distribution's own rpcrdma, or none).
    fn is_vendor(&self) -> bool {
        true
    }

    /// The rpcrdma modprobe loads has no hooks: what installs or rebuilds one.
    fn hooked(&self, s: &Stack) -> Remedy {
        Remedy::manual(ofed::install_nfsrdma_step(s))
    }

    /// The rpcrdma modprobe loads does not match the installed RDMA ABI. `hooked` says the hooks
    /// fix already installs a new rpcrdma.
    fn abi(&self, s: &Stack, hooked: bool) -> Remedy {
        if hooked {
            return Remedy::none();
        }
        let mut step = ofed::install_nfsrdma_step(s);
        step.title = "Install the mlnx-nfsrdma built for this MOFED".into();
        step.why = ABI_WHY.into();
        Remedy::manual(step)
    }

    /// The hooks are exported plain where the kernel takes only GPL exports.
    fn gpl_export(&self, s: &Stack) -> Step {
        ofed::gpl_upgrade_step(s)
    }

    /// What it adds to the Machine Owner Key steps when modules must be signed.
    fn sign_note(&self, _s: &Stack) -> Option<String> {
        None
    }
}

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
        use crate::host::modules::module_place::LAYOUTS;
        use PackageFamily::*;
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
