//! NVIDIA's own kernels (Ubuntu's `linux-nvidia` and `linux-nvidia-bos`), whose in-tree rpcrdma
//! carries NVIDIA's GDS patch ("NVIDIA: SAUCE: Patch NFS driver to support GDS", NV-Kernels
//! #609/#615): the hooks are compiled into `kernel/net/sunrpc/xprtrdma/rpcrdma.ko`, so no
//! DOCA/MLNX_OFED rebuild is ever the fix here.
//!
//! Recognised by the kernel release naming the flavour, or by an in-tree rpcrdma that defines
//! the hooks (no distribution's own build does). The one published copy of the patch exports the
//! hooks with plain `EXPORT_SYMBOL`, which kernels from 6.6 refuse to `__symbol_get`; the GPL rule
//! judges that export like any other, and this stack's fix is a kernel whose in-tree export is GPL
//! (verified with `inspect-module` before booting it) or the field patch rebuilt through DKMS.

use super::contract::{Detection, RpcrdmaStack, ABI_WHY};
use super::remedy::Remedy;
use crate::doctor::stack::Stack;
use crate::doctor::step::Step;
use crate::host::modules::ModuleOrigin;

stack!(NvidiaKernel, "nvidia-kernel");

/// Where the in-tree rpcrdma sits below a release's module directory (compressed as the
/// distribution ships it).
const IN_TREE: &str = "kernel/net/sunrpc/xprtrdma/rpcrdma.ko*";

/// The kernel flavour a release names: `nvidia-bos`, `nvidia` (also `nvidia-64k`, …), or none.
pub fn flavour(release: &str) -> Option<&'static str> {
    let (_, tail) = release.split_once("-nvidia")?;
    // Ubuntu names the flavour last: `7.0.0-1003-nvidia`, `7.0.0-1003-nvidia-bos`.
    if tail.is_empty() || tail.starts_with('-') {
        Some(if tail.starts_with("-bos") {
            "linux-nvidia-bos"
        } else {
            "linux-nvidia"
        })
    } else {
        None
    }
}

/// The metapackage that follows this kernel's flavour.
fn metapackage(s: &Stack) -> &'static str {
    s.kernel_release
        .as_deref()
        .and_then(flavour)
        .unwrap_or("linux-nvidia")
}

impl RpcrdmaStack for NvidiaKernel {
    fn detect(&self, d: &Detection) -> bool {
        d.file()
            .is_some_and(|(_, origin)| *origin == ModuleOrigin::Inbox)
            && (flavour(d.release).is_some() || d.file_hooked)
    }

    fn describe(&self, s: &Stack) -> String {
        match s.kernel_release.as_deref().and_then(flavour) {
            Some(meta) => format!(
                "rpcrdma comes from the in-tree rpcrdma of NVIDIA's {meta} kernel (NVIDIA's GDS patch compiles the hooks in; no DOCA/MLNX_OFED build is needed)"
            ),
            None => "rpcrdma comes from an in-tree rpcrdma that defines the nvfs hooks (a kernel carrying NVIDIA's GDS patch; no DOCA/MLNX_OFED build is needed)".into(),
        }
    }

    fn hooked(&self, s: &Stack) -> Remedy {
        let meta = metapackage(s);
        if s.file_hooked {
            // The file has the hooks: what lacks them is another build loaded in its place.
            return Remedy::manual(Step::manual(
                "Load the in-tree rpcrdma, which has the hooks",
                format!("this {meta} kernel's own rpcrdma defines the hooks; the rpcrdma loaded now is another build without them"),
                vec![
                    "# remove whatever loads its own rpcrdma (a DOCA/MLNX_OFED mlnx-nfsrdma package or a driver container), then:".into(),
                    "modprobe -r rpcrdma".into(),
                    "modprobe rpcrdma".into(),
                ],
            ));
        }
        Remedy::manual(Step::manual(
            format!("Update the {meta} kernel"),
            format!("NVIDIA's {meta} kernels compile the hooks into the in-tree rpcrdma; this one has none"),
            vec![format!(
                "apt-get install --only-upgrade {meta}   # then reboot"
            )],
        ))
    }

    fn abi(&self, s: &Stack, hooked: bool) -> Remedy {
        if hooked {
            return Remedy::none();
        }
        if !s.file_hooked {
            return Remedy::manual(super::vastnfs::reinstall_against_rdma_stack());
        }
        // The in-tree rpcrdma matches the kernel's own ib_core; what it disagrees with is an
        // out-of-tree RDMA core installed beside it. Rebuilding DOCA would throw the hooks away.
        Remedy::manual(Step::manual(
            "Use the kernel's own RDMA core with its hooked rpcrdma",
            format!("{ABI_WHY}; the in-tree rpcrdma of this kernel has the hooks, so the out-of-tree ib_core/rdma_cm (DOCA-OFED / MLNX_OFED) it disagrees with is what has to go, not the rpcrdma"),
            vec![
                "apt-get purge mlnx-ofed-kernel-dkms mlnx-nfsrdma-dkms   # DOCA-OFED / MLNX_OFED's kernel modules; keep its user space if you need it".into(),
                format!("depmod -a {}", s.kernel()),
            ],
        ))
    }

    fn gpl_export(&self, s: &Stack) -> Step {
        let meta = metapackage(s);
        let k = s.kernel();
        Step::manual(
            format!("Boot a {meta} kernel whose in-tree rpcrdma exports the hooks GPL, or patch the export"),
            format!("{}; the export is in the kernel's own rpcrdma (NVIDIA's GDS patch), so no DOCA/MLNX_OFED package fixes it", super::ofed::GPL_WHY),
            vec![
                "# no linux-nvidia release is known yet to export the hooks GPL: install a candidate and look before booting it".into(),
                format!("apt-get install --only-upgrade {meta}"),
                format!("nfs-gds inspect-module /lib/modules/<new release>/{IN_TREE}   # both hooks must read `defined, exported GPL`"),
                "# or the field patch, rebuilt through DKMS for this kernel (unofficial):".into(),
                format!("apt-get source linux-image-unsigned-{k}   # the kernel's source, with NVIDIA's patch"),
                r"sed -i 's/EXPORT_SYMBOL(\(rpcrdma_[a-z_]*nvfs_dma_ops\))/EXPORT_SYMBOL_GPL(\1)/' net/sunrpc/xprtrdma/nvfs_rpc_rdma.c".into(),
                "# copy net/sunrpc/xprtrdma to /usr/src/rpcrdma-nvfs-1.0 with a dkms.conf (BUILT_MODULE_NAME[0]=rpcrdma, DEST_MODULE_LOCATION[0]=/updates/dkms), then:".into(),
                format!("dkms install rpcrdma-nvfs/1.0 -k {k}"),
                format!("nfs-gds inspect-module /lib/modules/{k}/updates/dkms/rpcrdma.ko*   # both hooks: `defined, exported GPL`"),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{resolved, stack};
    use super::super::{detect, inbox};
    use super::*;
    use crate::doctor::stack::{Family, Ofed};

    fn on(release: &str, file_hooked: bool) -> &'static str {
        let r = resolved("kernel/net/sunrpc/xprtrdma/rpcrdma.ko.zst");
        detect(&Detection {
            resolution: Some(&r),
            release,
            package: None,
            dkms: &[],
            vastnfs: false,
            file_hooked,
        })
        .id()
    }

    fn nvidia(release: &str, file_hooked: bool) -> Stack {
        let mut s = stack(Family::Debian, Ofed::None, &NvidiaKernel);
        s.kernel_release = Some(release.into());
        s.file_hooked = file_hooked;
        s
    }

    #[test]
    fn the_in_tree_module_of_a_linux_nvidia_kernel_is_nvidias() {
        assert_eq!(on("6.8.0-1015-nvidia", false), ID);
        assert_eq!(on("7.0.0-1003-nvidia-bos", false), ID);
        assert_eq!(on("6.8.0-1015-nvidia-64k", false), ID);
        assert_eq!(on("6.8.0-45-generic", false), inbox::ID);
        // A release merely containing the word is not the flavour.
        assert_eq!(on("6.8.0-45-nvidiafoo", false), inbox::ID);
    }

    #[test]
    fn an_in_tree_rpcrdma_with_the_hooks_is_recognised_whatever_the_release() {
        assert_eq!(on("7.0.0-14-generic", true), ID);
        assert!(NvidiaKernel
            .describe(&nvidia("7.0.0-14-generic", true))
            .contains("in-tree rpcrdma that defines the nvfs hooks"));
    }

    #[test]
    fn the_bos_flavour_is_upgraded_by_its_own_metapackage() {
        let s = nvidia("7.0.0-1003-nvidia-bos", false);
        assert!(NvidiaKernel
            .describe(&s)
            .contains("linux-nvidia-bos kernel"));
        let r = NvidiaKernel.hooked(&s);
        assert_eq!(
            r.steps[0].commands,
            ["apt-get install --only-upgrade linux-nvidia-bos   # then reboot"]
        );
    }

    #[test]
    fn a_plain_in_tree_export_gets_a_gpl_kernel_or_the_dkms_patch_never_doca() {
        let s = nvidia("7.0.0-1003-nvidia", true);
        let step = NvidiaKernel.gpl_export(&s);
        let all = step.commands.join("\n");
        assert!(all.contains("nfs-gds inspect-module /lib/modules/<new release>/kernel/net/sunrpc/xprtrdma/rpcrdma.ko*"), "{all}");
        assert!(all.contains("EXPORT_SYMBOL_GPL"), "{all}");
        assert!(
            all.contains("dkms install rpcrdma-nvfs/1.0 -k 7.0.0-1003-nvidia"),
            "{all}"
        );
        for doca in [
            "doca-ofed",
            "mlnx-nfsrdma-dkms",
            "dkms install mlnx-nfsrdma",
        ] {
            assert!(!all.contains(doca), "{doca}: {all}");
        }
    }

    #[test]
    fn with_hooks_in_tree_no_fix_rebuilds_doca() {
        let s = nvidia("7.0.0-1003-nvidia", true);
        let hooked = NvidiaKernel.hooked(&s);
        assert_eq!(
            hooked.steps[0].title,
            "Load the in-tree rpcrdma, which has the hooks"
        );
        let abi = NvidiaKernel.abi(&s, false);
        let all: Vec<String> = hooked
            .steps
            .iter()
            .chain(&abi.steps)
            .flat_map(|st| st.commands.clone())
            .collect();
        for c in &all {
            assert!(!c.contains("dkms install mlnx"), "{c}");
            assert!(!c.starts_with("apt-get install doca"), "{c}");
        }
        assert!(!hooked.rebuilt && !abi.rebuilt);
    }
}
