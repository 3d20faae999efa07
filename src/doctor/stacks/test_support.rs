//! Stacks and detections without a host, for the unit tests beside each stack.

use super::contract::{Detection, RpcrdmaStack};
use crate::doctor::stack::{Family, Ofed, OsRelease, Stack};
use crate::host::modules::{ModuleOrigin, Resolution};
use crate::host::platform::nvidia_fs::{GpuDriver, GpuDriverFlavour};

/// A node on kernel 6.8.0-45-generic with the open GPU driver loaded.
pub fn stack(family: Family, ofed: Ofed, provenance: &'static dyn RpcrdmaStack) -> Stack {
    Stack {
        os: OsRelease::default(),
        family,
        kernel_release: Some("6.8.0-45-generic".into()),
        arch: Some("x86_64".into()),
        ofed,
        dkms: vec![],
        rpcrdma_package: None,
        provenance: provenance.id(),
        vastnfs_version: None,
        ofa_gds_config: None,
        gpu_driver: GpuDriver {
            loaded: true,
            version: Some("570.86".into()),
            flavour: GpuDriverFlavour::Open,
            evidence: None,
        },
        gpu_operator: false,
        operator_validations: vec![],
        kubernetes: false,
        owners: Default::default(),
        file_hooked: false,
        ofed_packages: vec![],
    }
}

/// `modprobe rpcrdma` resolves to this file of `modules.dep`.
pub fn resolved(rel_path: &str) -> Resolution {
    Resolution::File {
        module: "rpcrdma".into(),
        rel_path: rel_path.into(),
        path: format!("/lib/modules/6.8.0-45-generic/{rel_path}").into(),
        origin: ModuleOrigin::of(rel_path),
        deps: vec![],
        exists: true,
    }
}

/// The id of the stack the catalogue finds for a file and its owning package.
pub fn detected(resolution: &Resolution, package: Option<&str>) -> &'static str {
    super::detect(&Detection {
        resolution: Some(resolution),
        release: "6.8.0-45-generic",
        package,
        dkms: &[],
        vastnfs: false,
        file_hooked: false,
    })
    .id()
}
