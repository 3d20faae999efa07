//! An out-of-tree rpcrdma no other stack claims: doctor cannot tell who built it, so the fixes
//! install NVIDIA's mlnx-nfsrdma (the catalogue's default steps).

use super::contract::{Detection, RpcrdmaStack};
use crate::doctor::stack::Stack;

stack!(OtherOutOfTree, "other-out-of-tree");

impl RpcrdmaStack for OtherOutOfTree {
    fn detect(&self, d: &Detection) -> bool {
        d.file().is_some()
    }

    fn describe(&self, _s: &Stack) -> String {
        "rpcrdma comes from an out-of-tree rpcrdma of unknown origin".into()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{detected, resolved};

    #[test]
    fn an_unclaimed_updates_module_is_of_unknown_origin() {
        let r = resolved("updates/acme/rpcrdma.ko");
        assert_eq!(detected(&r, None), super::ID);
        // Directly in updates/ is where DKMS installs on SLES: NVIDIA's build, as the ownership
        // check has it too.
        let r = resolved("updates/rpcrdma.ko");
        assert_eq!(detected(&r, None), super::super::mofed_dkms::ID);
    }
}
