//! What `nfs-gds nri` costs per `CreateContainer`, as a runtime sees it: a fake runtime drives
//! the release binary over its Unix socket, through the real multiplexer and ttrpc, against a
//! `--root` fixture whose mount table has 10,000 NFS mounts (5,000 over TCP, 5,000 over RDMA,
//! each of its own server, with mountstats records). Each container has 5 mounts, 2 on NFS (one
//! TCP volume not meant for GDS, one RDMA volume meant for GDS by `proto=rdma`, which costs the
//! whole judge and the node facts); 10 requests a second; the mount table is rewritten every
//! second. A fixture's mountinfo is no procfs, so the plugin reads the whole table for every
//! request: the worst case of a node whose table changes before every container.
//!
//! Prints p50, p99 and the largest answer time, and the plugin's RSS each minute.
//! `cargo bench --bench nri_latency` (60 s); `NRI_BENCH_SECONDS=1800` for a longer run;
//! `NRI_BENCH_PLUGIN=path/to/nfs-gds` drives another build (an earlier one, to compare);
//! `NRI_BENCH_ONE_SERVER=1` puts all 10,000 mounts on one server, the case where the transport
//! trap must look at every one of them.

#[path = "../tests/support/fake_nri.rs"]
mod fake_nri;

use std::fmt::Write as _;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nfs_gds::nri::api;
use prost::Message;

const MOUNTS: usize = 10_000;

fn target(i: usize) -> String {
    format!("/var/lib/kubelet/pods/pod-{i:05}/volumes/kubernetes.io~nfs/pv-{i:05}")
}

fn one_server() -> bool {
    std::env::var_os("NRI_BENCH_ONE_SERVER").is_some_and(|v| v == "1")
}

/// mountinfo and mountstats with `MOUNTS` NFS mounts; `generation` changes the ids.
fn tables(generation: usize) -> (String, String) {
    let mut info = String::from(
        "1 0 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n21 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n",
    );
    let mut stats = String::from(
        "device /dev/vda mounted on / with fstype ext4\ndevice proc mounted on /proc with fstype proc\n",
    );
    for i in 0..MOUNTS {
        let (proto, port, xprt) = if i % 2 == 0 {
            ("tcp", "", "tcp 0 0 2 0 0 39 39 0 39 0 2 0 0")
        } else {
            ("rdma", ",port=20049", "rdma 0 0 1 0 0 121 121 0 1096 0 131 1 11 120676 2562 0 0 110132 5 0 0 0 0 66 131 0 0")
        };
        let server = if one_server() {
            "10.1.0.1".to_string()
        } else {
            format!("10.{}.{}.{}", 1 + i / 62500, (i / 250) % 250, i % 250 + 1)
        };
        let id = 100 + i + generation % 7;
        let t = target(i);
        let _ = writeln!(
            info,
            "{id} 1 0:{} / {t} rw,relatime shared:40 - nfs4 {server}:/export rw,vers=4.2,rsize=262144,wsize=262144,namlen=255,hard,proto={proto}{port},timeo=600,retrans=2,sec=sys,clientaddr=10.0.0.1,local_lock=none,addr={server}",
            50 + i
        );
        let _ = write!(
            stats,
            "device {server}:/export mounted on {t} with fstype nfs4 statvers=1.1\n\topts:\trw,vers=4.2,rsize=262144,wsize=262144,namlen=255,hard,proto={proto}{port},timeo=600,retrans=2,sec=sys,clientaddr=10.0.0.1,local_lock=none\n\tage:\t1\n\tRPC iostats version: 1.1  p/v: 100003/4 (nfs)\n\txprt:\t{xprt}\n\tper-op statistics\n\t        NULL: 1 1 0 40 24 43 4 49 0\n\n"
        );
    }
    (info, stats)
}

fn write_tables(root: &Path, generation: usize) {
    let (info, stats) = tables(generation);
    for (name, text) in [("mountinfo", info), ("mountstats", stats)] {
        let tmp = root.join(format!("proc/self/.{name}"));
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, root.join("proc/self").join(name)).unwrap();
    }
}

/// Container `n`: its runtime binds, a TCP volume and an RDMA volume.
fn request(n: usize) -> Vec<u8> {
    let bind = |source: String, destination: &str| api::Mount {
        destination: destination.into(),
        r#type: "bind".into(),
        source,
        options: vec!["rbind".into(), "rprivate".into(), "rw".into()],
    };
    let tcp = (n * 2) % MOUNTS;
    let rdma = (n * 2 + 1) % MOUNTS;
    api::CreateContainerRequest {
        pod: Some(api::PodSandbox {
            name: format!("job-{n}"),
            namespace: "bench".into(),
            ..Default::default()
        }),
        container: Some(api::Container {
            id: format!("c{n}"),
            name: "main".into(),
            mounts: vec![
                bind("/var/lib/containerd/sandbox/hosts".into(), "/etc/hosts"),
                bind(
                    "/var/lib/containerd/sandbox/resolv.conf".into(),
                    "/etc/resolv.conf",
                ),
                bind(
                    "/var/lib/kubelet/pods/x/containers/main/log".into(),
                    "/dev/termination-log",
                ),
                bind(format!("{}/data", target(tcp)), "/home"),
                bind(format!("{}/data", target(rdma)), "/data"),
            ],
            ..Default::default()
        }),
    }
    .encode_to_vec()
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The CPU time (user + system) process `pid` has used, in clock ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which may hold spaces), from the state on.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

fn main() {
    let seconds: u64 = std::env::var("NRI_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("proc/self")).unwrap();
    std::fs::create_dir_all(root.join("var/run/nri")).unwrap();
    write_tables(root, 0);
    let listener = UnixListener::bind(root.join("var/run/nri/nri.sock")).unwrap();
    let plugin = std::env::var_os("NRI_BENCH_PLUGIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_nfs-gds").into());
    let mut child = Command::new(plugin)
        .arg("--root")
        .arg(root)
        .arg("nri")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (s, _) = listener.accept().unwrap();
    let mut rt = fake_nri::Runtime::new(s);
    rt.accept_registration();
    rt.configure();
    let start = Instant::now();
    let mut times = Vec::new();
    let mut refused = 0;
    let mut generation = 0;
    let mut next_minute = Duration::ZERO;
    println!("nri_latency: {MOUNTS} NFS mounts, 10 requests/s for {seconds} s");
    let mut n = 0;
    while start.elapsed() < Duration::from_secs(seconds) {
        let due = Duration::from_millis(100 * n as u64);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
        if start.elapsed() >= Duration::from_secs(generation as u64 + 1) {
            generation += 1;
            write_tables(root, generation);
        }
        if start.elapsed() >= next_minute {
            println!(
                "minute {:>3}: RSS {} KiB",
                next_minute.as_secs() / 60,
                rss_kib(child.id()).unwrap_or(0)
            );
            next_minute += Duration::from_secs(60);
        }
        let t = Instant::now();
        let resp = rt.call("CreateContainer", request(n));
        times.push(t.elapsed());
        refused += usize::from(resp.status.is_some());
        n += 1;
    }
    println!(
        "minute {:>3}: RSS {} KiB (end)",
        start.elapsed().as_secs() / 60,
        rss_kib(child.id()).unwrap_or(0)
    );
    // The plugin's own CPU per answer: what the machine's load does not change.
    let ticks = cpu_ticks(child.id()).unwrap_or(0);
    let hz: f64 = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse().ok())
        .unwrap_or(100.0);
    rt.call("Shutdown", Vec::new());
    let _ = child.wait();
    times.sort();
    let pct = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
    println!(
        "requests {}, refused {refused}; p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; plugin CPU {:.2} ms per request",
        times.len(),
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        times.last().unwrap().as_secs_f64() * 1e3,
        ticks as f64 / hz * 1e3 / times.len() as f64
    );
}
