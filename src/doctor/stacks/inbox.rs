//! The distribution kernel's own rpcrdma (`kernel/…` of the kernel package): it never has the
//! nvfs hooks, so every fix installs NVIDIA's mlnx-nfsrdma (the catalogue's default steps).

use super::{Detection, RpcrdmaStack};
use crate::doctor::stack::Stack;
use crate::host::modules::ModuleOrigin;

#[derive(Debug)]
pub struct Inbox;

pub const ID: &str = "inbox";

impl RpcrdmaStack for Inbox {
    fn id(&self) -> &'static str {
        ID
    }

    fn detect(&self, d: &Detection) -> bool {
        d.file()
            .is_some_and(|(_, origin)| *origin == ModuleOrigin::Inbox)
    }

    fn describe(&self, _s: &Stack) -> String {
        "rpcrdma comes from the distribution kernel's inbox rpcrdma (never has the nvfs hooks)"
            .into()
    }

    fn is_vendor(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{detected, resolved};

    #[test]
    fn the_kernel_packages_rpcrdma_is_inbox() {
        let r = resolved("kernel/net/sunrpc/xprtrdma/rpcrdma.ko.zst");
        assert_eq!(
            detected(&r, Some("linux-modules-6.8.0-45-generic")),
            super::ID
        );
    }
}
