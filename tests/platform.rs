//! The node as GDS sees it, one fixture node per case: a GPU without its driver, the
//! proprietary driver, the IOMMU translating or in passthrough, ACS bridges and the PCIe path
//! nvidia-fs reports, cufile.json with each mistake, a container, and a kernel that cannot load
//! modules — run through `check` and `doctor` (text, Markdown, JSON), and replayed from a bundle.

use std::path::Path;

use serde_json::Value;

use crate::support::*;

const GPU: &str = "0000:3b:00.0";
const NIC: &str = "0000:3c:00.0";
const OPEN: &str =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build\n";
const PROPRIETARY: &str =
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Release Build\n";

fn pci_device(f: &Fixture, addr: &str, vendor: &str, class: &str, iommu: Option<&str>) {
    let dir = format!("sys/bus/pci/devices/{addr}");
    f.write(format!("{dir}/vendor"), format!("{vendor}\n"));
    f.write(format!("{dir}/class"), format!("{class}\n"));
    if let Some(t) = iommu {
        f.write(format!("{dir}/iommu_group/type"), format!("{t}\n"));
    }
}

/// A Debian 12 node with the inbox rpcrdma and an NVIDIA GPU on the bus, nothing else.
fn gpu_node(iommu: Option<&str>) -> Fixture {
    let f = Fixture::debian12();
    f.install_rpcrdma(
        INBOX,
        ".ko",
        &build(&ModuleSpec::rpcrdma("6.1.0-50-amd64").hooks(None)),
    );
    f.write(
        "etc/os-release",
        "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n",
    );
    pci_device(&f, GPU, "0x10de", "0x030200", iommu);
    // The GPU's HDMI audio function is not a GPU.
    pci_device(&f, "0000:3b:00.1", "0x10de", "0x040300", iommu);
    f
}

fn with_nic(f: &Fixture, iommu: Option<&str>) {
    pci_device(f, NIC, "0x15b3", "0x020700", iommu);
    f.write(
        "sys/class/infiniband/mlx5_0/device/uevent",
        format!("DRIVER=mlx5_core\nPCI_SLOT_NAME={NIC}\n"),
    );
}

fn driver(f: &Fixture, nvrm: &str) {
    f.write("sys/module/nvidia/version", "570.86.15\n");
    f.write("proc/driver/nvidia/version", nvrm);
}

fn doctor_json(f: &Fixture) -> Value {
    let out = run(f, &["doctor", "--json"]);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor --json: {e}\n{}", stderr(&out)))
}

fn titles(doc: &Value) -> Vec<String> {
    doc["plan"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["title"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_gpu_without_its_driver_is_not_a_machine_without_a_gpu() {
    let f = gpu_node(None);
    let doc = doctor_json(&f);
    assert_eq!(doc["command"], "doctor");
    assert_eq!(doc["kernel_release"], "6.1.0-50-amd64");
    assert_eq!(doc["no_nvidia_stack"], false);
    let headline = doc["headline"].as_str().unwrap();
    assert!(
        headline.starts_with("GPU 0000:3b:00.0 present, nvidia.ko not loaded"),
        "{headline}"
    );
    let r = check_result(&doc, "gpu-driver");
    assert_eq!(r["status"], "fail");
    assert_eq!(
        r["summary"],
        "GPU 0000:3b:00.0 present, nvidia.ko not loaded"
    );
    assert!(
        evidence(&doc, "gpu-driver").contains(GPU)
            && !evidence(&doc, "gpu-driver").contains("3b:00.1"),
        "{}",
        evidence(&doc, "gpu-driver")
    );
    let plan = titles(&doc);
    assert_eq!(plan[0], "Load NVIDIA's GPU driver", "{plan:?}");
    let text = stdout(&run(&f, &["doctor"]));
    assert!(
        text.contains("dkms autoinstall -k 6.1.0-50-amd64"),
        "{text}"
    );

    // Without the GPU, the same node has no NVIDIA stack and the check does not apply.
    f.remove("sys/bus/pci/devices");
    let doc = doctor_json(&f);
    assert_eq!(doc["no_nvidia_stack"], true);
    assert_eq!(status(&doc, "gpu-driver"), "skip");
}

#[test]
fn the_proprietary_driver_is_the_reason_nvidia_fs_is_missing() {
    let f = gpu_node(None);
    driver(&f, PROPRIETARY);
    let doc = doctor_json(&f);
    let r = check_result(&doc, "gpu-driver");
    assert_eq!(r["status"], "fail");
    assert!(
        r["summary"].as_str().unwrap().contains("PROPRIETARY"),
        "{r}"
    );
    assert_eq!(status(&doc, "nvidia-fs-loaded"), "fail");
    let plan = titles(&doc);
    let switch = "Switch to NVIDIA's open GPU kernel modules";
    assert_eq!(plan.iter().filter(|t| *t == switch).count(), 1, "{plan:?}");
    assert_eq!(plan[0], switch, "before installing nvidia-fs: {plan:?}");

    // Without the version file, the kernel's taint flag tells the flavour.
    f.remove("proc/driver/nvidia/version");
    f.write("sys/module/nvidia/taint", "POE\n");
    assert_eq!(status(&doctor_json(&f), "gpu-driver"), "fail");
    f.write("sys/module/nvidia/taint", "OE\n");
    assert_eq!(status(&doctor_json(&f), "gpu-driver"), "pass");
    f.remove("sys/module/nvidia/taint");
    assert_eq!(status(&doctor_json(&f), "gpu-driver"), "unknown");

    driver(&f, OPEN);
    assert_eq!(status(&doctor_json(&f), "gpu-driver"), "pass");
}

#[test]
fn iommu_translating_warns_with_the_devices_and_passthrough_passes() {
    let f = gpu_node(Some("DMA-FQ"));
    driver(&f, OPEN);
    with_nic(&f, Some("DMA-FQ"));
    f.write(
        "proc/cmdline",
        "BOOT_IMAGE=/vmlinuz ro intel_iommu=on quiet\n",
    );
    let doc = doctor_json(&f);
    let r = check_result(&doc, "iommu-mode");
    assert_eq!(r["status"], "warn", "{r}");
    assert!(
        r["summary"]
            .as_str()
            .unwrap()
            .contains(&format!("{GPU}, {NIC}")),
        "{r}"
    );
    assert!(evidence(&doc, "iommu-mode").contains("intel_iommu=on"));
    assert!(titles(&doc)
        .iter()
        .any(|t| t.starts_with("Boot with the IOMMU in passthrough")));
    let md = stdout(&run(&f, &["doctor", "--markdown"]));
    assert!(md.contains("| `iommu-mode` | ⚠️ warn |"), "{md}");
    assert!(md.contains("iommu=pt"), "{md}");
    // Advisory: the mount helper's own checks still call the node ready for it.
    let (_, check) = check_json(&f);
    assert_eq!(status(&check, "iommu-mode"), "warn");
    assert_eq!(check_result(&check, "iommu-mode")["level"], "warn");

    let f = gpu_node(Some("identity"));
    driver(&f, OPEN);
    with_nic(&f, Some("identity"));
    f.write("proc/cmdline", "ro intel_iommu=on iommu=pt\n");
    let doc = doctor_json(&f);
    assert_eq!(status(&doc, "iommu-mode"), "pass");
    assert!(!titles(&doc).iter().any(|t| t.contains("IOMMU")));
}

#[test]
fn acs_bridges_and_a_gpu_far_from_its_nic_are_reported() {
    let f = gpu_node(None);
    driver(&f, OPEN);
    with_nic(&f, None);
    f.write(
        "proc/driver/nvidia-fs/bridges",
        "0000:3a:00.0\n0000:85:02.0\n",
    );
    f.write(
        "proc/driver/nvidia-fs/peer_distance",
        format!(
            "gpu\t\tpeer\t\tpeerrank\tp2pdist\tlink\tgen\tnuma\tnp2p\tclass\n\
{GPU} \t{NIC} \t0x00000000\t0x0081\t0x10\t0x04\t0x01\t0\tnetwork\n\
{GPU} \t0000:5e:00.0 \t0x00000000\t0x0003\t0x04\t0x04\t0x00\t0\tnvme\n"
        ),
    );
    let doc = doctor_json(&f);
    assert_eq!(status(&doc, "pcie-acs"), "warn");
    assert!(evidence(&doc, "pcie-acs").contains("0000:3a:00.0 0000:85:02.0"));
    assert!(titles(&doc).iter().any(|t| t.starts_with("Disable ACS")));
    let r = check_result(&doc, "pcie-path");
    assert_eq!(r["status"], "warn", "{r}");
    assert!(r["summary"].as_str().unwrap().contains(GPU), "{r}");
    assert!(
        evidence(&doc, "pcie-path").contains("0x0081"),
        "the NVMe peer is not a NIC"
    );

    f.write("proc/driver/nvidia-fs/bridges", "");
    f.write(
        "proc/driver/nvidia-fs/peer_distance",
        format!("gpu\t\tpeer\t\tpeerrank\tp2pdist\tlink\tgen\tnuma\tnp2p\tclass\n{GPU} \t{NIC} \t0x00000000\t0x0003\t0x10\t0x04\t0x00\t0\tnetwork\n"),
    );
    let doc = doctor_json(&f);
    assert_eq!(status(&doc, "pcie-acs"), "pass");
    assert_eq!(status(&doc, "pcie-path"), "pass");
    f.write(
        "proc/driver/nvidia-fs/peer_distance",
        "gpu peer\n0000:3b:00.0 garbage\n",
    );
    let r = check_result(&doctor_json(&f), "pcie-path").clone();
    assert_eq!(r["status"], "unknown");
    assert!(
        r["summary"]
            .as_str()
            .unwrap()
            .contains("peer_distance line 2"),
        "{r}"
    );
}

const FIB_TRIE: &str =
    "Local:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 192.168.10.5\n        /32 host LOCAL\n";

#[test]
fn cufile_json_mistakes_are_each_named() {
    let f = gpu_node(None);
    driver(&f, OPEN);
    f.write("proc/net/fib_trie", FIB_TRIE);
    f.write(
        "etc/cufile.json",
        r#"{
  // as shipped, with a few edits
  "logging": { "level": "ERROR" },
  "propeties": {},
  "properties": {
    "max_direct_io_size_kb": 1000,
    "use_poll_mode": "false",
    "rdma_dev_addr_list": ["10.1.1.1"],
  },
  "fs": { "nfs": { "mount_table": [ { "/mnt/data": ["192.168.10.5"] } ] } }
}"#,
    );
    let doc = doctor_json(&f);
    let r = check_result(&doc, "cufile-config");
    assert_eq!(r["status"], "warn", "{r}");
    let ev = evidence(&doc, "cufile-config");
    for expected in [
        "`propeties` is not a cuFile setting",
        "`properties.max_direct_io_size_kb` is 1000",
        "`properties.use_poll_mode` must be true or false",
        "entry 10.1.1.1 is not an address of this node",
        "`fs.nfs.mount_table` must be an object of mount points",
        "`properties.allow_compat_mode` is unset (default true)",
    ] {
        assert!(ev.contains(expected), "{expected}\nin: {ev}");
    }
    assert!(r["remedy"]
        .as_str()
        .unwrap()
        .contains("\"allow_compat_mode\": false"));

    f.write(
        "etc/cufile.json",
        r#"{ "properties": { "allow_compat_mode": false, "rdma_dev_addr_list": ["192.168.10.5"] },
             "fs": { "nfs": { "mount_table": { "/mnt/data": { "rdma_dev_addr_list": ["192.168.10.5"] } } } } }"#,
    );
    assert_eq!(status(&doctor_json(&f), "cufile-config"), "pass");
    f.write("etc/cufile.json", "{ \"properties\": ");
    let doc = doctor_json(&f);
    assert_eq!(status(&doc, "cufile-config"), "warn");
    // A directory in its place is that one check's problem, not the whole diagnosis's.
    f.remove("etc/cufile.json");
    std::fs::create_dir(f.path("etc/cufile.json")).unwrap();
    let r = check_result(&doctor_json(&f), "cufile-config").clone();
    assert_eq!(r["status"], "warn", "{r}");
    assert!(
        r["summary"]
            .as_str()
            .unwrap()
            .contains("not a regular file"),
        "{r}"
    );
    f.remove("etc/cufile.json");
    assert_eq!(status(&doctor_json(&f), "cufile-config"), "skip");
}

#[test]
fn a_container_is_told_from_evidence_and_checked_for_what_cufile_needs() {
    let f = gpu_node(None);
    driver(&f, OPEN);
    assert_eq!(status(&doctor_json(&f), "container"), "skip");
    f.write("proc/1/cgroup", "0::/init.scope\n");
    assert_eq!(status(&doctor_json(&f), "container"), "skip");

    f.write(".dockerenv", "");
    f.write(
        "proc/1/cgroup",
        "0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-ab.scope\n",
    );
    f.write("proc/1/environ", b"PATH=/bin\0container=oci\0");
    let doc = doctor_json(&f);
    let r = check_result(&doc, "container");
    assert_eq!(r["status"], "warn", "{r}");
    assert!(r["summary"]
        .as_str()
        .unwrap()
        .contains("no /dev/nvidia-fs* node and no /run/udev"));
    let ev = evidence(&doc, "container");
    assert!(
        ev.contains("/.dockerenv exists")
            && ev.contains("kubepods")
            && ev.contains("container=oci"),
        "{ev}"
    );

    f.write("dev/nvidia-fs0", "");
    std::fs::create_dir_all(f.path("run/udev")).unwrap();
    assert_eq!(status(&doctor_json(&f), "container"), "pass");
}

#[test]
fn a_kernel_without_loadable_modules_is_stated_not_sent_to_depmod() {
    let f = gpu_node(None);
    f.remove("proc/modules");
    let doc = doctor_json(&f);
    let r = check_result(&doc, "rpcrdma-loaded");
    assert_eq!(r["status"], "skip");
    assert!(
        r["summary"]
            .as_str()
            .unwrap()
            .contains("cannot load modules (no /proc/modules)"),
        "{r}"
    );
    let text = stdout(&run(&f, &["doctor"]));
    assert!(
        !text.contains("loads rpcrdma from disk when the first RDMA mount starts"),
        "{text}"
    );
    assert!(!text.contains("depmod -a"), "{text}");

    let f = gpu_node(None);
    f.write("proc/cmdline", "ro nomodule\n");
    f.remove(f.tree());
    let doc = doctor_json(&f);
    let r = check_result(&doc, "rpcrdma-module");
    assert_eq!(r["status"], "unknown", "{r}");
    assert!(
        r["summary"]
            .as_str()
            .unwrap()
            .contains("booted with nomodule"),
        "{r}"
    );
    assert!(
        r.get("remedy")
            .is_none_or(|m| !m.as_str().unwrap().contains("depmod")),
        "{r}"
    );
}

#[test]
fn the_fstab_step_shows_a_line_and_edits_nothing() {
    let f = gpu_node(None);
    f.remove("sys/bus/pci/devices");
    let text = stdout(&run(&f, &["doctor"]));
    assert!(!text.contains(">> /etc/fstab"), "{text}");
    assert!(
        text.contains("# server:/export  /mnt/data  nfs-gds  _netdev,vers=4.2  0 0"),
        "{text}"
    );
}

#[test]
fn verdict_counts_unknown_apart_from_warnings() {
    let f = gpu_node(None);
    driver(&f, OPEN);
    f.remove("proc/driver/nvidia/version");
    // gpu-driver unknown, nvidia-fs-loaded and rpcrdma-hooks fail.
    let out = run(&f, &["check"]);
    let text = stdout(&out);
    let line = text.lines().next().unwrap();
    assert!(line.contains("failed, 1 unknown"), "{line}");
    assert!(!line.contains("warning"), "{line}");
}

fn unpack(archive: &Path, into: &Path) {
    let file = std::fs::File::open(archive).expect("archive");
    tar::Archive::new(flate2::read::GzDecoder::new(file))
        .unpack(into)
        .expect("unpack");
}

#[test]
fn a_bundle_replays_the_platform_checks() {
    let f = gpu_node(Some("DMA"));
    driver(&f, PROPRIETARY);
    with_nic(&f, Some("DMA"));
    f.write("proc/cmdline", "ro amd_iommu=on\n");
    f.write("proc/driver/nvidia-fs/bridges", "0000:3a:00.0\n");
    f.write(
        "etc/cufile.json",
        r#"{ "properties": { "allow_compat_mode": true } }"#,
    );
    // A bridge of another vendor: /proc/bus/pci/devices spares reading it.
    pci_device(&f, "0000:00:01.0", "0x8086", "0x060400", None);
    f.write(
        "proc/bus/pci/devices",
        "0008\t80861234\t0\n3b00\t10de20b5\t0\n3b01\t10de1aef\t0\n3c00\t15b3101b\t0\n",
    );
    let original = doctor_json(&f);
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("node.tgz");
    let out = run(&f, &["collect", "-o", archive.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let bundle = work.path().join("bundle");
    std::fs::create_dir(&bundle).unwrap();
    unpack(&archive, &bundle);
    for rel in [
        format!("sys/bus/pci/devices/{GPU}/vendor"),
        format!("sys/bus/pci/devices/{GPU}/class"),
        format!("sys/bus/pci/devices/{NIC}/iommu_group/type"),
        "sys/class/infiniband/mlx5_0/device/uevent".to_string(),
        "proc/cmdline".to_string(),
    ] {
        assert!(bundle.join(&rel).is_file(), "{rel} is not in the bundle");
    }
    assert!(!bundle
        .join("sys/bus/pci/devices/0000:00:01.0/vendor")
        .exists());
    let replayed = replayed_doctor(&bundle);
    for id in [
        "gpu-driver",
        "iommu-mode",
        "pcie-acs",
        "cufile-config",
        "container",
    ] {
        assert_eq!(
            check_result(&replayed, id),
            check_result(&original, id),
            "{id}"
        );
    }
    assert_eq!(titles(&replayed), titles(&original));
}

#[test]
fn a_known_bad_nvidia_fs_is_named_with_its_source() {
    let mut f = gpu_node(None);
    driver(&f, OPEN);
    f.nvidia_fs("2.28.4", 1);
    std::fs::create_dir_all(f.path("usr/src/nvidia-fs-2.25.6")).unwrap();
    let doc = doctor_json(&f);
    let r = check_result(&doc, "known-bad-versions");
    assert_eq!(r["status"], "warn", "{r}");
    let ev = evidence(&doc, "known-bad-versions");
    assert!(
        ev.contains("nvidia-fs 2.28.4 (loaded), nvidia-fs 2.25.6 (/usr/src)"),
        "{ev}"
    );
    assert!(ev.contains("rw_verify_area failed with -14"), "{ev}");
    assert!(
        ev.contains("https://github.com/NVIDIA/gds-nvidia-fs/issues/60"),
        "{ev}"
    );

    f.remove("usr/src/nvidia-fs-2.25.6");
    assert_eq!(status(&doctor_json(&f), "known-bad-versions"), "pass");
}

#[test]
fn known_bad_combinations_need_what_the_node_runs_beside_the_release() {
    let mut f = gpu_node(None);
    driver(&f, OPEN);
    f.nvidia_fs("2.28.4", 1);
    // Debian's nvidia-fs-dkms with the proprietary driver package dpkg still has installed.
    let status_file = "Package: nvidia-fs-dkms\nStatus: install ok installed\nVersion: 2.19.7~12.4.1-2\n\n\
                       Package: nvidia-kernel-dkms\nStatus: install ok installed\nVersion: 550.163.01-2\n";
    f.write("var/lib/dpkg/status", status_file);
    let doc = doctor_json(&f);
    assert_eq!(status(&doc, "known-bad-versions"), "warn", "{doc:#}");
    let ev = evidence(&doc, "known-bad-versions");
    assert!(ev.contains("nvidia-fs-dkms 2.19.7~12.4.1-2 (dpkg)"), "{ev}");
    assert!(
        ev.contains("https://packages.debian.org/trixie/nvidia-fs-dkms"),
        "{ev}"
    );
    f.write(
        "var/lib/dpkg/status",
        status_file.replace("nvidia-kernel-dkms", "nvidia-open-kernel-dkms"),
    );
    assert_eq!(status(&doctor_json(&f), "known-bad-versions"), "pass");

    // VAST's 4.0 bundle is fine on 6.8 and on the list above it.
    f.write(
        "sys/module/sunrpc/parameters/nfs_bundle_version",
        "4.0.34\n",
    );
    assert_eq!(status(&doctor_json(&f), "known-bad-versions"), "pass");
    let f = {
        let g = gpu_node(None);
        g.write(
            "sys/module/sunrpc/parameters/nfs_bundle_version",
            "4.0.34\n",
        );
        g.write("proc/sys/kernel/osrelease", "6.12.0-55.el10.x86_64\n");
        g.write(
            "proc/version",
            "Linux version 6.12.0-55.el10.x86_64 (mockbuild@builder) #1 SMP PREEMPT_DYNAMIC\n",
        );
        g
    };
    let doc = doctor_json(&f);
    let ev = evidence(&doc, "known-bad-versions");
    assert!(
        ev.contains("vastnfs 4.0.34: vastnfs 4.0 supports kernels up to 6.8"),
        "{ev}"
    );
}

#[test]
fn the_agent_publishes_the_platform_checks_like_every_other() {
    let f = gpu_node(Some("DMA-FQ"));
    let out = tempfile::tempdir().unwrap();
    f.write(
        "proc/self/mountinfo",
        "1 0 254:0 / / rw - ext4 /dev/vda rw\n",
    );
    let o = nfs_gds()
        .arg("--root")
        .arg(f.root())
        .args(["agent", "--once", "--interval", "30"])
        .arg("--nfd-dir")
        .arg(out.path().join("features.d"))
        .arg("--textfile-dir")
        .arg(out.path().join("textfile"))
        .arg("--status-file")
        .arg(out.path().join("run/status.json"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let features = std::fs::read_to_string(out.path().join("features.d/nfs-gds")).unwrap();
    assert!(features.contains("/gpu-driver=fail\n"), "{features}");
    assert!(features.contains("/iommu-mode=warn\n"), "{features}");
    let prom = std::fs::read_to_string(out.path().join("textfile/nfs-gds.prom")).unwrap();
    assert!(
        prom.contains("nfs_gds_check_status{check=\"iommu-mode\",status=\"warn\"} 1\n"),
        "{prom}"
    );
}
