//! NVIDIA's OFED on this node: which distribution `ofed_info -s` names (MLNX_OFED, DOCA-OFED),
//! and whether mlnx-ofa_kernel was configured with GPUDirect Storage.

use serde::Serialize;

use crate::host::io::error::HostError;
use crate::host::io::root::Root;
use crate::system::System;

/// The installed OFED distribution, from `ofed_info -s`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Ofed {
    /// `MLNX_OFED_LINUX-24.07-0.6.1.0:` — the standalone installer (last release 24.10).
    MlnxOfed { version: String },
    /// `OFED-internal-24.10-1.1.4.0.200:` — DOCA-OFED (DOCA-Host).
    Doca { version: String },
    /// `ofed_info` answered something else.
    Other { line: String },
    /// No `ofed_info`: the distribution's inbox RDMA stack.
    #[default]
    None,
}

pub fn parse_ofed_info(stdout: &str) -> Ofed {
    let Some(line) = stdout.lines().map(str::trim).find(|l| !l.is_empty()) else {
        return Ofed::None;
    };
    let line = line.trim_end_matches(':');
    if let Some(v) = line.strip_prefix("MLNX_OFED_LINUX-") {
        Ofed::MlnxOfed {
            version: v.split_whitespace().next().unwrap_or(v).to_string(),
        }
    } else if let Some(v) = line.strip_prefix("OFED-internal-") {
        Ofed::Doca {
            version: v.to_string(),
        }
    } else {
        Ofed::Other {
            line: line.to_string(),
        }
    }
}

impl Ofed {
    /// What `ofed_info -s` says; [`Ofed::None`] when it is not installed.
    pub fn read(system: &dyn System) -> Self {
        match system.run("ofed_info", &["-s"]).ok_stdout() {
            Some(out) => parse_ofed_info(out),
            None => Ofed::None,
        }
    }

    /// `major.minor` of the release (`24.07`), when known.
    pub fn release(&self) -> Option<(u32, u32)> {
        let v = match self {
            Ofed::MlnxOfed { version } | Ofed::Doca { version } => version,
            _ => return None,
        };
        let mut it = v.split(['.', '-']);
        Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
    }
}

/// The metapackages of NVIDIA's two OFED distributions: MLNX_OFED's installer installs
/// `mlnx-ofed-all` (or a narrower `mlnx-ofed-*` set with it), DOCA-Host's repository `doca-ofed`.
pub const OFED_METAPACKAGES: [&str; 2] = ["mlnx-ofed-all", "doca-ofed"];

/// Which of [`OFED_METAPACKAGES`] the package database has, with its version: from dpkg's
/// installed list (`debs`) where there is one, else `rpm -q` (which exits non-zero when any is
/// missing, and names the missing as `package X is not installed`).
pub fn ofed_metapackages(debs: Option<&[(String, String)]>, system: &dyn System) -> Vec<String> {
    if let Some(debs) = debs {
        return OFED_METAPACKAGES
            .iter()
            .filter_map(|name| {
                debs.iter()
                    .find(|(p, _)| p == name)
                    .map(|(p, v)| format!("{p} {v}"))
            })
            .collect();
    }
    let mut args = vec!["-q"];
    args.extend(OFED_METAPACKAGES);
    match system.run("rpm", &args) {
        crate::system::Output::Ran { stdout, .. } => parse_rpm_q(&stdout),
        crate::system::Output::Missing => Vec::new(),
    }
}

/// `rpm -q mlnx-ofed-all doca-ofed` → the installed ones, as `name version-release`.
pub fn parse_rpm_q(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(str::trim)
        .filter(|l| !l.contains(' '))
        .filter_map(|nevra| {
            OFED_METAPACKAGES.iter().find_map(|name| {
                let rest = nevra.strip_prefix(name)?.strip_prefix('-')?;
                rest.starts_with(|c: char| c.is_ascii_digit())
                    .then(|| format!("{name} {rest}"))
            })
        })
        .collect()
}

/// Finds mlnx-ofa_kernel's `configure.mk.kernel` for this release and reads
/// `CONFIG_GPU_DIRECT_STORAGE`: the file, and whether it is set.
pub fn read_ofa_gds_config(
    root: &Root,
    release: Option<&str>,
) -> Result<Option<(String, bool)>, HostError> {
    let Some(release) = release else {
        return Ok(None);
    };
    let mut candidates = Vec::new();
    for arch in root.list_dir("usr/src/ofa_kernel")?.unwrap_or_default() {
        candidates.push(format!(
            "/usr/src/ofa_kernel/{arch}/{release}/configure.mk.kernel"
        ));
    }
    for ver in root
        .list_dir("var/lib/dkms/mlnx-ofed-kernel")?
        .unwrap_or_default()
    {
        candidates.push(format!(
            "/var/lib/dkms/mlnx-ofed-kernel/{ver}/build/configure.mk.kernel"
        ));
    }
    for c in candidates {
        if let Some(text) = root.read_text_lossy(&c)? {
            return Ok(Some((c, parse_gds_config(&text))));
        }
    }
    Ok(None)
}

/// Whether `configure.mk.kernel` sets `CONFIG_GPU_DIRECT_STORAGE=y`.
pub fn parse_gds_config(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.replace(' ', "");
        l == "CONFIG_GPU_DIRECT_STORAGE=y" || l == "CONFIG_GPU_DIRECT_STORAGE:=y"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpm_q_names_the_installed_metapackages_only() {
        let out = "mlnx-ofed-all-24.10-1.1.4.0.rhel9u4.noarch\ndoca-ofed-3.1.0-091000.el9.x86_64\n";
        assert_eq!(
            parse_rpm_q(out),
            [
                "mlnx-ofed-all 24.10-1.1.4.0.rhel9u4.noarch",
                "doca-ofed 3.1.0-091000.el9.x86_64"
            ]
        );
        assert_eq!(
            parse_rpm_q(
                "package mlnx-ofed-all is not installed\ndoca-ofed-3.1.0-091000.el9.x86_64\n"
            ),
            ["doca-ofed 3.1.0-091000.el9.x86_64"]
        );
        assert!(parse_rpm_q("doca-ofed-userspace-3.1.0.x86_64\n").is_empty());
    }

    #[test]
    fn ofed_flavours() {
        assert_eq!(
            parse_ofed_info("MLNX_OFED_LINUX-24.07-0.6.1.0:\n"),
            Ofed::MlnxOfed {
                version: "24.07-0.6.1.0".into()
            }
        );
        let d = parse_ofed_info("OFED-internal-24.10-1.1.4.0.200:\n");
        assert_eq!(
            d,
            Ofed::Doca {
                version: "24.10-1.1.4.0.200".into()
            }
        );
        assert_eq!(d.release(), Some((24, 10)));
        assert_eq!(parse_ofed_info(""), Ofed::None);
    }

    #[test]
    fn gds_config_flag() {
        assert!(parse_gds_config(
            "CONFIG_MLX5_CORE=y\nCONFIG_GPU_DIRECT_STORAGE=y\n"
        ));
        assert!(!parse_gds_config("CONFIG_GPU_DIRECT_STORAGE=\n"));
        assert!(!parse_gds_config(
            "# CONFIG_GPU_DIRECT_STORAGE is not set\n"
        ));
    }
}
