//! Whether nfs-gds runs inside a container, from evidence only: `/.dockerenv`, `/run/.containerenv`
//! (podman), container runtimes named in `/proc/1/cgroup`, and `container=` in `/proc/1/environ`
//! where it can be read (it needs root on most hosts). Also what cuFile needs from the host
//! inside one: the `/dev/nvidia-fs*` nodes and `/run/udev`.

use serde::Serialize;

use crate::host::io::error::HostError;
use crate::host::io::root::Root;

#[derive(Debug, Clone, Default, Serialize)]
pub struct ContainerFacts {
    /// Each piece of evidence that this is a container, as `what: seen`.
    pub evidence: Vec<String>,
    /// `/run/udev` exists (cuFile reads device properties through it).
    pub run_udev: bool,
}

impl ContainerFacts {
    pub fn in_container(&self) -> bool {
        !self.evidence.is_empty()
    }

    pub fn read(root: &Root) -> Result<Self, HostError> {
        let mut evidence = Vec::new();
        for marker in ["/.dockerenv", "/run/.containerenv"] {
            if root.exists(marker) {
                evidence.push(format!("{marker} exists"));
            }
        }
        if let Some(cg) = root.read_text_lossy("proc/1/cgroup")? {
            if let Some(runtime) = parse_cgroup_runtime(&cg) {
                evidence.push(format!("/proc/1/cgroup names {runtime}"));
            }
        }
        // Unreadable without privilege on most hosts: no evidence, not an error.
        if let Ok(Some(env)) = root.read_bytes("proc/1/environ") {
            if let Some(c) = parse_environ_container(&env) {
                evidence.push(format!("/proc/1/environ has container={c}"));
            }
        }
        Ok(ContainerFacts {
            evidence,
            run_udev: root.exists("run/udev"),
        })
    }
}

/// The container runtime a cgroup path names (`docker`, `kubepods`, `libpod`, …).
pub fn parse_cgroup_runtime(text: &str) -> Option<&'static str> {
    const RUNTIMES: &[&str] = &["kubepods", "docker", "libpod", "containerd", "crio", "lxc"];
    text.lines().find_map(|l| {
        let path = l.splitn(3, ':').nth(2)?;
        RUNTIMES.iter().copied().find(|r| path.contains(r))
    })
}

/// The value of `container=` in a NUL-separated environment.
pub fn parse_environ_container(env: &[u8]) -> Option<String> {
    env.split(|b| *b == 0)
        .find_map(|kv| kv.strip_prefix(b"container="))
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_runtimes() {
        assert_eq!(
            parse_cgroup_runtime(
                "0::/kubepods.slice/kubepods-besteffort.slice/cri-containerd-ab.scope\n"
            ),
            Some("kubepods")
        );
        assert_eq!(
            parse_cgroup_runtime("12:cpu:/docker/3f2a\n"),
            Some("docker")
        );
        assert_eq!(parse_cgroup_runtime("0::/init.scope\n"), None);
        assert_eq!(
            parse_cgroup_runtime("0::/user.slice/user-1000.slice\n"),
            None
        );
    }

    #[test]
    fn environ_container() {
        assert_eq!(
            parse_environ_container(b"PATH=/bin\0container=podman\0").as_deref(),
            Some("podman")
        );
        assert_eq!(parse_environ_container(b"PATH=/bin\0"), None);
    }
}
