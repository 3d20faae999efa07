//! NFS LOCALIO judged per mount (`mount-localio`) by `verify`, the agent and the mount helper,
//! on fixture trees of a kernel built with `CONFIG_NFS_LOCALIO` (no Debian kernel is): the
//! kernel's own `/sys/fs/nfs/<major:minor>/localio` where it shows one (Linux 6.16+), else the
//! rule (LOCALIO built and on, and the server this host; an nfsd elsewhere leaves it unknown).

use assert_cmd::prelude::*;
use predicates::prelude::*;

use crate::mount_fixture::*;

/// This host's address, which the fixture mount's server (`addr=10.0.2.15`) is.
const HOST: &str = "10.0.2.15";

/// A ready node with an RDMA mount of 10.0.2.15:/export (superblock 0:50) on /mnt/gds.
fn mounted() -> Fixture {
    let f = Fixture::ready();
    let (info, stats) = with_mount(70, "/mnt/gds", "rdma");
    f.table(&info, &stats);
    f
}

/// `verify /mnt/gds --json`: its exit code and report.
fn verify(f: &Fixture) -> (i32, serde_json::Value) {
    let out = f
        .nfs_gds()
        .args(["verify", "/mnt/gds", "--json"])
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    (out.status.code().unwrap(), v)
}

fn check<'a>(v: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {v:#}"))
}

#[test]
fn verify_refuses_a_mount_of_this_host_where_localio_is_on_naming_localio_and_the_fix() {
    let f = mounted();
    f.localio_kernel("Y", &[HOST]);
    let (code, v) = verify(&f);
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(v["verdict"], "not-ready");
    let c = check(&v, "mount-localio");
    assert_eq!(c["status"], "fail", "{c:#}");
    let summary = c["summary"].as_str().unwrap();
    assert!(summary.contains("NFS LOCALIO is on and the server 10.0.2.15 is this host"));
    assert!(c["remedy"]
        .as_str()
        .unwrap()
        .contains("echo N > /sys/module/nfs/parameters/localio_enabled"));
    // The other mount checks still pass: `xprt: rdma` is what mountstats says.
    assert_eq!(check(&v, "mount-transport")["status"], "pass");

    // The policy decides refuse or warn, as for any mount check.
    f.policy("[checks]\nmount-localio = \"warn\"\n");
    f.nfs_gds()
        .args(["verify", "/mnt/gds"])
        .assert()
        .code(0)
        .stdout(
            predicate::str::starts_with("nfs-gds verify /mnt/gds: READY, WITH WARNINGS")
                .and(predicate::str::contains("mount-localio")),
        );
}

#[test]
fn verify_passes_where_localio_is_turned_off_or_not_built() {
    let f = mounted();
    f.localio_kernel("N", &[HOST]);
    let (code, v) = verify(&f);
    assert_eq!((code, &v["verdict"]), (0, &"ready".into()), "{v:#}");
    assert!(check(&v, "mount-localio")["summary"]
        .as_str()
        .unwrap()
        .contains("turned off"));

    // Built without it: the configuration says so.
    f.write(
        format!("boot/config-{RELEASE}"),
        "# CONFIG_NFS_LOCALIO is not set\n",
    );
    f.remove("sys/module/nfs/parameters/localio_enabled");
    let (code, v) = verify(&f);
    assert_eq!(code, 0, "{v:#}");
    let c = check(&v, "mount-localio");
    assert_eq!(c["status"], "pass");
    assert!(c["summary"].as_str().unwrap().contains("no NFS LOCALIO"));

    // No configuration: the loaded nfs module's parameters, without `localio_enabled`, say so.
    f.remove(format!("boot/config-{RELEASE}"));
    let (_, v) = verify(&f);
    assert_eq!(check(&v, "mount-localio")["status"], "pass", "{v:#}");
    // Nothing to tell by at all: unknown, never pass.
    std::fs::remove_dir_all(f.path("sys/module/nfs")).unwrap();
    let (code, v) = verify(&f);
    assert_eq!(code, 0);
    assert_eq!(v["verdict"], "ready-with-warnings");
    assert_eq!(check(&v, "mount-localio")["status"], "unknown", "{v:#}");
}

#[test]
fn a_remote_server_is_unknown_while_an_nfsd_runs_here_and_passes_without_one() {
    let f = mounted();
    // 10.0.2.15 is not this host here.
    f.localio_kernel("Y", &["10.0.2.99"]);
    let (code, v) = verify(&f);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(check(&v, "mount-localio")["status"], "pass", "{v:#}");
    // An nfsd of some network namespace: 10.0.2.15 may be one of its addresses, which no file
    // of this namespace shows.
    f.nfsd_thread();
    let (code, v) = verify(&f);
    assert_eq!((code, &v["verdict"]), (0, &"ready-with-warnings".into()));
    let c = check(&v, "mount-localio");
    assert_eq!(c["status"], "unknown", "{c:#}");
    assert!(c["summary"]
        .as_str()
        .unwrap()
        .contains("an nfsd runs on this host"));
}

#[test]
fn the_kernels_own_per_mount_state_decides_where_it_shows_one() {
    let f = mounted();
    f.localio_kernel("Y", &["10.0.2.99"]);
    f.nfsd_thread();
    f.kernel_localio_state("0:50", "1");
    let (code, v) = verify(&f);
    assert_eq!(code, 1, "{v:#}");
    let c = check(&v, "mount-localio");
    assert_eq!(c["status"], "fail");
    assert_eq!(c["evidence"][0]["what"], "/sys/fs/nfs/0:50/localio");
    // The kernel says no: not carried, though the server is this host.
    f.localio_kernel("Y", &[HOST]);
    f.kernel_localio_state("0:50", "0");
    let (code, v) = verify(&f);
    assert_eq!(
        (code, &check(&v, "mount-localio")["status"]),
        (0, &"pass".into())
    );
}

#[test]
fn the_agent_publishes_a_localio_mount_as_not_ready() {
    let f = mounted();
    f.localio_kernel("N", &[HOST]);
    let prom = f.agent_prom();
    assert!(prom.contains("nfs_gds_rdma_mounts_not_ready 0\n"), "{prom}");
    f.localio_kernel("Y", &[HOST]);
    let prom = f.agent_prom();
    assert!(
        prom.contains("nfs_gds_mount_ready{export=\"10.0.2.15:/export\",mountaddr=\"10.0.2.15\",protocol=\"rdma\",mountpoint=\"/mnt/gds\",meant_by=\"options\"} 0\n"),
        "{prom}"
    );
    assert!(prom.contains("nfs_gds_rdma_mounts_not_ready 1\n"), "{prom}");
}

#[test]
fn the_helper_unmounts_and_refuses_a_new_mount_localio_carries() {
    const DIR: &str = "/mnt/gds";
    const SPEC: &str = "10.0.2.15:/export";
    let f = Fixture::ready();
    f.localio_kernel("Y", &[HOST]);
    f.staged_then_moved(&with_mount(70, STAGED, "rdma"), DIR);
    f.scenario_table("umount", &(BEFORE.to_string(), BEFORE_STATS.to_string()));
    f.helper().args([SPEC, DIR]).assert().code(32).stderr(
        predicate::str::contains("FAIL mount-localio [enforce]")
            .and(predicate::str::contains("10.0.2.15 is this host"))
            .and(predicate::str::contains("localio_enabled")),
    );
    assert_eq!(
        f.record("umount").len(),
        1,
        "unmounted from its staging point"
    );
    assert!(f.record("mount").is_empty(), "never moved onto {DIR}");
}
