//! Where `libcufile_rdma.so` is installed. Kernel NFS mounts never use it (it serves cuFile's
//! user-space RDMA), so it is only reported, to stop anyone chasing it.

use crate::host::{HostError, Root};

/// Where `libcufile_rdma.so*` is installed, if anywhere (first match).
pub fn find_libcufile_rdma(root: &Root) -> Result<Option<String>, HostError> {
    let mut dirs = vec![
        "/usr/lib/x86_64-linux-gnu".to_string(),
        "/usr/lib/aarch64-linux-gnu".to_string(),
        "/usr/lib64".to_string(),
        "/usr/local/cuda/lib64".to_string(),
    ];
    for cuda in root.list_dir("usr/local")?.unwrap_or_default() {
        if cuda.starts_with("cuda") {
            dirs.push(format!("/usr/local/{cuda}/lib64"));
            for t in root
                .list_dir(format!("usr/local/{cuda}/targets"))?
                .unwrap_or_default()
            {
                dirs.push(format!("/usr/local/{cuda}/targets/{t}/lib"));
            }
        }
    }
    for d in dirs {
        if let Some(names) = root.list_dir(&d)? {
            if let Some(n) = names.iter().find(|n| n.starts_with("libcufile_rdma.so")) {
                return Ok(Some(format!("{d}/{n}")));
            }
        }
    }
    Ok(None)
}
