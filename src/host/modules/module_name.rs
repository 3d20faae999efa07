//! Module names as the kernel compares them (`-` and `_` are the same character), and the
//! name a module file provides.

/// The kernel's canonical spelling of a module name: `-` becomes `_`.
pub fn normalize_name(name: &str) -> String {
    name.replace('-', "_")
}

/// The module name a file provides: `…/rpcrdma.ko.zst` → `rpcrdma`.
pub fn module_name_of_path(path: &str) -> String {
    let base = path.rsplit('/').next().unwrap_or(path);
    let stem = match base.find(".ko") {
        Some(i) => &base[..i],
        None => base,
    };
    normalize_name(stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_names_from_paths() {
        assert_eq!(
            module_name_of_path("kernel/net/sunrpc/xprtrdma/rpcrdma.ko.zst"),
            "rpcrdma"
        );
        assert_eq!(module_name_of_path("extra/nvidia-fs.ko"), "nvidia_fs");
        assert_eq!(module_name_of_path("updates/dkms/rpcrdma.ko"), "rpcrdma");
    }
}
