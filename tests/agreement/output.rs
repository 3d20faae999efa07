//! The agreement on output: every face of the binary (each `nfs-gds` subcommand, found in its
//! clap definition, and the `mount.nfs-gds` persona) ends one way when its stdout or its stderr
//! can no longer be written, and every command whose arguments define `--json` answers each
//! exit 2 under `--json` with one JSON error object on stdout.
//!
//! A read-only command that wrote into a closed pipe ends as `cat` ends there, by SIGPIPE
//! (status 141); the mount helper keeps mount(8)'s exit codes and the container hook its
//! verdict, whatever becomes of either stream; the agent finishes its pass, its outputs
//! written, and then ends as a read-only command on stdout.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use clap::CommandFactory;
use serde_json::{json, Value};

use crate::mount_fixture::{with_mount, Fixture, STAGED};

/// How a face ends when a stream it wrote to is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Face {
    /// Ends by SIGPIPE on either stream, once it wrote there.
    ReadOnly,
    /// The agent: finishes its pass whatever becomes of stderr; a closed stdout ends it after.
    Agent,
    /// The mount helper and the container hook: the exit code is the answer, on either stream.
    Answers,
}

/// One invocation of a face.
struct Case {
    /// The subcommand (its clap name), or [`PERSONA`].
    face_of: &'static str,
    face: Face,
    /// The node it runs on (a fresh one for every run: some cases write).
    node: fn() -> Fixture,
    /// The arguments after `nfs-gds --root ROOT` (or after `mount.nfs-gds`).
    args: fn(&Fixture) -> Vec<String>,
    /// What it reads on stdin.
    stdin: fn(&Fixture) -> Vec<u8>,
    /// What to look at once it ended on a closed pipe: the work it must have finished.
    finished: fn(&Fixture) -> Result<(), String>,
    /// The root it is given: the node's, or a file in it.
    root: fn(&Fixture) -> PathBuf,
    /// Its environment, beside `NO_COLOR`.
    env: &'static [(&'static str, &'static str)],
}

const PERSONA: &str = "mount.nfs-gds";

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn nothing(_: &Fixture) -> Vec<u8> {
    Vec::new()
}

fn anything(_: &Fixture) -> Result<(), String> {
    Ok(())
}

fn its_root(f: &Fixture) -> PathBuf {
    f.root().to_path_buf()
}

/// A root that is not a directory: a file of the node.
fn a_file(f: &Fixture) -> PathBuf {
    f.root().join("etc/fstab-file")
}

/// A ready node with `10.0.2.15:/export` mounted over RDMA on /mnt/gds, a directory to mount
/// on and a run directory for the agent.
fn node() -> Fixture {
    let f = Fixture::ready();
    f.table(
        &with_mount(70, "/mnt/gds", "rdma").0,
        &with_mount(70, "/mnt/gds", "rdma").1,
    );
    f.write("mnt/new/.keep", "");
    f.write("run/nfs-gds/.keep", "");
    f.write("etc/fstab-file", "");
    f
}

/// A ready node where mount.nfs mounts /mnt/gds over RDMA.
fn mountable() -> Fixture {
    let f = Fixture::ready();
    f.staged_then_moved(&with_mount(70, STAGED, "rdma"), "/mnt/gds");
    f
}

/// A node whose `[[mount]]` table means 10.0.2.15:/export for GDS, mounted over TCP: the hook
/// refuses a container binding it (exit 1).
fn refusing() -> Fixture {
    let f = Fixture::ready();
    f.table(
        &with_mount(70, "/mnt/gds", "tcp").0,
        &with_mount(70, "/mnt/gds", "tcp").1,
    );
    f.policy("[[mount]]\nsource = \"10.0.2.15:/export\"\n");
    let config = json!({"ociVersion": "1.0.2", "process": {"args": ["sh"]}, "mounts": [
        {"destination": "/data", "type": "bind", "source": "/mnt/gds/train", "options": ["rbind"]}
    ], "annotations": {}});
    f.write(
        "run/containers/b1/config.json",
        serde_json::to_vec(&config).unwrap(),
    );
    f
}

/// A node whose rpcrdma lost its nvfs hooks, with an `scontrol` that shows gpu01 idle: the
/// Slurm health check drains it, the prolog fails a GDS job.
fn draining() -> Fixture {
    let f = Fixture::ready();
    f.without_rpcrdma_hooks();
    f.executable("usr/bin/scontrol", crate::mount_fixture::FAKE_TOOL);
    f.scenario(
        "scontrol",
        "stdout",
        "NodeName=gpu01 Arch=x86_64\n   State=IDLE ThreadsPerCore=1\n",
    );
    f
}

fn container_state(_: &Fixture) -> Vec<u8> {
    json!({"ociVersion": "1.0.2", "id": "c0ffee", "status": "creating", "pid": 4242,
        "bundle": "/run/containers/b1", "annotations": {}})
    .to_string()
    .into_bytes()
}

fn lint_file() -> String {
    format!(
        "{}/deploy/examples/lint/pv-rdma.yaml",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn in_root(f: &Fixture, rel: &str) -> String {
    f.root().join(rel).display().to_string()
}

/// Every face, each with `-v` where it takes it, so that it also writes to stderr.
fn cases() -> Vec<Case> {
    use Face::*;
    let case = |face_of, face, node, args| Case {
        face_of,
        face,
        node,
        args,
        stdin: nothing,
        finished: anything,
        root: its_root,
        env: &[],
    };
    vec![
        case("check", ReadOnly, node, |_| strings(&["-v", "check"])),
        case("check", ReadOnly, node, |_| {
            strings(&["-v", "check", "--json"])
        }),
        case("inspect-module", ReadOnly, node, |_| {
            strings(&["-v", "inspect-module", "--json", "rpcrdma"])
        }),
        case("doctor", ReadOnly, node, |_| strings(&["-v", "doctor"])),
        case("doctor", ReadOnly, node, |_| {
            strings(&["-v", "doctor", "--json"])
        }),
        case("provision", ReadOnly, node, |_| {
            strings(&["-v", "provision"])
        }),
        Case {
            finished: |f| {
                let bundle = f.root().join("out.tgz");
                (std::fs::metadata(&bundle).is_ok_and(|m| m.len() > 0))
                    .then_some(())
                    .ok_or(format!("no bundle at {}", bundle.display()))
            },
            ..case("collect", ReadOnly, node, |f| {
                vec![
                    "-v".into(),
                    "collect".into(),
                    "-o".into(),
                    in_root(f, "out.tgz"),
                ]
            })
        },
        Case {
            finished: |f| {
                let status = f.root().join("run/nfs-gds/status.json");
                status
                    .exists()
                    .then_some(())
                    .ok_or("the pass wrote no status file".to_string())
            },
            ..case("agent", Agent, node, |_| {
                strings(&["-v", "agent", "--once"])
            })
        },
        case("agent", Agent, node, |_| strings(&["agent", "--health"])),
        case("mount", Answers, node, |_| {
            strings(&["mount", "10.0.2.15:/other", "/mnt/new", "-f", "-v"])
        }),
        case(PERSONA, Answers, node, |_| {
            strings(&["10.0.2.15:/other", "/mnt/new", "-f", "-v"])
        }),
        // A real mount (mount.nfs is the fixture's fake): mounted, judged and recorded, whatever
        // becomes of stdout and stderr.
        Case {
            finished: |f| {
                (f.path("run/nfs-gds/mounts")
                    .read_dir()
                    .map_or(0, |d| d.count())
                    > 0)
                .then_some(())
                .ok_or("the mount was not recorded".to_string())
            },
            ..case(PERSONA, Answers, mountable, |_| {
                strings(&["10.0.2.15:/export", "/mnt/gds", "-v"])
            })
        },
        // A root that is not a directory: mount(8)'s usage code, even for the first message.
        Case {
            root: a_file,
            ..case(PERSONA, Answers, node, |_| {
                strings(&["10.0.2.15:/other", "/mnt/new", "-v"])
            })
        },
        Case {
            root: a_file,
            ..case("mount", Answers, node, |_| {
                strings(&["mount", "10.0.2.15:/other", "/mnt/new", "-v"])
            })
        },
        case("verify", ReadOnly, node, |_| {
            strings(&["-v", "verify", "/mnt/gds"])
        }),
        case("verify", ReadOnly, node, |_| {
            strings(&["-v", "verify", "/mnt/gds", "--json"])
        }),
        case("watch", ReadOnly, node, |_| {
            strings(&["-v", "watch", "/mnt/gds", "--seconds", "1"])
        }),
        case("watch", ReadOnly, node, |_| {
            strings(&["-v", "watch", "/mnt/gds", "--seconds", "1", "--json"])
        }),
        Case {
            stdin: container_state,
            ..case("oci-hook", Answers, refusing, |_| {
                strings(&["-vv", "oci-hook", "prestart"])
            })
        },
        // Nothing to judge below a root that is not a directory: the failure policy's answer.
        Case {
            stdin: container_state,
            root: a_file,
            ..case("oci-hook", Answers, node, |_| strings(&["-vv", "oci-hook"]))
        },
        case("oci-hook", ReadOnly, node, |_| {
            strings(&["-v", "oci-hook", "--install"])
        }),
        // The plugin itself runs until its runtime ends it and writes no stdout: that it goes
        // on without stderr is tests/nri.rs's. Here, its help.
        case("nri", ReadOnly, node, |_| strings(&["nri", "--help"])),
        case("policy", ReadOnly, node, |_| {
            strings(&["-v", "policy", "show"])
        }),
        case("policy", ReadOnly, node, |_| {
            vec![
                "policy".into(),
                "check".into(),
                format!("{}/contrib/nfs-gds.toml", env!("CARGO_MANIFEST_DIR")),
            ]
        }),
        case("lint", ReadOnly, node, |_| {
            vec!["-v".into(), "lint".into(), lint_file()]
        }),
        case("lint", ReadOnly, node, |_| {
            vec!["-v".into(), "lint".into(), "--json".into(), lint_file()]
        }),
        case("completions", ReadOnly, node, |_| {
            strings(&["completions", "bash"])
        }),
        // The drain is done and recorded whatever becomes of stderr; then it says so on stdout.
        Case {
            finished: |f| {
                f.path("run/nfs-gds/slurm-drained")
                    .exists()
                    .then_some(())
                    .ok_or("the drain was not recorded".to_string())
            },
            env: &[("SLURMD_NODENAME", "gpu01")],
            ..case("slurm", Agent, draining, |_| {
                strings(&["-v", "slurm", "health"])
            })
        },
        Case {
            env: &[("SLURM_JOB_CONSTRAINTS", "gds_nfs"), ("SLURM_JOB_ID", "42")],
            ..case("slurm", Answers, draining, |_| {
                strings(&["-v", "slurm", "prolog"])
            })
        },
    ]
}

/// Which stream is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Closed {
    Neither,
    Stdout,
    Stderr,
}

/// How one run ended, and what it wrote where it could.
struct Ran {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

fn command(case: &Case, root: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nfs-gds"));
    c.env_clear()
        .env("NO_COLOR", "1")
        .envs(case.env.iter().copied());
    if case.face_of == PERSONA {
        std::os::unix::process::CommandExt::arg0(&mut c, "/sbin/mount.nfs-gds");
        c.env("NFS_GDS_ROOT", root);
    } else {
        c.arg("--root").arg(root);
    }
    c
}

fn run_case(case: &Case, f: &Fixture, closed: Closed) -> Ran {
    let closed_pipe = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        Stdio::from(writer)
    };
    let mut c = command(case, &(case.root)(f));
    c.args((case.args)(f)).stdin(Stdio::piped());
    match closed {
        Closed::Stdout => c.stdout(closed_pipe()).stderr(Stdio::piped()),
        Closed::Stderr => c.stdout(Stdio::piped()).stderr(closed_pipe()),
        Closed::Neither => c.stdout(Stdio::piped()).stderr(Stdio::piped()),
    };
    let mut child = c.spawn().unwrap();
    let stdin = (case.stdin)(f);
    let mut pipe = child.stdin.take().unwrap();
    // A face that reads no stdin may be gone before it is written.
    let _ = std::io::Write::write_all(&mut pipe, &stdin);
    drop(pipe);
    let o = child.wait_with_output().unwrap();
    Ran {
        status: o.status,
        stdout: o.stdout,
        stderr: o.stderr,
    }
}

fn sigpipe() -> i32 {
    nix::sys::signal::Signal::SIGPIPE as i32
}

/// How `case` must end with `closed`, given how it ended with both streams open.
fn expected(case: &Case, reference: &Ran, closed: Closed) -> Option<i32> {
    let wrote = match closed {
        Closed::Stdout => !reference.stdout.is_empty(),
        Closed::Stderr => !reference.stderr.is_empty(),
        Closed::Neither => false,
    };
    let ends = match (case.face, closed) {
        (Face::Answers, _) | (Face::Agent, Closed::Stderr) => false,
        _ => wrote,
    };
    (!ends).then(|| reference.status.code().unwrap())
}

/// One face with one stream closed: the way it ends, and the work it finished.
fn one_end(case: &Case, closed: Closed) -> Result<(), String> {
    let first = (case.node)();
    let what = format!(
        "{} {:?} with a closed {closed:?}",
        case.face_of,
        (case.args)(&first)
    );
    let reference = run_case(case, &first, Closed::Neither);
    if !matches!(reference.status.code(), Some(0..=1)) {
        return Err(format!(
            "{what}: the reference run ended {:?}: {}",
            reference.status,
            String::from_utf8_lossy(&reference.stderr)
        ));
    }
    // Every face that ends on a closed stdout writes there, so closing it proves something.
    if case.face != Face::Answers && reference.stdout.is_empty() {
        return Err(format!(
            "{what}: the reference run wrote {} bytes to stdout",
            reference.stdout.len()
        ));
    }
    let f = (case.node)();
    let ran = run_case(case, &f, closed);
    if ran.status.code() == Some(101) || ran.status.signal().is_some_and(|s| s != sigpipe()) {
        return Err(format!(
            "{what}: {:?}: {}",
            ran.status,
            String::from_utf8_lossy(&ran.stderr)
        ));
    }
    match expected(case, &reference, closed) {
        Some(code) if ran.status.code() != Some(code) => {
            return Err(format!(
                "{what}: ended {:?}, with both streams open {code}: {}",
                ran.status,
                String::from_utf8_lossy(&ran.stderr)
            ))
        }
        None if ran.status.signal() != Some(sigpipe()) => {
            return Err(format!(
                "{what}: ended {:?}, not by SIGPIPE (141): {}",
                ran.status,
                String::from_utf8_lossy(&ran.stderr)
            ))
        }
        _ => {}
    }
    // A face that answers says on stdout all it says with stderr open (each run on its own
    // tree).
    let root = |f: &Fixture, out: &[u8]| {
        String::from_utf8_lossy(out).replace(f.root().to_str().unwrap(), "ROOT")
    };
    let (said, would) = (root(&f, &ran.stdout), root(&first, &reference.stdout));
    if case.face == Face::Answers && closed == Closed::Stderr && said != would {
        return Err(format!(
            "{what}: stdout differs from the run with both streams open:\n{said}\n---\n{would}"
        ));
    }
    // Its work is done unless it ended on stderr before it: a read-only command may end at its
    // first log line.
    if case.face != Face::ReadOnly || closed == Closed::Stdout {
        (case.finished)(&f).map_err(|e| format!("{what}: {e}"))?;
    }
    Ok(())
}

/// The subcommands of the clap definition.
fn subcommands() -> Vec<String> {
    nfs_gds::cli::Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect()
}

#[test]
fn every_face_ends_one_way_on_a_closed_stdout_or_stderr() {
    let cases = cases();
    // Every face has a case, so a new subcommand cannot be left out.
    for face in subcommands().iter().map(String::as_str).chain([PERSONA]) {
        assert!(
            cases.iter().any(|c| c.face_of == face),
            "no closed-pipe case for {face}"
        );
    }
    let mut disagreements = Vec::new();
    // The faces that must finish what they started do write to stderr (`-v`), so closing it
    // proves something.
    for case in cases.iter().filter(|c| c.face != Face::ReadOnly) {
        let f = (case.node)();
        let args = (case.args)(&f);
        if args.iter().any(|a| a.starts_with("-v")) {
            let reference = run_case(case, &f, Closed::Neither);
            if reference.stderr.is_empty() {
                disagreements.push(format!(
                    "{} {args:?} writes nothing to stderr",
                    case.face_of
                ));
            }
        }
    }
    for case in &cases {
        for closed in [Closed::Stdout, Closed::Stderr] {
            if let Err(e) = one_end(case, closed) {
                disagreements.push(e);
            }
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} of {} runs end otherwise:\n{}",
        disagreements.len(),
        cases.len() * 2,
        disagreements.join("\n")
    );
}

/// A command that speaks JSON: how to make it fail (exit 2) beside a bad root and a bad flag.
struct JsonCase {
    command: &'static str,
    /// Arguments that end it with exit 2 on [`node`] (with a policy that is not TOML).
    failing: fn(&Fixture) -> Vec<String>,
}

fn json_cases() -> Vec<JsonCase> {
    vec![
        JsonCase {
            command: "check",
            failing: |_| strings(&["check", "--json"]),
        },
        JsonCase {
            command: "doctor",
            failing: |_| strings(&["doctor", "--json"]),
        },
        JsonCase {
            command: "verify",
            failing: |_| strings(&["verify", "/mnt/gds", "--json"]),
        },
        JsonCase {
            command: "inspect-module",
            failing: |f| {
                vec![
                    "inspect-module".into(),
                    "--json".into(),
                    in_root(f, "no/such.ko"),
                ]
            },
        },
        JsonCase {
            command: "lint",
            failing: |f| vec!["lint".into(), "--json".into(), in_root(f, "no-such.yaml")],
        },
        JsonCase {
            command: "watch",
            failing: |_| strings(&["watch", "/mnt/none", "--seconds", "1", "--json"]),
        },
    ]
}

/// The subcommands (with their parents: `policy show`) whose arguments define `--json`.
fn json_speakers() -> Vec<String> {
    fn walk(c: &clap::Command, path: &[String], out: &mut Vec<String>) {
        for sub in c.get_subcommands() {
            let mut path = path.to_vec();
            path.push(sub.get_name().to_string());
            if sub.get_arguments().any(|a| a.get_id() == "json") {
                out.push(path.join(" "));
            }
            walk(sub, &path, out);
        }
    }
    let mut out = Vec::new();
    walk(&nfs_gds::cli::Cli::command(), &[], &mut out);
    out
}

/// The one JSON error object of an exit 2.
fn json_error(what: &str, root: &Path, args: &[String], command: &str) -> Result<String, String> {
    let o = Command::new(env!("CARGO_BIN_EXE_nfs-gds"))
        .env_clear()
        .arg("--root")
        .arg(root)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    let what = format!("{command}: {what} ({args:?})");
    if o.status.code() != Some(2) {
        return Err(format!("{what}: exit {:?}: {err}", o.status));
    }
    let lines: Vec<&str> = out.lines().collect();
    let [line] = lines[..] else {
        return Err(format!("{what}: not one line on stdout: {out:?} ({err})"));
    };
    let doc: Value = serde_json::from_str(line).map_err(|e| format!("{what}: {e}: {line}"))?;
    let keys: Vec<&String> = doc
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    if keys != ["command", "error"] || doc["command"] != command {
        return Err(format!("{what}: {doc}"));
    }
    let error = doc["error"].as_str().unwrap_or_default().to_string();
    if error.is_empty() || !err.contains(&error) {
        return Err(format!(
            "{what}: the error {error:?} is not the one on stderr: {err}"
        ));
    }
    Ok(error)
}

#[test]
fn every_exit_2_under_json_is_one_json_error_for_every_command_that_speaks_json() {
    let cases = json_cases();
    let speakers = json_speakers();
    let mut speakers = speakers;
    speakers.sort();
    let mut named: Vec<&str> = cases.iter().map(|c| c.command).collect();
    named.sort();
    assert_eq!(
        speakers, named,
        "the commands whose arguments define --json, and the cases here"
    );
    let mut wrong = Vec::new();
    let f = node();
    f.policy("default = [\n");
    let not_a_dir: PathBuf = f.root().join("etc/fstab-file");
    f.write("etc/fstab-file", "");
    for case in &cases {
        let args = (case.failing)(&f);
        // Its own failure, and the policy's: not TOML.
        if let Err(e) = json_error("its own error", f.root(), &args, case.command) {
            wrong.push(e);
        }
        // A root that is not a directory, named in the error.
        match json_error("a root that is a file", &not_a_dir, &args, case.command) {
            Ok(error) if error.contains("not a directory") && error.contains("fstab-file") => {}
            Ok(error) => wrong.push(format!("{}: the root error says {error:?}", case.command)),
            Err(e) => wrong.push(e),
        }
        // A flag it does not have.
        let mut bad_flag = args.clone();
        bad_flag.push("--no-such-flag".into());
        match json_error("a usage error", f.root(), &bad_flag, case.command) {
            Ok(error) if error.contains("--no-such-flag") => {}
            Ok(error) => wrong.push(format!("{}: the usage error says {error:?}", case.command)),
            Err(e) => wrong.push(e),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_json_document_carries_its_schema_version() {
    let f = node();
    let lint = Command::new(env!("CARGO_BIN_EXE_nfs-gds"))
        .args(["lint", "--json", &lint_file()])
        .output()
        .unwrap();
    let watch = f
        .nfs_gds()
        .args(["watch", "/mnt/gds", "--seconds", "1", "--json"])
        .output()
        .unwrap();
    for (command, o) in [("lint", lint), ("watch", watch)] {
        let doc: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{command}: {e}: {}", String::from_utf8_lossy(&o.stderr)));
        assert_eq!(doc["command"], command, "{doc}");
        assert_eq!(doc["schema_version"], 1, "{command}: {doc}");
    }
}
