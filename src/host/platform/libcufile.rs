//! Where CUDA's GDS user-space pieces are installed: `libcufile_rdma.so`, the `gdscheck` and
//! `gdsio` tools, cuObject's `cuobj.json`. Kernel NFS mounts use none of them, so they are only
//! reported, to stop anyone chasing them.

use crate::host::io::error::HostError;
use crate::host::io::root::Root;

/// Where `libcufile_rdma.so*` is installed, if anywhere (first match).
pub fn find_libcufile_rdma(root: &Root) -> Result<Option<String>, HostError> {
    let mut dirs = vec![
        "/usr/lib/x86_64-linux-gnu".to_string(),
        "/usr/lib/aarch64-linux-gnu".to_string(),
        "/usr/lib64".to_string(),
        "/usr/local/cuda/lib64".to_string(),
    ];
    for cuda in root
        .list_dir_where("usr/local", |n| n.starts_with("cuda"))?
        .unwrap_or_default()
    {
        dirs.push(format!("/usr/local/{cuda}/lib64"));
        for t in root
            .list_dir(format!("usr/local/{cuda}/targets"))?
            .unwrap_or_default()
        {
            dirs.push(format!("/usr/local/{cuda}/targets/{t}/lib"));
        }
    }
    for d in dirs {
        if let Some(names) = root.list_dir_where(&d, |n| n.starts_with("libcufile_rdma.so"))? {
            if let Some(n) = names.first() {
                return Ok(Some(format!("{d}/{n}")));
            }
        }
    }
    Ok(None)
}

/// Where CUDA installs one of GDS's tools (`gdscheck`, `gdsio`), if it does.
pub fn find_gds_tool(root: &Root, tool: &str) -> Result<Option<String>, HostError> {
    for cuda in root
        .list_dir_where("usr/local", |n| n.starts_with("cuda"))?
        .unwrap_or_default()
    {
        let path = format!("/usr/local/{cuda}/gds/tools/{tool}");
        if root.exists(&path) {
            return Ok(Some(path));
        }
    }
    Ok(None)
}
