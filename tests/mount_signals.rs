//! SIGTERM, SIGINT and SIGHUP while mount.nfs runs: the helper finishes verifying (and undoing)
//! the mount before it stops. mount.nfs here is a stand-in that makes the mount, says so, and
//! sleeps, like a mount.nfs that mounted and has not returned yet.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::mount_fixture::*;

const SPEC: &str = "10.0.2.15:/export";
const DIR: &str = "/mnt/gds";

/// A ready node whose mount.nfs mounts over `proto`, marks `record/mounted` and sleeps 30 s.
fn sleeping_mount(proto: &str) -> Fixture {
    let f = Fixture::ready();
    f.staged_then_moved(&with_mount(70, STAGED, proto), DIR);
    f.scenario_table("umount", &(BEFORE.to_string(), BEFORE_STATS.to_string()));
    let stand_in = FAKE_TOOL.replace(
        "exit \"$code\"",
        ": > \"$root/record/mounted\"\nexec /bin/sleep 30",
    );
    assert_ne!(stand_in, FAKE_TOOL);
    f.executable("usr/sbin/mount.nfs", &stand_in);
    f
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{what}: timed out"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts the helper in a process group of its own, waits until mount.nfs has mounted, sends
/// `sig` (to the group, or to the helper alone), and returns (exit code, stderr, seconds).
fn signalled(f: &Fixture, sig: Signal, group: bool) -> (Option<i32>, String, Duration) {
    let start = Instant::now();
    let child: Child = f
        .helper()
        .args([SPEC, DIR])
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let marker = f.root().join("record/mounted");
    wait_for("mount.nfs mounting", || marker.exists());
    let pid = i32::try_from(child.id()).unwrap();
    let to = if group { -pid } else { pid };
    kill(Pid::from_raw(to), sig).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stderr).unwrap(),
        start.elapsed(),
    )
}

fn mountinfo(root: &Path) -> String {
    std::fs::read_to_string(root.join("proc/self/mountinfo")).unwrap()
}

#[test]
fn sigterm_to_the_group_mid_mount_still_unmounts_a_tcp_mount() {
    let f = sleeping_mount("tcp");
    let (code, err, _) = signalled(&f, Signal::SIGTERM, true);
    assert_eq!(code, Some(143), "{err}");
    assert!(
        err.contains(&format!("nfs-gds: REFUSED {SPEC} on {DIR}: the new mount failed 2 checks under policy enforce; it was unmounted before it reached {DIR}, where nothing was mounted")),
        "{err}"
    );
    assert!(
        err.contains(&format!("nfs-gds: SIGTERM arrived while mounting {SPEC} on {DIR}: nfs-gds finished with the mount first")),
        "{err}"
    );
    assert_eq!(
        f.record("umount"),
        ["/run/nfs-gds/stage/RUN/mnt|".to_string()]
    );
    assert!(f.record("mount").is_empty(), "never moved onto DIR");
    assert_eq!(mountinfo(f.root()), BEFORE);
}

#[test]
fn sighup_to_the_helper_alone_is_passed_on_to_mount_nfs() {
    let f = sleeping_mount("tcp");
    let (code, err, took) = signalled(&f, Signal::SIGHUP, false);
    assert_eq!(code, Some(129), "{err}");
    assert!(
        took < Duration::from_secs(25),
        "mount.nfs was left sleeping: {took:?}"
    );
    assert!(err.contains("it was unmounted before it reached"), "{err}");
    assert_eq!(mountinfo(f.root()), BEFORE);
}

#[test]
fn sigint_mid_mount_keeps_a_verified_mount_and_records_it() {
    let f = sleeping_mount("rdma");
    let (code, err, _) = signalled(&f, Signal::SIGINT, true);
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("SIGINT arrived while mounting"), "{err}");
    assert!(f.record("umount").is_empty());
    assert!(mountinfo(f.root()).contains(" /mnt/gds "));
    let records = std::fs::read_dir(f.root().join("run/nfs-gds/mounts")).unwrap();
    assert_eq!(
        records.count(),
        1,
        "the kept mount is recorded for the agent"
    );
}
