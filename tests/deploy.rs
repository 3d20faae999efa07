//! What `deploy/` ships: the manifests validate offline (`deploy/check-manifests`: yamllint,
//! `kubectl kustomize`, `kubernetes-validate --strict`, the rule and DaemonSet invariants), the
//! arguments of the DaemonSet and the image are ones the agent accepts, and the example policy
//! parses. Needs kubectl, yamllint and kubernetes-validate (`.ci/run` installs them).

use std::path::{Path, PathBuf};

use crate::support::*;

fn deploy(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(rel)
}

/// Needs the tools, so it is in the `external-tools` group that `.ci/run` runs after
/// installing them.
#[cfg(feature = "external-tools")]
#[test]
fn the_manifests_validate_offline() {
    let o = std::process::Command::new(deploy("check-manifests"))
        .output()
        .expect("deploy/check-manifests runs");
    assert!(
        o.status.success(),
        "deploy/check-manifests failed (exit {:?}; it needs kubectl, yamllint and `pip install kubernetes-validate`):\n{}{}",
        o.status.code(),
        stdout(&o),
        stderr(&o)
    );
}

/// The words of a `["a", "b"]` list following `key` on a line of `text`.
fn list_after(text: &str, key: &str) -> Vec<String> {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(key))
        .unwrap_or_else(|| panic!("no {key} line"));
    let inner = line
        .split_once('[')
        .and_then(|(_, rest)| rest.rsplit_once(']'))
        .map(|(inner, _)| inner)
        .unwrap_or_else(|| panic!("{key} is not a [..] list: {line}"));
    inner
        .split(',')
        .map(|w| w.trim().trim_matches('"').to_string())
        .collect()
}

#[test]
fn the_daemonset_and_image_run_the_agent_with_arguments_it_accepts() {
    let spec = ModuleSpec::rpcrdma("6.8.0-45-generic");
    let f = node_with(&spec, DKMS, Packing::Plain);
    f.write("proc/1/mountinfo", "1 0 254:0 / / rw - ext4 /dev/vda rw\n");
    let daemonset = std::fs::read_to_string(deploy("kustomize/base/daemonset.yaml")).unwrap();
    let containerfile = std::fs::read_to_string(deploy("Containerfile")).unwrap();
    for args in [
        list_after(&daemonset, "args:"),
        list_after(&containerfile, "CMD"),
    ] {
        assert_eq!(args[..2], ["--root", "/host"], "{args:?}");
        let mut args: Vec<String> = args;
        args[1] = f.root().display().to_string();
        args.push("--once".into());
        let o = nfs_gds().args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        // Everything it wrote is below the root.
        assert!(f.path("run/nfs-gds/status.json").is_file());
    }
}

#[test]
fn the_example_policy_for_kubelet_mounts_parses() {
    let f = node_with(
        &ModuleSpec::rpcrdma("6.8.0-45-generic"),
        DKMS,
        Packing::Plain,
    );
    f.write(
        "proc/self/mountinfo",
        "1 0 254:0 / / rw - ext4 /dev/vda rw\n",
    );
    let o = nfs_gds()
        .arg("--root")
        .arg(f.root())
        .arg("--config")
        .arg(deploy("examples/policy-for-kubelet-mounts.toml"))
        .args(["verify", "/mnt/nothing"])
        .output()
        .unwrap();
    // 1: nothing is mounted there; 2 would be a policy error.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}
