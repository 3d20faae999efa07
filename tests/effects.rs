//! Every side effect on the machine goes through the one `System` (`src/system/`): no other
//! file runs a program, mounts or unmounts, enters a namespace, reads capabilities or resolves
//! a name itself, so the fakes, the recording and the replay see every effect there is.
//!
//! Read from the source text, outside comments and the unit tests at the end of a file (and
//! outside test-only directories): a new effect is a new `Call`, not a call of its own here.

use crate::circles::code_of;

/// What doing an effect directly looks like in the source.
const EFFECTS: &[(&str, &str)] = &[
    ("Command::new(", "runs a program"),
    ("process::Command", "runs a program"),
    (".spawn()", "runs a program"),
    ("nix::mount::", "mounts or unmounts"),
    ("rustix::mount::", "mounts or unmounts"),
    ("sys_mount::Mount::", "mounts"),
    ("setns(", "enters a namespace"),
    ("caps::", "reads capabilities"),
    ("to_socket_addrs", "resolves a name"),
    ("std::thread::sleep(", "sleeps"),
    ("SystemTime::now", "reads the wall clock"),
    ("Instant::now", "reads the clock"),
    ("geteuid", "reads credentials"),
    ("getuid", "reads credentials"),
    ("flock(", "locks a file"),
    ("UnixDatagram", "writes the system log"),
    ("signal_hook", "handles signals"),
    ("pthread_sigmask", "masks signals"),
    ("current_dir", "reads the working directory"),
    ("Env::get", "reads the environment"),
    ("io::stdin()", "reads stdin"),
];

/// Effects done outside `src/system` on purpose, each with its file and why: a second seam
/// named as one, or an effect that belongs to the file that does it.
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "reads the environment",
        "src/cli/",
        "the command line makes the node context from the environment's one reader, once",
    ),
    (
        "reads the environment",
        "src/host/io/env.rs",
        "the environment's one reader (it is named in its own comment)",
    ),
    (
        "reads the working directory",
        "src/cli/host.rs",
        "the node context: relative paths of the command line, decided once",
    ),
    (
        "writes the system log",
        "src/host/syslog.rs",
        "the system log is a second seam: one datagram to <root>/dev/log, below the root",
    ),
    (
        "locks a file",
        "src/host/io/fill_lock.rs",
        "the facts cache's fill lock, on nfs-gds's own file",
    ),
    (
        "locks a file",
        "src/host/io/out_dir.rs",
        "an output directory's lock, on nfs-gds's own file",
    ),
    (
        "locks a file",
        "src/agent/nri_gate.rs",
        "the NRI plugin's lock, on nfs-gds's own file under /run: held for the plugin's life, tried by the agent",
    ),
    (
        "locks a file",
        "src/mount/stage.rs",
        "a staging run's lock, on nfs-gds's own file: its life is the run's",
    ),
    (
        "locks a file",
        "src/mount/target_lock.rs",
        "the mount point's lock, on nfs-gds's own file under /run",
    ),
    (
        "reads stdin",
        "src/cli/lint.rs",
        "`lint -` reads the manifests a user pipes in to their end, bounded by the reader's size limit",
    ),
    (
        "masks signals",
        "src/host/io/out_dir.rs",
        "no signal between writing a file and renaming it into place",
    ),
    (
        "handles signals",
        "src/agent/shutdown.rs",
        "the agent's own SIGTERM/SIGINT thread",
    ),
    (
        "handles signals",
        "src/cli/out.rs",
        "SIGPIPE for a closed stdout, the process's disposition",
    ),
    (
        "handles signals",
        "src/mount/signals.rs",
        "the helper holds SIGTERM/SIGINT/SIGHUP while it mounts",
    ),
    (
        "reads the wall clock",
        "src/host/io/inputs.rs",
        "when a file was read, for the racy-timestamp rule of the facts it backs (as git's index does), below the layer that has a system",
    ),
    (
        "reads the clock",
        "src/host/io/fill_lock.rs",
        "the wait for the facts cache's lock, below the layer that has a system",
    ),
    (
        "reads the clock",
        "src/kmod/image_scan.rs",
        "the time budget of a kernel image scan, below the layer that has a system",
    ),
    (
        "reads the clock",
        "src/nri/plugin.rs",
        "the registration deadline of one NRI connection, in the wire layer below the layer that has a system",
    ),
];

/// Files that may sleep by themselves, and why.
const MAY_SLEEP: &[(&str, &str)] = &[
    (
        "src/host/io/fill_lock.rs",
        "waits for another process's file lock on the facts cache, below the layer that has a system",
    ),
    (
        "src/host/io/out_dir.rs",
        "tries another process's directory lock for about a second (the container hook's counters)",
    ),
    (
        "src/agent/shutdown.rs",
        "keeps the agent's schedule when its signal thread is gone",
    ),
];

fn direct_effects(rel: &str, text: &str) -> Vec<String> {
    let code = code_of(text);
    EFFECTS
        .iter()
        .filter(|(pattern, what)| {
            code.contains(pattern)
                && !(*what == "sleeps" && MAY_SLEEP.iter().any(|(f, _)| *f == rel))
                && !ALLOWED
                    .iter()
                    .any(|(w, place, _)| w == what && rel.starts_with(place))
        })
        .map(|(pattern, what)| format!("{rel} {what} itself ({pattern})"))
        .collect()
}

#[test]
fn every_effect_goes_through_the_one_system() {
    let mut wrong = Vec::new();
    for (rel, text) in crate::layers::product_sources() {
        if rel.starts_with("src/system/") {
            continue;
        }
        wrong.extend(direct_effects(&rel, &text));
    }
    assert!(
        wrong.is_empty(),
        "effects outside src/system (add a Call instead):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_guard_sees_an_effect_and_not_a_test_or_a_comment() {
    let text = "fn f() { let _ = std::process::Command::new(\"x\"); }\n";
    assert_eq!(
        direct_effects("src/x.rs", text),
        [
            "src/x.rs runs a program itself (Command::new()",
            "src/x.rs runs a program itself (process::Command)"
        ]
    );
    let quiet = "// Command::new( in a comment\nfn f() {}\n#[cfg(test)]\nmod tests {\n    fn t() { nix::mount::umount(\"/x\").unwrap(); }\n}\n";
    assert!(direct_effects("src/x.rs", quiet).is_empty());
    let sleeps = "fn f() { std::thread::sleep(d); }\n";
    assert_eq!(
        direct_effects("src/host/io/fill_lock.rs", sleeps),
        Vec::<String>::new()
    );
    assert_eq!(direct_effects("src/x.rs", sleeps).len(), 1);
    let env = "fn f() { let e = Env::get(); let t = std::time::SystemTime::now(); }\n";
    assert_eq!(
        direct_effects("src/host/x.rs", env),
        [
            "src/host/x.rs reads the wall clock itself (SystemTime::now)",
            "src/host/x.rs reads the environment itself (Env::get)"
        ]
    );
    assert_eq!(
        direct_effects("src/cli/x.rs", env).len(),
        1,
        "the clock still"
    );
}
