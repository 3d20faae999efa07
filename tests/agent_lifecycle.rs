//! The agent as a DaemonSet or a systemd unit runs it: SIGTERM ends it cleanly (exit 0, its
//! readiness file removed), and `agent --health`, its liveness and readiness probe, fails once
//! the last pass is more than two intervals old.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::support::*;

fn ready_node() -> Fixture {
    let f = crate::support::ready_node();
    f.write("run/nfs-gds/.keep", "");
    f
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sigterm_removes_the_readiness_file_and_exits_0() {
    for signal in [Signal::SIGTERM, Signal::SIGINT] {
        let f = ready_node();
        let child = Command::new(env!("CARGO_BIN_EXE_nfs-gds"))
            .env("NO_COLOR", "1")
            .arg("--root")
            .arg(f.root())
            .args(["agent", "--interval", "3600"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let ready = f.path("run/nfs-gds/ready");
        wait_for("the readiness file", || ready.exists());
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        // Long before the hour-long interval is over.
        let start = Instant::now();
        let o = child.wait_with_output().unwrap();
        assert!(start.elapsed() < Duration::from_secs(20));
        assert_eq!(o.status.code(), Some(0), "{signal:?}: {}", stderr(&o));
        assert!(
            !ready.exists(),
            "{signal:?}: the readiness file is left behind"
        );
        assert!(stderr(&o).contains("stopped by signal"), "{}", stderr(&o));
        // The status stays (it says when the last pass was).
        assert!(f.path("run/nfs-gds/status.json").is_file());
    }
}

fn health(f: &Fixture, interval: &str) -> std::process::Output {
    nfs_gds()
        .arg("--root")
        .arg(f.root())
        .args(["agent", "--health", "--interval", interval])
        .output()
        .unwrap()
}

#[test]
fn the_health_probe_fails_after_two_intervals_without_a_pass() {
    let f = ready_node();
    let o = health(&f, "60");
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("no pass yet"), "{}", stdout(&o));
    let status = f.write("run/nfs-gds/status.json", "{}");
    let o = health(&f, "60");
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("alive"), "{}", stdout(&o));
    let file = std::fs::File::options().write(true).open(&status).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(121))
        .unwrap();
    let o = health(&f, "60");
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("stale"), "{}", stdout(&o));
    // Two intervals of 61 s: fresh again.
    assert_eq!(health(&f, "61").status.code(), Some(0));
}
