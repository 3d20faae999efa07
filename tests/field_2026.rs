//! The field as it is in late 2026, on fixture trees: NVIDIA's `linux-nvidia` kernels with the
//! hooks in their in-tree rpcrdma (a GPL and a plain export), DOCA 26.01's mlnx-nfsrdma exporting
//! plain, an rpcrdma exporting a versioned hook name, kernels 6.1 / 6.6.116 / 6.6.117 / 6.9 with an
//! `nconnect=4` fstab line (and the helper's own `-o`), and a Rocky tree whose kmod-mlnx-nfsrdma,
//! linked into `weak-updates/`, loses to the in-tree rpcrdma; MLNX_OFED and DOCA-OFED both in the
//! package database.

use serde_json::Value;

use crate::doctor::{doctor_json, doctor_text, gpu_driver, os_release, plan_titles, record};
use crate::support::*;

const UBUNTU_2604: &str =
    "PRETTY_NAME=\"Ubuntu 26.04 LTS\"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID=\"26.04\"\n";

fn plan(doc: &Value) -> String {
    serde_json::to_string(&doc["plan"]).unwrap()
}

fn summary(doc: &Value, id: &str) -> String {
    check_result(doc, id)["summary"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// An Ubuntu 26.04 node on `release` whose in-tree rpcrdma has the hooks, exported as `export`.
fn linux_nvidia(release: &str, export: HookExport) -> Fixture {
    let f = node_with(
        &ModuleSpec::rpcrdma(release).hooks(Some(export)),
        INBOX,
        Packing::Zstd,
    );
    os_release(&f, UBUNTU_2604);
    f.write(
        "proc/version_signature",
        format!("Ubuntu {release} 7.0.2\n"),
    );
    gpu_driver(&f);
    f
}

#[test]
fn a_linux_nvidia_kernel_with_a_gpl_in_tree_export_is_its_own_stack_and_ready() {
    for release in ["7.0.0-1003-nvidia", "7.0.0-1003-nvidia-bos"] {
        let f = linux_nvidia(release, HookExport::Gpl);
        let (code, doc) = doctor_json(&f, &[]);
        assert_eq!(doc["stack"]["provenance"], "nvidia-kernel", "{doc:#}");
        assert_eq!(status(&doc, "rpcrdma-hooks"), "pass");
        assert_eq!(status(&doc, "rpcrdma-hook-export"), "pass");
        assert_eq!(code, 0, "{doc:#}");
        let text = doctor_text(&f, &["doctor"]);
        let meta = if release.ends_with("-bos") {
            "linux-nvidia-bos"
        } else {
            "linux-nvidia"
        };
        assert!(
            text.contains(&format!("in-tree rpcrdma of NVIDIA's {meta} kernel")),
            "{text}"
        );
        assert!(!plan(&doc).contains("doca"), "{}", plan(&doc));
    }
}

#[test]
fn an_in_tree_rpcrdma_with_the_hooks_is_nvidias_whatever_the_release_says() {
    let f = linux_nvidia("7.0.0-14-generic", HookExport::Plain);
    let (code, doc) = doctor_json(&f, &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["stack"]["provenance"], "nvidia-kernel", "{doc:#}");
    let p = plan(&doc);
    assert!(p.contains("EXPORT_SYMBOL_GPL"), "{p}");
    assert!(!p.contains("doca-ofed"), "{p}");
}

/// Ubuntu 24.04 with DOCA-Host 26.01's mlnx-nfsrdma built by DKMS, exporting the hooks plain.
fn doca_26_01(export: HookExport) -> Fixture {
    let release = "6.8.0-60-generic";
    let spec = ModuleSpec::rpcrdma(release)
        .hooks(Some(export))
        .version(Some("26.01.OFED.26.01.1.0.0.1"));
    let f = node_with(&spec, DKMS, Packing::Zstd);
    os_release(
        &f,
        "PRETTY_NAME=\"Ubuntu 24.04.3 LTS\"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID=\"24.04\"\n",
    );
    f.write(
        "proc/version_signature",
        format!("Ubuntu {release} 6.8.12\n"),
    );
    gpu_driver(&f);
    f
}

#[test]
fn doca_26_01_mlnx_nfsrdma_exporting_plain_is_known_bad_with_its_fix_and_source() {
    let (_, doc) = check_json(&doca_26_01(HookExport::Plain));
    assert_eq!(status(&doc, "rpcrdma-hook-export"), "fail", "{doc:#}");
    assert_eq!(status(&doc, "known-bad-versions"), "warn", "{doc:#}");
    let s = summary(&doc, "known-bad-versions");
    assert!(
        s.contains("mlnx-nfsrdma 26.01.OFED.26.01.1.0.0.1: DOCA-Host 26.01's mlnx-nfsrdma exports"),
        "{s}"
    );
    assert!(s.contains("https://github.com/XinnorLab/xiNAS"), "{s}");
    let remedy = check_result(&doc, "known-bad-versions")["remedy"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(remedy.contains("EXPORT_SYMBOL_GPL"), "{remedy}");

    // The same release exporting GPL (patched) is not this problem.
    let (_, doc) = check_json(&doca_26_01(HookExport::Gpl));
    assert_eq!(status(&doc, "known-bad-versions"), "pass", "{doc:#}");
}

/// A DKMS rpcrdma exporting only `rpcrdma_v2_*` hooks, beside nvidia-fs `nvfs`.
fn versioned_hooks(nvfs: &str) -> Fixture {
    let mut spec = ModuleSpec::rpcrdma("6.12.40").hooks(None);
    spec.other_exports.extend([
        ("rpcrdma_v2_register_nvfs_dma_ops".to_string(), true),
        ("rpcrdma_v2_unregister_nvfs_dma_ops".to_string(), true),
    ]);
    let mut f = node_with(&spec, DKMS, Packing::Plain);
    f.nvidia_fs(nvfs, 1);
    f
}

#[test]
fn a_versioned_hook_name_is_judged_against_nvidia_fs_or_left_to_the_probe() {
    let (code, doc) = check_json(&versioned_hooks("2.28.4"));
    assert_eq!(status(&doc, "rpcrdma-hooks"), "fail", "{doc:#}");
    let s = summary(&doc, "rpcrdma-hooks");
    assert!(
        s.contains("exports only rpcrdma_v2_register_nvfs_dma_ops, rpcrdma_v2_unregister_nvfs_dma_ops, a hook ABI nvidia-fs 2.28.4 does not ask for"),
        "{s}"
    );
    assert!(!s.contains("built without GPUDirect Storage"), "{s}");
    assert_eq!(code, 1);

    let (_, doc) = check_json(&versioned_hooks("2.30.1"));
    assert_eq!(status(&doc, "rpcrdma-hooks"), "warn", "{doc:#}");
    assert!(
        summary(&doc, "rpcrdma-hooks").contains("an unknown hook ABI"),
        "{doc:#}"
    );

    let out = run(&versioned_hooks("2.30.1"), &["inspect-module", "rpcrdma"]);
    let text = stdout(&out);
    assert!(
        text.contains("UNCERTAIN: only versioned hook names (rpcrdma_v2_register_nvfs_dma_ops"),
        "{text}"
    );
}

/// A ready node on upstream `version` (Debian's `/proc/version` for 6.1; a stable build's
/// release otherwise) with an `nfs-gds` fstab line asking for `nconnect=4`.
fn nconnect_node(version: &str) -> Fixture {
    let release = if version == "6.1.176" {
        "6.1.0-50-amd64".to_string()
    } else {
        version.to_string()
    };
    let f = node_with(&ModuleSpec::rpcrdma(&release), DKMS, Packing::Plain);
    if version == "6.1.176" {
        f.write(
            "proc/version",
            "Linux version 6.1.0-50-amd64 (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC Debian 6.1.176-1 (2026-05-02)\n",
        );
    }
    f.write(
        "etc/fstab",
        "# data\nfiler:/data /mnt/data nfs-gds _netdev,vers=4.2,nconnect=4 0 0\n",
    );
    f
}

#[test]
fn check_says_before_mounting_which_kernels_drop_nconnect_for_an_fstab_line() {
    for (version, expected) in [
        ("6.1.176", "warn"),
        ("6.6.116", "warn"),
        ("6.6.117", "pass"),
        ("6.9.0", "pass"),
    ] {
        let f = nconnect_node(version);
        let (_, doc) = check_json(&f);
        assert_eq!(
            status(&doc, "nconnect-kernel"),
            expected,
            "{version}: {doc:#}"
        );
        // doctor says the same of the same lines.
        let (_, doctor) = doctor_json(&f, &[]);
        assert_eq!(
            status(&doctor, "nconnect-kernel"),
            expected,
            "{version}: {doctor:#}"
        );
        let s = summary(&doc, "nconnect-kernel");
        if expected == "warn" {
            assert!(
                s.contains(&format!(
                    "fstab line 2: nconnect=4, NFSv4: Linux {version} predates b326df4a8ec6"
                )),
                "{s}"
            );
        } else {
            assert!(s.contains("has b326df4a8ec6"), "{s}");
        }
    }
    // vers=3 honours nconnect everywhere; no nfs-gds line, no result.
    let f = nconnect_node("6.1.176");
    f.write(
        "etc/fstab",
        "filer:/data /mnt/data nfs-gds _netdev,vers=3,nconnect=4 0 0\n",
    );
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "nconnect-kernel"), "skip", "{doc:#}");
    f.remove("etc/fstab");
    let (_, doc) = check_json(&f);
    assert!(
        doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["id"] != "nconnect-kernel"),
        "{doc:#}"
    );
}

/// An fstab line without `vers=` is mounted at the policy's `[options] vers` by the helper, and
/// `check` and `doctor` judge it at that version: NFSv3 honours nconnect on every kernel, so
/// no warning about NFSv4 nconnect for a line the helper mounts as NFSv3.
#[test]
fn an_fstab_line_without_vers_is_judged_at_the_version_the_policy_mounts_it_with() {
    let f = nconnect_node("6.1.176");
    f.write(
        "etc/fstab",
        "filer:/data /mnt/data nfs-gds _netdev,nconnect=4 0 0\n",
    );
    // The built-in default is NFSv4.2: warned.
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "nconnect-kernel"), "warn", "{doc:#}");
    f.write("etc/nfs-gds/nfs-gds.toml", "[options]\nvers = \"3\"\n");
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "nconnect-kernel"), "skip", "{doc:#}");
    assert!(
        summary(&doc, "nconnect-kernel").contains("no NFSv4.x mount asks for nconnect above 1"),
        "{doc:#}"
    );
    let (_, doctor) = doctor_json(&f, &[]);
    assert_eq!(status(&doctor, "nconnect-kernel"), "skip", "{doctor:#}");
    // The line names its version: that one, whatever the policy's default.
    f.write(
        "etc/fstab",
        "filer:/data /mnt/data nfs-gds _netdev,v4.1,nconnect=4 0 0\n",
    );
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "nconnect-kernel"), "warn", "{doc:#}");
}

#[test]
fn a_rocky_weak_updates_link_that_loses_to_the_in_tree_rpcrdma_is_ranked_not_reinstalled() {
    const RUNNING: &str = "5.14.0-503.14.1.el9_5.x86_64";
    const BUILT: &str = "5.14.0-427.13.1.el9_4.x86_64";
    let mut f = Fixture::new(RUNNING);
    f.nvidia_fs("2.28.4", 1);
    os_release(
        &f,
        "NAME=\"Rocky Linux\"\nID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.5\"\nPRETTY_NAME=\"Rocky Linux 9.5 (Blue Onyx)\"\n",
    );
    gpu_driver(&f);
    let tree = f.tree();
    // The kernel's own rpcrdma (no hooks) wins: depmod listed only it.
    f.write(
        format!("{tree}/kernel/net/sunrpc/xprtrdma/rpcrdma.ko.xz"),
        pack(
            &build(&ModuleSpec::rpcrdma(RUNNING).hooks(None)),
            Packing::XzCrc32,
        ),
    );
    f.set_rpcrdma_dep_line("kernel/net/sunrpc/xprtrdma/rpcrdma.ko.xz: kernel/net/sunrpc/sunrpc.ko");
    // kmod-mlnx-nfsrdma built for the previous kernel, linked by weak-modules.
    f.write(
        format!("lib/modules/{BUILT}/extra/mlnx-nfsrdma/rpcrdma.ko"),
        build(&ModuleSpec::rpcrdma(BUILT)),
    );
    let link = f.path(format!("{tree}/weak-updates/mlnx-nfsrdma/rpcrdma.ko"));
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(
        format!("/lib/modules/{BUILT}/extra/mlnx-nfsrdma/rpcrdma.ko"),
        &link,
    )
    .unwrap();

    let (code, doc) = doctor_json(&f, &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["stack"]["provenance"], "inbox", "{doc:#}");
    let remedy = check_result(&doc, "rpcrdma-hooks")["remedy"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        remedy.contains("installed as weak-updates/mlnx-nfsrdma/rpcrdma.ko but loses to this file"),
        "{remedy}"
    );
    let titles = plan_titles(&doc);
    assert_eq!(
        titles[0], "Rank the installed mlnx-nfsrdma above the in-tree rpcrdma",
        "{titles:?}"
    );
    let p = plan(&doc);
    assert!(
        p.contains("echo 'override rpcrdma * weak-updates/mlnx-nfsrdma' > /etc/depmod.d/zz02-mlnx-nfsrdma-rpcrdma.conf"),
        "{p}"
    );
    assert!(p.contains(&format!("depmod -a {RUNNING}")), "{p}");
    assert!(!p.contains("Install DOCA-OFED"), "{p}");
    let text = doctor_text(&f, &["doctor"]);
    assert!(
        text.contains(&format!("is installed as weak-updates/mlnx-nfsrdma/rpcrdma.ko (a link to the build for {BUILT}) but does not load")),
        "{text}"
    );
}

/// `mount.nfs-gds -f` of `/mnt/gds` with `options` on the Debian 12 helper fixture: its exit
/// code, and stdout and stderr together.
fn helper_fake(options: &str) -> (Option<i32>, String) {
    let f = crate::mount_fixture::Fixture::ready();
    let out = f
        .helper()
        .args(["10.0.2.15:/export", "/mnt/gds", "-f", "-o", options])
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), all)
}

#[test]
fn the_helper_warns_before_mounting_when_the_kernel_drops_its_nconnect() {
    let (code, all) = helper_fake("rw,vers=4.2,nconnect=4,_netdev");
    assert_eq!(code, Some(0), "a warning mounts: {all}");
    assert!(
        all.contains("mount options: nconnect=4, NFSv4: Linux 6.1.176 predates b326df4a8ec6"),
        "{all}"
    );
    // vers=3 honours nconnect over RDMA on the same kernel: nothing to say.
    let (_, all) = helper_fake("rw,vers=3,nconnect=4");
    assert!(!all.contains("predates b326df4a8ec6"), "{all}");
}

#[test]
fn mlnx_ofed_and_doca_ofed_both_installed_are_a_conflict_with_a_removal_plan() {
    // Rocky: the rpm database answers.
    let f = node_with(
        &ModuleSpec::rpcrdma("5.14.0-503.14.1.el9_5.x86_64"),
        RPM,
        Packing::XzCrc32,
    );
    os_release(
        &f,
        "NAME=\"Rocky Linux\"\nID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.5\"\n",
    );
    gpu_driver(&f);
    record(
        &f,
        "rpm",
        &["-q", "mlnx-ofed-all", "doca-ofed"],
        "mlnx-ofed-all-24.10-1.1.4.0.rhel9u5.noarch\ndoca-ofed-3.1.0-091000.el9.x86_64\n",
    );
    let (_, doc) = doctor_json(&f, &[]);
    let titles = plan_titles(&doc);
    assert!(
        titles
            .iter()
            .any(|t| t == "Remove MLNX_OFED (keeping DOCA-OFED)"),
        "{titles:?}"
    );
    let p = plan(&doc);
    for cmd in [
        "/usr/sbin/ofed_uninstall.sh --force",
        "dnf reinstall doca-ofed",
        "Refresh the module index",
    ] {
        assert!(p.contains(cmd), "{cmd}: {p}");
    }
    let text = doctor_text(&f, &["doctor"]);
    assert!(
        text.contains("MLNX_OFED (mlnx-ofed-all 24.10-1.1.4.0.rhel9u5.noarch) and DOCA-OFED (doca-ofed 3.1.0-091000.el9.x86_64) are both installed"),
        "{text}"
    );

    // Ubuntu: dpkg's database; one stack alone is no conflict.
    let f = node_with(
        &ModuleSpec::rpcrdma("6.8.0-60-generic"),
        DKMS,
        Packing::Zstd,
    );
    os_release(&f, "ID=ubuntu\nID_LIKE=debian\nVERSION_ID=\"24.04\"\n");
    let stanza =
        |p: &str, v: &str| format!("Package: {p}\nStatus: install ok installed\nVersion: {v}\n");
    f.write(
        "var/lib/dpkg/status",
        format!(
            "{}\n{}",
            stanza("doca-ofed", "3.1.0-091000"),
            stanza("mlnx-ofed-all", "24.10-1.1.4.0")
        ),
    );
    let (_, doc) = doctor_json(&f, &[]);
    assert!(
        plan(&doc).contains("apt-get install --reinstall doca-ofed"),
        "{}",
        plan(&doc)
    );
    f.write("var/lib/dpkg/status", stanza("doca-ofed", "3.1.0-091000"));
    let (_, doc) = doctor_json(&f, &[]);
    assert!(!plan(&doc).contains("Remove MLNX_OFED"), "{}", plan(&doc));
}

const GDSCHECK: &str = "/usr/local/cuda-13.1/gds/tools/gdscheck";

/// `gdscheck -p` installed on `f`, answering with the saved output `fixture`.
fn gdscheck_says(f: &Fixture, fixture: &str) {
    f.write(GDSCHECK.trim_start_matches('/'), "#!/bin/sh\n");
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/gdscheck")
            .join(fixture),
    )
    .unwrap();
    record(f, GDSCHECK, &["-p"], &text);
}

fn finding_text(doc: &Value, topic: &str) -> String {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["topic"] == topic)
        .map(|x| x["text"].as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn gdscheck_saying_nfs_unsupported_on_a_node_nfs_gds_finds_fine_is_not_ready() {
    for fixture in [
        "1.3-unsupported.txt",
        "1.14-unsupported.txt",
        "1.16-unsupported.txt",
    ] {
        let f = crate::doctor::ubuntu_doca_dkms();
        gdscheck_says(&f, fixture);
        let (code, doc) = doctor_json(&f, &[]);
        assert_eq!(code, 1, "{fixture}: {doc:#}");
        assert_eq!(status(&doc, "gdscheck-nfs"), "fail", "{fixture}");
        let t = finding_text(&doc, "gdscheck");
        assert!(t.contains("nfs-gds found nothing wrong"), "{fixture}: {t}");
        assert!(t.contains("/proc/driver/nvidia-fs/modules"), "{t}");
    }
}

#[test]
fn gdscheck_agreeing_and_explained_and_p2pdma_never_counted() {
    for fixture in ["1.13-supported.txt", "1.16-nvfs-compat.txt"] {
        let f = crate::doctor::ubuntu_doca_dkms();
        gdscheck_says(&f, fixture);
        let (code, doc) = doctor_json(&f, &[]);
        assert_eq!(code, 0, "{fixture}: {doc:#}");
        assert_eq!(status(&doc, "gdscheck-nfs"), "pass", "{fixture}");
        assert!(finding_text(&doc, "gdscheck").starts_with("gdscheck agrees"));
    }

    let f = crate::doctor::ubuntu_doca_dkms();
    gdscheck_says(&f, "1.16-p2pdma.txt");
    let (code, doc) = doctor_json(&f, &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert!(
        summary(&doc, "gdscheck-nfs").contains("no P2PDMA route for NFS"),
        "{doc:#}"
    );
    assert!(finding_text(&doc, "gdscheck").contains("never counted as direct"));

    // gdscheck 1.16 with nvidia-fs not loaded: `compat` alone.
    let f = crate::doctor::ubuntu_doca_dkms();
    gdscheck_says(&f, "1.16-compat.txt");
    let (code, doc) = doctor_json(&f, &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(status(&doc, "gdscheck-nfs"), "fail");
    assert!(
        summary(&doc, "gdscheck-nfs")
            .contains(": compat`: compat mode only, so NFS is not GPU-direct"),
        "{doc:#}"
    );

    // DOCA 26.01's plain export: gdscheck's `Unsupported` is explained.
    let f = doca_26_01(HookExport::Plain);
    gdscheck_says(&f, "1.16-unsupported.txt");
    let (_, doc) = doctor_json(&f, &[]);
    let t = finding_text(&doc, "gdscheck");
    assert!(
        t.contains("nfs-gds says why: the hooks are exported plain, the kernel refused them (rpcrdma-hook-export)"),
        "{t}"
    );

    // Without gdscheck, nothing is run or said; the helper's `check` never runs it.
    let f = crate::doctor::ubuntu_doca_dkms();
    let (_, doc) = doctor_json(&f, &[]);
    assert_eq!(status(&doc, "gdscheck-nfs"), "skip");
    assert!(finding_text(&doc, "gdscheck").is_empty());
    gdscheck_says(&f, "1.16-unsupported.txt");
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "gdscheck-nfs"), "skip", "{doc:#}");
}

#[test]
fn localio_on_with_a_local_server_or_nfsd_warns_that_rdma_in_mountstats_proves_nothing() {
    let release = "6.12.30";
    let f = node_with(&ModuleSpec::rpcrdma(release), DKMS, Packing::Plain);
    f.write(
        format!("boot/config-{release}"),
        "CONFIG_MODULES=y\nCONFIG_NFS_LOCALIO=y\n",
    );
    f.write(
        "proc/net/fib_trie",
        "Local:\n  +-- 10.0.2.0/24 2 0 2\n     |-- 10.0.2.15\n        /32 host LOCAL\n",
    );
    // The client talks to 10.0.2.15 (0a00020f), which is this host.
    f.write(
        "proc/fs/nfsfs/servers",
        "NV SERVER   PORT USE HOSTNAME\nv4 0a00020f 4e51   1 self\n",
    );
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "localio"), "warn", "{doc:#}");
    assert!(
        summary(&doc, "localio").contains("NFS server on this host (self (10.0.2.15))"),
        "{doc:#}"
    );

    // Another server, but an nfsd kernel thread runs here.
    f.write(
        "proc/fs/nfsfs/servers",
        "NV SERVER   PORT USE HOSTNAME\nv4 0a000263 4e51   1 filer\n",
    );
    f.write("proc/4242/comm", "nfsd\n");
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "localio"), "warn", "{doc:#}");
    assert!(summary(&doc, "localio").contains("an nfsd runs on this host"));

    // LOCALIO turned off: nothing bypasses RPC.
    f.write("sys/module/nfs/parameters/localio_enabled", "N\n");
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "localio"), "pass", "{doc:#}");
    // Debian's kernels build it off.
    f.write(
        format!("boot/config-{release}"),
        "# CONFIG_NFS_LOCALIO is not set\n",
    );
    let (_, doc) = check_json(&f);
    assert!(
        summary(&doc, "localio").contains("no NFS LOCALIO"),
        "{doc:#}"
    );
}
