//! A setuid (or setgid) copy of the binary refuses to run in every persona: it reads files and
//! writes files (`collect -o`, `agent`) on the caller's say-so.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A copy of the binary owned by `nobody` with the setuid bit, so running it as root gives
/// real uid 0 and effective uid 65534. `None` when this test cannot chown (not root).
fn setuid_copy(dir: &Path) -> Option<PathBuf> {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_nfs-gds"));
    let copy = dir.join("nfs-gds");
    std::fs::copy(&bin, &copy).unwrap();
    if std::os::unix::fs::chown(&copy, Some(65534), Some(65534)).is_err() {
        return None;
    }
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o4755)).unwrap();
    assert_eq!(std::fs::metadata(&copy).unwrap().uid(), 65534);
    Some(copy)
}

/// Runs a binary just written: another test thread forking at that moment can still hold the
/// file open for writing, and exec then fails with ETXTBSY for a moment.
fn run_fresh_copy(cmd: &mut std::process::Command) -> std::process::Output {
    for _ in 0..100 {
        match cmd.output() {
            Err(e) if e.raw_os_error() == Some(26) => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            other => return other.unwrap(),
        }
    }
    panic!("the copy stayed busy (ETXTBSY) for 2 s")
}

#[test]
fn a_setuid_copy_refuses_every_command() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let Some(copy) = setuid_copy(dir.path()) else {
        eprintln!("skipped: a setuid copy needs root to chown");
        return;
    };
    let target = dir.path().join("out.tar");
    let runs: &[&[&str]] = &[
        &["collect", "-o"],
        &["check"],
        &["doctor"],
        &["inspect-module", "rpcrdma"],
        &["agent", "--once"],
        &["--version"],
    ];
    for args in runs {
        let mut cmd = std::process::Command::new(&copy);
        cmd.args(*args);
        if args[0] == "collect" {
            cmd.arg(&target);
        }
        let out = run_fresh_copy(&mut cmd);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("must not be installed setuid"),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert!(!target.exists(), "collect wrote through a setuid copy");
}

#[test]
fn a_setuid_helper_refuses_before_it_parses_its_arguments() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let Some(copy) = setuid_copy(dir.path()) else {
        eprintln!("skipped: a setuid copy needs root to chown");
        return;
    };
    let helper = dir.path().join("mount.nfs-gds");
    std::fs::rename(&copy, &helper).unwrap();
    let runs: &[&[&str]] = &[&["-h"], &["-V"], &[], &["only-one-argument"]];
    for args in runs {
        let out = run_fresh_copy(std::process::Command::new(&helper).args(*args));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("must not be installed setuid") && !err.contains("Usage"),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
