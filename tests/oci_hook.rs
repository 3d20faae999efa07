//! `nfs-gds oci-hook`, the gate at container start, against fixture nodes: the OCI state on
//! stdin, a bundle's `config.json` below the root, the node's mount table; what the runtime
//! gets (the exit code), what the user reads (stderr), the system log (a datagram socket at
//! `<root>/dev/log`) and the counters the agent exports. Then bad input: every answer bounded
//! and per the failure policy.

use std::os::unix::net::UnixDatagram;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::mount_fixture::*;

/// The bundle as the state names it, and below the fixture's root (never the machine's `/run`).
const BUNDLE: &str = "/run/containers/b1";
const BUNDLE_BELOW: &str = "run/containers/b1";

/// Writes `BUNDLE/config.json` binding `(source, destination)` pairs (plus what every runtime
/// binds: /etc/hosts and a tmpfs), with `annotations`; returns the state for it.
fn bundle(f: &Fixture, binds: &[(&str, &str)], annotations: serde_json::Value) -> String {
    let mut mounts = vec![
        json!({"destination": "/proc", "type": "proc", "source": "proc"}),
        json!({"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid"]}),
        json!({"destination": "/etc/hosts", "type": "bind", "source": "/var/lib/containers/b1/hosts", "options": ["rbind", "ro"]}),
    ];
    for (source, destination) in binds {
        mounts.push(json!({"destination": destination, "type": "bind", "source": source, "options": ["rbind", "rprivate"]}));
    }
    let config = json!({"ociVersion": "1.0.2", "process": {"args": ["sh"]}, "mounts": mounts, "annotations": annotations});
    f.write(
        format!("{BUNDLE_BELOW}/config.json"),
        serde_json::to_vec(&config).unwrap(),
    );
    state(BUNDLE, annotations)
}

fn state(bundle: &str, annotations: serde_json::Value) -> String {
    json!({"ociVersion": "1.0.2", "id": "c0ffee", "status": "creating", "pid": 4242, "bundle": bundle, "annotations": annotations}).to_string()
}

/// The syslog socket below the root, listening.
fn syslog(f: &Fixture) -> UnixDatagram {
    let s = UnixDatagram::bind(f.path("dev/log")).unwrap();
    s.set_nonblocking(true).unwrap();
    s
}

fn logged(s: &UnixDatagram) -> Vec<String> {
    let mut lines = Vec::new();
    let mut buf = vec![0u8; 65536];
    while let Ok(n) = s.recv(&mut buf) {
        lines.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    lines
}

/// `nfs-gds --root ROOT ARGS…` with `stdin`, bounded in time.
fn run(f: &Fixture, args: &[&str], stdin: impl Into<Vec<u8>>) -> Output {
    let mut c = f.nfs_gds();
    c.args(args);
    bounded(c, stdin)
}

fn bounded(c: std::process::Command, stdin: impl Into<Vec<u8>>) -> Output {
    assert_cmd::Command::from_std(c)
        .write_stdin(stdin)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap()
}

fn hook(f: &Fixture, stdin: impl Into<Vec<u8>>) -> Output {
    run(f, &["oci-hook"], stdin)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn counts(f: &Fixture) -> Option<serde_json::Value> {
    std::fs::read(f.path("run/nfs-gds/oci-hook.counts"))
        .ok()
        .map(|b| serde_json::from_slice(&b).unwrap())
}

/// A ready node with one NFSv4 mount of 10.0.2.15:/export on /mnt/gds over `proto`.
fn node_with_mount(proto: &str) -> Fixture {
    let f = Fixture::ready();
    f.table(
        &with_mount(70, "/mnt/gds", proto).0,
        &with_mount(70, "/mnt/gds", proto).1,
    );
    f
}

const RULE: &str = "[[mount]]\nsource = \"10.0.2.15:/export\"\n";

#[test]
fn a_container_without_nfs_volumes_starts_silently_and_is_not_counted() {
    let f = node_with_mount("tcp");
    let log = syslog(&f);
    let st = bundle(&f, &[("/srv/local", "/data")], json!({}));
    let o = hook(&f, st);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    assert!(logged(&log).is_empty());
    assert_eq!(counts(&f), None);
}

#[test]
fn a_gds_volume_over_rdma_on_a_ready_node_starts_silently() {
    let f = node_with_mount("rdma");
    let st = bundle(&f, &[("/mnt/gds/train", "/data")], json!({}));
    let o = hook(&f, st);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
}

#[test]
fn the_transport_trap_refuses_with_one_line_per_volume_logged_and_counted() {
    let f = node_with_mount("tcp");
    f.policy(RULE);
    let log = syslog(&f);
    let st = bundle(
        &f,
        &[("/mnt/gds/train", "/data"), ("/mnt/gds/ckpt/", "/ckpt")],
        json!({}),
    );
    let o = hook(&f, st);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    for (line, dest) in lines.iter().zip(["/data", "/ckpt"]) {
        assert!(
            line.starts_with(&format!(
                "nfs-gds: refusing container c0ffee: {dest}: 10.0.2.15:/export (NFS mount /mnt/gds): "
            )),
            "{line}"
        );
        assert!(line.contains("mount-transport: "), "{line}");
        assert!(line.contains(" | fix: "), "{line}");
    }
    let logged = logged(&log);
    assert_eq!(logged.len(), 2, "{logged:?}");
    assert!(logged[0].starts_with("<27>nfs-gds["), "{logged:?}");
    assert!(logged[0].contains("refusing container c0ffee: /data: "));
    assert_eq!(counts(&f), Some(json!({"refusals": 1, "warnings": 0})));
    // The agent exports the counter.
    let prom = f.agent_prom();
    assert!(
        prom.contains("\nnfs_gds_oci_hook_refusals_total 1\n"),
        "{prom}"
    );
    assert!(prom.contains("\nnfs_gds_oci_hook_warnings_total 0\n"));
}

#[test]
fn under_warn_the_container_starts_and_the_warning_is_logged_and_counted() {
    let f = node_with_mount("tcp");
    f.policy(&format!("{RULE}default = \"warn\"\n"));
    let log = syslog(&f);
    let st = bundle(&f, &[("/mnt/gds", "/data")], json!({}));
    let o = hook(&f, st);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("nfs-gds: warning: container c0ffee: /data: 10.0.2.15:/export"),
        "{}",
        stderr(&o)
    );
    let logged = logged(&log);
    assert_eq!(logged.len(), 1);
    assert!(logged[0].starts_with("<28>"), "{logged:?}");
    assert_eq!(counts(&f), Some(json!({"refusals": 0, "warnings": 1})));
}

#[test]
fn an_nfs_volume_not_meant_for_gds_starts_quietly() {
    let f = node_with_mount("tcp");
    let log = syslog(&f);
    let st = bundle(&f, &[("/mnt/gds/home", "/home")], json!({}));
    let o = hook(&f, st);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    assert!(logged(&log).is_empty());
}

/// Rewrites the bundle's `config.json` with `linux` (devices and device rules) added.
fn with_linux(f: &Fixture, linux: serde_json::Value) {
    let path = f.path(format!("{BUNDLE_BELOW}/config.json"));
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    config["linux"] = linux;
    std::fs::write(path, serde_json::to_vec(&config).unwrap()).unwrap();
}

#[test]
fn the_gds_cdi_device_marks_a_tcp_volume_unless_the_container_is_privileged() {
    let gds = json!({"path": "/dev/nvidia-fs0", "type": "c", "major": 245, "minor": 0});
    let deny_all = json!({"allow": false, "access": "rwm"});
    let allow_all = json!({"allow": true, "access": "rwm"});
    let cases = [
        (
            "the device node",
            json!({"devices": [gds], "resources": {"devices": [deny_all]}}),
            json!({}),
            1,
        ),
        (
            "privileged: every host device",
            json!({"devices": [gds], "resources": {"devices": [deny_all, allow_all]}}),
            json!({}),
            0,
        ),
        ("no device", json!({"devices": []}), json!({}), 0),
        (
            "NVIDIA's CDI annotation for this container",
            json!({"devices": []}),
            json!({"io.kubernetes.cri.container-name": "train", "nvidia.cdi.k8s.io/container.train": "nvidia.com/gds=all"}),
            1,
        ),
        (
            "the annotation for another container",
            json!({"devices": []}),
            json!({"io.kubernetes.cri.container-name": "train", "nvidia.cdi.k8s.io/container.other": "nvidia.com/gds=all"}),
            0,
        ),
    ];
    for (what, linux, annotations, code) in cases {
        let f = node_with_mount("tcp");
        let st = bundle(&f, &[("/mnt/gds/x", "/data")], annotations);
        with_linux(&f, linux);
        let o = hook(&f, st);
        assert_eq!(o.status.code(), Some(code), "{what}: {}", stderr(&o));
        if code == 1 {
            assert!(
                stderr(&o).contains("refusing container c0ffee: /data: 10.0.2.15:/export"),
                "{what}: {}",
                stderr(&o)
            );
        }
    }
}

#[test]
fn an_annotation_marks_a_tcp_volume_for_gds_and_refuses_it() {
    for annotations in [
        json!({"nfs-gds/gds": "true"}),
        json!({"nfs-gds/gds-volumes": "/other, /data/"}),
    ] {
        let f = node_with_mount("tcp");
        let st = bundle(&f, &[("/mnt/gds/x", "/data")], annotations.clone());
        let o = hook(&f, st);
        assert_eq!(o.status.code(), Some(1), "{annotations}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("refusing container c0ffee: /data: 10.0.2.15:/export"),
            "{err}"
        );
    }
    // A listed container path on no NFS mount: no GPU-direct path can exist.
    let f = node_with_mount("rdma");
    let st = bundle(
        &f,
        &[("/srv/local", "/data")],
        json!({"nfs-gds/gds-volumes": "/data"}),
    );
    let o = hook(&f, st);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("/data is marked for GDS"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_node_whose_rpcrdma_has_no_hooks_refuses_the_rdma_volume_under_enforce() {
    let f = node_with_mount("rdma");
    f.without_rpcrdma_hooks();
    let st = bundle(&f, &[("/mnt/gds", "/data")], json!({}));
    let o = hook(&f, st);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("rpcrdma-hooks: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

// Bad input: a clear, bounded answer per the failure policy, never a hang or a panic.

fn assert_started_unjudged(o: &Output, why: &str) {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    let err = stderr(o);
    assert!(err.starts_with("nfs-gds: warning: starting "), "{err}");
    assert!(err.contains(why), "{why}: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_state_that_is_not_json_starts_the_container_and_says_why() {
    let f = Fixture::ready();
    let log = syslog(&f);
    let o = hook(&f, "not json at all");
    assert_started_unjudged(&o, "the container state on stdin is not an OCI state");
    assert_eq!(logged(&log).len(), 1);
    assert_eq!(counts(&f), Some(json!({"refusals": 0, "warnings": 1})));
    // Larger than any state: not read past the cap.
    let o = hook(&f, vec![b' '; (1 << 20) + 100]);
    assert_started_unjudged(&o, "larger than 1048576 bytes");
}

#[test]
fn when_unsure_refuse_in_the_policy_refuses_what_cannot_be_judged() {
    let f = Fixture::ready();
    f.policy("[oci-hook]\nwhen-unsure = \"refuse\"\n");
    let o = hook(&f, "{");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("nfs-gds: refusing a container: cannot judge"));
}

#[test]
fn a_missing_bundle_starts_the_container_unless_it_is_marked_for_gds() {
    let f = Fixture::ready();
    let o = hook(&f, state("/run/containers/gone", json!({})));
    assert_started_unjudged(&o, "/run/containers/gone/config.json does not exist");
    let o = hook(
        &f,
        state("/run/containers/gone", json!({"nfs-gds/gds": "true"})),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("nfs-gds: refusing container c0ffee: cannot judge"),
        "{}",
        stderr(&o)
    );
    // No bundle at all in the state.
    let o = hook(&f, json!({"id": "x"}).to_string());
    assert_started_unjudged(&o, "the container state has no bundle");
}

#[test]
fn a_bundle_that_is_a_symlink_out_of_the_root_is_read_inside_it() {
    let f = node_with_mount("tcp");
    // Outside the root: a config that would refuse (a marked TCP volume) if it were read.
    let outside = tempfile::tempdir().unwrap();
    let config = json!({"mounts": [{"destination": "/data", "type": "bind", "source": "/mnt/gds"}],
                        "annotations": {"nfs-gds/gds": "true"}});
    std::fs::write(outside.path().join("config.json"), config.to_string()).unwrap();
    std::fs::create_dir_all(f.path("run/containers")).unwrap();
    std::os::unix::fs::symlink(outside.path(), f.path("run/containers/evil")).unwrap();
    let o = hook(&f, state("/run/containers/evil", json!({})));
    assert_started_unjudged(&o, "config.json does not exist");
}

#[test]
fn a_config_json_of_a_gigabyte_is_not_read() {
    let f = Fixture::ready();
    let path = f.write(format!("{BUNDLE_BELOW}/config.json"), "{");
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let started = Instant::now();
    let o = hook(&f, state(BUNDLE, json!({})));
    assert_started_unjudged(&o, "is larger than");
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn a_config_json_that_is_a_fifo_is_not_opened() {
    let f = Fixture::ready();
    std::fs::create_dir_all(f.path(BUNDLE_BELOW)).unwrap();
    nix::unistd::mkfifo(
        &f.path(format!("{BUNDLE_BELOW}/config.json")),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let o = hook(&f, state(BUNDLE, json!({})));
    assert_started_unjudged(&o, "not a regular file");
}

#[test]
fn ten_thousand_mounts_in_config_json_are_judged_in_bounded_time() {
    let f = node_with_mount("tcp");
    let mut binds: Vec<(String, String)> = (0..10_000)
        .map(|i| (format!("/srv/v{i}"), format!("/v{i}")))
        .collect();
    let refs: Vec<(&str, &str)> = binds
        .iter()
        .map(|(s, d)| (s.as_str(), d.as_str()))
        .collect();
    let st = bundle(&f, &refs, json!({}));
    let started = Instant::now();
    let o = hook(&f, st);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    assert!(started.elapsed() < Duration::from_secs(20));
    // One of them on the TCP mount, marked: refused, and only that one named.
    binds.push(("/mnt/gds".into(), "/data".into()));
    let refs: Vec<(&str, &str)> = binds
        .iter()
        .map(|(s, d)| (s.as_str(), d.as_str()))
        .collect();
    let st = bundle(&f, &refs, json!({"nfs-gds/gds": "true"}));
    let o = hook(&f, st);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

#[test]
fn a_root_that_is_not_a_directory_decides_by_the_annotations_alone() {
    let run = |annotations: serde_json::Value| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_nfs-gds"));
        c.env_clear()
            .args(["--root", "/nonexistent/root", "oci-hook"]);
        bounded(c, state(BUNDLE, annotations))
    };
    let o = run(json!({}));
    assert_started_unjudged(&o, "/nonexistent/root");
    let o = run(json!({"nfs-gds/gds": "true"}));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn the_hook_runs_in_any_stage_a_hooks_file_names() {
    let f = node_with_mount("tcp");
    f.policy(RULE);
    for stage in ["prestart", "createRuntime"] {
        let st = bundle(&f, &[("/mnt/gds", "/data")], json!({}));
        let o = run(&f, &["oci-hook", stage], st);
        assert_eq!(o.status.code(), Some(1), "{stage}: {}", stderr(&o));
    }
}

#[test]
fn a_whole_state_on_a_stdin_never_closed_is_judged_at_once() {
    use std::io::Write;
    let f = node_with_mount("tcp");
    f.policy(RULE);
    let st = bundle(&f, &[("/mnt/gds/train", "/data")], json!({}));
    let mut c = f.nfs_gds();
    c.arg("oci-hook")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The state, then a newline, and stdin held open (as a runtime that never closes it).
    stdin.write_all(st.as_bytes()).unwrap();
    stdin.write_all(b"\n").unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the hook still waits for stdin to close"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert_eq!(status.code(), Some(1), "{said}");
    assert!(
        said.contains("refusing container c0ffee: /data: 10.0.2.15:/export"),
        "{said}"
    );
}

#[test]
fn started_by_hand_on_a_terminal_it_says_what_it_expects() {
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    let f = Fixture::ready();
    let Ok(master) = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY) else {
        eprintln!("no pseudo-terminal here: cannot start the hook on one");
        return;
    };
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(name.to_str().unwrap())
        .unwrap();
    let mut c = f.nfs_gds();
    c.arg("oci-hook").stdin(terminal);
    let o = bounded_output(c);
    let said = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert!(said.contains("stdin is a terminal"), "{said}");
    assert!(said.contains("container state JSON"), "{said}");
}

/// Runs `c` (its stdin already set), stopped after 30 s.
fn bounded_output(mut c: std::process::Command) -> Output {
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("still running after 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_bind_source_linked_into_a_tcp_mount_is_judged_by_where_it_leads() {
    let f = node_with_mount("tcp");
    f.policy(RULE);
    std::fs::create_dir_all(f.path("srv")).unwrap();
    std::fs::create_dir_all(f.path("mnt/gds")).unwrap();
    std::os::unix::fs::symlink("/mnt/gds/train", f.path("srv/train")).unwrap();
    std::os::unix::fs::symlink("../srv", f.path("srv/up")).unwrap();
    for source in ["/srv/train", "/srv/up/train/sub"] {
        let st = bundle(&f, &[(source, "/data")], json!({}));
        let o = hook(&f, st);
        let said = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{source}: {said}");
        assert!(
            said.contains("refusing container c0ffee: /data: 10.0.2.15:/export (NFS mount /mnt/gds): mount-transport: "),
            "{said}"
        );
    }
}

/// The gate warns about a link only where resolving it would have to go on inside an NFS
/// mount: a link to a directory below the mount point (what lies there is taken as written). A
/// link to the mount point itself, or a source below it reached without a link, says nothing.
#[test]
fn a_link_into_an_nfs_mount_with_a_path_left_below_it_is_said() {
    let f = node_with_mount("rdma");
    f.policy(RULE);
    std::fs::create_dir_all(f.path("srv")).unwrap();
    std::fs::create_dir_all(f.path("mnt/gds")).unwrap();
    std::os::unix::fs::symlink("/mnt/gds/train", f.path("srv/train")).unwrap();
    std::os::unix::fs::symlink("/mnt/gds", f.path("srv/whole")).unwrap();
    let st = bundle(&f, &[("/srv/train", "/data")], json!({}));
    let o = hook(&f, st);
    let said = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{said}");
    assert!(
        said.contains("the bind source /srv/train of /data leads through a symbolic link into an NFS mount; train below its mount point is taken as written"),
        "{said}"
    );
    for source in ["/srv/whole", "/mnt/gds/train"] {
        let st = bundle(&f, &[(source, "/data")], json!({}));
        let o = hook(&f, st);
        assert_eq!(o.status.code(), Some(0), "{source}");
        assert_eq!(stderr(&o), "", "{source}");
    }
}

#[test]
fn a_bind_source_in_a_link_loop_is_not_judged_and_a_marked_container_is_refused() {
    let f = node_with_mount("tcp");
    std::os::unix::fs::symlink("/loop-b", f.path("loop-a")).unwrap();
    std::os::unix::fs::symlink("/loop-a", f.path("loop-b")).unwrap();
    let st = bundle(
        &f,
        &[("/loop-a/x", "/data")],
        json!({"nfs-gds/gds": "true"}),
    );
    let o = hook(&f, st);
    let said = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains("/loop-a/x: more than 40 symbolic links to follow (a loop?)"),
        "{said}"
    );
}

/// A node whose root filesystem is NFSv4 over TCP (10.0.2.15:/export on `/`).
fn nfs_root_node() -> Fixture {
    let f = Fixture::ready();
    let info = format!(
        "{}21 1 0:21 / /proc rw,nosuid - proc proc rw\n",
        nfs_info(1, "/", "tcp").replacen("1 1 ", "1 0 ", 1)
    );
    let stats = format!(
        "{}device proc mounted on /proc with fstype proc\n",
        nfs_stats("/", "tcp")
    );
    f.table(&info, &stats);
    f
}

#[test]
fn on_an_nfs_root_the_runtimes_own_binds_are_not_judged_unless_listed() {
    let f = nfs_root_node();
    // /etc/hosts (bound by `bundle`), and the other binds a runtime makes for itself.
    let plumbing = [
        ("/var/lib/kubelet/pods/p/etc-hosts", "/etc/resolv.conf"),
        (
            "/var/lib/kubelet/pods/p/containers/c/0",
            "/dev/termination-log",
        ),
        (
            "/var/lib/kubelet/pods/p/volumes/token",
            "/run/secrets/kubernetes.io/serviceaccount",
        ),
    ];
    let st = bundle(&f, &plumbing, json!({"nfs-gds/gds": "true"}));
    let o = hook(&f, st);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    // Named by the annotation, /etc/hosts is judged (and refused: the root is NFS over TCP).
    let st = bundle(&f, &plumbing, json!({"nfs-gds/gds-volumes": "/etc/hosts"}));
    let o = hook(&f, st);
    let said = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains("refusing container c0ffee: /etc/hosts: "),
        "{said}"
    );
}

#[test]
fn a_misspelt_key_or_a_path_the_container_lacks_is_said_logged_and_counted() {
    let f = node_with_mount("tcp");
    let log = syslog(&f);
    let st = bundle(
        &f,
        &[("/mnt/gds/train", "/data")],
        json!({"nfs-gds/gds-volume": "/data", "nfs-gds/gds-volumes": "/dat"}),
    );
    let o = hook(&f, st);
    let said = stderr(&o);
    // Neither annotation marks /data: the TCP volume starts unjudged, but not silently.
    assert_eq!(o.status.code(), Some(0), "{said}");
    assert!(
        said.contains("nfs-gds: warning: container c0ffee: unknown annotation \"nfs-gds/gds-volume\", not read (did you mean nfs-gds/gds-volumes?); the known keys are nfs-gds/gds, nfs-gds/gds-volumes\n"),
        "{said}"
    );
    assert!(
        said.contains("warning: container c0ffee: nfs-gds/gds-volumes names /dat, where no volume is mounted, so nothing there is judged (volumes at: /data)"),
        "{said}"
    );
    let logged = logged(&log);
    assert_eq!(logged.len(), 2, "{logged:?}");
    assert!(logged[0].contains("unknown annotation"), "{logged:?}");
    assert_eq!(
        counts(&f).unwrap()["annotation_problems"],
        json!({"unknown_key": 1, "no_such_volume": 1})
    );
    let out = tempfile::tempdir().unwrap();
    f.nfs_gds()
        .args(["agent", "--once", "--textfile-dir"])
        .arg(out.path())
        .output()
        .unwrap();
    let prom = std::fs::read_to_string(out.path().join("nfs-gds.prom")).unwrap();
    assert!(
        prom.contains("\nnfs_gds_hook_annotation_problems_total{kind=\"unknown-key\"} 1\n"),
        "{prom}"
    );
    assert!(prom.contains("\nnfs_gds_hook_annotation_problems_total{kind=\"no-such-volume\"} 1\n"));
}

/// The hook and `lint` read `nfs-gds/gds` by one rule: for each spelling, the hook refuses a
/// TCP volume exactly when `lint` judges a volume so annotated as meant for GDS; a value that
/// is neither yes nor no is said by the hook (and the container taken as marked) and an error
/// for `lint`.
#[test]
fn the_hook_and_lint_agree_on_every_spelling_of_the_gds_annotation() {
    let manifests = tempfile::tempdir().unwrap();
    for (value, marks, known) in [
        ("no", false, true),
        ("true", true, true),
        ("YES", true, true),
        ("1", true, true),
        ("on", true, true),
        ("0", false, true),
        ("off", false, true),
        ("", false, true),
        ("maybe", true, false),
    ] {
        let f = node_with_mount("tcp");
        let log = syslog(&f);
        let st = bundle(
            &f,
            &[("/mnt/gds/x", "/data")],
            json!({"nfs-gds/gds": value}),
        );
        let o = hook(&f, st);
        let said = stderr(&o);
        let logged = logged(&log);
        assert_eq!(
            logged.iter().any(|l| l.contains("nfs-gds/gds is ")),
            !known,
            "{value:?}: {logged:?}"
        );
        assert_eq!(
            counts(&f).and_then(|c| c.get("annotation_problems").cloned()),
            (!known).then(|| json!({"unknown_key": 0, "no_such_volume": 0, "bad_value": 1})),
            "{value:?}"
        );
        assert_eq!(o.status.code(), Some(i32::from(marks)), "{value:?}: {said}");
        assert_eq!(
            said.contains("refusing container c0ffee: /data: "),
            marks,
            "{value:?}: {said}"
        );
        assert_eq!(
            said.contains(&format!("warning: container c0ffee: nfs-gds/gds is {value:?}, which is neither yes nor no: true, yes, y, 1, on mark every NFS volume for GDS; false, no, n, 0, off or empty do not (case aside), so the container is taken as marked\n")),
            !known,
            "{value:?}: {said}"
        );

        let path = manifests.path().join("pv.yaml");
        std::fs::write(
            &path,
            format!("apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: x\n  annotations: {{nfs-gds/gds: \"{value}\"}}\nspec:\n  mountOptions: [hard, vers=3]\n  nfs: {{server: s, path: /e}}\n"),
        )
        .unwrap();
        let l = crate::support::nfs_gds()
            .arg("lint")
            .arg(&path)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&l.stdout).into_owned();
        assert_eq!(
            out.contains(
                "pv.yaml:7: fail: PersistentVolume x: its mountOptions do not ask for RDMA"
            ),
            marks,
            "{value:?}: {out}"
        );
        assert_eq!(out.contains("[volume-not-gds]"), !marks, "{value:?}: {out}");
        assert_eq!(
            out.contains(&format!("pv.yaml:5: fail: PersistentVolume x: nfs-gds/gds is {value:?}, which is neither yes nor no: true, yes, y, 1, on mark every NFS volume for GDS; false, no, n, 0, off or empty do not (case aside) [annotation-value]")),
            !known,
            "{value:?}: {out}"
        );
        assert_eq!(l.status.code(), Some(i32::from(marks)), "{value:?}: {out}");
    }
}
