//! VAST's NFS client bundle (vastnfs): it compiles the hooks in unconditionally, and 4.0
//! exports them plain, so its fixes are VAST's packages, not NVIDIA's OFED.

use super::contract::{Detection, RpcrdmaStack, ABI_WHY};
use super::remedy::Remedy;
use crate::doctor::stack::Stack;
use crate::doctor::step::Step;
use crate::host::modules::module_place::PackageFamily;

stack!(Vastnfs, "vastnfs");

impl RpcrdmaStack for Vastnfs {
    /// The running sunrpc is the bundle's, or the file sits in the bundle's directory.
    fn detect(&self, d: &Detection) -> bool {
        d.file().is_some() && (d.vastnfs || d.family() == Some(PackageFamily::Vastnfs))
    }

    fn describe(&self, s: &Stack) -> String {
        match &s.vastnfs_version {
            Some(v) => format!("rpcrdma comes from the vastnfs {v} bundle (VAST's NFS client, replacing sunrpc, nfs and rpcrdma)"),
            None => "rpcrdma comes from VAST's NFS client bundle (vastnfs)".into(),
        }
    }

    fn hooked(&self, _s: &Stack) -> Remedy {
        Remedy::manual(Step::manual(
            "Reinstall the VAST NFS client for this kernel",
            "vastnfs compiles the hooks in unconditionally, so a vastnfs rpcrdma without them is a damaged or foreign build",
            vec!["reinstall the vastnfs package built for this kernel (see VAST's install guide), then reboot".into()],
        ))
    }

    fn abi(&self, _s: &Stack, _hooked: bool) -> Remedy {
        Remedy::manual(reinstall_against_rdma_stack())
    }

    fn gpl_export(&self, _s: &Stack) -> Step {
        Step::manual(
            "Upgrade the VAST NFS client",
            format!("{}; vastnfs 4.0 exports them plain", super::ofed::GPL_WHY),
            vec!["install a vastnfs release that exports the nvfs hooks GPL (ask VAST support for your kernel)".into()],
        )
    }
}

/// A vendor rpcrdma built against another RDMA stack: the vendor's package for this one.
pub fn reinstall_against_rdma_stack() -> Step {
    Step::manual(
        "Reinstall rpcrdma built against the installed RDMA stack",
        ABI_WHY,
        vec!["reinstall the package that provides rpcrdma, built for this kernel and the installed MOFED".into()],
    )
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{detected, resolved};

    #[test]
    fn the_bundle_directory_is_vastnfs() {
        let r = resolved("updates/bundle/net/sunrpc/xprtrdma/rpcrdma.ko");
        assert_eq!(detected(&r, None), super::ID);
        let r = resolved("extra/vastnfs/bundle/net/sunrpc/xprtrdma/rpcrdma.ko.xz");
        assert_eq!(detected(&r, None), super::ID);
    }

    #[test]
    fn the_running_bundle_names_its_version() {
        use super::super::test_support::stack;
        use super::super::RpcrdmaStack;
        use crate::doctor::stack::{Family, Ofed};
        let mut s = stack(Family::Debian, Ofed::None, &super::Vastnfs);
        s.vastnfs_version = Some("4.5.8".into());
        assert!(super::Vastnfs
            .describe(&s)
            .starts_with("rpcrdma comes from the vastnfs 4.5.8 bundle"));
    }
}
