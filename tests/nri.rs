//! `nfs-gds nri` against a fake runtime: a Unix socket below a fixture root that speaks NRI's
//! multiplexer and ttrpc as containerd does (the crate's own framing, the runtime's side).
//! Register, configure, synchronize, a container refused with the verdict, one created,
//! shutdown; the socket closing and the plugin connecting again; the pre-registered form on an
//! inherited descriptor; and what the agent then says of the gate.

use std::os::unix::net::{UnixListener, UnixStream};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nfs_gds::nri::api;
use prost::Message;

use crate::mount_fixture::*;
use crate::support::fake_nri::Runtime;

const RULE: &str = "[[mount]]\nsource = \"10.0.2.15:/export\"\n";

fn create(rt: &mut Runtime, container: &str, source: &str) -> Option<nfs_gds::nri::ttrpc::Status> {
    rt.call(
        "CreateContainer",
        create_request(container, source).encode_to_vec(),
    )
    .status
}

/// A pod ml/train-0 whose container `name` binds `source` at /data.
fn create_request(name: &str, source: &str) -> api::CreateContainerRequest {
    api::CreateContainerRequest {
        pod: Some(api::PodSandbox {
            id: "sandbox1".into(),
            name: "train-0".into(),
            namespace: "ml".into(),
            ..Default::default()
        }),
        container: Some(api::Container {
            id: format!("id-{name}"),
            name: name.into(),
            mounts: vec![
                api::Mount {
                    destination: "/proc".into(),
                    r#type: "proc".into(),
                    source: "proc".into(),
                    options: vec![],
                },
                api::Mount {
                    destination: "/data".into(),
                    r#type: "bind".into(),
                    source: source.into(),
                    options: vec!["rbind".into(), "rprivate".into(), "rw".into()],
                },
            ],
            ..Default::default()
        }),
    }
}

/// A ready node with the transport trap: 10.0.2.15:/export declared for GDS, mounted over TCP.
fn trap_node() -> Fixture {
    let f = Fixture::ready();
    let (info, stats) = with_mount(70, "/mnt/gds", "tcp");
    f.table(&info, &stats);
    f.policy(RULE);
    std::fs::create_dir_all(f.path("var/run/nri")).unwrap();
    f
}

fn plugin(f: &Fixture) -> Child {
    f.nfs_gds()
        .args(["nri", "--idx", "05"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Accepts the plugin's connection within `within`.
fn accept(l: &UnixListener, within: Duration) -> UnixStream {
    l.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + within;
    loop {
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false).unwrap();
                return s;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("no connection from the plugin within {within:?}: {e}"),
        }
    }
}

fn wait_exit(child: &mut Child, within: Duration) -> Option<i32> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the plugin did not end within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn agent_says_connected(f: &Fixture) -> String {
    let prom = f.agent_prom();
    prom.lines()
        .find(|l| l.starts_with("nfs_gds_nri_connected "))
        .unwrap_or("none")
        .to_string()
}

#[test]
fn the_plugin_refuses_the_transport_trap_with_the_verdict_creates_the_rest_and_ends_on_shutdown() {
    let f = trap_node();
    let listener = UnixListener::bind(f.path("var/run/nri/nri.sock")).unwrap();
    let mut child = plugin(&f);
    let started = Instant::now();
    let mut rt = Runtime::new(accept(&listener, Duration::from_secs(30)));
    assert_eq!(
        rt.accept_registration(),
        ("nfs-gds".to_string(), "05".to_string())
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "registered within the runtime's 5 s"
    );
    rt.configure();
    // The transport trap: refused, the error is the verdict.
    let status = create(&mut rt, "trainer", "/mnt/gds/train").expect("refused");
    let text = status.message;
    let first = text.lines().next().unwrap();
    assert!(first.len() <= 512, "{first}");
    assert!(
        first.starts_with("refusing pod ml/train-0 container trainer: /data: 10.0.2.15:/export (NFS mount /mnt/gds): mount-transport: "),
        "{text}"
    );
    assert!(
        text.lines().nth(1).is_some_and(|l| l.starts_with("fix: ")),
        "{text}"
    );
    // Refused again (kubelet retries): counted each time.
    assert!(create(&mut rt, "trainer", "/mnt/gds/train").is_some());
    let counts: serde_json::Value =
        serde_json::from_slice(&std::fs::read(f.path("run/nfs-gds/oci-hook.counts")).unwrap())
            .unwrap();
    assert_eq!(counts["refusals"], 2, "{counts}");
    // No NFS volume: created, nothing adjusted.
    assert_eq!(create(&mut rt, "sidecar", "/var/lib/local"), None);
    // The mount is made again over RDMA: the next answer rests on the new table (a fixture's
    // mountinfo is no procfs, so it is read for every answer).
    let (info, stats) = with_mount(70, "/mnt/gds", "rdma");
    f.table(&info, &stats);
    assert_eq!(
        create(&mut rt, "trainer", "/mnt/gds/train"),
        None,
        "judged on the new table"
    );
    assert_eq!(agent_says_connected(&f), "nfs_gds_nri_connected 1");
    assert_eq!(rt.call("Shutdown", Vec::new()).status, None);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(10)), Some(0));
    assert_eq!(agent_says_connected(&f), "nfs_gds_nri_connected 0");
}

#[test]
fn when_the_runtime_closes_the_socket_the_plugin_connects_again_and_judges_again() {
    let f = trap_node();
    let listener = UnixListener::bind(f.path("var/run/nri/nri.sock")).unwrap();
    let mut child = plugin(&f);
    let mut rt = Runtime::new(accept(&listener, Duration::from_secs(30)));
    rt.accept_registration();
    rt.configure();
    drop(rt);
    // Back after its first wait (1 s).
    let closed = Instant::now();
    let mut rt = Runtime::new(accept(&listener, Duration::from_secs(10)));
    assert!(
        closed.elapsed() >= Duration::from_millis(900),
        "{:?}",
        closed.elapsed()
    );
    rt.accept_registration();
    rt.configure();
    assert!(
        create(&mut rt, "trainer", "/mnt/gds/train").is_some(),
        "judged again after reconnecting"
    );
    assert_eq!(rt.call("Shutdown", Vec::new()).status, None);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(10)), Some(0));
}

#[test]
fn a_mount_table_that_cannot_be_read_leaves_the_answer_to_when_unsure() {
    let f = trap_node();
    std::fs::remove_file(f.path("proc/self/mountinfo")).unwrap();
    let listener = UnixListener::bind(f.path("var/run/nri/nri.sock")).unwrap();
    let mut child = plugin(&f);
    let mut rt = Runtime::new(accept(&listener, Duration::from_secs(30)));
    rt.accept_registration();
    rt.configure();
    // Not marked: started (start-unless-marked, the default).
    assert_eq!(create(&mut rt, "trainer", "/mnt/gds/train"), None);
    // Marked by the pod's annotation: refused, saying why.
    let mut marked = create_request("trainer", "/mnt/gds/train");
    marked
        .pod
        .as_mut()
        .unwrap()
        .annotations
        .insert("nfs-gds/gds".into(), "true".into());
    let status = rt
        .call("CreateContainer", marked.encode_to_vec())
        .status
        .expect("refused");
    assert!(
        status.message.starts_with(
            "refusing pod ml/train-0 container trainer: cannot judge its volumes meant for GDS: "
        ),
        "{}",
        status.message
    );
    assert!(status.message.contains("mountinfo"), "{}", status.message);
    rt.call("Shutdown", Vec::new());
    assert_eq!(wait_exit(&mut child, Duration::from_secs(10)), Some(0));
}

#[test]
fn in_a_pod_with_the_hosts_pids_the_hosts_mount_table_is_judged() {
    let f = trap_node();
    // The pod's own table (proc/self) has no NFS mount; the host's (proc/1) has the trap.
    let (info, stats) = with_mount(70, "/mnt/gds", "tcp");
    f.write("proc/1/mountinfo", &info);
    f.write("proc/1/mountstats", &stats);
    f.table(BEFORE, BEFORE_STATS);
    let listener = UnixListener::bind(f.path("var/run/nri/nri.sock")).unwrap();
    let mut child = plugin(&f);
    let mut rt = Runtime::new(accept(&listener, Duration::from_secs(30)));
    rt.accept_registration();
    rt.configure();
    assert!(
        create(&mut rt, "trainer", "/mnt/gds/train").is_some(),
        "judged on the host's table"
    );
    rt.call("Shutdown", Vec::new());
    assert_eq!(wait_exit(&mut child, Duration::from_secs(10)), Some(0));
}

#[test]
fn a_closed_stderr_never_ends_the_plugin() {
    let f = trap_node();
    let listener = UnixListener::bind(f.path("var/run/nri/nri.sock")).unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = f
        .nfs_gds()
        .args(["-vv", "nri"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(writer)
        .spawn()
        .unwrap();
    let mut rt = Runtime::new(accept(&listener, Duration::from_secs(30)));
    rt.accept_registration();
    rt.configure();
    // A refusal writes its lines to stderr, which is gone: still answered, still counted.
    assert!(create(&mut rt, "trainer", "/mnt/gds/train").is_some());
    assert!(create(&mut rt, "trainer", "/mnt/gds/train").is_some());
    assert_eq!(rt.call("Shutdown", Vec::new()).status, None);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(10)), Some(0));
}

#[test]
fn a_second_plugin_on_the_same_node_is_refused() {
    let f = trap_node();
    let listener = UnixListener::bind(f.path("var/run/nri/nri.sock")).unwrap();
    let mut first = plugin(&f);
    let mut rt = Runtime::new(accept(&listener, Duration::from_secs(30)));
    rt.accept_registration();
    let second = f.nfs_gds().arg("nri").output().unwrap();
    assert_eq!(
        second.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert!(String::from_utf8_lossy(&second.stderr).contains("nri.lock"));
    rt.call("Shutdown", Vec::new());
    assert_eq!(wait_exit(&mut first, Duration::from_secs(10)), Some(0));
}

#[test]
fn started_by_the_runtime_it_uses_the_inherited_connection_and_ends_with_it() {
    let f = trap_node();
    let (ours, theirs) = UnixStream::pair().unwrap();
    let mut c = f.nfs_gds();
    c.arg("nri")
        .env("NRI_PLUGIN_SOCKET", "3")
        .env("NRI_PLUGIN_NAME", "gate")
        .env("NRI_PLUGIN_IDX", "07")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // The runtime's end on descriptor 3, as NRI starts a pre-registered plugin.
    let fd: std::os::fd::OwnedFd = theirs.into();
    on_fd_3(&mut c, std::os::fd::AsRawFd::as_raw_fd(&fd));
    let mut child = c.spawn().unwrap();
    drop(fd);
    let mut rt = Runtime::new(ours);
    assert_eq!(
        rt.accept_registration(),
        ("gate".to_string(), "07".to_string())
    );
    rt.configure();
    assert!(create(&mut rt, "trainer", "/mnt/gds/train").is_some());
    assert_eq!(agent_says_connected(&f), "nfs_gds_nri_connected 1");
    // The runtime goes away: the plugin ends, and does not connect anywhere else.
    drop(rt);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(10)), Some(0));
}

/// Makes `raw` descriptor 3 of the started process.
#[allow(unsafe_code)]
fn on_fd_3(c: &mut std::process::Command, raw: i32) {
    use std::os::unix::process::CommandExt;
    // SAFETY: dup2 is async-signal-safe; it runs in the child between fork and exec, on a
    // descriptor the child inherited.
    unsafe {
        c.pre_exec(move || {
            if nix::libc::dup2(raw, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
