//! What `deploy/` ships: the manifests validate offline (`deploy/check-manifests`: yamllint,
//! kustomize, `kubernetes-validate --strict`, the rule and DaemonSet invariants), the
//! arguments of the DaemonSet and the image are ones the agent accepts, and the example policy
//! parses. Needs yamllint, kubernetes-validate and pykustomize (`.ci/run` installs them).

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
        "deploy/check-manifests failed (exit {:?}; it needs yamllint and `pip install kubernetes-validate pykustomize`):\n{}{}",
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

/// The example policies, as a node would hold them: copied into the fixture with the modes an
/// admin installs (0644 in root's 0755 directories), so the checkout's own modes (a clone made
/// under umask 002 is group-writable, which the trust rules refuse) do not decide the test.
#[test]
fn the_example_policies_parse() {
    use std::os::unix::fs::PermissionsExt;
    let f = ready_node();
    std::fs::create_dir_all(f.path("mnt/nothing")).unwrap();
    let mode =
        |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    for policy in [
        "examples/policy-for-kubelet-mounts.toml",
        "kustomize/configmap/nfs-gds.toml",
    ] {
        let installed = f.write(
            "etc/nfs-gds/example.toml",
            std::fs::read(deploy(policy)).unwrap(),
        );
        mode(&installed, 0o644);
        mode(&f.path("etc/nfs-gds"), 0o755);
        mode(&f.path("etc"), 0o755);
        let o = nfs_gds()
            .arg("--root")
            .arg(f.root())
            .arg("--config")
            .arg(&installed)
            .args(["verify", "/mnt/nothing"])
            .output()
            .unwrap();
        // 1: nothing is mounted there; 2 would be a policy error.
        assert_eq!(o.status.code(), Some(1), "{policy}: {}", stderr(&o));
    }
}

/// The DaemonSet's read-only host mounts as `(host path, path in the container)`, and the
/// writable ones.
fn daemonset_mounts() -> (Vec<(String, String)>, Vec<String>) {
    use saphyr::{LoadableYamlNode, Yaml};
    let text = std::fs::read_to_string(deploy("kustomize/base/daemonset.yaml")).unwrap();
    let doc = Yaml::load_from_str(&text).unwrap().remove(0);
    let spec = &doc["spec"]["template"]["spec"];
    let host_path = |name: &str| -> String {
        let v = spec["volumes"]
            .as_vec()
            .unwrap()
            .iter()
            .find(|v| v["name"].as_str() == Some(name))
            .unwrap_or_else(|| panic!("no volume {name}"));
        v["hostPath"]["path"].as_str().unwrap().to_string()
    };
    let (mut read_only, mut writable) = (Vec::new(), Vec::new());
    for m in spec["containers"][0]["volumeMounts"].as_vec().unwrap() {
        let at = m["mountPath"].as_str().unwrap().to_string();
        let host = host_path(m["name"].as_str().unwrap());
        assert_eq!(
            at,
            format!("/host{host}"),
            "a host path must appear at /host plus itself"
        );
        if m.as_mapping_get("readOnly").and_then(|r| r.as_bool()) == Some(true) {
            read_only.push((host, at));
        } else {
            writable.push(at);
        }
    }
    (read_only, writable)
}

/// The read-only host mounts an opt-in overlay adds (`op: add` of a volume and its mount).
fn overlay_mounts(overlay: &str) -> Vec<(String, String)> {
    use saphyr::{LoadableYamlNode, Yaml};
    let text = std::fs::read_to_string(deploy(&format!("kustomize/{overlay}/kustomization.yaml")))
        .unwrap();
    let doc = Yaml::load_from_str(&text).unwrap().remove(0);
    let mut mounts = Vec::new();
    let mut volumes = Vec::new();
    for patch in doc["patches"].as_vec().unwrap() {
        let ops = Yaml::load_from_str(patch["patch"].as_str().unwrap()).unwrap();
        for op in ops[0].as_vec().unwrap() {
            let v = &op["value"];
            match op["path"].as_str().unwrap() {
                p if p.ends_with("/volumeMounts/-") => {
                    assert_eq!(v["readOnly"].as_bool(), Some(true), "{overlay}: {p}");
                    mounts.push((
                        v["name"].as_str().unwrap().to_string(),
                        v["mountPath"].as_str().unwrap().to_string(),
                    ));
                }
                p if p.ends_with("/volumes/-") => volumes.push((
                    v["name"].as_str().unwrap().to_string(),
                    v["hostPath"]["path"].as_str().unwrap().to_string(),
                )),
                _ => {}
            }
        }
    }
    mounts
        .into_iter()
        .map(|(name, at)| {
            let host = volumes.iter().find(|(n, _)| *n == name).unwrap().1.clone();
            assert_eq!(at, format!("/host{host}"));
            (host, at)
        })
        .collect()
}

/// A node where every file the agent's checks can read exists: the module tree, cufile.json,
/// a configuration file in each of modprobe's and depmod's directories, os-release, the policy.
fn node_with_every_input() -> Fixture {
    let spec = ModuleSpec::rpcrdma("6.8.0-45-generic");
    let f = node_with(&spec, DKMS, Packing::Plain);
    f.write("proc/1/mountinfo", "1 0 254:0 / / rw - ext4 /dev/vda rw\n");
    f.write("proc/1/mountstats", "");
    f.write(
        "etc/cufile.json",
        "{\"properties\": {\"allow_compat_mode\": false}}\n",
    );
    f.write("etc/os-release", "ID=ubuntu\nVERSION_ID=\"24.04\"\n");
    f.write("usr/lib/os-release", "ID=ubuntu\nVERSION_ID=\"24.04\"\n");
    for dir in nfs_gds::host::io::conf_dirs::MODPROBE_DIRS {
        let name = dir.trim_start_matches('/').replace('/', "-");
        f.write(format!("{}/{name}.conf", &dir[1..]), "# nothing\n");
    }
    f.write("etc/nfs-gds/nfs-gds.toml", "default = \"enforce\"\n");
    f
}

#[test]
fn the_daemonset_mounts_every_host_path_the_agent_reads_read_only() {
    use nfs_gds::cli::{check::judge_node, host::Host, Ctx};
    let f = node_with_every_input();
    let mut host = Host::new(Some(f.root()));
    host.root = host.root.recording();
    let ctx = Ctx {
        host,
        config: None,
        style: Default::default(),
    };
    // One agent pass: the node checks under the policy, the host's mount table, the records.
    let policy = ctx.policy().unwrap();
    judge_node(&ctx, &policy, false).unwrap();
    nfs_gds::host::mounts::read_init_mount_table(&ctx.host.root).unwrap();
    nfs_gds::mount::record::read_records(&ctx.host.root).unwrap();
    let record = ctx.host.root.record();
    let read: std::collections::BTreeSet<_> = record
        .files
        .iter()
        .chain(&record.present)
        .chain(record.listed.keys())
        .collect();
    assert!(read.len() > 10, "{read:?}");
    for must in ["etc/cufile.json", "lib/modprobe.d/lib-modprobe.d.conf"] {
        assert!(
            read.contains(&PathBuf::from(must)),
            "{must} was not read: {read:?}"
        );
    }
    let (base, _) = daemonset_mounts();
    // cufile.json only through its opt-in overlay (a hostPath of type File stops the pod on a
    // node without one); everything else through the base.
    let cufile = overlay_mounts("cufile");
    assert_eq!(
        cufile,
        [(
            "/etc/cufile.json".to_string(),
            "/host/etc/cufile.json".to_string()
        )]
    );
    let read_only: Vec<_> = base.iter().chain(&cufile).collect();
    let unmounted: Vec<_> = read
        .iter()
        .filter(|p| {
            let host = Path::new("/").join(p);
            !read_only.iter().any(|(h, _)| host.starts_with(h))
        })
        .collect();
    assert!(
        unmounted.is_empty(),
        "the agent reads these host paths, which deploy/kustomize/base/daemonset.yaml does not mount read-only: {unmounted:?}"
    );
}

#[test]
fn the_nfd_taint_rule_matches_the_label_the_agent_writes() {
    use saphyr::{LoadableYamlNode, Yaml};
    let text = std::fs::read_to_string(deploy("kustomize/nfd-taint/nodefeaturerule.yaml")).unwrap();
    let doc = Yaml::load_from_str(&text).unwrap().remove(0);
    let rule = &doc["spec"]["rules"][0];
    assert_eq!(rule["taints"][0]["effect"].as_str(), Some("NoSchedule"));
    let exprs = rule["matchFeatures"][0]["matchExpressions"]
        .as_mapping()
        .unwrap();
    let label = format!("{}gds-nfs", nfs_gds::agent::labels::LABEL_PREFIX);
    let (key, expr) = exprs.iter().next().unwrap();
    assert_eq!(key.as_str(), Some(label.as_str()));
    let values: Vec<_> = expr["value"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(values, [nfs_gds::agent::Tier::Degraded.as_str()]);
}

/// Whether `.containerignore` keeps `path` (relative to the build context) out of the context,
/// as podman and buildah read it: the last pattern that matches the path or a folder above it
/// decides, and a `!pattern` brings it back.
fn ignored(patterns: &[&str], path: &str) -> bool {
    let opts = glob::MatchOptions {
        require_literal_separator: true,
        ..Default::default()
    };
    let prefixes: Vec<&str> = path
        .match_indices('/')
        .map(|(i, _)| &path[..i])
        .chain([path])
        .collect();
    let mut out = false;
    for p in patterns {
        let (keep, pat) = match p.strip_prefix('!') {
            Some(pat) => (true, pat),
            None => (false, *p),
        };
        let pat = glob::Pattern::new(pat.trim_matches('/')).unwrap();
        if prefixes.iter().any(|pre| pat.matches_with(pre, opts)) {
            out = !keep;
        }
    }
    out
}

#[test]
fn the_image_build_context_is_only_what_the_containerfile_copies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(".containerignore"))
        .expect(".containerignore beside the build context (the repository root)");
    let patterns: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let containerfile = std::fs::read_to_string(deploy("Containerfile")).unwrap();
    let copied: Vec<&str> = containerfile
        .lines()
        .filter_map(|l| l.strip_prefix("COPY "))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert!(!copied.is_empty(), "the Containerfile copies nothing?");
    for c in &copied {
        assert!(
            !ignored(&patterns, c),
            ".containerignore leaves out {c}, which the Containerfile copies"
        );
    }
    for big in [
        "target/debug/nfs-gds",
        "target/release/deps/libnfs_gds.rlib",
        "target/x86_64-unknown-linux-gnu/release/deps/nfs_gds.d",
        ".git/objects/pack/x.pack",
        "tests/fixtures/x",
        "src/main.rs",
    ] {
        assert!(
            ignored(&patterns, big),
            ".containerignore sends {big} to the image build"
        );
    }
}

/// The oci-hook overlays' init container, run as the overlay runs it (its args, with the
/// fixture as `/host`): install puts the binary and the hooks.d file naming it on the node,
/// uninstall takes both away.
#[test]
fn the_oci_hook_overlays_install_and_uninstall_the_gate_below_the_root() {
    let f = ready_node();
    let run = |overlay: &str| {
        let text =
            std::fs::read_to_string(deploy(&format!("kustomize/{overlay}/kustomization.yaml")))
                .unwrap();
        let mut args = list_after(&text, "args:");
        assert_eq!(args[..2], ["--root", "/host"], "{args:?}");
        args[1] = f.root().display().to_string();
        let o = nfs_gds().args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    };
    let hooks = f.path("usr/share/containers/oci/hooks.d/nfs-gds-hook.json");
    let bin = f.path("opt/nfs-gds/bin/nfs-gds");
    run("oci-hook");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&hooks).unwrap()).unwrap();
    assert_eq!(v["hook"]["path"], "/opt/nfs-gds/bin/nfs-gds");
    assert_eq!(v["stages"], serde_json::json!(["prestart"]));
    let installed = std::process::Command::new(&bin)
        .arg("--version")
        .output()
        .unwrap();
    assert!(installed.status.success());
    // Installed by hand in the directory OpenShift's CRI-O reads, too.
    let etc_hooks = f.path("etc/containers/oci/hooks.d/nfs-gds-hook.json");
    let o = nfs_gds()
        .arg("--root")
        .arg(f.root())
        .args([
            "oci-hook",
            "--install",
            "--hooks-dir",
            "/etc/containers/oci/hooks.d",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(etc_hooks.exists());
    run("oci-hook-uninstall");
    assert!(!hooks.exists(), "{}", hooks.display());
    assert!(!etc_hooks.exists(), "{}", etc_hooks.display());
    assert!(!bin.exists(), "{}", bin.display());
    // On a node, the overlay sees both standard directories.
    let text =
        std::fs::read_to_string(deploy("kustomize/oci-hook-uninstall/kustomization.yaml")).unwrap();
    for dir in nfs_gds::cli::oci_hook::install::STANDARD_HOOKS_DIRS {
        assert!(
            text.contains(&format!("mountPath: /host/{dir}}}")),
            "the uninstall overlay does not mount /{dir}"
        );
    }
}
