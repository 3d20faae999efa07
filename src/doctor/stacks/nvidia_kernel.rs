//! NVIDIA's `linux-nvidia` kernels, whose inbox rpcrdma has the hooks compiled in: a hookless
//! one is fixed by a newer kernel of that flavour.

use super::{Detection, Remedy, RpcrdmaStack};
use crate::doctor::stack::Stack;
use crate::doctor::step::Step;
use crate::host::modules::ModuleOrigin;

#[derive(Debug)]
pub struct NvidiaKernel;

pub const ID: &str = "nvidia-kernel";

impl RpcrdmaStack for NvidiaKernel {
    fn id(&self) -> &'static str {
        ID
    }

    fn detect(&self, d: &Detection) -> bool {
        d.release.contains("nvidia")
            && d.file()
                .is_some_and(|(_, origin)| *origin == ModuleOrigin::Inbox)
    }

    fn describe(&self, _s: &Stack) -> String {
        "rpcrdma comes from the inbox rpcrdma of an NVIDIA linux-nvidia kernel (hooks compiled in)"
            .into()
    }

    fn hooked(&self, _s: &Stack) -> Remedy {
        Remedy::manual(Step::manual(
            "Update the linux-nvidia kernel",
            "NVIDIA's kernels compile the hooks into the inbox rpcrdma; this one has none",
            vec!["apt-get install --only-upgrade linux-nvidia   # then reboot".into()],
        ))
    }

    fn abi(&self, _s: &Stack, _hooked: bool) -> Remedy {
        Remedy::manual(super::vastnfs::reinstall_against_rdma_stack())
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::resolved;
    use super::super::{detect, inbox};
    use super::*;

    #[test]
    fn the_inbox_module_of_a_linux_nvidia_kernel_is_nvidias() {
        let r = resolved("kernel/net/sunrpc/xprtrdma/rpcrdma.ko.zst");
        let on = |release| {
            detect(&Detection {
                resolution: Some(&r),
                release,
                package: None,
                dkms: &[],
                vastnfs: false,
            })
            .id()
        };
        assert_eq!(on("6.8.0-1015-nvidia"), ID);
        assert_eq!(on("6.8.0-45-generic"), inbox::ID);
    }
}
