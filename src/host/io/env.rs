//! The environment variables nfs-gds reads, read once and in one place. The environment is the
//! process's, so its reader is too: [`Env::get`] reads every variable the first time it is
//! asked and answers from that afterwards, and no other file reads a variable.
//! A variable set to the empty string counts as unset, for every variable alike, as
//! <https://no-color.org> says for `NO_COLOR`.
//!
//! | variable | read for |
//! |---|---|
//! | `NFS_GDS_ROOT`, `NFS_GDS_CONFIG` | every command without `--root` / `--config`, and the mount helper, which mount(8) starts without options of ours |
//! | `NFS_GDS_NO_CACHE` | the facts cache off (any value but `0`) |
//! | `NFS_GDS_CACHE_DIR` | the facts cache's directory, in place of `<root>/var/cache/nfs-gds` |
//! | `CUFILE_ENV_PATH_JSON` | the cufile.json cuFile reads on this machine (never in a tree) |
//! | `PATH` | whether programs started get [`SEARCH_PATH`](super::programs::SEARCH_PATH) |
//! | `NO_COLOR` | no colour on a terminal (`--color=auto`) |
//! | `NRI_PLUGIN_SOCKET`, `NRI_PLUGIN_NAME`, `NRI_PLUGIN_IDX` | `nri` started by the runtime (pre-registered): the connection's descriptor, the name and index it registers under |
//! | `SLURMD_NODENAME` | the Slurm node name `slurm health` drains or resumes (slurmd sets it for its health check and prolog) |
//! | `SLURM_JOB_CONSTRAINTS`, `SLURM_JOB_ID` | whether the job `slurm prolog` runs for asks for the GDS feature, and which job it is |

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::sync::OnceLock;

/// What the environment says, by what it is read for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    /// `NFS_GDS_ROOT`: the mount helper's root.
    pub root: Option<PathBuf>,
    /// `NFS_GDS_CONFIG`: the mount helper's policy file.
    pub config: Option<PathBuf>,
    /// `NFS_GDS_NO_CACHE` set to anything but `0`.
    pub no_cache: bool,
    /// `NFS_GDS_CACHE_DIR`.
    pub cache_dir: Option<PathBuf>,
    /// `CUFILE_ENV_PATH_JSON`.
    pub cufile_json: Option<String>,
    /// Whether `PATH` is set at all (an empty `PATH` is the caller's choice, kept).
    pub path_set: bool,
    /// `NO_COLOR`.
    pub no_color: bool,
    /// `NRI_PLUGIN_SOCKET`: the descriptor of the connection a runtime started `nri` with.
    pub nri_plugin_socket: Option<String>,
    /// `NRI_PLUGIN_NAME`.
    pub nri_plugin_name: Option<String>,
    /// `NRI_PLUGIN_IDX`.
    pub nri_plugin_idx: Option<String>,
    /// `SLURMD_NODENAME`.
    pub slurmd_nodename: Option<String>,
    /// `SLURM_JOB_CONSTRAINTS`: the job's `--constraint`, as slurmd passes it to the prolog.
    pub slurm_job_constraints: Option<String>,
    /// `SLURM_JOB_ID`.
    pub slurm_job_id: Option<String>,
}

impl Env {
    /// This process's environment, read on the first call.
    pub fn get() -> &'static Env {
        static ENV: OnceLock<Env> = OnceLock::new();
        ENV.get_or_init(|| Env::from_lookup(|name| std::env::var_os(name)))
    }

    /// The environment `lookup` answers (the process's, or a test's table).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Env {
        let set = |name: &str| lookup(name).filter(|v| !v.is_empty());
        Env {
            root: set("NFS_GDS_ROOT").map(PathBuf::from),
            config: set("NFS_GDS_CONFIG").map(PathBuf::from),
            no_cache: set("NFS_GDS_NO_CACHE").is_some_and(|v| v != OsStr::new("0")),
            cache_dir: set("NFS_GDS_CACHE_DIR").map(PathBuf::from),
            cufile_json: set("CUFILE_ENV_PATH_JSON").and_then(|v| v.into_string().ok()),
            path_set: lookup("PATH").is_some(),
            no_color: set("NO_COLOR").is_some(),
            nri_plugin_socket: set("NRI_PLUGIN_SOCKET").and_then(|v| v.into_string().ok()),
            nri_plugin_name: set("NRI_PLUGIN_NAME").and_then(|v| v.into_string().ok()),
            nri_plugin_idx: set("NRI_PLUGIN_IDX").and_then(|v| v.into_string().ok()),
            slurmd_nodename: set("SLURMD_NODENAME").and_then(|v| v.into_string().ok()),
            slurm_job_constraints: set("SLURM_JOB_CONSTRAINTS")
                .map(|v| v.to_string_lossy().into_owned()),
            slurm_job_id: set("SLURM_JOB_ID").map(|v| v.to_string_lossy().into_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        Env::from_lookup(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn an_empty_variable_is_unset_and_no_cache_0_keeps_the_cache() {
        assert_eq!(env(&[]), Env::default());
        let e = env(&[
            ("NFS_GDS_ROOT", ""),
            ("NFS_GDS_NO_CACHE", "0"),
            ("NO_COLOR", ""),
            ("PATH", ""),
        ]);
        assert_eq!(e.root, None);
        assert!(!e.no_cache && !e.no_color);
        assert!(e.path_set, "an empty PATH is set: the caller chose it");
        let e = env(&[
            ("NFS_GDS_ROOT", "/t"),
            ("NFS_GDS_CONFIG", "/t/p.toml"),
            ("NFS_GDS_NO_CACHE", "1"),
            ("NFS_GDS_CACHE_DIR", "/c"),
            ("CUFILE_ENV_PATH_JSON", "/opt/cufile.json"),
            ("NO_COLOR", "1"),
        ]);
        assert_eq!(e.root.as_deref(), Some(std::path::Path::new("/t")));
        assert_eq!(e.config.as_deref(), Some(std::path::Path::new("/t/p.toml")));
        assert!(e.no_cache && e.no_color && !e.path_set);
        assert_eq!(e.cache_dir.as_deref(), Some(std::path::Path::new("/c")));
        assert_eq!(e.cufile_json.as_deref(), Some("/opt/cufile.json"));
    }
}
