//! Mounts that appear on the target while the helper mounts, against a simulated kernel that
//! hands out mount ids and anonymous device minors lowest-free, as Linux does, keeps a pinned
//! mount's id and device taken after it is unmounted, unmounts only the mount on top, and names
//! a mount that shares an NFS superblock after that superblock's first mount
//! ([`kernel_table`](super::kernel_table) says which kernel behaviours are modelled).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::kernel_table::{name_new_mount, publish, NfsLine, HOSTS};
use super::*;
use crate::host::io::tree_system::TreeSystem;
use crate::mount::args::HelperArgs;
use crate::mount::fake::RecordingMounter;
use crate::mount::mounter::MountStatus;
use crate::mount::unmount::{Pin, UnmountError};
use crate::nfs::OptionDefaults;
use crate::policy::file::parse;
use crate::system::Live;

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
    addr: String,
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
        std::fs::create_dir_all(dir.join("etc")).unwrap();
        std::fs::write(dir.join("etc/hosts"), HOSTS).unwrap();
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

    /// `mount -t nfs4 -o proto=PROTO SPEC POINT`: shares the superblock of a mount of the same
    /// export from the same machine, named after it and on its transport, else a new one.
    fn mount(&mut self, point: &str, spec: &str, proto: &'static str) -> u32 {
        let id = self.lowest_free(70, |m| m.id);
        let sb = name_new_mount(
            self.mounts
                .iter()
                .map(|m| (m.dev, m.source.as_str(), m.proto, m.addr.as_str())),
            spec,
            proto,
            || self.lowest_free(50, |m| m.dev),
        );
        let parent = self.top(point).map_or(1, |i| self.mounts[i].id);
        self.mounts.push(KMount {
            id,
            parent,
            dev: sb.dev,
            point: point.into(),
            source: sb.source,
            proto: sb.proto,
            addr: sb.addr,
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
                addr: &m.addr,
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

/// Runs the helper below `root` as `mount.nfs-gds --root` would: the tree's system (its
/// `etc/hosts` resolves the names, the machine's clock keeps the time).
fn run_on(root: &Path, spec: &str, mut m: RecordingMounter) -> Outcome {
    let args = HelperArgs {
        spec: spec.into(),
        dir: DIR.into(),
        options: vec!["rw".into()],
        ..Default::default()
    };
    let req = MountRequest::new(&args, OptionDefaults::default(), Path::new("/")).unwrap();
    let policy = parse(POLICY).unwrap().for_mount(
        &req.target,
        crate::nfs::ShownExport::written(&req.spec),
        &crate::nfs::ServerAddrs::blind(),
        None,
        None,
    );
    let root = Root::new(root);
    let system = TreeSystem::new(root.clone(), Live::new(true));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = Helper {
        root: &root,
        system: &system,
        mounter: &mut m,
        modprobe: None,
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
    let o = run_on(tree.path(), SPEC, m);
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

/// Two new mounts of SPEC on DIR during one mount (another mount of the same source ran beside
/// ours): the second shares the first's superblock and transport, as on the real kernel. Both
/// are judged and refused; which one nfs-gds made cannot be told, so neither is unmounted, and
/// the message names both and how to remove them.
#[test]
fn two_new_mounts_of_the_spec_are_both_refused_named_and_left_with_the_way_to_remove_them() {
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
    for id in [70, 71] {
        assert!(
            o.err.contains(&format!(
                "nfs-gds: mount id {id} failed 2 checks under policy enforce:"
            )),
            "{}",
            o.err
        );
    }
    assert!(
        o.err.contains(
            "`umount /mnt/gds` removes the mount on top; run it 2 times to reach mount id 70"
        ),
        "{}",
        o.err
    );
    assert!(!o.err.contains("unmounted again"), "{}", o.err);
    assert!(unmounted.is_empty(), "{:?}", o.calls);
    assert_eq!(sources_at(&kernel).len(), 2);
}

/// The transport trap on the real kernel: an export of the same machine is mounted over TCP
/// under another address (127.0.0.1) or a name (nfs-gds-vm). The helper's mount of
/// 10.0.2.15:/export shares that superblock, runs over TCP, and is shown under the first
/// mount's name: it is still the helper's own, refused and unmounted; the first mount stays.
#[test]
fn the_trap_mount_shown_under_a_shared_superblocks_name_is_refused_and_unmounted() {
    for first in ["127.0.0.1:/export", "nfs-gds-vm:/export/"] {
        for pinning in [false, true] {
            let (kernel, unmounted, o) = once(
                pinning,
                |k| {
                    k.mount("/mnt/lo", first, "tcp");
                },
                |k| {
                    k.mount(DIR, SPEC, "rdma");
                },
            );
            let shown = first.trim_end_matches('/');
            assert_eq!(o.code, 32, "{first}: {}", o.err);
            assert!(
                o.err.contains(&format!(
                    "nfs-gds: REFUSED {SPEC} on {DIR}: the new mount (id 71) failed"
                )),
                "{first}: {}",
                o.err
            );
            assert!(o.err.contains("it was unmounted again"), "{}", o.err);
            assert!(!o.err.contains("no mount appeared"), "{}", o.err);
            assert!(!o.err.contains("not nfs-gds's"), "{}", o.err);
            assert_eq!(unmounted, [shown], "{first}");
            assert!(sources_at(&kernel).is_empty(), "{first}");
            let k = kernel.lock().unwrap();
            let lo = k.at("/mnt/lo");
            assert_eq!(lo.len(), 1, "{first}: the first mount is untouched");
            assert_eq!((lo[0].source.as_str(), lo[0].proto), (shown, "tcp"));
        }
    }
    // Under another address the table alone cannot tie the mount to SPEC: the helper says why
    // it is its own.
    let (_, _, o) = once(
        true,
        |k| {
            k.mount("/mnt/lo", "127.0.0.1:/export", "tcp");
        },
        |k| {
            k.mount(DIR, SPEC, "rdma");
        },
    );
    assert!(
        o.err.contains(
            "as 127.0.0.1:/export: it shares the NFS superblock of mount id 70 (127.0.0.1:/export)"
        ),
        "{}",
        o.err
    );
}

/// The same with an accepted RDMA mount first, under the server's name: the helper's mount of
/// the address comes up over RDMA on the shared superblock, is kept, and its record names both
/// what the kernel shows and what was asked.
#[test]
fn a_good_mount_shown_under_the_servers_name_is_kept_and_recorded_with_the_spec() {
    let tree = tempfile::tempdir().unwrap();
    let kernel = Kernel::new(tree.path());
    kernel
        .lock()
        .unwrap()
        .mount("/mnt/a", "nfs-gds-vm:/export", "rdma");
    let unmounted = Arc::new(Mutex::new(Vec::new()));
    let m = mounter(&kernel, true, unmounted.clone(), |k| {
        k.lock().unwrap().mount(DIR, SPEC, "tcp");
    });
    let o = run_on(tree.path(), SPEC, m);
    assert_eq!(o.code, 0, "{}", o.err);
    assert!(unmounted.lock().unwrap().is_empty());
    assert_eq!(
        sources_at(&kernel),
        [("nfs-gds-vm:/export".to_string(), "rdma")]
    );
    let (records, bad) = crate::mount::record::read_records(&Root::new(tree.path())).unwrap();
    assert!(bad.is_empty(), "{bad:?}");
    assert_eq!(records.len(), 1);
    assert_eq!(
        (records[0].source.as_str(), records[0].spec.as_str()),
        ("nfs-gds-vm:/export", SPEC)
    );
}

/// A plain `mount -t nfs` of another server lands on DIR during the helper's mount.nfs: a new
/// superblock, or one shared with that server's earlier mount. It is neither judged nor
/// unmounted; the helper's own mount beside it is judged alone.
#[test]
fn another_servers_plain_mount_on_the_target_is_neither_judged_nor_unmounted() {
    for other_mounted_before in [false, true] {
        let (kernel, unmounted, o) = once(
            true,
            |k| {
                if other_mounted_before {
                    k.mount("/mnt/o", OTHER, "tcp");
                }
            },
            |k| {
                k.mount(DIR, SPEC, "rdma");
                k.mount(DIR, OTHER, "tcp");
            },
        );
        assert_eq!(o.code, 0, "{}", o.err);
        assert!(
            o.err
                .contains("a mount of another server or export appeared on /mnt/gds"),
            "{}",
            o.err
        );
        assert!(unmounted.is_empty(), "{:?}", o.calls);
        assert_eq!(
            sources_at(&kernel),
            [(SPEC.to_string(), "rdma"), (OTHER.to_string(), "tcp")]
        );
    }
    // Only the other server's mount, on a new superblock, and none of ours: not judged,
    // not unmounted, and the message says what appeared instead of "no mount".
    let (kernel, unmounted, o) = once(
        true,
        |_| {},
        |k| {
            k.mount(DIR, OTHER, "tcp");
        },
    );
    assert_eq!(o.code, 32, "{}", o.err);
    assert!(unmounted.is_empty(), "{:?}", o.calls);
    assert!(!o.err.contains("no mount appeared"), "{}", o.err);
    assert!(
        o.err.contains(&format!(
            "the only new mounts on {DIR} are not of {SPEC}'s export"
        )),
        "{}",
        o.err
    );
    assert_eq!(sources_at(&kernel), [(OTHER.to_string(), "tcp")]);
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
        o.err.contains(&format!("nfs-gds: during this mount, a mount of another server or export appeared on {DIR}: {DIR} of {OTHER} (mount id 71); not nfs-gds's")),
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
                    let o = run_on(&root, spec, m);
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
