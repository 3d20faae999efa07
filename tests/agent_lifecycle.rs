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

/// The agent as a DaemonSet runs it, an hour between passes; its stderr kept.
fn spawn_agent(f: &Fixture) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_nfs-gds"))
        .env("NO_COLOR", "1")
        .arg("--root")
        .arg(f.root())
        .args(["agent", "--interval", "3600"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
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
        let child = spawn_agent(&f);
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

/// On a node that is not ready there is no readiness file: stopped, the agent does not claim to
/// have removed one.
#[test]
fn sigterm_on_a_node_that_was_not_ready_removes_nothing_and_says_so() {
    let f = Fixture::new("6.1.0-50-amd64");
    f.write("run/nfs-gds/.keep", "");
    f.table(
        "1 0 254:0 / / rw - ext4 /dev/vda rw\n",
        "device /dev/vda mounted on / with fstype ext4\n",
    );
    let child = spawn_agent(&f);
    let status = f.path("run/nfs-gds/status.json");
    wait_for("the status file", || status.exists());
    assert!(!f.path("run/nfs-gds/ready").exists());
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(!err.contains("; removed "), "{err}");
    assert!(
        err.contains("stopped by signal 15; there was no ")
            && err.contains("run/nfs-gds/ready to remove"),
        "{err}"
    );
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

/// The status of check `id` in the agent's status file, once it is there and whole.
fn status_of(f: &Fixture, id: &str) -> Option<String> {
    let text = std::fs::read(f.path("run/nfs-gds/status.json")).ok()?;
    let doc: serde_json::Value = serde_json::from_slice(&text).ok()?;
    doc["checks"]
        .as_array()?
        .iter()
        .find(|c| c["id"] == id)
        .and_then(|c| c["status"].as_str())
        .map(str::to_string)
}

#[test]
fn a_running_agent_keeps_its_node_facts_and_sees_what_changes_them() {
    let mut f = ready_node();
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_nfs-gds"))
        .env("NO_COLOR", "1")
        .arg("--root")
        .arg(f.root())
        .args(["-vv", "agent", "--interval", "1"])
        .stdout(Stdio::null())
        .stderr(log.reopen().unwrap())
        .spawn()
        .unwrap();
    let logged = |what: &str| {
        std::fs::read_to_string(log.path())
            .unwrap()
            .matches(what)
            .count()
    };
    let wait_status = |id: &str, want: &str| {
        wait_for(&format!("{id} to be {want}"), || {
            status_of(&f, id).as_deref() == Some(want)
        })
    };
    wait_status("rpcrdma-hooks", "pass");
    assert_eq!(status_of(&f, "rpcrdma-loaded").as_deref(), Some("skip"));
    assert_eq!(status_of(&f, "cufile-config").as_deref(), Some("skip"));
    // Once the fixture's files have settled, passes reuse the facts: nothing is derived again.
    wait_for("a pass that reuses the node facts", || {
        logged("node facts unchanged") >= 2
    });
    let derived = logged("node facts derived");
    wait_for("two more passes", || logged("node facts unchanged") >= 4);
    assert_eq!(logged("node facts derived"), derived, "nothing changed");

    // The module file replaced by a build without the hooks.
    let mut spec = ModuleSpec::rpcrdma(&f.release);
    spec.hooks = None;
    f.install_rpcrdma(DKMS, "", &pack(&build(&spec), Packing::Plain));
    wait_status("rpcrdma-hooks", "fail");
    // rpcrdma loaded.
    f.load_rpcrdma(&Loaded::default(), KallsymsHooks::None);
    wait_for("rpcrdma seen loaded", || {
        status_of(&f, "rpcrdma-loaded").is_some_and(|s| s != "skip")
    });
    // A cufile.json written.
    f.write(
        "etc/cufile.json",
        r#"{ "properties": { "allow_compat_mode": true } }"#,
    );
    wait_for("cufile.json seen", || {
        status_of(&f, "cufile-config").is_some_and(|s| s != "skip")
    });
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
}
