//! The helper against a simulated kernel, with other mounts coming and going on DIR: what it
//! mounts lands on its own staging point, so whatever appears on DIR meanwhile is never judged,
//! unmounted or taken for its own, and a refused mount never appears on DIR at all.
//!
//! The kernel hands out mount ids and anonymous device minors lowest-free, names a mount that
//! shares an NFS superblock after that superblock's first mount ([`kernel_table`](super::kernel_table)
//! says which behaviours are modelled, each seen in the VM suite first), unmounts only the mount
//! on top, and moves a mount by the identity its descriptor holds, keeping its id, onto the top
//! of DIR. Every mount and move that targets DIR is logged, so a test can say that nothing
//! reached DIR, not for a moment.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::kernel_table::{name_new_mount, publish, NfsLine, HOSTS};
use super::*;
use crate::host::io::tree_system::TreeSystem;
use crate::mount::args::HelperArgs;
use crate::mount::fake::RecordingMounter;
use crate::mount::identity::MountIdentity;
use crate::mount::mounter::MountStatus;
use crate::mount::mover::MoveError;
use crate::mount::unmount::UnmountError;
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
}

#[derive(Debug)]
struct Kernel {
    dir: PathBuf,
    mounts: Vec<KMount>,
    publishes: u64,
    /// Every mount or move whose target was DIR, as "mount SOURCE PROTO" / "move SOURCE PROTO".
    on_dir: Vec<String>,
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
            on_dir: Vec::new(),
        };
        k.publish();
        Arc::new(Mutex::new(k))
    }

    fn lowest_free(&self, start: u32, f: impl Fn(&KMount) -> u32) -> u32 {
        (start..)
            .find(|i| !self.mounts.iter().any(|m| f(m) == *i))
            .unwrap()
    }

    fn top(&self, point: &str) -> Option<usize> {
        self.mounts.iter().rposition(|m| m.point == point)
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
        if point == DIR {
            self.on_dir
                .push(format!("mount {} {}", sb.source, sb.proto));
        }
        self.mounts.push(KMount {
            id,
            parent,
            dev: sb.dev,
            point: point.into(),
            source: sb.source,
            proto: sb.proto,
            addr: sb.addr,
        });
        self.publish();
        id
    }

    /// `umount POINT` by anyone: the mount on top goes.
    fn unmount_top(&mut self, point: &str) -> bool {
        let Some(i) = self.top(point) else {
            return false;
        };
        self.mounts.remove(i);
        self.publish();
        true
    }

    /// The mount on top of `point`, when it has `mount`'s id and device.
    fn exactly(&self, mount: &MountIdentity) -> Result<usize, String> {
        let point = mount.mount_point.to_string_lossy().into_owned();
        let i = self.top(&point).ok_or("nothing mounted")?;
        let m = &self.mounts[i];
        if m.id != mount.mount_id || format!("0:{}", m.dev) != mount.device {
            return Err("another mount is on top".into());
        }
        Ok(i)
    }

    /// The helper's umount2 through a descriptor whose statx matched `mount`.
    fn unmount_exactly(&mut self, mount: &MountIdentity) -> Result<KMount, UnmountError> {
        let i = self
            .exactly(mount)
            .map_err(|why| UnmountError::NotThatMount {
                target: mount.mount_point.clone(),
                why,
            })?;
        let m = self.mounts.remove(i);
        self.publish();
        Ok(m)
    }

    /// move_mount(2) of the mount a descriptor holds onto the top of `target`, keeping its id.
    fn move_exactly(&mut self, mount: &MountIdentity, target: &Path) -> Result<(), MoveError> {
        let i = self.exactly(mount).map_err(|why| MoveError::NotThatMount {
            staged: mount.mount_point.clone(),
            why,
        })?;
        let mut m = self.mounts.remove(i);
        let point = target.to_string_lossy().into_owned();
        m.parent = self.top(&point).map_or(1, |t| self.mounts[t].id);
        if point == DIR {
            self.on_dir.push(format!("move {} {}", m.source, m.proto));
        }
        m.point = point;
        self.mounts.push(m);
        self.publish();
        Ok(())
    }

    fn at(&self, point: &str) -> Vec<KMount> {
        self.mounts
            .iter()
            .filter(|m| m.point == point)
            .cloned()
            .collect()
    }

    fn publish(&mut self) {
        self.publishes += 1;
        let lines: Vec<NfsLine> = self
            .mounts
            .iter()
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

/// A mounter on the simulated kernel: `on_mount` plays mount.nfs given the staging point and
/// answers its exit code; unmounts and moves go through the kernel by identity, unmounts
/// recorded by source in `unmounted`.
fn mounter(
    kernel: &Shared,
    unmounted: Arc<Mutex<Vec<String>>>,
    on_mount: impl FnMut(&mut Kernel, &str) -> i32 + 'static,
) -> RecordingMounter {
    let (k1, k2, k3) = (kernel.clone(), kernel.clone(), kernel.clone());
    let on_mount = Mutex::new(on_mount);
    RecordingMounter::new(
        move |call| {
            let point = call.target.to_string_lossy().into_owned();
            let code = (on_mount.lock().unwrap())(&mut k1.lock().unwrap(), &point);
            Ok(MountStatus::Exited(code))
        },
        move |mount| {
            let gone = k2.lock().unwrap().unmount_exactly(mount)?;
            unmounted.lock().unwrap().push(gone.source);
            Ok(())
        },
    )
    .moving(move |staged, target| k3.lock().unwrap().move_exactly(staged, target))
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
    let code = Helper::new(&root, &mut m, None, &system, &mut out, &mut err).run(&req, &policy);
    Outcome {
        code,
        err: String::from_utf8(err).unwrap(),
        calls: m.calls,
    }
}

/// One helper on a fresh kernel whose mount.nfs does `on_mount` (given the staging point);
/// returns the kernel, the sources the helper unmounted, and the outcome.
fn once(
    setup: impl FnOnce(&mut Kernel),
    on_mount: impl FnMut(&mut Kernel, &str) -> i32 + 'static,
) -> (Shared, Vec<String>, Outcome, tempfile::TempDir) {
    let tree = tempfile::tempdir().unwrap();
    let kernel = Kernel::new(tree.path());
    setup(&mut kernel.lock().unwrap());
    let unmounted = Arc::new(Mutex::new(Vec::new()));
    let m = mounter(&kernel, unmounted.clone(), on_mount);
    let o = run_on(tree.path(), SPEC, m);
    let gone = unmounted.lock().unwrap().clone();
    (kernel, gone, o, tree)
}

fn sources_at(kernel: &Shared, point: &str) -> Vec<(String, &'static str)> {
    kernel
        .lock()
        .unwrap()
        .at(point)
        .into_iter()
        .map(|m| (m.source, m.proto))
        .collect()
}

/// What the staging area holds after a run: nothing, when the run cleaned up.
fn left_in_stage(tree: &Path) -> Vec<String> {
    std::fs::read_dir(tree.join("run/nfs-gds/stage"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The transport trap through another address (the VM's s4d): `127.0.0.1:/export` is mounted
/// over TCP first; the helper's mount of `10.0.2.15:/export` shares its superblock, so it comes
/// up over TCP and is shown as `127.0.0.1:/export`. It is the helper's own all the same (it is on
/// its staging point), refused and unmounted there; nothing ever reaches DIR, and the first
/// mount is untouched.
#[test]
fn the_trap_mount_under_a_shared_superblocks_name_never_reaches_dir() {
    for first in ["127.0.0.1:/export", "nfs-gds-vm:/export/"] {
        let (kernel, unmounted, o, tree) = once(
            |k| {
                k.mount("/mnt/tcp", first, "tcp");
            },
            |k, staged| {
                k.mount(staged, SPEC, "rdma");
                0
            },
        );
        let shown = first.trim_end_matches('/');
        assert_eq!(o.code, 32, "{first}: {}", o.err);
        assert!(
            o.err.contains(&format!(
                "nfs-gds: REFUSED {SPEC} on {DIR}: the new mount failed 2 checks under policy enforce; it was unmounted before it reached {DIR}, where nothing was mounted"
            )),
            "{first}: {}",
            o.err
        );
        assert!(!o.err.contains("run/nfs-gds/stage"), "{}", o.err);
        assert_eq!(unmounted, [shown], "{first}");
        let k = kernel.lock().unwrap();
        assert!(k.on_dir.is_empty(), "{first}: {:?}", k.on_dir);
        let tcp = k.at("/mnt/tcp");
        assert_eq!(tcp.len(), 1, "{first}: the first mount is untouched");
        assert_eq!((tcp[0].source.as_str(), tcp[0].proto), (shown, "tcp"));
        assert!(left_in_stage(tree.path()).is_empty());
        assert!(
            !o.calls.iter().any(|c| c.starts_with("move")),
            "{:?}",
            o.calls
        );
    }
}

/// The helper's own mount.nfs fails (exit 32), or does nothing and exits 0, while another process
/// mounts on DIR — the same export over TCP, or another server's export that shares an earlier
/// superblock. That mount is never judged, unmounted or reported as the helper's.
#[test]
fn a_strangers_mount_on_dir_while_mount_nfs_fails_is_never_touched() {
    for (code, stranger) in [(32, SPEC), (0, SPEC), (32, OTHER), (0, OTHER)] {
        let (kernel, unmounted, o, tree) = once(
            |k| {
                k.mount("/mnt/other", OTHER, "rdma");
            },
            move |k, _staged| {
                k.mount(DIR, stranger, "tcp");
                code
            },
        );
        assert_eq!(o.code, 32, "{code} {stranger}: {}", o.err);
        assert!(unmounted.is_empty(), "{code} {stranger}: {unmounted:?}");
        assert!(!o.err.contains("REFUSED"), "{}", o.err);
        assert!(
            o.err.contains(&format!("nothing was mounted on {DIR}")),
            "{code} {stranger}: {}",
            o.err
        );
        assert_eq!(
            sources_at(&kernel, DIR).len(),
            1,
            "the stranger's mount stays"
        );
        assert!(left_in_stage(tree.path()).is_empty());
    }
}

/// Any unrelated NFS mount appearing anywhere during the helper's mount.nfs (kubelet's, all day
/// on a Kubernetes node) changes nothing: the helper's TCP mount is still refused and unmounted.
#[test]
fn an_unrelated_mount_meanwhile_does_not_keep_a_refused_mount() {
    let (kernel, unmounted, o, _tree) = once(
        |_| {},
        |k, staged| {
            k.mount("/var/lib/kubelet/pods/x/volumes/nfs", OTHER, "tcp");
            k.mount(staged, SPEC, "tcp");
            0
        },
    );
    assert_eq!(o.code, 32, "{}", o.err);
    assert_eq!(unmounted, [SPEC]);
    assert!(sources_at(&kernel, DIR).is_empty());
    assert_eq!(
        sources_at(&kernel, "/var/lib/kubelet/pods/x/volumes/nfs"),
        [(OTHER.to_string(), "tcp")]
    );
}

/// A good mount is moved onto DIR, on top of a stranger's mount that was there before, which
/// stays under it; it keeps its id, and the record names it.
#[test]
fn a_good_mount_is_moved_onto_dir_over_what_was_there() {
    let (kernel, unmounted, o, tree) = once(
        |k| {
            k.mount(DIR, OTHER, "tcp");
        },
        |k, staged| {
            k.mount(staged, SPEC, "rdma");
            0
        },
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert!(unmounted.is_empty());
    assert_eq!(
        sources_at(&kernel, DIR),
        [(OTHER.to_string(), "tcp"), (SPEC.to_string(), "rdma")]
    );
    let k = kernel.lock().unwrap();
    assert_eq!(
        k.on_dir,
        ["mount 10.0.2.99:/export tcp", "move 10.0.2.15:/export rdma"]
    );
    let moved = k.at(DIR)[1].clone();
    drop(k);
    // `umount DIR` takes the helper's mount; the stranger's is still there under it.
    assert!(kernel.lock().unwrap().unmount_top(DIR));
    assert_eq!(sources_at(&kernel, DIR), [(OTHER.to_string(), "tcp")]);
    assert_eq!(
        moved.id, 71,
        "the move keeps the id the mount had on the staging point"
    );
    let (records, bad) = crate::mount::record::read_records(&Root::new(tree.path())).unwrap();
    assert!(bad.is_empty(), "{bad:?}");
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].target, DIR);
    assert!(left_in_stage(tree.path()).is_empty());
}

/// `mount DIR` again (or `mount -a`) where DIR already carries this export: the staged mount
/// shares DIR's superblock and root, so no second copy is stacked; the staged one is unmounted
/// and the mount on DIR is verified as it is.
#[test]
fn no_second_copy_of_a_mount_is_stacked_on_dir() {
    for proto in ["rdma", "tcp"] {
        let (kernel, unmounted, o, _tree) = once(
            move |k| {
                k.mount(DIR, SPEC, proto);
            },
            |k, staged| {
                k.mount(staged, SPEC, "rdma");
                0
            },
        );
        assert_eq!(unmounted, [SPEC], "the staged copy");
        assert_eq!(sources_at(&kernel, DIR), [(SPEC.to_string(), proto)]);
        assert!(
            o.err.contains(&format!(
                "{DIR} was already mounted (mount id 70, {SPEC}) and nfs-gds stacks no second copy of it; verifying that mount"
            )),
            "{}",
            o.err
        );
        if proto == "rdma" {
            assert_eq!(o.code, 0, "{}", o.err);
        } else {
            assert_eq!(o.code, 32, "{}", o.err);
            assert!(o.err.contains("so nfs-gds leaves it mounted"), "{}", o.err);
        }
    }
}

/// A helper killed between mount.nfs and the move (SIGKILL) leaves its directory and its mount
/// behind: the next run sweeps them (its lock is free), while a live run's directory, whose lock
/// is held, survives the sweep.
#[test]
fn a_dead_runs_staging_is_swept_and_a_live_ones_is_not() {
    use rustix::fs::FlockOperation;
    let tree = tempfile::tempdir().unwrap();
    let area = tree.path().join("run/nfs-gds/stage");
    for name in ["dead", "live"] {
        std::fs::create_dir_all(area.join(name).join("mnt")).unwrap();
        std::fs::write(area.join(name).join("lock"), "").unwrap();
    }
    use std::os::unix::fs::PermissionsExt;
    for d in ["run", "run/nfs-gds", "run/nfs-gds/stage"] {
        std::fs::set_permissions(tree.path().join(d), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    let live_lock = std::fs::File::open(area.join("live/lock")).unwrap();
    rustix::fs::flock(&live_lock, FlockOperation::NonBlockingLockExclusive).unwrap();
    let kernel = Kernel::new(tree.path());
    kernel
        .lock()
        .unwrap()
        .mount("/run/nfs-gds/stage/dead/mnt", SPEC, "tcp");
    kernel
        .lock()
        .unwrap()
        .mount("/run/nfs-gds/stage/live/mnt", OTHER, "rdma");
    let unmounted = Arc::new(Mutex::new(Vec::new()));
    let m = mounter(&kernel, unmounted.clone(), |k, staged| {
        k.mount(staged, SPEC, "rdma");
        0
    });
    let o = run_on(tree.path(), SPEC, m);
    assert_eq!(o.code, 0, "{}", o.err);
    assert!(
        o.err.contains(
            "cleaned up after an nfs-gds helper that did not finish: /run/nfs-gds/stage/dead (unmounted /run/nfs-gds/stage/dead/mnt)"
        ),
        "{}",
        o.err
    );
    assert_eq!(*unmounted.lock().unwrap(), [SPEC]);
    assert_eq!(left_in_stage(tree.path()), ["live"]);
    assert_eq!(
        sources_at(&kernel, "/run/nfs-gds/stage/live/mnt"),
        [(OTHER.to_string(), "rdma")]
    );
    assert_eq!(sources_at(&kernel, DIR), [(SPEC.to_string(), "rdma")]);
    drop(live_lock);
}

/// Every reader but the helper leaves the staging area out: a refused TCP mount sitting there
/// is no node mount (the agent's readiness, `check`, `verify` read this table).
#[test]
fn other_readers_never_see_a_staged_mount() {
    let tree = tempfile::tempdir().unwrap();
    let kernel = Kernel::new(tree.path());
    kernel
        .lock()
        .unwrap()
        .mount("/run/nfs-gds/stage/123/mnt", SPEC, "tcp");
    let root = Root::new(tree.path());
    let table = read_mount_table(&root).unwrap();
    assert!(table.mounts.iter().all(|m| !m.is_nfs()), "{table:?}");
    let seen = crate::host::mounts::read_mount_table_in_flight(&root).unwrap();
    assert_eq!(seen.mounts.iter().filter(|m| m.is_nfs()).count(), 1);
}
