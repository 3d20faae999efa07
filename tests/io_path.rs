//! The path from each NFS server to its NIC and the GPUs, on fixture sysfs trees of the shapes
//! real servers have: GPU and NIC behind one PCIe switch, under one host bridge through
//! different root ports, and on different sockets — through `check` (`nic-gpu-distance`) and
//! `doctor`.

use crate::support::*;

const GPU: &str = "0000:3d:00.0";
const NIC: &str = "0000:3e:00.0";

/// A PCI function at `dir` (below `sys/devices`) and its `/sys/bus/pci/devices` entry.
fn function(f: &Fixture, dir: &str, addr: &str, vendor: &str, class: &str, numa: i32) {
    f.write(
        format!("sys/devices/{dir}/{addr}/numa_node"),
        format!("{numa}\n"),
    );
    f.write(
        format!("sys/bus/pci/devices/{addr}/vendor"),
        format!("{vendor}\n"),
    );
    f.write(
        format!("sys/bus/pci/devices/{addr}/class"),
        format!("{class}\n"),
    );
}

/// A node with one GPU at `gpu_dir`, a ConnectX NIC (`ib0`, `mlx5_0`) at `nic_dir`, and an NFS
/// server 10.20.0.5 reached by ib0.
fn node(gpu_dir: &str, gpu_numa: i32, nic_dir: &str, nic_numa: i32) -> Fixture {
    let f = Fixture::debian12();
    f.install_rpcrdma(
        INBOX,
        ".ko",
        &build(&ModuleSpec::rpcrdma("6.1.0-50-amd64").hooks(None)),
    );
    function(&f, gpu_dir, GPU, "0x10de", "0x030200", gpu_numa);
    function(&f, nic_dir, NIC, "0x15b3", "0x020700", nic_numa);
    f.write(
        "sys/class/infiniband/mlx5_0/device/uevent",
        format!("PCI_SLOT_NAME={NIC}\n"),
    );
    f.write(
        "sys/class/net/ib0/device/uevent",
        format!("DRIVER=mlx5_core\nPCI_SLOT_NAME={NIC}\n"),
    );
    std::fs::create_dir_all(f.path("sys/class/net/ib0/device/infiniband/mlx5_0")).unwrap();
    f.write(
        "proc/net/route",
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
         eth0\t00000000\t0102A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n\
         ib0\t0000140A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n",
    );
    f.write(
        "proc/fs/nfsfs/servers",
        "NV SERVER   PORT USE HOSTNAME\nv4 0a140005 4e51   1 filer\n",
    );
    f
}

fn distance(f: &Fixture) -> serde_json::Value {
    let (_, doc) = check_json(f);
    check_result(&doc, "nic-gpu-distance").clone()
}

#[test]
fn behind_one_switch_is_pix() {
    let f = node(
        "pci0000:3a/0000:3a:00.0/0000:3b:00.0/0000:3c:00.0",
        0,
        "pci0000:3a/0000:3a:00.0/0000:3b:00.0/0000:3c:08.0",
        0,
    );
    let r = distance(&f);
    assert_eq!(r["status"], "pass", "{r}");
    assert!(r["summary"].as_str().unwrap().contains("filer PIX"), "{r}");
    let ev = r["evidence"].to_string();
    assert!(
        ev.contains("10.20.0.5 (port 20049) → route 10.20.0.0/16 dev ib0 → mlx5_0 → 0000:3e:00.0"),
        "{ev}"
    );
    assert!(ev.contains("GPU 0000:3d:00.0 PIX"), "{ev}");
}

#[test]
fn through_different_root_ports_of_one_host_bridge_is_phb() {
    let f = node(
        "pci0000:3a/0000:3a:00.0/0000:3b:00.0/0000:3c:00.0",
        0,
        "pci0000:3a/0000:3a:02.0",
        0,
    );
    let r = distance(&f);
    assert_eq!(r["status"], "pass", "{r}");
    assert!(
        r["evidence"].to_string().contains("GPU 0000:3d:00.0 PHB"),
        "{r}"
    );
}

#[test]
fn across_sockets_warns_with_the_published_figures() {
    let f = node("pci0000:3a/0000:3a:00.0", 0, "pci0000:ae/0000:ae:00.0", 1);
    let r = distance(&f);
    assert_eq!(r["status"], "warn", "{r}");
    assert!(
        r["summary"].as_str().unwrap().contains("SYS to every GPU"),
        "{r}"
    );
    assert!(r["evidence"].to_string().contains("6.9 GiB/s"), "{r}");
    // The doctor shows the same path, and the mounts of that server.
    f.write(
        "proc/self/mountinfo",
        "1 0 254:0 / / rw - ext4 /dev/vda rw\n\
         61 1 0:50 / /mnt/gds rw - nfs4 filer:/export rw,vers=4.2,proto=rdma,port=20049,addr=10.20.0.5\n",
    );
    let out = run(&f, &["doctor"]);
    let text = stdout(&out);
    assert!(text.contains("NFS v4 server filer (mounted on /mnt/gds): 10.20.0.5 (port 20049) → route 10.20.0.0/16 dev ib0 → mlx5_0 → 0000:3e:00.0; to the GPUs: GPU 0000:3d:00.0 SYS"), "{text}");
}

#[test]
fn a_server_reached_without_rdma_is_not_judged() {
    let f = node("pci0000:3a/0000:3a:00.0", 0, "pci0000:ae/0000:ae:00.0", 1);
    f.write(
        "proc/fs/nfsfs/servers",
        "NV SERVER   PORT USE HOSTNAME\nv4 c0a80207  801   1 homes\n",
    );
    let r = distance(&f);
    assert_eq!(r["status"], "skip", "{r}");
}

#[test]
fn doctor_says_what_does_not_matter_for_kernel_nfs_where_the_node_has_it() {
    let f = node("pci0000:3a/0000:3a:00.0", 0, "pci0000:3a/0000:3a:02.0", 0);
    let out = run(&f, &["doctor"]);
    assert!(!stdout(&out).contains("not-for-nfs"), "{}", stdout(&out));
    let modules = std::fs::read_to_string(f.path("proc/modules")).unwrap_or_default();
    f.write(
        "proc/modules",
        format!("{modules}nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)\n"),
    );
    f.write("usr/local/cuda-12.8/gds/tools/gdsio", "");
    f.write("usr/local/cuda-12.8/gds/tools/gdscheck", "");
    f.write(
        "etc/cufile.json",
        r#"{ "properties": { "allow_compat_mode": false }, "block": { "nvme": { "use_pci_p2pdma": true } } }"#,
    );
    f.write("etc/cuobj.json", "{}");
    let text = stdout(&run(&f, &["doctor"]));
    for said in [
        "nvidia_peermem is loaded",
        "gdscheck: its user-space RDMA lines",
        "`XferType: GPUD` in its output is the mode asked for",
        "block.nvme.use_pci_p2pdma set, but P2PDMA is a path for NVMe only",
        "/etc/cuobj.json is cuObject's configuration",
    ] {
        assert!(text.contains(said), "{said}: {text}");
    }
}

#[test]
fn a_bundle_replays_the_path_and_the_classification() {
    let f = node("pci0000:3a/0000:3a:00.0", 0, "pci0000:ae/0000:ae:00.0", 1);
    let doctor = |root: &std::path::Path| -> serde_json::Value {
        let out = nfs_gds()
            .arg("--root")
            .arg(root)
            .args(["doctor", "--json"])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let original = doctor(f.root());
    let (_work, bundle) = collect_bundle(&f);
    let replayed = doctor(&bundle);
    let r = check_result(&replayed, "nic-gpu-distance");
    assert_eq!(r["status"], "warn", "{r}");
    assert_eq!(r, check_result(&original, "nic-gpu-distance"));
}
