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
        assert!(
            o.status.signal() == Some(libc_sigpipe()) || matches!(o.status.code(), Some(0..=2)),
            "{args:?}: {:?} {err}",
            o.status
        );
    }
    // A long output certainly meets the closed pipe: SIGPIPE, as for `cat`.
    let o = with_closed_stdout(&["completions", "bash"]);
    assert_eq!(o.status.signal(), Some(libc_sigpipe()), "{:?}", o.status);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

fn libc_sigpipe() -> i32 {
    nix::sys::signal::Signal::SIGPIPE as i32
}
