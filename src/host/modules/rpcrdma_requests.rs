//! What modprobe's configuration does to the requests that load rpcrdma: an admin's
//! `modprobe rpcrdma`, and the kernel's own request on the first RDMA mount (`rpcrdma` since
//! 5.11 and its stable backports, `xprtrdma` before). The thin reader over
//! [`modprobe_config`](crate::host::modules::modprobe_config) and [`modprobe_effect`](crate::host::modules::modprobe_effect).

use serde::Serialize;

use super::module_tree::ModuleTree;
use crate::host::io::error::HostError;
use crate::host::io::root::Root;
use crate::host::kernel::{KernelInfo, KernelVersion};
use crate::host::modules::modprobe_config::{read_modprobe_config, BadLine};
use crate::host::modules::modprobe_effect::{
    explain_request, Lookup, RequestExplanation, TreeIndex, KERNEL_REQUEST_LEGACY,
};
use crate::kmod::RPCRDMA;

/// The first kernel that requests `rpc<netid>` (upstream d5aa6b22e225).
const NETID_REQUESTS: KernelVersion = KernelVersion::new(5, 11, 0);

#[derive(Debug, Clone, Serialize)]
pub struct RpcrdmaRequests {
    /// The configuration files read, in modprobe's order (host paths).
    pub files: Vec<String>,
    /// `modprobe rpcrdma` first, then the kernel's own request when it asks another name.
    pub requests: Vec<RequestExplanation>,
    /// Lines modprobe ignores.
    pub bad_lines: Vec<BadLine>,
}

impl RpcrdmaRequests {
    /// The module `modprobe rpcrdma` means when a configuration `alias` redirects it elsewhere.
    pub fn redirected_to(&self) -> Option<&str> {
        let r = self.requests.first()?;
        match (&r.lookup, r.targets.first()) {
            (Lookup::ConfigAlias { .. }, Some(t)) if t != RPCRDMA => Some(t),
            _ => None,
        }
    }
}

/// The names the kernel requests for `proto=rdma`: `rpcrdma` from 5.11, `xprtrdma` before;
/// both when the upstream version is unknown or older (5.4 and 5.10 stable carry the change).
pub fn kernel_request_names(kernel: &KernelInfo) -> Vec<&'static str> {
    match kernel.upstream {
        Some(v) if v >= NETID_REQUESTS => vec![RPCRDMA],
        _ => vec![RPCRDMA, KERNEL_REQUEST_LEGACY],
    }
}

pub fn read_rpcrdma_requests(
    root: &Root,
    tree: &ModuleTree,
    kernel: &KernelInfo,
) -> Result<RpcrdmaRequests, HostError> {
    let cmdline = root.read_text_lossy("proc/cmdline")?;
    let config = read_modprobe_config(root, Some(&tree.dir_rel), cmdline.as_deref())?;
    let index = TreeIndex::new(root, tree);
    let requests = kernel_request_names(kernel)
        .into_iter()
        .map(|name| explain_request(&config, &index, name))
        .collect();
    Ok(RpcrdmaRequests {
        files: config.files.iter().map(|f| f.path.clone()).collect(),
        requests,
        bad_lines: config.bad_lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(release: &str) -> KernelInfo {
        KernelInfo::from_parts(Some(release.into()), None, None)
    }

    #[test]
    fn the_kernel_requests_rpcrdma_from_5_11_and_xprtrdma_maybe_before() {
        assert_eq!(kernel_request_names(&kernel("6.1.0-50-amd64")), ["rpcrdma"]);
        assert_eq!(kernel_request_names(&kernel("5.11.0")), ["rpcrdma"]);
        assert_eq!(
            kernel_request_names(&kernel("5.10.0-30-amd64")),
            ["rpcrdma", "xprtrdma"]
        );
        assert_eq!(
            kernel_request_names(&KernelInfo::from_parts(None, None, None)),
            ["rpcrdma", "xprtrdma"]
        );
    }
}
