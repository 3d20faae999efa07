//! `nfs-gds doctor`, `provision` and `collect` on one fixture node per stack: the inbox kernel,
//! Ubuntu with DOCA-OFED DKMS, RHEL with MLNX_OFED packages on a 6.6+ kernel, VAST's NFS bundle,
//! a GPU Operator node, and a machine with no NVIDIA stack at all. Command outputs (`ofed_info`,
//! `dkms`, `dpkg`/`rpm`, `dmesg`) are recorded in the tree, where doctor reads them below a root.

use std::path::Path;

use nfs_gds::host::io::recorded::{record_key, RECORDED_DIR};
use serde_json::Value;

use crate::support::*;

const UBUNTU_REL: &str = "6.8.0-45-generic";
const OPEN_DRIVER: &str =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build\n";

pub(crate) fn record(f: &Fixture, program: &str, args: &[&str], stdout: &str) {
    f.write(
        format!("{RECORDED_DIR}/{}", record_key(program, args)),
        stdout,
    );
}

pub(crate) fn os_release(f: &Fixture, text: &str) {
    f.write("etc/os-release", text);
}

pub(crate) fn gpu_driver(f: &Fixture) {
    f.write("sys/module/nvidia/version", "570.86.15\n");
    f.write("proc/driver/nvidia/version", OPEN_DRIVER);
}

/// Ubuntu 24.04 with DOCA-OFED's mlnx-nfsrdma built by DKMS, GPL hooks, loaded and current.
pub(crate) fn ubuntu_doca_dkms() -> Fixture {
    let spec = ModuleSpec::rpcrdma(UBUNTU_REL).build_id(Some(build_id_of("doca-dkms")));
    let mut f = node_with(&spec, DKMS, Packing::Zstd);
    os_release(
        &f,
        "PRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID=\"24.04\"\n",
    );
    f.write(
        "proc/version_signature",
        "Ubuntu 6.8.0-45.45-generic 6.8.12\n",
    );
    gpu_driver(&f);
    f.load_rpcrdma(
        &Loaded {
            build_id: Some(build_id_of("doca-dkms")),
            ..Default::default()
        },
        KallsymsHooks::Lower,
    );
    record(
        &f,
        "ofed_info",
        &["-s"],
        "OFED-internal-24.10-1.1.4.0.200:\n",
    );
    record(
        &f,
        "dkms",
        &["status"],
        &format!("mlnx-ofed-kernel/24.10.OFED.24.10.1.1.4.1, {UBUNTU_REL}, x86_64: installed\nmlnx-nfsrdma/24.10.OFED.24.10.1.1.4.1, {UBUNTU_REL}, x86_64: installed\n"),
    );
    f.write(
        format!("usr/src/ofa_kernel/x86_64/{UBUNTU_REL}/configure.mk.kernel"),
        "CONFIG_MLX5_CORE=m\nCONFIG_GPU_DIRECT_STORAGE=y\n",
    );
    // The nfs module, loaded for the NFS mount, built without LOCALIO (as Ubuntu's).
    f.write("sys/module/nfs/parameters/enable_ino64", "Y\n");
    f.write(
        "etc/cufile.json",
        "{\n  // shipped default\n  \"properties\": { \"allow_compat_mode\": true }\n}\n",
    );
    record(
        &f,
        "dmesg",
        &[],
        "[    5.1] nvidia_fs: Initializing nvfs driver module\n",
    );
    f.write(
        "etc/fstab",
        "UUID=1 / ext4 defaults 0 1\n10.0.2.15:/export /mnt/data nfs-gds _netdev,vers=4.2 0 0\n",
    );
    f.write(
        "proc/self/mountinfo",
        "25 1 254:0 / / rw - ext4 /dev/vda rw\n\
         41 25 0:51 / /mnt/data rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15\n",
    );
    f.write(
        "proc/self/mountstats",
        "device /dev/vda mounted on / with fstype ext4\n\
         device 10.0.2.15:/export mounted on /mnt/data with fstype nfs4 statvers=1.1\n\
         \topts:\trw,vers=4.2,proto=rdma,port=20049\n\
         \txprt:\trdma 0 0 1 0 0 121 121 0 1096 0 131 1 11 120676 2562 0 0 110132 5 0 0 0 0 66 131 0 0\n",
    );
    f
}

/// Rocky 9 on an elrepo 6.8 kernel with MLNX_OFED 23.10's RPM: hooks exported plain.
fn rhel_mlnx_ofed_plain() -> Fixture {
    let rel = "6.8.9-1.el9.elrepo.x86_64";
    let spec = ModuleSpec::rpcrdma(rel).hooks(Some(HookExport::Plain));
    let mut f = node_with(&spec, RPM, Packing::XzCrc32);
    os_release(
        &f,
        "NAME=\"Rocky Linux\"\nID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.4\"\nPRETTY_NAME=\"Rocky Linux 9.4 (Blue Onyx)\"\n",
    );
    gpu_driver(&f);
    f.load_rpcrdma(
        &Loaded {
            build_id: Some(build_id_of("rpcrdma-default")),
            ..Default::default()
        },
        KallsymsHooks::Upper,
    );
    record(&f, "ofed_info", &["-s"], "MLNX_OFED_LINUX-23.10-0.5.5.0:\n");
    let path = format!("/lib/modules/{rel}/extra/mlnx-nfsrdma/rpcrdma.ko.xz");
    record(
        &f,
        "rpm",
        &["-qf", &path],
        "kmod-mlnx-nfsrdma-23.10-OFED.23.10.0.5.5.1.rhel9u4.x86_64\n",
    );
    record(
        &f,
        "dmesg",
        &[],
        "[   61.0] failing symbol_get of non-GPLONLY symbol rpcrdma_register_nvfs_dma_ops.\n",
    );
    f
}

pub(crate) fn doctor_json(f: &Fixture, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["doctor", "--json"];
    args.extend_from_slice(extra);
    let out = run(f, &args);
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "doctor --json: {e}\nstdout: {}\nstderr: {}",
            stdout(&out),
            stderr(&out)
        )
    });
    (out.status.code().expect("exit code"), doc)
}

pub(crate) fn plan_titles(doc: &Value) -> Vec<String> {
    doc["plan"]
        .as_array()
        .expect("plan")
        .iter()
        .map(|s| s["title"].as_str().unwrap().to_string())
        .collect()
}

fn finding(doc: &Value, topic: &str) -> String {
    doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["topic"] == topic)
        .map(|f| f["text"].as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Text output with the temporary root replaced, for snapshots.
pub(crate) fn doctor_text(f: &Fixture, args: &[&str]) -> String {
    let out = run(f, args);
    stdout(&out).replace(&f.root().display().to_string(), "<ROOT>")
}

#[test]
fn no_nvidia_stack_says_so_and_what_a_gds_node_needs() {
    let f = Fixture::debian12();
    f.install_rpcrdma(
        INBOX,
        ".ko",
        &build(&ModuleSpec::rpcrdma("6.1.0-50-amd64").hooks(None)),
    );
    os_release(
        &f,
        "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n",
    );
    let (code, doc) = doctor_json(&f, &[]);
    assert_eq!(code, 1);
    assert_eq!(doc["no_nvidia_stack"], true);
    assert!(doc["headline"]
        .as_str()
        .unwrap()
        .starts_with("No NVIDIA GPU or GPUDirect Storage stack"));
    assert_eq!(doc["stack"]["provenance"], "inbox");
    assert_eq!(status(&doc, "rpcrdma-hooks"), "fail");
    assert_eq!(
        plan_titles(&doc),
        vec![
            "If this node should use GDS: an NVIDIA GPU with the open kernel modules, and nvidia-fs",
            "Install NVIDIA's NFS over RDMA client with GDS support",
            "Mount with nfs-gds so a missing piece fails loudly",
        ]
    );
    assert!(finding(&doc, "libcufile_rdma").contains("never use it"));
    assert_snapshot!("doctor_no_nvidia_stack", doctor_text(&f, &["doctor"]));
}

#[test]
fn ubuntu_doca_dkms_with_gpl_hooks_is_ready() {
    let f = ubuntu_doca_dkms();
    let (code, doc) = doctor_json(&f, &[]);
    assert_eq!(code, 0, "{doc:#}");
    // Every check passes but the advisory one on cufile.json, which allows the silent fallback.
    assert_eq!(doc["verdict"], "ready-with-warnings");
    let warned: Vec<&str> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !matches!(c["status"].as_str(), Some("pass" | "skip")))
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(warned, vec!["cufile-config"]);
    assert_eq!(doc["stack"]["provenance"], "mofed-dkms");
    assert_eq!(doc["stack"]["ofed"]["kind"], "doca");
    assert_eq!(doc["stack"]["gpu_driver"]["flavour"], "open");
    assert!(finding(&doc, "ofa-gds-config").contains("CONFIG_GPU_DIRECT_STORAGE=y"));
    assert!(finding(&doc, "cufile-json").contains("allow_compat_mode is true"));
    // Only the strict proof run is left to do.
    assert_eq!(
        plan_titles(&doc),
        vec!["Prove GDS once with compatibility mode off"]
    );
    assert_snapshot!("doctor_ubuntu_doca_dkms", doctor_text(&f, &["doctor"]));
    assert_snapshot!(
        "doctor_ubuntu_doca_dkms_markdown",
        doctor_text(&f, &["doctor", "--markdown"])
    );
}

#[test]
fn rhel_mlnx_ofed_plain_hooks_on_6_6_plus_get_the_gpl_fix() {
    let f = rhel_mlnx_ofed_plain();
    let (code, doc) = doctor_json(&f, &[]);
    assert_eq!(code, 1);
    assert_eq!(status(&doc, "rpcrdma-hooks"), "pass");
    assert_eq!(status(&doc, "rpcrdma-hook-export"), "fail");
    assert_eq!(status(&doc, "rpcrdma-loaded"), "fail");
    assert_eq!(doc["stack"]["family"], "rhel");
    assert_eq!(doc["stack"]["provenance"], "mofed-package");
    assert_eq!(
        doc["stack"]["rpcrdma_package"],
        "kmod-mlnx-nfsrdma-23.10-OFED.23.10.0.5.5.1.rhel9u4.x86_64"
    );
    assert!(finding(&doc, "kernel-log").contains("failing symbol_get of non-GPLONLY symbol"));
    assert!(finding(&doc, "kernel-gpl-rule").contains("enforced"));
    let titles = plan_titles(&doc);
    assert_eq!(titles[0], "Install an rpcrdma that exports the hooks GPL");
    assert!(doc["plan"][0]["commands"][0]
        .as_str()
        .unwrap()
        .starts_with("dnf upgrade"));
    assert_snapshot!(
        "doctor_rhel_mlnx_ofed_plain_json",
        doctor_text(&f, &["doctor", "--json"])
    );
}

#[test]
fn vastnfs_plain_exports_on_a_new_kernel_mean_upgrading_vastnfs() {
    let spec = ModuleSpec::rpcrdma(UBUNTU_REL).hooks(Some(HookExport::Plain));
    let f = node_with(
        &spec,
        "updates/bundle/net/sunrpc/xprtrdma/rpcrdma",
        Packing::Plain,
    );
    os_release(&f, "ID=ubuntu\nID_LIKE=debian\nVERSION_ID=\"24.04\"\n");
    f.write(
        "proc/version_signature",
        "Ubuntu 6.8.0-45.45-generic 6.8.12\n",
    );
    f.write(
        "sys/module/sunrpc/parameters/nfs_bundle_version",
        "4.0.33\n",
    );
    gpu_driver(&f);
    let (code, doc) = doctor_json(&f, &[]);
    assert_eq!(code, 1);
    assert_eq!(doc["stack"]["provenance"], "vastnfs");
    assert_eq!(doc["stack"]["vastnfs_version"], "4.0.33");
    assert_eq!(status(&doc, "rpcrdma-hook-export"), "fail");
    assert!(evidence(&doc, "rpcrdma-hook-export").contains("/proc/version_signature"));
    assert_eq!(plan_titles(&doc), vec!["Upgrade the VAST NFS client"]);
}

#[test]
fn ubuntu_archive_doca_ofed_is_its_own_stack_and_fixed_from_the_archive() {
    // Ubuntu 26.04's Canonical-signed kernel-ABI package puts rpcrdma under kernel/, where only
    // its directory (and its package) tell it from the inbox module.
    let rel = "7.0.0-14-generic";
    let spec = ModuleSpec::rpcrdma(rel).hooks(None);
    let f = node_with(&spec, "kernel/doca-ofed-26.01/rpcrdma", Packing::Zstd);
    os_release(
        &f,
        "PRETTY_NAME=\"Ubuntu 26.04 LTS\"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID=\"26.04\"\n",
    );
    gpu_driver(&f);
    let package = format!("linux-modules-doca-ofed-26.01-{rel}");
    record(
        &f,
        "dpkg",
        &[
            "-S",
            &format!("/lib/modules/{rel}/kernel/doca-ofed-26.01/rpcrdma.ko.zst"),
        ],
        &format!("{package}: /lib/modules/{rel}/kernel/doca-ofed-26.01/rpcrdma.ko.zst\n"),
    );
    let (code, doc) = doctor_json(&f, &[]);
    assert_eq!(code, 1);
    assert_eq!(doc["no_nvidia_stack"], false);
    assert_eq!(doc["stack"]["provenance"], "ubuntu-doca-ofed");
    assert_eq!(doc["stack"]["rpcrdma_package"], package.as_str());
    assert_eq!(status(&doc, "rpcrdma-hooks"), "fail");
    assert!(finding(&doc, "rpcrdma-source").contains("Canonical-signed DOCA-OFED 26.01 package"));
    assert_eq!(
        plan_titles(&doc)[0],
        "Install a DOCA-OFED rpcrdma with GDS support from the Ubuntu archive"
    );
    assert_eq!(
        doc["plan"][0]["commands"][0],
        format!("apt-get install --only-upgrade {package}   # the archive's build first")
    );
}

#[test]
fn gpu_operator_node_without_nvidia_fs_gets_the_cluster_policy() {
    let spec = ModuleSpec::rpcrdma(UBUNTU_REL);
    let f = {
        let f = Fixture::new(UBUNTU_REL);
        f.install_rpcrdma(DKMS, ".ko.zst", &pack(&build(&spec), Packing::Zstd));
        f
    };
    os_release(&f, "ID=ubuntu\nID_LIKE=debian\nVERSION_ID=\"22.04\"\n");
    gpu_driver(&f);
    f.write("run/nvidia/validations/driver-ready", "");
    f.write("run/nvidia/validations/toolkit-ready", "");
    f.write(
        "var/lib/kubelet/config.yaml",
        "kind: KubeletConfiguration\n",
    );
    record(
        &f,
        "ofed_info",
        &["-s"],
        "OFED-internal-24.10-1.1.4.0.200:\n",
    );
    let (code, doc) = doctor_json(&f, &[]);
    assert_eq!(code, 1);
    assert_eq!(doc["stack"]["gpu_operator"], true);
    assert_eq!(status(&doc, "nvidia-fs-loaded"), "fail");
    assert_eq!(plan_titles(&doc), vec!["Enable GDS in the GPU Operator"]);
    let commands = doc["plan"][0]["commands"].to_string();
    assert!(commands.contains("kind: ClusterPolicy"), "{commands}");
    assert!(commands.contains("kernelModuleType: open"), "{commands}");
    assert!(finding(&doc, "gpu-operator").contains("driver-ready, toolkit-ready"));
}

#[test]
fn stale_module_is_reloaded_only_when_nothing_uses_it() {
    let f = {
        let spec = ModuleSpec::rpcrdma(UBUNTU_REL).build_id(Some(build_id_of("rebuilt")));
        let mut f = node_with(&spec, DKMS, Packing::Zstd);
        f.load_rpcrdma(
            &Loaded {
                build_id: Some(build_id_of("old")),
                ..Default::default()
            },
            KallsymsHooks::None,
        );
        f
    };
    // Without a readable mount table nobody can say rpcrdma is unused: no reload.
    let (_, doc) = doctor_json(&f, &[]);
    assert_eq!(status(&doc, "rpcrdma-fresh"), "fail");
    assert_eq!(plan_titles(&doc), vec!["Reboot to load the new rpcrdma"]);

    f.write(
        "proc/self/mountinfo",
        "25 1 254:0 / / rw - ext4 /dev/vda rw\n",
    );
    let (_, doc) = doctor_json(&f, &[]);
    assert_eq!(plan_titles(&doc), vec!["Reload rpcrdma"]);
    assert_eq!(doc["plan"][0]["action"]["action"], "reload-rpcrdma");

    // The same node with an NFS/RDMA mount: reboot instead.
    f.write(
        "proc/self/mountinfo",
        "25 1 254:0 / / rw - ext4 /dev/vda rw\n41 25 0:51 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15\n",
    );
    let (_, doc) = doctor_json(&f, &[]);
    assert_eq!(plan_titles(&doc), vec!["Reboot to load the new rpcrdma"]);
    assert!(doc["plan"][0]["why"].as_str().unwrap().contains("/mnt/gds"));
    assert!(doc["plan"][0].get("action").is_none());
}

#[test]
fn probe_reads_the_registered_drivers() {
    let f = ubuntu_doca_dkms();
    f.write("proc/driver/nvidia-fs/modules", "wekafsio: 1\n");
    let (code, doc) = doctor_json(&f, &["--probe"]);
    assert_eq!(code, 1);
    assert_eq!(status(&doc, "nvfs-registration"), "fail");
    f.write(
        "proc/driver/nvidia-fs/modules",
        "wekafsio: 1\nrpcrdma: (null)\n",
    );
    let (code, doc) = doctor_json(&f, &["--probe"]);
    assert_eq!(code, 0);
    assert_eq!(status(&doc, "nvfs-registration"), "pass");
}

#[test]
fn provision_dry_run_lists_the_plan_and_apply_refuses_a_root() {
    let f = rhel_mlnx_ofed_plain();
    let out = run(&f, &["provision"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("[manual] 1. Install an rpcrdma that exports the hooks GPL"));
    let out = run(&f, &["provision", "--apply"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cannot act on --root"),
        "{}",
        stderr(&out)
    );
}

fn unpack(archive: &Path, into: &Path) {
    let file = std::fs::File::open(archive).expect("archive");
    tar::Archive::new(flate2::read::GzDecoder::new(file))
        .unpack(into)
        .expect("unpack");
}

/// What a diagnosis concludes: verdict, each check's status, the plan.
fn conclusions(doc: &Value) -> (Value, Vec<(String, String)>, Vec<String>) {
    let checks = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (doc["verdict"].clone(), checks, plan_titles(doc))
}

#[test]
fn collected_bundle_replays_to_the_same_verdicts() {
    for f in [ubuntu_doca_dkms(), rhel_mlnx_ofed_plain()] {
        let (_, original) = doctor_json(&f, &[]);
        let work = tempfile::tempdir().unwrap();
        let archive = work.path().join("node.tgz");
        let out = run(&f, &["collect", "-o", archive.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let bundle = work.path().join("bundle");
        std::fs::create_dir(&bundle).unwrap();
        unpack(&archive, &bundle);
        // Nothing of the fixture's kallsyms beyond the hook lines went in.
        let kallsyms = std::fs::read_to_string(bundle.join("proc/kallsyms")).unwrap();
        assert!(!kallsyms.contains("sunrpc_cache_lookup_rcu"), "{kallsyms}");
        // The manifest says what made it, when and where.
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(bundle.join("nfs-gds-manifest.json")).unwrap())
                .unwrap();
        assert!(manifest["version"]
            .as_str()
            .unwrap()
            .starts_with(env!("CARGO_PKG_VERSION")));
        assert!(
            manifest["collected_at"].as_str().unwrap().ends_with('Z'),
            "{manifest}"
        );
        assert_eq!(manifest["kernel"], original["kernel_release"], "{manifest}");
        assert!(manifest.get("hostname").is_some(), "{manifest}");
        let argv = manifest["command_line"].as_array().unwrap();
        assert!(argv.iter().any(|a| a == "collect"), "{manifest}");
        let replayed = replayed_doctor(&bundle);
        assert_eq!(conclusions(&replayed), conclusions(&original));
        assert_eq!(replayed["stack"]["ofed"], original["stack"]["ofed"]);
        assert_eq!(
            replayed["stack"]["rpcrdma_package"],
            original["stack"]["rpcrdma_package"]
        );
    }
}

/// `collect -o` names what the user gave when it cannot write there, refuses to replace a file
/// without `--force`, and leaves out of the bundle the entries of big directories that no reader
/// looks for (every device node, every library), which replay the same without them.
#[test]
fn collect_names_the_missing_directory_keeps_existing_files_and_leaves_out_placeholders() {
    let f = ubuntu_doca_dkms();
    for n in 0..40 {
        f.write(format!("dev/tty{n}"), "");
        f.write(format!("usr/lib/x86_64-linux-gnu/libfoo{n}.so.1"), "");
    }
    f.write("dev/nvidia-fs0", "");
    let work = tempfile::tempdir().unwrap();

    let missing = work.path().join("no/such/dir/node.tgz");
    let out = run(&f, &["collect", "-o", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "cannot write {}: the directory {} does not exist",
            missing.display(),
            work.path().join("no/such/dir").display()
        )),
        "{err}"
    );
    assert!(!err.contains(".nfs-gds-collect."), "{err}");

    let archive = work.path().join("node.tgz");
    std::fs::write(&archive, "an earlier bundle\n").unwrap();
    let out = run(&f, &["collect", "-o", archive.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("exists already; give --force"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&archive).unwrap(),
        "an earlier bundle\n"
    );
    let out = run(&f, &["collect", "--force", "-o", archive.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let bundle = work.path().join("bundle");
    std::fs::create_dir(&bundle).unwrap();
    unpack(&archive, &bundle);
    assert!(bundle.join("dev/nvidia-fs0").exists());
    assert!(!bundle.join("dev/tty0").exists());
    assert!(!bundle
        .join("usr/lib/x86_64-linux-gnu/libfoo0.so.1")
        .exists());
    let (_, original) = doctor_json(&f, &[]);
    let replayed = replayed_doctor(&bundle);
    assert_eq!(conclusions(&replayed), conclusions(&original));
}

/// `collect -o -` writes the bundle to stdout (and its summary to stderr); `-o DIR` says to name
/// a file, and `--force` does not change that answer.
#[test]
fn collect_writes_to_stdout_for_dash_and_never_offers_force_for_a_directory() {
    let f = ubuntu_doca_dkms();
    let work = tempfile::tempdir().unwrap();
    let out = nfs_gds()
        .current_dir(work.path())
        .arg("--root")
        .arg(f.root())
        .args(["collect", "-o", "-"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !work.path().join("-").exists(),
        "a file named - was written"
    );
    assert!(
        stderr(&out).starts_with("nfs-gds collect: wrote the bundle to stdout ("),
        "{}",
        stderr(&out)
    );
    let archive = work.path().join("from-stdout.tgz");
    std::fs::write(&archive, &out.stdout).unwrap();
    let bundle = work.path().join("bundle");
    std::fs::create_dir(&bundle).unwrap();
    unpack(&archive, &bundle);
    let (_, original) = doctor_json(&f, &[]);
    assert_eq!(
        conclusions(&replayed_doctor(&bundle)),
        conclusions(&original)
    );

    for force in [&[][..], &["--force"][..]] {
        let out = run(
            &f,
            &[&["collect", "-o", work.path().to_str().unwrap()][..], force].concat(),
        );
        assert_eq!(out.status.code(), Some(2), "{force:?}");
        let err = stderr(&out);
        assert!(
            err.contains("is a directory: give the path of a new file"),
            "{err}"
        );
        assert!(!err.contains("--force"), "{force:?}: {err}");
    }
}

/// Doctor keeps the evidence in its Markdown (what a ticket needs).
#[test]
fn markdown_keeps_the_evidence() {
    let f = ready_node();
    f.write(
        "etc/cufile.json",
        "{\"properties\": {\"allow_compat_mode\": true}}\n",
    );
    let md = doctor_text(&f, &["doctor", "--markdown"]);
    assert!(md.contains("### Evidence"), "{md}");
    assert!(md.contains("```text\n/etc/cufile.json: "), "{md}");
}

#[test]
fn doctor_never_says_nothing_to_fix_about_a_mount_table_it_could_not_read() {
    let f = ready_node();
    f.write(
        "proc/self/mountinfo",
        "1 0 254:0 / / rw - ext4 /dev/vda rw\n41 1 0:51 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15\n",
    );
    // One line past what any line of a mount table holds.
    let mut stats =
        b"device 10.0.2.15:/export mounted on /mnt/gds with fstype nfs4 statvers=1.1\n\topts:\t"
            .to_vec();
    stats.extend(std::iter::repeat_n(b'x', 2 << 20));
    stats.push(b'\n');
    f.write("proc/self/mountstats", &stats);
    let text = doctor_text(&f, &["doctor"]);
    assert!(!text.contains("Nothing to fix"), "{text}");
    assert!(
        text.contains("proc/self/mountstats:2: the line is longer than 1048576 bytes"),
        "{text}"
    );
    let (_, doc) = doctor_json(&f, &[]);
    let unread = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["summary"]
                .as_str()
                .unwrap()
                .contains("could not be judged")
        })
        .unwrap_or_else(|| panic!("no check says the mounts could not be judged: {doc:#}"));
    assert_eq!(unread["status"], "unknown");
    assert_ne!(doc["verdict"], "ready");
}

/// A TCP mount on a staging point (a helper verifying it, or one killed before it could move
/// or unmount it) is no node mount: doctor judges nothing of it and says where it is.
#[test]
fn a_staged_mount_is_named_and_never_judged_as_a_node_mount() {
    let f = ubuntu_doca_dkms();
    f.write(
        "proc/self/mountinfo",
        "25 1 254:0 / / rw - ext4 /dev/vda rw\n\
         41 25 0:51 / /mnt/data rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15\n\
         42 25 0:24 /nfs-gds/stage /run/nfs-gds/stage rw - tmpfs tmpfs rw\n\
         43 42 0:52 / /run/nfs-gds/stage/4242/mnt rw - nfs4 10.0.2.99:/scratch rw,vers=4.2,proto=tcp,addr=10.0.2.99\n",
    );
    let (code, doc) = doctor_json(&f, &[]);
    assert_eq!(code, 0, "the staged TCP mount is not judged: {doc:#}");
    assert!(
        finding(&doc, "nfs-mount").contains(
            "staged below /run/nfs-gds/stage, not on any mount point yet: /run/nfs-gds/stage/4242/mnt (10.0.2.99:/scratch)"
        ),
        "{doc:#}"
    );
    assert!(
        !doc.to_string().contains("10.0.2.99:/scratch on"),
        "{doc:#}"
    );
}

/// A hardened node whose kernel loads no more modules (`kernel.modules_disabled = 1`): the plan
/// says so before any step that installs or reloads a module, and none of them is run by
/// `provision --apply`.
#[test]
fn a_kernel_that_loads_no_more_modules_is_said_before_the_module_steps() {
    let f = rhel_mlnx_ofed_plain();
    let (_, before) = doctor_json(&f, &[]);
    let steps = plan_titles(&before);
    assert!(!steps.is_empty(), "{before:#}");
    f.write("proc/sys/kernel/modules_disabled", "1\n");
    let (_, doc) = doctor_json(&f, &[]);
    let locked = plan_titles(&doc);
    assert_eq!(
        locked[0],
        "This kernel loads no more modules: the steps below take effect only after a reboot"
    );
    assert_eq!(locked[1..], steps[..]);
    assert!(
        doc["plan"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s.get("action").is_none()),
        "{doc:#}"
    );
}
