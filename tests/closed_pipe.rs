//! Writing into a closed pipe (`nfs-gds … | head -1`) ends every command quietly, as Unix tools
//! end there (SIGPIPE's default action), never with a panic.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

use crate::support::*;

/// Runs `args` with a stdout whose reader is already gone.
fn with_closed_stdout(args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_nfs-gds"))
        .env("NO_COLOR", "1")
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn every_command_ends_quietly_on_a_closed_pipe() {
    let f = ready_node();
    let root = f.root().to_str().unwrap().to_string();
    let bundle = f.root().join("bundle.tar.gz");
    let lint = format!(
        "{}/deploy/examples/lint/pv-rdma.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let policy = format!("{}/contrib/nfs-gds.toml", env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(f.path("mnt/nothing")).unwrap();
    let commands: Vec<Vec<&str>> = vec![
        vec!["--help"],
        vec!["--version"],
        vec!["check"],
        vec!["check", "--json"],
        vec!["doctor"],
        vec!["doctor", "--json"],
        vec!["doctor", "--markdown"],
        vec!["provision"],
        vec!["collect", "--output", bundle.to_str().unwrap()],
        vec!["agent", "--once"],
        vec!["agent", "--health"],
        vec!["verify", "/mnt/nothing"],
        vec!["inspect-module", "rpcrdma"],
        vec!["inspect-module", "--json", "rpcrdma"],
        vec!["policy", "show"],
        vec!["policy", "check", &policy],
        vec!["lint", &lint],
        vec!["completions", "bash"],
    ];
    for args in commands {
        let mut all = vec!["--root", root.as_str()];
        all.extend(&args);
        let o = with_closed_stdout(&all);
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
        assert_ne!(o.status.code(), Some(101), "{args:?}: {err}");
        // Each of them writes to stdout, so each meets the closed pipe: SIGPIPE, as for `cat`.
        assert_eq!(
            o.status.signal(),
            Some(libc_sigpipe()),
            "{args:?}: {:?} {err}",
            o.status
        );
    }
    let o = with_closed_stdout(&["completions", "bash"]);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

fn libc_sigpipe() -> i32 {
    nix::sys::signal::Signal::SIGPIPE as i32
}

/// A stderr whose reader is already gone, for `cmd`; stdout kept.
fn with_closed_stderr(cmd: &mut Command) -> &mut Command {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(writer)
}

#[test]
fn a_closed_stderr_never_panics_the_helper_the_agent_or_check() {
    use crate::mount_fixture::{with_mount, Fixture, STAGED};
    // The helper with -v writes its log before mounting: it mounts, verifies, records.
    let f = Fixture::ready();
    f.staged_then_moved(&with_mount(70, STAGED, "rdma"), "/mnt/gds");
    let o = with_closed_stderr(f.helper().args(["10.0.2.15:/export", "/mnt/gds", "-v"]))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}", o.status);
    assert_eq!(f.record("mount.nfs").len(), 1);
    assert!(
        f.path("run/nfs-gds/mounts").read_dir().unwrap().count() > 0,
        "the mount was not recorded"
    );

    // The agent writes a summary line to stderr after each changed pass: it goes on, and a
    // stop request still removes its readiness file.
    let f = ready_node();
    f.write("run/nfs-gds/.keep", "");
    let child = with_closed_stderr(
        Command::new(env!("CARGO_BIN_EXE_nfs-gds"))
            .env("NO_COLOR", "1")
            .arg("--root")
            .arg(f.root())
            .args(["agent", "--interval", "3600"]),
    )
    .spawn()
    .unwrap();
    let ready = f.path("run/nfs-gds/ready");
    let start = std::time::Instant::now();
    while !ready.exists() {
        assert!(start.elapsed().as_secs() < 30, "no readiness file");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Time to write the summary line after the outputs.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}", o.status);
    assert!(!ready.exists(), "the readiness file is left behind");

    // check with one warning (a version file that is not text) ends as on a closed stdout.
    let f = ready_node();
    f.write("sys/module/nvidia_fs/version", b"2.28\xff\n".as_slice());
    let o = with_closed_stderr(
        Command::new(env!("CARGO_BIN_EXE_nfs-gds"))
            .env("NO_COLOR", "1")
            .env("NFS_GDS_NO_CACHE", "1")
            .arg("--root")
            .arg(f.root())
            .arg("check"),
    )
    .output()
    .unwrap();
    assert_ne!(o.status.code(), Some(101), "{:?}", o.status);
    assert_eq!(o.status.signal(), Some(libc_sigpipe()), "{:?}", o.status);
}
