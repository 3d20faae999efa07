//! rpcrdma compiled into the kernel image: nothing on disk to replace, so the fixes are the
//! distribution-inbox ones (install NVIDIA's mlnx-nfsrdma).

use super::contract::{Detection, RpcrdmaStack};
use crate::doctor::stack::Stack;
use crate::host::modules::Resolution;

stack!(BuiltIn, "built-in");

impl RpcrdmaStack for BuiltIn {
    fn detect(&self, d: &Detection) -> bool {
        matches!(d.resolution, Some(Resolution::BuiltIn { .. }))
    }

    fn describe(&self, _s: &Stack) -> String {
        "rpcrdma comes from rpcrdma built into the kernel".into()
    }
}
