//! Mounts that appear on the target while the helper mounts, against a simulated kernel that
//! hands out mount ids and anonymous device minors lowest-free, as Linux does, keeps a pinned
//! mount's id and device taken after it is unmounted, and unmounts only the mount on top.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::kernel_table::{publish, NfsLine};
use super::*;
use crate::mount::args::HelperArgs;
use crate::mount::clock::SystemClock;
use crate::mount::fake::{FakeClock, RecordingMounter};
use crate::mount::mounter::MountStatus;
use crate::mount::unmount::{Pin, UnmountError};
use crate::nfs::OptionDefaults;
use crate::policy::file::parse;

const DIR: &str = "/mnt/gds";
const SPEC: &str = "10.0.2.15:/export";
const OTHER: &str = "10.0.2.99:/export";
/// Only the checks of the new mount are enforced: the node is not what these tests are about.
const POLICY: &str =
    "default = \"off\"\nmodprobe-rpcrdma = false\n[checks]\nmount-transport = \"enforce\"\nmount-options = \"enforce\"\n";

#[derive(Debug, Clone)]
struct KMount {
    id: u32,
    parent: u32,
    dev: u32,
    point: String,
    source: String,
    proto: &'static str,
    /// Unmounted, but still referenced by a pin: its id and device stay taken.
    detached: bool,
    pins: usize,
}

#[derive(Debug)]
struct Kernel {
    dir: PathBuf,
    mounts: Vec<KMount>,
    publishes: u64,
}

type Shared = Arc<Mutex<Kernel>>;

impl Kernel {
    fn new(dir: &Path) -> Shared {
        std::fs::create_dir_all(dir.join("proc/self")).unwrap();
        std::fs::create_dir_all(dir.join("proc/sys/kernel")).unwrap();
        std::fs::write(dir.join("proc/sys/kernel/osrelease"), "6.1.0-test\n").unwrap();
        let mut k = Kernel {
            dir: dir.to_owned(),
            mounts: Vec::new(),
            publishes: 0,
        };
        k.publish();
        Arc::new(Mutex::new(k))
    }

    /// The lowest number from `start` that no mount, attached or pinned, holds.
    fn lowest_free(&self, start: u32, f: impl Fn(&KMount) -> u32) -> u32 {
        (start..)
            .find(|i| !self.mounts.iter().any(|m| f(m) == *i))
            .unwrap()
    }

    fn top(&self, point: &str) -> Option<usize> {
        self.mounts
            .iter()
            .rposition(|m| !m.detached && m.point == point)
    }

    fn mount(&mut self, point: &str, source: &str, proto: &'static str) -> u32 {
        let id = self.lowest_free(70, |m| m.id);
        let dev = self.lowest_free(50, |m| m.dev);
        let parent = self.top(point).map_or(1, |i| self.mounts[i].id);
        self.mounts.push(KMount {
            id,
            parent,
            dev,
            point: point.into(),
            source: source.into(),
            proto,
            detached: false,
            pins: 0,
        });
        self.publish();
        id
    }

    /// `umount POINT` by anyone: the mount on top goes; a pinned one is detached and keeps its
    /// id and device until the last pin is dropped.
    fn unmount_top(&mut self, point: &str) -> bool {
        let Some(i) = self.top(point) else {
            return false;
        };
        if self.mounts[i].pins > 0 {
            self.mounts[i].detached = true;
        } else {
            self.mounts.remove(i);
        }
        self.publish();
        true
    }

    /// The helper's umount2 through a descriptor whose statx matched `mount`: only the mount on
    /// top of the point, and only when it has that id and device.
    fn unmount_exactly(&mut self, mount: &MountIdentity) -> Result<KMount, UnmountError> {
        let point = mount.mount_point.to_string_lossy().into_owned();
        let not = |why: &str| UnmountError::NotThatMount {
            target: mount.mount_point.clone(),
            why: why.into(),
        };
        let i = self.top(&point).ok_or_else(|| not("nothing mounted"))?;
        let m = self.mounts[i].clone();
        if m.id != mount.mount_id || format!("0:{}", m.dev) != mount.device {
            return Err(not("another mount is on top"));
        }
        self.unmount_top(&point);
        Ok(m)
    }

    fn pin(kernel: &Shared, mount: &MountIdentity) -> Option<Pin> {
        let mut k = kernel.lock().unwrap();
        let point = mount.mount_point.to_string_lossy().into_owned();
        let i = k.top(&point)?;
        let m = &mut k.mounts[i];
        if m.id != mount.mount_id || format!("0:{}", m.dev) != mount.device {
            return None;
        }
        m.pins += 1;
        Some(Box::new(PinGuard {
            kernel: kernel.clone(),
            id: m.id,
        }))
    }

    fn at(&self, point: &str) -> Vec<KMount> {
        self.mounts
            .iter()
            .filter(|m| !m.detached && m.point == point)
            .cloned()
            .collect()
    }

    fn publish(&mut self) {
        self.publishes += 1;
        let lines: Vec<NfsLine> = self
            .mounts
            .iter()
            .filter(|m| !m.detached)
            .map(|m| NfsLine {
                id: m.id,
                parent: m.parent,
                dev: m.dev,
                point: &m.point,
                source: &m.source,
                proto: m.proto,
            })
            .collect();
        let root = (
            "1 0 254:0 / / rw - ext4 /dev/vda rw\n",
            "device /dev/vda mounted on / with fstype ext4\n",
        );
        publish(&self.dir, self.publishes, root, &lines);
    }
}

/// A reference to a mount; the last one dropped frees a detached mount's id and device.
struct PinGuard {
    kernel: Shared,
    id: u32,
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        let mut k = self.kernel.lock().unwrap();
        if let Some(i) = k.mounts.iter().position(|m| m.id == self.id && m.pins > 0) {
            k.mounts[i].pins -= 1;
            if k.mounts[i].pins == 0 && k.mounts[i].detached {
                k.mounts.remove(i);
            }
        }
    }
}

/// A mounter on the simulated kernel: `on_mount` plays mount.nfs (taking the kernel's lock
/// only while it changes the table); unmounts go through
/// [`Kernel::unmount_exactly`] and are recorded by source in `unmounted`.
fn mounter(
    kernel: &Shared,
    pinning: bool,
    unmounted: Arc<Mutex<Vec<String>>>,
    on_mount: impl FnMut(&Shared) + 'static,
) -> RecordingMounter {
    let (k1, k2, k3) = (kernel.clone(), kernel.clone(), kernel.clone());
    let on_mount = Mutex::new(on_mount);
    let m = RecordingMounter::new(
        move |_| {
            (on_mount.lock().unwrap())(&k1);
            Ok(MountStatus::Exited(0))
        },
        move |mount| {
            let gone = k2.lock().unwrap().unmount_exactly(mount)?;
            unmounted.lock().unwrap().push(gone.source);
            Ok(())
        },
    );
    if pinning {
        m.pinning(move |mount| Kernel::pin(&k3, mount))
    } else {
        m
    }
}

struct Outcome {
    code: u8,
    err: String,
    calls: Vec<String>,
}

fn run_on(root: &Path, spec: &str, mut m: RecordingMounter, clock: &dyn Clock) -> Outcome {
    let args = HelperArgs {
        spec: spec.into(),
        dir: DIR.into(),
        options: vec!["rw".into()],
        ..Default::default()
    };
    let req = MountRequest::new(&args, OptionDefaults::default(), Path::new("/")).unwrap();
    let policy = parse(POLICY)
        .unwrap()
        .for_mount(&req.target, &req.spec, None, None);
    let root = Root::new(root);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = Helper {
        root: &root,
        mounter: &mut m,
        loader: None,
        clock,
        out: &mut out,
        err: &mut err,
    }
    .run(&req, &policy);
    Outcome {
        code,
        err: String::from_utf8(err).unwrap(),
        calls: m.calls,
    }
}

/// One helper on a fresh kernel whose mount.nfs does `on_mount` under the kernel's lock;
/// returns the kernel, the sources the helper unmounted, and the outcome.
fn once(
    pinning: bool,
    setup: impl FnOnce(&mut Kernel),
    on_mount: impl Fn(&mut Kernel) + 'static,
) -> (Shared, Vec<String>, Outcome) {
    let tree = tempfile::tempdir().unwrap();
    let kernel = Kernel::new(tree.path());
    setup(&mut kernel.lock().unwrap());
    let unmounted = Arc::new(Mutex::new(Vec::new()));
    let m = mounter(&kernel, pinning, unmounted.clone(), move |k| {
        on_mount(&mut k.lock().unwrap())
    });
    let o = run_on(tree.path(), SPEC, m, &FakeClock::default());
    let gone = unmounted.lock().unwrap().clone();
    (kernel, gone, o)
}

fn sources_at(kernel: &Shared) -> Vec<(String, &'static str)> {
    kernel
        .lock()
        .unwrap()
        .at(DIR)
        .into_iter()
        .map(|m| (m.source, m.proto))
        .collect()
}

/// Another server's TCP mount is on DIR before; during our mount.nfs it is unmounted and ours,
/// over TCP, appears. Unpinned (a fixture root), ours gets its id, device, parent and mount
/// point: only the source tells them apart. Pinned (a real host), ours gets a new id.
#[test]
fn a_mount_that_takes_the_identity_of_another_source_is_judged_and_unmounted() {
    for (pinning, id) in [(false, 70), (true, 71)] {
        let (kernel, unmounted, o) = once(
            pinning,
            |k| {
                k.mount(DIR, OTHER, "tcp");
            },
            |k| {
                k.unmount_top(DIR);
                k.mount(DIR, SPEC, "tcp");
            },
        );
        assert_eq!(o.code, 32, "{}", o.err);
        assert!(
            o.err.contains(&format!("nfs-gds: REFUSED {SPEC} on {DIR}: the new mount (id {id}) failed 2 checks under policy enforce; it was unmounted again")),
            "pinning {pinning}: {}",
            o.err
        );
        assert!(!o.err.contains("was there before"), "{}", o.err);
        assert_eq!(unmounted, [SPEC]);
        assert!(sources_at(&kernel).is_empty());
        // The pin is gone with the helper: the detached mount's id is free again.
        assert!(kernel.lock().unwrap().mounts.is_empty());
    }
}

/// Two new mounts of SPEC on DIR during one mount: both are judged; one over TCP refuses, and
/// since which one nfs-gds made cannot be told, neither is unmounted, and the message says so.
#[test]
fn every_new_mount_of_the_spec_is_judged_and_none_is_said_unmounted() {
    let (kernel, unmounted, o) = once(
        true,
        |_| {},
        |k| {
            k.mount(DIR, SPEC, "tcp");
            k.mount(DIR, SPEC, "rdma");
        },
    );
    assert_eq!(o.code, 32, "{}", o.err);
    assert!(
        o.err.contains(&format!("nfs-gds: REFUSED {SPEC} on {DIR}: 2 new mounts of it appeared during this mount (/mnt/gds of {SPEC} (mount id 70), /mnt/gds of {SPEC} (mount id 71))")),
        "{}",
        o.err
    );
    assert!(
        o.err
            .contains("nfs-gds: mount id 70 failed 2 checks under policy enforce:"),
        "{}",
        o.err
    );
    assert!(!o.err.contains("mount id 71 failed"), "{}", o.err);
    assert!(!o.err.contains("unmounted again"), "{}", o.err);
    assert!(unmounted.is_empty(), "{:?}", o.calls);
    assert_eq!(sources_at(&kernel).len(), 2);
}

/// Another server's mount lands on top of ours. Ours over TCP: refused, and not unmounted (a
/// detach would take theirs with it), loudly. Ours over RDMA, theirs over TCP: ours is kept,
/// theirs is not ours to judge or unmount.
#[test]
fn a_mount_of_another_source_on_top_is_neither_judged_nor_unmounted() {
    let (_, unmounted, o) = once(
        true,
        |_| {},
        |k| {
            k.mount(DIR, SPEC, "tcp");
            k.mount(DIR, OTHER, "rdma");
        },
    );
    assert_eq!(o.code, 32, "{}", o.err);
    assert!(
        o.err.contains(&format!("nfs-gds: during this mount, a mount of another source appeared on {DIR}: {DIR} of {OTHER} (mount id 71); not nfs-gds's")),
        "{}",
        o.err
    );
    assert!(
        o.err.contains(
            "the new mount (id 70) failed 2 checks under policy enforce; it was NOT unmounted"
        ) && o.err.contains("another mount (id 71) is now on top of it"),
        "{}",
        o.err
    );
    assert!(unmounted.is_empty(), "{:?}", o.calls);

    let (kernel, unmounted, o) = once(
        true,
        |_| {},
        |k| {
            k.mount(DIR, SPEC, "rdma");
            k.mount(DIR, OTHER, "tcp");
        },
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert!(unmounted.is_empty(), "{:?}", o.calls);
    assert_eq!(
        sources_at(&kernel),
        [(SPEC.to_string(), "rdma"), (OTHER.to_string(), "tcp")]
    );
}

/// Two helpers on one mount point at once, with random mount.nfs latency: one server mounts
/// over RDMA, the other falls back to TCP. Every round, the TCP mount is gone, the RDMA mount
/// is kept and verified, and no helper unmounts the other's mount.
#[test]
fn two_helpers_on_one_target_never_keep_a_refused_mount() {
    const ROUNDS: usize = 60;
    let tree = tempfile::tempdir().unwrap();
    let kernel = Kernel::new(tree.path());
    let mut seed = 0x5eed_u64;
    let mut pause = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        Duration::from_micros((seed >> 33) % 3000)
    };
    let mut failures = Vec::new();
    for round in 0..ROUNDS {
        let helpers: Vec<_> = [("10.0.3.1:/e", "rdma"), ("10.0.3.2:/e", "tcp")]
            .into_iter()
            .map(|(spec, proto)| {
                let (kernel, root) = (kernel.clone(), tree.path().to_owned());
                let (before, during) = (pause(), pause());
                std::thread::spawn(move || {
                    let unmounted = Arc::new(Mutex::new(Vec::new()));
                    let m = mounter(&kernel, true, unmounted.clone(), move |k| {
                        // mount.nfs takes its time, then the mount appears, then it returns.
                        std::thread::sleep(before);
                        k.lock().unwrap().mount(DIR, spec, proto);
                        std::thread::sleep(during);
                    });
                    std::thread::sleep(during);
                    let o = run_on(&root, spec, m, &SystemClock::new());
                    let gone = unmounted.lock().unwrap().clone();
                    (spec, proto, o, gone)
                })
            })
            .collect();
        for h in helpers {
            let (spec, proto, o, gone) = h.join().unwrap();
            let want = if proto == "rdma" { 0 } else { 32 };
            if o.code != want || gone.iter().any(|s| s != spec) {
                failures.push(format!("round {round}: {spec} exit {}: {}", o.code, o.err));
            }
        }
        let left = sources_at(&kernel);
        if left != [("10.0.3.1:/e".to_string(), "rdma")] {
            failures.push(format!("round {round}: left on {DIR}: {left:?}"));
        }
        let mut k = kernel.lock().unwrap();
        while k.unmount_top(DIR) {}
    }
    assert!(
        failures.is_empty(),
        "{} of {ROUNDS} rounds: {failures:#?}",
        failures.len()
    );
}
