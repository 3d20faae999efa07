//! No rpcrdma for this kernel at all (or no module tree): NVIDIA's mlnx-nfsrdma is what a GDS
//! node installs.

use super::contract::{Detection, RpcrdmaStack};
use crate::doctor::stack::Stack;
use crate::host::modules::Resolution;

stack!(Missing, "missing");

impl RpcrdmaStack for Missing {
    fn detect(&self, d: &Detection) -> bool {
        matches!(
            d.resolution,
            None | Some(Resolution::NotFound { .. }) | Some(Resolution::NoModuleTree { .. })
        )
    }

    fn describe(&self, _s: &Stack) -> String {
        "no rpcrdma module was found for this kernel".into()
    }

    fn is_vendor(&self) -> bool {
        false
    }
}
