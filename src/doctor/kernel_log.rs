//! The kernel log lines doctor shows: those that explain a failed registration, or a refused
//! load of rpcrdma or nvidia_fs.

/// nvidia_fs ([`crate::host::modules::kernel_log`]).
pub fn relevant_log_lines(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| {
            crate::host::modules::kernel_log::is_gds_load_failure(l)
                || l.contains("symbol_get of non-GPLONLY")
                || l.contains("nvfs registration failed")
                || l.contains("deregister funtion not found")
                || l.contains("nvidia_fs: Unknown symbol")
                || l.contains("uses symbols from proprietary module")
        })
        .map(|l| l.trim().to_string())
        .collect()
}
