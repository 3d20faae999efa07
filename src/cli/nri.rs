//! `nfs-gds nri`: the container gate as an NRI plugin, for runtimes that read no hooks.d
//! (containerd) or where NRI is the gate chosen (CRI-O ≥ 1.30). It connects to the runtime's NRI
//! socket — or uses the connection the runtime started it with (`NRI_PLUGIN_SOCKET`, the
//! pre-registered form) —, registers, and for each `CreateContainer` asks the one container
//! judge `oci-hook` asks ([`container::decide`]): same policy, same lines, same counters.
//! An enforced check that fails refuses the container with the verdict as the error the runtime
//! returns to kubelet; otherwise nothing is adjusted. kubelet retries a refused container for
//! hours: every refusal is counted, but the system log gets one line per pod and reason per
//! [`LOG_EVERY`].
//!
//! Fast and never stale: the mount points are kept and read again only after a mount event
//! ([`MountsChange`]: a poll that does not wait, before each answer; every answer where
//! mountinfo is not procfs), and so are the NFS mounts read for a container's volumes (those
//! mounts and the ones that may share their servers, the rest of the tables only scanned:
//! [`MountInfoText::nfs_mounts_of`]); the node facts at most [`FACTS_MAX_AGE`] old; nothing in the call
//! probes, scans modules or reads below an NFS mount. A table that cannot be read leaves the
//! answer to `[oci-hook] when-unsure`, as in the hook.
//!
//! It holds `run/nfs-gds/nri.lock` while it runs and records each registration
//! ([`nri_gate`]), so the agent can say whether the gate is up. When the runtime closes the
//! socket it connects again, after 1 s, doubling to 30 s; a plugin the runtime started ends with
//! its connection.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use clap::Args;

use super::context::{CmdError, Ctx};
use super::gate_voice;
use super::memory::Trim;
use crate::agent::nri_gate::{self, Held};
use crate::escape::escape_control;
use crate::host::io::env::Env;
use crate::host::mounts::change::MountsChange;
use crate::host::mounts::{host_tables, read_mountinfo_text_into, MountInfoText, MountTable};
use crate::host::syslog::Severity;
use crate::host::HostFacts;
use crate::judge::container::{self, Answer, Container, Inputs, Kept, Said, FIX};
use crate::nri::api::{self, CreateContainerRequest};
use crate::nri::plugin::{self, End, Handler, Identity};
use crate::oci;
use crate::policy::WhenUnsure;

#[derive(Debug, Args)]
pub struct NriArgs {
    /// The runtime's NRI socket, below the root (not read when the runtime started the plugin)
    #[arg(long, value_name = "PATH", default_value = "/var/run/nri/nri.sock")]
    pub socket: PathBuf,
    /// The name the plugin registers under (NRI_PLUGIN_NAME wins when the runtime started it)
    #[arg(long, default_value = "nfs-gds")]
    pub name: String,
    /// The plugin's index: the runtime calls plugins in ascending index order (NRI_PLUGIN_IDX wins when the runtime started it)
    #[arg(long, value_name = "NN", default_value = "10")]
    pub idx: String,
}

/// The runtime's `plugin_registration_timeout` default: the registration is answered within it,
/// or the connection is given up.
const REGISTER_WITHIN: Duration = Duration::from_secs(5);
/// The first wait before connecting again; doubled after each failed try, up to [`BACKOFF_MAX`].
const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// The system log gets one line per (pod, reason) per this long.
pub const LOG_EVERY: Duration = Duration::from_secs(600);
/// The most bytes of the refusal's first line.
pub const FIRST_LINE_MAX: usize = 512;

pub fn run(args: &NriArgs, ctx: &Ctx) -> Result<u8, CmdError> {
    let root = &ctx.host.root;
    let Some(held) = nri_gate::hold(root)? else {
        return Err(format!(
            "another nfs-gds nri holds {}: one plugin per node",
            root.join(crate::host::io::out_dir::RUN_DIR)
                .join(nri_gate::LOCK)
                .display()
        )
        .into());
    };
    let env = Env::get();
    if let Some(fd) = env.nri_plugin_socket.as_deref() {
        let me = Identity {
            name: env
                .nri_plugin_name
                .clone()
                .unwrap_or_else(|| args.name.clone()),
            idx: env
                .nri_plugin_idx
                .clone()
                .unwrap_or_else(|| args.idx.clone()),
        };
        let mut conn = inherited(fd)?;
        let mut judge = Judge::new(ctx, &held, None);
        let end = plugin::serve(&mut conn, &me, REGISTER_WITHIN, &mut judge)?;
        tracing::info!("the runtime's connection ended ({end:?})");
        return Ok(super::exit::READY);
    }
    let me = Identity {
        name: args.name.clone(),
        idx: args.idx.clone(),
    };
    let path = root.join(args.socket.strip_prefix("/").unwrap_or(&args.socket));
    let mut judge = Judge::new(ctx, &held, Some(&args.socket));
    let mut wait = BACKOFF_MIN;
    loop {
        judge.registered = false;
        match UnixStream::connect(&path) {
            Ok(mut conn) => match plugin::serve(&mut conn, &me, REGISTER_WITHIN, &mut judge) {
                Ok(End::Shutdown) => {
                    tracing::info!("the runtime shut the plugin down");
                    return Ok(super::exit::READY);
                }
                Ok(End::Closed) => {
                    tracing::warn!("{}: the runtime closed the connection", path.display())
                }
                Err(e) => tracing::warn!("{}: {e}", path.display()),
            },
            Err(e) => tracing::warn!("cannot connect to {}: {e}", path.display()),
        }
        if judge.registered {
            wait = BACKOFF_MIN;
        }
        tracing::info!("connecting again in {} s", wait.as_secs());
        ctx.host.system().sleep(wait);
        wait = (wait * 2).min(BACKOFF_MAX);
    }
}

/// The connection a runtime started the plugin with: descriptor `fd` (from
/// `NRI_PLUGIN_SOCKET`), taken once.
#[allow(unsafe_code)]
fn inherited(fd: &str) -> Result<UnixStream, CmdError> {
    use std::os::fd::FromRawFd;
    let n: i32 = fd
        .parse()
        .ok()
        .filter(|n| *n > 2)
        .ok_or_else(|| format!("NRI_PLUGIN_SOCKET={fd:?} is not a descriptor above 2"))?;
    // SAFETY: the runtime that started this process passed descriptor `n` for the plugin's
    // connection and nothing else in this process uses it; it is taken exactly once, here.
    let stream = unsafe { UnixStream::from_raw_fd(n) };
    stream
        .local_addr()
        .map_err(|e| format!("NRI_PLUGIN_SOCKET={fd}: not a Unix socket: {e}"))?;
    Ok(stream)
}

/// The plugin's judge: each container to the gate, the answer said, counted and returned.
struct Judge<'a> {
    ctx: &'a Ctx,
    held: &'a Held,
    /// The runtime's socket as given (`None`: pre-registered).
    socket: Option<&'a Path>,
    /// Registered on the current connection.
    registered: bool,
    limit: LogLimit,
    /// Whether the mount table changed since it was read.
    change: MountsChange,
    /// The mountinfo and mountstats read, below the root ([`host_tables`]).
    tables: (&'static str, &'static str),
    /// The mountinfo and its mount points, read after the last change (`None`: never).
    mountinfo: Option<Result<MountInfoText, String>>,
    /// The NFS mounts read for containers since the last change, by the mount ids asked for
    /// (at most [`NFS_KEPT`] sets; a set whose read failed is read again when asked).
    nfs: RefCell<HashMap<Vec<u32>, Rc<MountTable>>>,
    /// The node facts and when they were read (at most [`FACTS_MAX_AGE`] old when used).
    facts: RefCell<Option<(Duration, Result<HostFacts, String>)>>,
    /// When the heap's free pages last went back, after a mount table was replaced.
    trim: Trim,
}

/// The oldest node facts an answer may rest on.
pub const FACTS_MAX_AGE: Duration = Duration::from_secs(60);
/// The most sets of NFS mounts kept between two mount events.
const NFS_KEPT: usize = 256;

/// When each (pod, line) last went to the system log, kept by a keyed hash of the two: kubelet
/// retries every refused pod for hours, and a refusal's line is some 400 bytes, so the text of
/// ten minutes of refusals would be megabytes; the hash is 8. SipHash with this process's
/// random key: a pod's name cannot be chosen to silence another pod's line.
#[derive(Debug, Default)]
struct LogLimit {
    key: std::hash::RandomState,
    logged: HashMap<u64, Duration>,
}

impl LogLimit {
    /// Whether `line` about `pod` goes to the system log at `now` (the monotonic clock): once
    /// per [`LOG_EVERY`].
    fn allow(&mut self, pod: &str, line: &str, now: Duration) -> bool {
        use std::hash::BuildHasher;
        if self.logged.len() > 4096 {
            self.logged
                .retain(|_, at| now.saturating_sub(*at) < LOG_EVERY);
        }
        let key = self.key.hash_one((pod, line));
        match self.logged.get(&key) {
            Some(at) if now.saturating_sub(*at) < LOG_EVERY => false,
            _ => {
                self.logged.insert(key, now);
                true
            }
        }
    }
}

impl<'a> Judge<'a> {
    fn new(ctx: &'a Ctx, held: &'a Held, socket: Option<&'a Path>) -> Self {
        Judge {
            ctx,
            held,
            socket,
            registered: false,
            limit: LogLimit::default(),
            // Opened before the first read, so no change after it is missed.
            change: MountsChange::open(&ctx.host.root, host_tables(&ctx.host.root).0),
            tables: host_tables(&ctx.host.root),
            mountinfo: None,
            nfs: RefCell::new(HashMap::new()),
            facts: RefCell::new(None),
            trim: Trim::default(),
        }
    }

    /// Reads the mount points again, and forgets the NFS mounts read, when a mount event
    /// happened since they were read (or always, where mountinfo is not procfs): the host's
    /// tables ([`host_tables`]), in whose namespace the runtime's bind sources are paths,
    /// whether the plugin runs on the host or in a pod. The new table is read into the old
    /// one's storage; then the heap's free pages go back, at most once a minute ([`Trim`]).
    fn refresh_mounts(&mut self) {
        if self.change.since_last() || self.mountinfo.is_none() {
            let root = &self.ctx.host.root;
            self.tables = host_tables(root);
            // The NFS mounts read rest on the old table: gone before it is.
            self.nfs.get_mut().clear();
            let spare = self.mountinfo.take().and_then(Result::ok);
            let text = read_mountinfo_text_into(root, self.tables.0, spare);
            self.mountinfo = Some(text.map_err(|e| e.to_string()));
            self.trim.maybe(self.ctx.host.system().now());
        }
    }

    /// The NFS mounts of `ids` and those that may share a server with them
    /// ([`MountInfoText::nfs_mounts_of`]): read once per set of ids between two mount events.
    fn nfs_mounts_of(&self, ids: &[u32]) -> Result<Rc<MountTable>, String> {
        if let Some(t) = self.nfs.borrow().get(ids) {
            return Ok(t.clone());
        }
        let text = match &self.mountinfo {
            Some(Ok(text)) => text,
            Some(Err(e)) => return Err(e.clone()),
            None => return Err("the mount table was not read".into()),
        };
        let table = text
            .nfs_mounts_of(&self.ctx.host.root, self.tables.1, ids)
            .map_err(|e| e.to_string())?;
        let table = Rc::new(table);
        let mut kept = self.nfs.borrow_mut();
        if kept.len() >= NFS_KEPT {
            kept.clear();
        }
        kept.insert(ids.to_vec(), table.clone());
        Ok(table)
    }

    /// The node facts, read again when older than [`FACTS_MAX_AGE`].
    fn facts(&self) -> Result<HostFacts, String> {
        let mut kept = self.facts.borrow_mut();
        let now = self.ctx.host.system().now();
        let fresh = kept
            .as_ref()
            .is_some_and(|(at, _)| now.saturating_sub(*at) < FACTS_MAX_AGE);
        if !fresh {
            let read = HostFacts::read(&self.ctx.host.root).map_err(|e| e.to_string());
            *kept = Some((now, read));
        }
        kept.as_ref().expect("set above").1.clone()
    }
}

impl Handler for Judge<'_> {
    fn registered(&mut self) {
        self.registered = true;
        tracing::info!("registered with the runtime");
        let at = self.ctx.host.system().wall_clock();
        if let Err(e) = self.held.registered(self.socket, at) {
            tracing::warn!("cannot record the registration: {e}");
        }
    }

    fn create_container(&mut self, request: &CreateContainerRequest) -> Result<(), String> {
        self.refresh_mounts();
        let root = &self.ctx.host.root;
        let (c, pod, who) = container_of(request);
        let policy = || self.ctx.policy_with_path().map(|(_, p)| p);
        let facts = || self.facts();
        let nfs = |ids: &[u32]| self.nfs_mounts_of(ids);
        let points = match self.mountinfo.as_ref().expect("refreshed above") {
            Ok(text) => Ok(text.points()),
            Err(e) => Err(e.as_str()),
        };
        let inputs = Inputs {
            root,
            system: self.ctx.host.system(),
            policy: &policy,
            kept: Some(Kept {
                points,
                nfs: &nfs,
                facts: &facts,
            }),
        };
        let (answer, noted) = container::decide(&c, &inputs);
        gate_voice::say_problems(root, &who, &noted.problems);
        gate_voice::say_unresolved(root, &who, &noted.unresolved);
        let when_unsure = match &answer {
            Answer::Unsure { .. } => {
                policy().map_or(WhenUnsure::default(), |p| p.oci_hook_when_unsure)
            }
            _ => WhenUnsure::default(),
        };
        let Some(said) = container::lines(&answer, &who, when_unsure) else {
            return Ok(());
        };
        let now = self.ctx.host.system().now();
        gate_voice::tell(root, &said, |line| self.limit.allow(&pod, line, now));
        if said.refused {
            Err(refusal(&said))
        } else {
            Ok(())
        }
    }
}

/// The NRI container of `request` as the container judge takes it: the pod's annotations, then
/// the container's; its mounts, devices and name; privileged when a device rule allows every
/// device (NRI 0.8 sends no privileged flag); with the pod (`namespace/name`) and how lines
/// name the container.
fn container_of(request: &CreateContainerRequest) -> (Container, String, String) {
    let pod = request.pod.clone().unwrap_or_default();
    let c = request.container.clone().unwrap_or_default();
    let pod_name = format!("{}/{}", pod.namespace, pod.name);
    let who = format!(
        "pod {} container {}",
        escape_control(&pod_name),
        escape_control(&c.name)
    );
    let mounts = c
        .mounts
        .into_iter()
        .map(|m| oci::OciMount {
            destination: m.destination,
            kind: Some(m.r#type).filter(|t| !t.is_empty()),
            source: Some(m.source),
            options: m.options,
        })
        .collect();
    let linux = c.linux.unwrap_or_default();
    let rules: Vec<oci::DeviceRule> = linux
        .resources
        .map(|r| r.devices.into_iter().map(device_rule).collect())
        .unwrap_or_default();
    let container = Container {
        annotations: vec![
            pod.annotations.into_iter().collect::<BTreeMap<_, _>>(),
            c.annotations.into_iter().collect(),
        ],
        mounts,
        devices: linux.devices.into_iter().map(|d| d.path.into()).collect(),
        privileged: oci::allows_every_device(&rules),
        name: Some(c.name).filter(|n| !n.is_empty()),
    };
    (container, pod_name, who)
}

fn device_rule(r: api::LinuxDeviceCgroup) -> oci::DeviceRule {
    oci::DeviceRule {
        allow: r.allow,
        kind: Some(r.r#type).filter(|t| !t.is_empty()),
        major: r.major.map(|v| v.value),
        minor: r.minor.map(|v| v.value),
        access: Some(r.access).filter(|a| !a.is_empty()),
    }
}

/// The error the runtime returns for a refused container: each refused volume's line (pod,
/// container path, export, reason), the first at most [`FIRST_LINE_MAX`] bytes, each followed
/// by its fix on a line of its own.
fn refusal(said: &Said) -> String {
    let mut out: Vec<String> = Vec::new();
    for (severity, line) in &said.lines {
        if *severity != Severity::Err {
            continue;
        }
        let (head, fix) = match line.split_once(FIX) {
            Some((h, f)) => (h, Some(f)),
            None => (line.as_str(), None),
        };
        out.push(cut(head, FIRST_LINE_MAX).to_string());
        if let Some(fix) = fix {
            out.push(format!("fix: {fix}"));
        }
    }
    out.join("\n")
}

/// `s` cut to at most `max` bytes, on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_puts_each_fix_under_its_line_and_cuts_the_first_line_at_512_bytes() {
        let long = format!("refusing pod ns/p container c: /data: {}", "é".repeat(400));
        let v = Said {
            lines: vec![
                (Severity::Err, format!("{long}{FIX}mount it over RDMA")),
                (Severity::Warning, "warning: not this".into()),
                (
                    Severity::Err,
                    format!("refusing pod ns/p container c: /ckpt: x{FIX}y"),
                ),
            ],
            refused: true,
        };
        let text = refusal(&v);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(
            lines[0].len() <= FIRST_LINE_MAX && lines[0].len() > 500,
            "{}",
            lines[0].len()
        );
        assert!(lines[0].starts_with("refusing pod ns/p container c: /data: "));
        assert_eq!(lines[1], "fix: mount it over RDMA");
        assert_eq!(lines[2], "refusing pod ns/p container c: /ckpt: x");
        assert_eq!(lines[3], "fix: y");
    }

    #[test]
    fn an_nri_container_becomes_the_gates_state_and_configuration() {
        let req = CreateContainerRequest {
            pod: Some(api::PodSandbox {
                name: "train-0".into(),
                namespace: "ml".into(),
                annotations: [("nfs-gds/gds".to_string(), "true".to_string())].into(),
                ..Default::default()
            }),
            container: Some(api::Container {
                id: "abc".into(),
                name: "trainer".into(),
                mounts: vec![api::Mount {
                    destination: "/data".into(),
                    r#type: "bind".into(),
                    source: "/mnt/gds/x".into(),
                    options: vec!["rbind".into()],
                }],
                linux: Some(api::LinuxContainer {
                    devices: vec![api::LinuxDevice {
                        path: "/dev/nvidia-fs0".into(),
                        r#type: "c".into(),
                    }],
                    resources: Some(api::LinuxResources {
                        devices: vec![api::LinuxDeviceCgroup {
                            allow: true,
                            access: "rwm".into(),
                            ..Default::default()
                        }],
                    }),
                }),
                ..Default::default()
            }),
        };
        let (c, pod, who) = container_of(&req);
        assert_eq!(pod, "ml/train-0");
        assert_eq!(who, "pod ml/train-0 container trainer");
        assert_eq!(
            c.annotations[0].get("nfs-gds/gds").map(String::as_str),
            Some("true")
        );
        assert!(c.mounts[0].is_bind());
        assert_eq!(c.name.as_deref(), Some("trainer"));
        assert_eq!(c.devices, [std::path::PathBuf::from("/dev/nvidia-fs0")]);
        assert!(c.privileged, "an allow-all device rule");
    }

    /// Between two mount events the NFS mounts read for a set of ids are kept (the files are
    /// not read again for it); a mount event forgets them, and the next answer reads the table
    /// as it stands. The fixture's table is judged, the mark polled is that of a real (private)
    /// mount namespace.
    #[test]
    fn the_nfs_mounts_read_are_kept_until_the_next_mount_event() {
        crate::testkit::in_private_mount_namespace(|| {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
            let write = |proto: &str| {
                std::fs::write(
                    dir.path().join("proc/self/mountinfo"),
                    format!("1 0 254:0 / / rw - ext4 /dev/vda rw\n40 1 0:50 / /mnt/gds rw - nfs4 10.0.2.15:/e rw,vers=4.2,proto={proto},addr=10.0.2.15\n"),
                )
                .unwrap();
            };
            write("tcp");
            let ctx = Ctx {
                host: crate::cli::host::Host::open(Some(dir.path())).unwrap(),
                config: None,
                style: crate::checks::render::TextStyle::default(),
            };
            let held = nri_gate::hold(&ctx.host.root).unwrap().unwrap();
            let mut j = Judge::new(&ctx, &held, None);
            j.change = MountsChange::open(
                &crate::host::Root::new(Path::new("/")),
                "proc/thread-self/mountinfo",
            );
            assert!(j.change.polled());
            j.change.since_last();
            let proto = |j: &Judge| {
                let t = j.nfs_mounts_of(&[40]).unwrap();
                t.mounts[0].option("proto").unwrap().to_string()
            };
            j.refresh_mounts();
            assert_eq!(proto(&j), "tcp");
            // Rewritten without a mount event: the answer rests on what was read.
            write("rdma");
            j.refresh_mounts();
            assert_eq!(proto(&j), "tcp", "kept between mount events");
            let mnt = tempfile::tempdir().unwrap();
            crate::testkit::mount_tmpfs(mnt.path());
            j.refresh_mounts();
            assert_eq!(proto(&j), "rdma", "read again after the mount event");
            nix::mount::umount(mnt.path()).unwrap();
        });
    }

    #[test]
    fn the_system_log_gets_one_line_per_pod_and_reason_per_ten_minutes() {
        let mut j = LogLimit::default();
        let t0 = Duration::from_secs(1000);
        assert!(j.allow("ml/a", "refusing x", t0));
        assert!(!j.allow("ml/a", "refusing x", t0 + Duration::from_secs(599)));
        assert!(j.allow("ml/b", "refusing x", t0 + Duration::from_secs(1)));
        assert!(j.allow("ml/a", "refusing y", t0 + Duration::from_secs(1)));
        assert!(j.allow("ml/a", "refusing x", t0 + Duration::from_secs(601)));
    }
}
