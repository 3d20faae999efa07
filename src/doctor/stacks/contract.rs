//! What every stack of the catalogue is and answers: how it is recognised ([`Detection`]), its
//! id ([`StackId`]), and the remedies it gives for each kind of failure ([`RpcrdmaStack`],
//! [`Remedy`]). The stacks implement it in their own files; the catalogue ([`super::ALL`])
//! lists them.

use super::ofed;
use super::remedy::Remedy;
use crate::doctor::stack::Stack;
use crate::doctor::step::Step;
use crate::host::boot::dkms::DkmsEntry;
use crate::host::modules::module_place::{ModulePlace, PackageFamily};
use crate::host::modules::{ModuleOrigin, Resolution};

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
