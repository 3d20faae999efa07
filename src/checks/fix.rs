//! The kinds of fix doctor's plan knows: each check's failure names the ones it calls for, and
//! doctor turns each into the exact steps for the node's stack. Their order is the order a plan
//! applies them in.

/// A step of doctor's plan, as a failing check asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fix {
    /// Load (or switch to) NVIDIA's open GPU kernel modules.
    GpuDriver,
    /// Install and load nvidia-fs (or enable it in the GPU Operator).
    NvidiaFs,
    /// Rebuild nvidia-fs against the installed GPU driver (its `nvidia_p2p_*` CRCs disagree).
    RebuildNvidiaFs,
    /// Upgrade a known-bad nvidia-fs to the release that fixed it (advisory).
    UpgradeNvidiaFs,
    /// Install or rebuild an rpcrdma that carries the nvfs hooks.
    HookedRpcrdma,
    /// Install an rpcrdma that exports the hooks GPL.
    GplExport,
    /// Install or rebuild an rpcrdma built against the installed ib_core/rdma_cm (its symbol
    /// CRCs disagree with theirs).
    AbiRpcrdma,
    /// Sign the GDS modules with a key the kernel trusts (DKMS's MOK, enrolled with mokutil).
    SignModules,
    /// Build the GDS modules for the kernel the next boot starts.
    NextBootModules,
    /// Replace the loaded rpcrdma with the build on disk (reload or reboot).
    ReloadRpcrdma,
    /// Keep one NFS/RDMA stack: remove the other package family's modules (advisory).
    StackConflict,
    /// Remove the modprobe configuration lines that stop or replace rpcrdma's load.
    ModprobeConfig,
    /// Fix one mount's transport or options.
    Mount,
    /// Boot with the IOMMU in passthrough (advisory).
    IommuPassthrough,
    /// Disable ACS on the bridges nvidia-fs lists (advisory).
    AcsOff,
}

impl Fix {
    /// Whether doctor has more to say than the check's own remedy: a stack-specific plan.
    fn is_planned_per_stack(self) -> bool {
        matches!(
            self,
            Fix::GpuDriver
                | Fix::NvidiaFs
                | Fix::RebuildNvidiaFs
                | Fix::UpgradeNvidiaFs
                | Fix::HookedRpcrdma
                | Fix::GplExport
                | Fix::AbiRpcrdma
                | Fix::SignModules
                | Fix::NextBootModules
                | Fix::StackConflict
        )
    }

    /// Whether doctor plans it for a warning too: an advisory check's fix.
    pub fn is_advisory(self) -> bool {
        matches!(
            self,
            Fix::IommuPassthrough | Fix::AcsOff | Fix::StackConflict | Fix::UpgradeNvidiaFs
        )
    }
}

/// What remedies end with, outside doctor, when doctor has a plan for the failure.
pub const TO_DOCTOR: &str = "; run `nfs-gds doctor` for the fix on this node's stack";

/// What they end with in doctor's own report, above its plan.
pub const TO_PLAN: &str = " (see the plan below)";

/// Whether a failure with these fixes is worth sending the admin to doctor for.
pub fn doctor_plans(fixes: &[Fix]) -> bool {
    fixes.iter().any(|f| f.is_planned_per_stack())
}
