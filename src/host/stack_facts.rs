//! What the host says about the software stack around rpcrdma, beside the [`HostFacts`] every
//! check shares: the distribution, NVIDIA's OFED, DKMS, the package that owns the rpcrdma file,
//! vendor markers (vastnfs, the GPU Operator, Kubernetes), libcufile_rdma and the kernel log.
//!
//! Read once, from the facts and the commands the [`System`] answers; doctor composes its stack
//! and plan from them without reading the host again.

use serde::Serialize;

use super::boot::dkms::{parse_dkms_status, DkmsEntry};
use super::facts::HostFacts;
use super::io::error::HostError;
use super::io::root::read_first_line;
use super::modules::Resolution;
use super::platform::gdscheck::{run_gdscheck, GdscheckRun};
use super::platform::libcufile::{find_gds_tool, find_libcufile_rdma};
use super::platform::ofed::{ofed_metapackages, read_ofa_gds_config, Ofed};
use super::platform::os_release::OsRelease;
use super::platform::packages::owner_package;
use crate::system::System;

#[derive(Debug, Clone, Default, Serialize)]
pub struct StackFacts {
    pub os: OsRelease,
    /// `/proc/sys/kernel/arch`.
    pub arch: Option<String>,
    /// `ofed_info -s`.
    pub ofed: Ofed,
    /// NVIDIA's OFED metapackages in the package database (`mlnx-ofed-all`, `doca-ofed`), with
    /// their versions.
    pub ofed_packages: Vec<String>,
    /// `dkms status`.
    pub dkms: Vec<DkmsEntry>,
    /// The package owning the rpcrdma file modprobe resolves, per `dpkg -S` / `rpm -qf`.
    pub rpcrdma_package: Option<String>,
    /// `/sys/module/sunrpc/parameters/nfs_bundle_version`.
    pub vastnfs_version: Option<String>,
    /// `CONFIG_GPU_DIRECT_STORAGE` in mlnx-ofa_kernel's `configure.mk.kernel`, and where.
    pub ofa_gds_config: Option<(String, bool)>,
    /// `nvidia-fs-ready`, `mofed-ready`, … present in `/run/nvidia/validations`.
    pub operator_validations: Vec<String>,
    /// `/run/nvidia/validations` or `/run/nvidia/driver` exist.
    pub gpu_operator: bool,
    /// `/var/lib/kubelet` or `/etc/kubernetes` exist.
    pub kubernetes: bool,
    /// Where `libcufile_rdma.so` is installed.
    pub libcufile_rdma: Option<String>,
    /// Where GDS's `gdscheck` and `gdsio` are installed.
    pub gdscheck: Option<String>,
    /// What `gdscheck -p` answered, run bounded (or read from a bundle) when it is installed.
    #[serde(skip)]
    pub gdscheck_run: Option<GdscheckRun>,
    pub gdsio: Option<String>,
    /// `/etc/cuobj.json` (cuObject's configuration) exists.
    pub cuobj_json: bool,
    /// `dmesg`, when it could be read.
    #[serde(skip)]
    pub kernel_log: Option<String>,
}

impl StackFacts {
    pub fn read(facts: &HostFacts, system: &dyn System) -> Result<Self, HostError> {
        let root = &facts.root;
        let os = OsRelease::read(root)?;
        let release = facts.kernel.release.as_deref();
        let gdscheck = find_gds_tool(root, "gdscheck")?;
        let rpcrdma_package =
            rpcrdma_host_path(facts).and_then(|path| owner_package(system, os.family(), &path));
        Ok(StackFacts {
            arch: read_first_line(root, "proc/sys/kernel/arch")?,
            ofed: Ofed::read(system),
            ofed_packages: ofed_metapackages(facts.inventory.debs.as_deref(), system),
            dkms: system
                .run("dkms", &["status"])
                .ok_stdout()
                .map(parse_dkms_status)
                .unwrap_or_default(),
            rpcrdma_package,
            vastnfs_version: read_first_line(
                root,
                "sys/module/sunrpc/parameters/nfs_bundle_version",
            )?,
            ofa_gds_config: read_ofa_gds_config(root, release)?,
            operator_validations: root.list_dir("run/nvidia/validations")?.unwrap_or_default(),
            gpu_operator: root.exists("run/nvidia/validations") || root.exists("run/nvidia/driver"),
            kubernetes: root.exists("var/lib/kubelet") || root.exists("etc/kubernetes"),
            libcufile_rdma: find_libcufile_rdma(root)?,
            gdscheck_run: gdscheck.as_deref().map(|p| run_gdscheck(system, p)),
            gdscheck,
            gdsio: find_gds_tool(root, "gdsio")?,
            cuobj_json: root.exists("etc/cuobj.json"),
            kernel_log: system.run("dmesg", &[]).ok_stdout().map(str::to_string),
            os,
        })
    }
}

/// The rpcrdma file modprobe resolves, as a path on the host (not below the root).
fn rpcrdma_host_path(facts: &HostFacts) -> Option<String> {
    let Some(Resolution::File { path, .. }) = &facts.rpcrdma.resolution else {
        return None;
    };
    Some(
        path.strip_prefix(facts.root.dir())
            .map(|p| format!("/{}", p.display()))
            .unwrap_or_else(|_| path.display().to_string()),
    )
}
