//! The flow against fixture trees, with recording fakes for every side effect.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use super::*;
use crate::mount::args::HelperArgs;
use crate::mount::fake::{failed_status, FakeClock, RecordingLoader, RecordingMounter};
use crate::mount::modprobe::LoadError;
use crate::mount::mounter::{MountStatus, UnmountError};
use crate::nfs::OptionDefaults;
use crate::policy::file::parse;

const BEFORE: &str = "\
1 0 254:0 / / rw - ext4 /dev/vda rw
21 1 0:21 / /proc rw - proc proc rw
";
const BEFORE_STATS: &str = "\
device /dev/vda mounted on / with fstype ext4
device proc mounted on /proc with fstype proc
";

fn nfs_line(id: u32, target: &str, proto: &str) -> String {
    let port = if proto == "tcp" { "" } else { ",port=20049" };
    format!("{id} 1 0:50 / {target} rw,relatime - nfs4 10.0.2.15:/export rw,vers=4.2,proto={proto}{port},addr=10.0.2.15\n")
}

fn nfs_stats(target: &str, proto: &str) -> String {
    let port = if proto == "tcp" { "" } else { ",port=20049" };
    format!(
        "device 10.0.2.15:/export mounted on {target} with fstype nfs4 statvers=1.1\n\
\topts:\trw,vers=4.2,rsize=262144,hard,proto={proto}{port},timeo=600\n\
\tRPC iostats version: 1.1  p/v: 100003/4 (nfs)\n\
\txprt:\t{proto} 0 0 1 0 0 121 121 0 1096 0 131 1 11\n"
    )
}

/// A node ready for GDS (nvidia_fs loaded, a built-in rpcrdma with GPL hooks) and a table.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Self {
        let t = Tree {
            dir: tempfile::tempdir().unwrap(),
        };
        t.write("proc/sys/kernel/osrelease", "6.1.0-test\n");
        t.write("proc/modules", "nvidia_fs 262144 0 - Live 0x0 (OE)\n");
        t.write("sys/module/nvidia_fs/version", "2.28.4\n");
        t.write("dev/nvidia-fs0", "");
        t.write("lib/modules/6.1.0-test/modules.dep", "");
        t.write(
            "lib/modules/6.1.0-test/modules.builtin",
            "kernel/net/sunrpc/xprtrdma/rpcrdma.ko\n",
        );
        t.write(
            "proc/kallsyms",
            "0000000000000000 t rpcrdma_register_nvfs_dma_ops\n0000000000000000 t rpcrdma_unregister_nvfs_dma_ops\n",
        );
        t.table(BEFORE, BEFORE_STATS);
        t
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, rel: &str, text: &str) {
        write_below(self.path(), rel, text);
    }

    fn table(&self, info: &str, stats: &str) {
        self.write("proc/self/mountinfo", info);
        self.write("proc/self/mountstats", stats);
    }

    fn root(&self) -> Root {
        Root::new(self.path())
    }
}

fn write_below(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A mounter whose mount makes `info`/`stats` the table and exits with `code`, and whose
/// unmount restores the table before (or fails with `unmount_fails`).
fn mounter(
    root: &Path,
    after: Option<(String, String)>,
    code: i32,
    unmount_fails: bool,
) -> RecordingMounter {
    let r1: PathBuf = root.to_owned();
    let r2: PathBuf = root.to_owned();
    RecordingMounter::new(
        move |_| {
            if let Some((info, stats)) = &after {
                write_below(&r1, "proc/self/mountinfo", info);
                write_below(&r1, "proc/self/mountstats", stats);
            }
            Ok(MountStatus::Exited(code))
        },
        move |target| {
            if unmount_fails {
                return Err(UnmountError::Syscall {
                    target: target.mount_point.clone(),
                    source: nix::Error::EBUSY.into(),
                });
            }
            write_below(&r2, "proc/self/mountinfo", BEFORE);
            write_below(&r2, "proc/self/mountstats", BEFORE_STATS);
            Ok(())
        },
    )
}

fn mounted(proto: &str) -> Option<(String, String)> {
    Some((
        format!("{BEFORE}{}", nfs_line(70, "/mnt/data", proto)),
        format!("{BEFORE_STATS}{}", nfs_stats("/mnt/data", proto)),
    ))
}

fn request(opts: &str, fake: bool) -> MountRequest {
    let args = HelperArgs {
        spec: "10.0.2.15:/export".into(),
        dir: "/mnt/data".into(),
        options: vec![opts.to_string()],
        fake,
        ..Default::default()
    };
    MountRequest::new(&args, OptionDefaults::default(), Path::new("/")).unwrap()
}

struct Outcome {
    code: u8,
    out: String,
    err: String,
    calls: Vec<String>,
    loads: Vec<String>,
}

fn run_with(
    tree: &Tree,
    req: &MountRequest,
    policy_text: &str,
    mut m: RecordingMounter,
    clock: &dyn Clock,
    mut loader: Option<RecordingLoader>,
) -> Outcome {
    let policy = parse(policy_text).unwrap().for_mount(
        &req.target,
        &req.spec,
        req.options.policy,
        req.options.wait,
    );
    let root = tree.root();
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = {
        let mut h = Helper {
            root: &root,
            mounter: &mut m,
            loader: loader.as_mut().map(|l| l as &mut dyn ModuleLoader),
            clock,
            out: &mut out,
            err: &mut err,
        };
        h.run(req, &policy)
    };
    Outcome {
        code,
        out: String::from_utf8(out).unwrap(),
        err: String::from_utf8(err).unwrap(),
        calls: m.calls,
        loads: loader.map(|l| l.calls).unwrap_or_default(),
    }
}

fn run(tree: &Tree, req: &MountRequest, policy: &str, m: RecordingMounter) -> Outcome {
    run_with(tree, req, policy, m, &FakeClock::default(), None)
}

#[test]
fn a_verified_rdma_mount_exits_0() {
    let t = Tree::new();
    let o = run(
        &t,
        &request("rw,_netdev", false),
        "",
        mounter(t.path(), mounted("rdma"), 0, false),
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert_eq!(
        o.calls,
        ["fake-mount 10.0.2.15:/export /mnt/data -o rw,vers=4.2,proto=rdma,port=20049"]
    );
    // The built-in rpcrdma's export kind cannot be read: a warning, never a refusal.
    assert!(
        o.err
            .contains("nfs-gds: WARN rpcrdma-hook-export [enforce]"),
        "{}",
        o.err
    );
    assert!(!o.err.contains("REFUSED"), "{}", o.err);
}

#[test]
fn verbose_says_what_was_verified() {
    let t = Tree::new();
    let mut req = request("rw", false);
    req.verbose = 1;
    let o = run(
        &t,
        &req,
        "[checks]\nrpcrdma-hook-export = \"off\"\n",
        mounter(t.path(), mounted("rdma"), 0, false),
    );
    assert_eq!(o.code, 0);
    assert!(
        o.err.contains("nfs-gds: mounted 10.0.2.15:/export on /mnt/data (mount id 70): runs over rdma, proto=rdma, port=20049"),
        "{}",
        o.err
    );
}

#[test]
fn a_failing_enforced_precheck_refuses_before_mounting() {
    let t = Tree::new();
    std::fs::remove_dir_all(t.path().join("sys/module/nvidia_fs")).unwrap();
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), mounted("rdma"), 0, false),
    );
    assert_eq!(o.code, 32);
    assert!(o.calls.is_empty(), "nothing may be mounted: {:?}", o.calls);
    let lines: Vec<&str> = o.err.lines().collect();
    assert_eq!(
        lines[0],
        "nfs-gds: REFUSED to mount 10.0.2.15:/export on /mnt/data: 1 check failed under policy enforce; nothing was mounted"
    );
    assert!(
        lines[1].starts_with("nfs-gds: FAIL nvidia-fs-loaded [enforce]: nvidia_fs is not loaded"),
        "{}",
        lines[1]
    );
    assert!(
        lines[1].contains("| evidence: /sys/module/nvidia_fs: absent | fix: "),
        "{}",
        lines[1]
    );
    assert_eq!(lines.last().unwrap(), &format!("nfs-gds: {DOCTOR_HINT}"));
}

#[test]
fn warn_mounts_anyway_and_says_so() {
    let t = Tree::new();
    std::fs::remove_dir_all(t.path().join("sys/module/nvidia_fs")).unwrap();
    let o = run(
        &t,
        &request("rw,gds_policy=warn", false),
        "",
        mounter(t.path(), mounted("rdma"), 0, false),
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert_eq!(o.calls.len(), 1);
    assert!(o.err.contains("nfs-gds: WARNING: mounting 10.0.2.15:/export on /mnt/data although 1 check failed (policy warn)"), "{}", o.err);
    assert!(
        o.err.contains("nfs-gds: FAIL nvidia-fs-loaded [warn]"),
        "{}",
        o.err
    );
}

#[test]
fn off_skips_the_check_entirely() {
    let t = Tree::new();
    std::fs::remove_dir_all(t.path().join("sys/module/nvidia_fs")).unwrap();
    std::fs::remove_file(t.path().join("dev/nvidia-fs0")).unwrap();
    let o = run(
        &t,
        &request("rw", false),
        "[checks]\nnvidia-fs-loaded = \"off\"\nrpcrdma-hook-export = \"off\"\n",
        mounter(t.path(), mounted("rdma"), 0, false),
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert!(o.err.is_empty(), "{}", o.err);
}

#[test]
fn an_existing_tcp_mount_of_the_server_refuses_before_mounting() {
    let t = Tree::new();
    t.table(
        &format!("{BEFORE}{}", nfs_line(40, "/mnt/tcp", "tcp")),
        &format!("{BEFORE_STATS}{}", nfs_stats("/mnt/tcp", "tcp")),
    );
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), mounted("tcp"), 0, false),
    );
    assert_eq!(o.code, 32);
    assert!(o.calls.is_empty());
    assert!(o.err.contains("nfs-gds: FAIL transport-trap [enforce]: 10.0.2.15 already has an NFSv4 mount over tcp (/mnt/tcp)"), "{}", o.err);
    assert!(
        o.err
            .contains("10.0.2.15:/export on /mnt/tcp: NFSv4 over tcp (mount id 40)"),
        "{}",
        o.err
    );
    // NFSv3 is not subject to the trap.
    let o = run(
        &t,
        &request("rw,vers=3", false),
        "[checks]\nrpcrdma-hook-export = \"off\"\n",
        mounter(t.path(), mounted("rdma"), 0, false),
    );
    assert_eq!(o.code, 0, "{}", o.err);
}

#[test]
fn a_new_mount_over_tcp_is_unmounted_and_refused() {
    let t = Tree::new();
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), mounted("tcp"), 0, false),
    );
    assert_eq!(o.code, 32);
    assert_eq!(o.calls[1], "unmount /mnt/data (id 70, device 0:50)");
    assert!(
        o.err.contains("nfs-gds: REFUSED 10.0.2.15:/export on /mnt/data: the new mount (id 70) failed 2 checks under policy enforce; it was unmounted again"),
        "{}",
        o.err
    );
    assert!(
        o.err
            .contains("FAIL mount-transport [enforce]: /mnt/data runs over tcp, not RDMA"),
        "{}",
        o.err
    );
    assert!(o.err.contains("FAIL mount-options [enforce]"), "{}", o.err);
}

/// The kernel hands out the lowest free mount id: a mount unmounted elsewhere while mount.nfs
/// ran gives its id to the new mount, which must still be seen as new (and refused).
#[test]
fn a_new_mount_that_reuses_a_freed_id_is_still_new() {
    let t = Tree::new();
    let other = "40 1 0:50 / /mnt/other rw - nfs4 10.0.2.99:/e rw,vers=4.2,proto=rdma,port=20049\n";
    t.table(&format!("{BEFORE}{other}"), BEFORE_STATS);
    let after = (
        format!("{BEFORE}{}", nfs_line(40, "/mnt/data", "tcp")),
        format!("{BEFORE_STATS}{}", nfs_stats("/mnt/data", "tcp")),
    );
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), Some(after), 0, false),
    );
    assert_eq!(o.code, 32, "{}", o.err);
    assert_eq!(o.calls[1], "unmount /mnt/data (id 40, device 0:50)");
    assert!(
        o.err.contains(
            "the new mount (id 40) failed 2 checks under policy enforce; it was unmounted again"
        ),
        "{}",
        o.err
    );

    // The same with an RDMA mount: verified and kept, not "no mount appeared".
    t.table(&format!("{BEFORE}{other}"), BEFORE_STATS);
    let after = (
        format!("{BEFORE}{}", nfs_line(40, "/mnt/data", "rdma")),
        format!("{BEFORE_STATS}{}", nfs_stats("/mnt/data", "rdma")),
    );
    let o = run(
        &t,
        &request("rw", false),
        "[checks]\nrpcrdma-hook-export = \"off\"\n",
        mounter(t.path(), Some(after), 0, false),
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert_eq!(o.calls.len(), 1);
}

#[test]
fn a_newline_in_the_spec_cannot_forge_a_log_line() {
    let t = Tree::new();
    let args = HelperArgs {
        spec: "10.0.2.15:/export\nnfs-gds: mounted 10.0.2.15:/export on /mnt/data".into(),
        dir: "/mnt/data".into(),
        options: vec!["rw".into()],
        ..Default::default()
    };
    let req = MountRequest::new(&args, OptionDefaults::default(), Path::new("/")).unwrap();
    let o = run(&t, &req, "", mounter(t.path(), mounted("tcp"), 0, false));
    assert_eq!(o.code, 32);
    for line in o.err.lines() {
        assert!(!line.starts_with("nfs-gds: mounted"), "forged: {line}");
        assert!(line.starts_with("nfs-gds: "), "{line}");
    }
    assert!(o.err.contains("/export\\nnfs-gds: mounted"), "{}", o.err);
}

#[test]
fn a_mount_that_appears_on_another_path_is_named() {
    let t = Tree::new();
    let after = (
        format!("{BEFORE}{}", nfs_line(70, "/elsewhere", "tcp")),
        BEFORE_STATS.to_string(),
    );
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), Some(after), 0, false),
    );
    assert_eq!(o.code, 32);
    assert_eq!(o.calls.len(), 1, "never unmounted by nfs-gds");
    assert!(
        o.err
            .contains("but it appeared on /elsewhere (mount id 70) instead of /mnt/data"),
        "{}",
        o.err
    );
}

#[test]
fn a_failed_unmount_after_a_refusal_is_loud() {
    let t = Tree::new();
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), mounted("tcp"), 0, true),
    );
    assert_eq!(o.code, 32);
    assert!(o.err.contains("; UNMOUNTING IT FAILED"), "{}", o.err);
    assert!(
        o.err.contains("nfs-gds: THE REFUSED MOUNT IS STILL MOUNTED on /mnt/data (mount id 70): umount2 of /mnt/data: Device or resource busy (os error 16); unmount it now: umount /mnt/data"),
        "{}",
        o.err
    );
}

#[test]
fn an_unmount_that_leaves_the_mount_in_place_is_a_failure() {
    let t = Tree::new();
    let root = t.path().to_owned();
    let after = mounted("tcp").unwrap();
    let m = RecordingMounter::new(
        move |_| {
            write_below(&root, "proc/self/mountinfo", &after.0);
            write_below(&root, "proc/self/mountstats", &after.1);
            Ok(MountStatus::Exited(0))
        },
        |_| Ok(()),
    );
    let o = run(&t, &request("rw", false), "", m);
    assert_eq!(o.code, 32);
    assert!(o.err.contains("STILL MOUNTED on /mnt/data (mount id 70): it is still in the mount table after unmounting"), "{}", o.err);
}

#[test]
fn warn_keeps_a_tcp_mount_and_says_so() {
    let t = Tree::new();
    let o = run(
        &t,
        &request("rw,gds_policy=warn", false),
        "",
        mounter(t.path(), mounted("tcp"), 0, false),
    );
    assert_eq!(o.code, 0);
    assert_eq!(o.calls.len(), 1, "no unmount under warn");
    assert!(o.err.contains("WARNING: mounted 10.0.2.15:/export on /mnt/data although 2 checks failed (policy warn)"), "{}", o.err);
}

#[test]
fn already_mounted_is_verified_and_never_unmounted() {
    let t = Tree::new();
    let (info, stats) = mounted("rdma").unwrap();
    t.table(&info, &stats);
    let o = run(
        &t,
        &request("rw", false),
        "[checks]\nrpcrdma-hook-export = \"off\"\n",
        mounter(t.path(), None, 0, false),
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert!(o.err.contains("nfs-gds: /mnt/data was already mounted (mount id 70, 10.0.2.15:/export) and mount.nfs left it as it was; verifying that mount"), "{}", o.err);

    let (info, stats) = mounted("tcp").unwrap();
    t.table(&info, &stats);
    // The pre-existing tcp mount is itself the trap: refused before mounting.
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), None, 0, false),
    );
    assert_eq!(o.code, 32);
    assert!(o.calls.is_empty());
    // With the trap check off, mount.nfs is run, reports success, and the tcp mount stays.
    let o = run(
        &t,
        &request("rw", false),
        "[checks]\ntransport-trap = \"off\"\n",
        mounter(t.path(), None, 0, false),
    );
    assert_eq!(o.code, 32);
    assert_eq!(
        o.calls.len(),
        1,
        "never unmount a mount that was there before: {:?}",
        o.calls
    );
    assert!(o.err.contains("REFUSED /mnt/data: the mount on it (id 70) failed 2 checks under policy enforce; it was there before nfs-gds ran, so nfs-gds leaves it mounted: unmount it (`umount /mnt/data`) and mount again"), "{}", o.err);
}

#[test]
fn a_mount_nfs_failure_is_passed_on() {
    let t = Tree::new();
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), None, 32, false),
    );
    assert_eq!(o.code, 32);
    assert!(
        o.err.contains(
            "nfs-gds: fake-mount failed (exit status 32); nothing was mounted on /mnt/data"
        ),
        "{}",
        o.err
    );
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), None, 1, false),
    );
    assert_eq!(o.code, 1);
}

#[test]
fn success_without_a_mount_is_not_a_mount() {
    let t = Tree::new();
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), None, 0, false),
    );
    assert_eq!(o.code, 32);
    assert!(
        o.err
            .contains("reported success, but no mount appeared on /mnt/data"),
        "{}",
        o.err
    );
}

#[test]
fn a_verified_mount_keeps_a_nonzero_mount_nfs_status() {
    let t = Tree::new();
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), mounted("rdma"), 16, false),
    );
    assert_eq!(o.code, 16);
}

#[test]
fn an_unreadable_mount_table_is_a_system_error() {
    let t = Tree::new();
    std::fs::remove_file(t.path().join("proc/self/mountinfo")).unwrap();
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), mounted("rdma"), 0, false),
    );
    assert_eq!(o.code, 2);
    assert!(
        o.err.contains("proc/self/mountinfo does not exist"),
        "{}",
        o.err
    );
    assert!(o.calls.is_empty());
}

#[test]
fn fake_runs_the_checks_prints_the_plan_and_mounts_nothing() {
    let t = Tree::new();
    let loader = RecordingLoader::new(|_| Ok(()));
    let o = run_with(
        &t,
        &request("rw,gds_wait=30", true),
        "",
        mounter(t.path(), mounted("rdma"), 0, false),
        &FakeClock::default(),
        Some(loader),
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert!(o.calls.is_empty());
    assert!(o.loads.is_empty(), "-f loads nothing");
    assert!(
        o.out
            .starts_with("nfs-gds mount 10.0.2.15:/export on /mnt/data: READY, WITH WARNINGS"),
        "{}",
        o.out
    );
    assert!(o.out.contains("  mount:   fake-mount 10.0.2.15:/export /mnt/data -o rw,vers=4.2,proto=rdma,port=20049\n"), "{}", o.out);
    assert!(o.out.contains("  wait:    up to 30 s"), "{}", o.out);
    assert!(
        o.out.contains(
            "  verify:  a new mount id on /mnt/data; every xprt: line rdma; proto=rdma; port=20049"
        ),
        "{}",
        o.out
    );

    std::fs::remove_dir_all(t.path().join("sys/module/nvidia_fs")).unwrap();
    let o = run(
        &t,
        &request("rw", true),
        "",
        mounter(t.path(), mounted("rdma"), 0, false),
    );
    assert_eq!(o.code, 32);
    assert!(o.calls.is_empty());
    assert!(o.err.contains("would REFUSE to mount"), "{}", o.err);
}

/// A clock that loads nvidia_fs into the tree after some sleeps.
struct ModuleArrives<'a> {
    inner: FakeClock,
    tree: &'a Tree,
    after_sleeps: usize,
    slept: Cell<usize>,
}

impl Clock for ModuleArrives<'_> {
    fn now(&self) -> Duration {
        self.inner.now()
    }
    fn sleep(&self, d: Duration) {
        self.inner.sleep(d);
        self.slept.set(self.slept.get() + 1);
        if self.slept.get() == self.after_sleeps {
            self.tree.write("sys/module/nvidia_fs/version", "2.28.4\n");
        }
    }
}

#[test]
fn the_wait_rechecks_until_the_module_arrives() {
    let t = Tree::new();
    std::fs::remove_dir_all(t.path().join("sys/module/nvidia_fs")).unwrap();
    let clock = ModuleArrives {
        inner: FakeClock::default(),
        tree: &t,
        after_sleeps: 3,
        slept: Cell::new(0),
    };
    let o = run_with(
        &t,
        &request("rw,gds_wait=60", false),
        "",
        mounter(t.path(), mounted("rdma"), 0, false),
        &clock,
        None,
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert_eq!(clock.inner.sleeps().len(), 3);
    assert!(
        o.err
            .contains("nfs-gds: waiting up to 60 s more for: nvidia-fs-loaded"),
        "{}",
        o.err
    );
    assert!(
        o.err.contains("nfs-gds: pre-checks pass after 6 s"),
        "{}",
        o.err
    );
    // The policy file's wait applies too, and gives up.
    std::fs::remove_dir_all(t.path().join("sys/module/nvidia_fs")).unwrap();
    let clock = FakeClock::default();
    let o = run_with(
        &t,
        &request("rw", false),
        "wait = 4\n",
        mounter(t.path(), mounted("rdma"), 0, false),
        &clock,
        None,
    );
    assert_eq!(o.code, 32);
    assert_eq!(clock.sleeps(), [Duration::from_secs(2); 2]);
    assert!(o.err.contains("gave up waiting after 4 s"), "{}", o.err);
}

/// A tree whose rpcrdma is a (dangling) module file, so it is loadable and not loaded.
fn tree_with_module_rpcrdma() -> Tree {
    let t = Tree::new();
    t.write("lib/modules/6.1.0-test/modules.builtin", "");
    t.write(
        "lib/modules/6.1.0-test/modules.dep",
        "kernel/net/sunrpc/xprtrdma/rpcrdma.ko: kernel/net/sunrpc/sunrpc.ko\n",
    );
    t.write("proc/kallsyms", "");
    t
}

#[test]
fn rpcrdma_is_loaded_first_and_then_checked() {
    let t = tree_with_module_rpcrdma();
    let root = t.path().to_owned();
    let loader = RecordingLoader::new(move |_| {
        write_below(
            &root,
            "proc/modules",
            "nvidia_fs 1 0 - Live 0x0\nrpcrdma 1 0 - Live 0x0\n",
        );
        write_below(
            &root,
            "proc/kallsyms",
            "0 t rpcrdma_register_nvfs_dma_ops\t[rpcrdma]\n0 t rpcrdma_unregister_nvfs_dma_ops\t[rpcrdma]\n",
        );
        Ok(())
    });
    let o = run_with(
        &t,
        &request("rw,gds_policy=warn", false),
        "",
        mounter(t.path(), mounted("rdma"), 0, false),
        &FakeClock::default(),
        Some(loader),
    );
    assert_eq!(o.loads, ["rpcrdma"]);
    assert_eq!(o.code, 0, "{}", o.err);
    // The loaded module was judged: its hooks are in kallsyms.
    assert!(!o.err.contains("rpcrdma-loaded"), "{}", o.err);
}

#[test]
fn a_failed_modprobe_is_noted_once_and_the_checks_still_run() {
    let t = tree_with_module_rpcrdma();
    let loader = RecordingLoader::new(|m| {
        Err(LoadError::Failed {
            program: "/sbin/modprobe".into(),
            module: m.to_string(),
            status: failed_status(1),
        })
    });
    let clock = FakeClock::default();
    let o = run_with(
        &t,
        &request("rw,gds_wait=4", false),
        "",
        mounter(t.path(), mounted("rdma"), 0, false),
        &clock,
        Some(loader),
    );
    assert_eq!(o.code, 32, "the module file is missing: {}", o.err);
    assert_eq!(o.loads.len(), 3, "retried on every attempt");
    assert_eq!(
        o.err.matches("could not load rpcrdma").count(),
        1,
        "{}",
        o.err
    );
    assert!(o.err.contains("FAIL rpcrdma-module [enforce]"), "{}", o.err);
}

#[test]
fn modprobe_is_not_run_when_disabled_or_built_in() {
    let t = tree_with_module_rpcrdma();
    let loader = RecordingLoader::new(|_| Ok(()));
    let o = run_with(
        &t,
        &request("rw", false),
        "modprobe-rpcrdma = false\n",
        mounter(t.path(), mounted("rdma"), 0, false),
        &FakeClock::default(),
        Some(loader),
    );
    assert!(o.loads.is_empty());
    let t = Tree::new();
    let loader = RecordingLoader::new(|_| Ok(()));
    let o = run_with(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), mounted("rdma"), 0, false),
        &FakeClock::default(),
        Some(loader),
    );
    assert!(o.loads.is_empty());
    // No modprobe at all: said once, not fatal.
    let t = tree_with_module_rpcrdma();
    let o = run(
        &t,
        &request("rw,gds_policy=warn", false),
        "",
        mounter(t.path(), mounted("rdma"), 0, false),
    );
    assert!(
        o.err
            .contains("nfs-gds: no modprobe in /usr/sbin:/sbin:/usr/bin:/bin below"),
        "{}",
        o.err
    );
}

#[test]
fn remount_verifies_the_existing_mount_and_never_unmounts_it() {
    let t = Tree::new();
    let (info, stats) = mounted("rdma").unwrap();
    t.table(&info, &stats);
    let o = run(
        &t,
        &request("remount,ro", false),
        "",
        mounter(t.path(), None, 0, false),
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert_eq!(
        o.calls,
        ["fake-mount 10.0.2.15:/export /mnt/data -o remount,ro"]
    );
    assert!(o.err.is_empty(), "no pre-checks on a remount: {}", o.err);

    let (info, stats) = mounted("tcp").unwrap();
    t.table(&info, &stats);
    let o = run(
        &t,
        &request("remount,ro", false),
        "",
        mounter(t.path(), None, 0, false),
    );
    assert_eq!(o.code, 32);
    assert_eq!(o.calls.len(), 1, "no unmount: {:?}", o.calls);
    assert!(
        o.err.contains(
            "the remount was applied to a mount nfs-gds did not make, so nfs-gds leaves it mounted"
        ),
        "{}",
        o.err
    );

    let o = run(
        &t,
        &request("remount,ro", false),
        "",
        mounter(t.path(), None, 32, false),
    );
    assert_eq!(o.code, 32);
    assert!(
        o.err
            .contains("the remount of /mnt/data failed (exit status 32)"),
        "{}",
        o.err
    );

    let o = run(
        &t,
        &request("remount,ro", true),
        "",
        mounter(t.path(), None, 0, false),
    );
    assert_eq!(o.code, 0);
    assert!(o.calls.is_empty());
    assert!(o.out.contains("  remount: fake-mount"), "{}", o.out);
}

#[test]
fn undo_leaves_alone_a_mount_that_is_no_longer_on_top() {
    let t = Tree::new();
    let stacked = format!(
        "{BEFORE}{}71 70 0:51 / /mnt/data rw - nfs4 other:/x rw,proto=rdma\n",
        nfs_line(70, "/mnt/data", "tcp")
    );
    t.table(&stacked, "");
    let unmounts = Rc::new(Cell::new(0));
    let counter = unmounts.clone();
    let mut m = RecordingMounter::new(
        |_| Ok(MountStatus::Exited(0)),
        move |_| {
            counter.set(counter.get() + 1);
            Ok(())
        },
    );
    let root = t.root();
    let clock = FakeClock::default();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut h = Helper {
        root: &root,
        mounter: &mut m,
        loader: None,
        clock: &clock,
        out: &mut out,
        err: &mut err,
    };
    let table = read_mount_table(&root).unwrap();
    let undo = h.undo(&MountIdentity::of(&table.by_id(70).unwrap().info));
    assert_eq!(
        undo,
        Undo::NotAttempted("another mount (id 71) is now on top of it".into())
    );
    assert_eq!(
        h.undo(&MountIdentity {
            mount_id: 99,
            parent_id: 1,
            device: "0:99".into(),
            mount_point: "/nowhere".into(),
            unique_id: None,
        }),
        Undo::NotAttempted("it is no longer mounted".into())
    );
    assert_eq!(unmounts.get(), 0);
}

#[test]
fn the_live_probe_refuses_when_rpcrdma_did_not_register() {
    let t = Tree::new();
    t.write("proc/driver/nvidia-fs/modules", "wekafsio: 1\n");
    let policy = "probe = true\n[checks]\nrpcrdma-hook-export = \"off\"\n";
    let o = run(
        &t,
        &request("rw", false),
        policy,
        mounter(t.path(), mounted("rdma"), 0, false),
    );
    assert_eq!(o.code, 32, "{}", o.err);
    assert!(o.calls.is_empty(), "nothing may be mounted: {:?}", o.calls);
    assert!(
        o.err.contains("FAIL nvfs-registration [enforce]"),
        "{}",
        o.err
    );

    t.write(
        "proc/driver/nvidia-fs/modules",
        "wekafsio: 1\nrpcrdma: (null)\n",
    );
    let o = run(
        &t,
        &request("rw", false),
        policy,
        mounter(t.path(), mounted("rdma"), 0, false),
    );
    assert_eq!(o.code, 0, "{}", o.err);
    // Without `probe = true` the probe does not run at all.
    t.write("proc/driver/nvidia-fs/modules", "wekafsio: 1\n");
    let o = run(
        &t,
        &request("rw", false),
        "[checks]\nrpcrdma-hook-export = \"off\"\n",
        mounter(t.path(), mounted("rdma"), 0, false),
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert!(!o.err.contains("nvfs-registration"), "{}", o.err);
}

/// Many helpers at once against one simulated kernel that hands out the lowest free mount id
/// (as the kernel's IDA does), with other mounts coming and going beside them, half the servers
/// falling back to TCP. Every refused TCP mount must be gone afterwards and every RDMA mount kept.
mod concurrent {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone)]
    struct KMount {
        id: u32,
        dev: u32,
        point: String,
        source: String,
        proto: &'static str,
    }

    struct Kernel {
        dir: PathBuf,
        mounts: Vec<KMount>,
        publishes: u64,
        /// Mounts that got an id another mount had before.
        reused: usize,
        used: std::collections::HashSet<u32>,
    }

    impl Kernel {
        fn lowest_free<F: Fn(&KMount) -> u32>(&self, start: u32, f: F) -> u32 {
            (start..)
                .find(|i| !self.mounts.iter().any(|m| f(m) == *i))
                .unwrap()
        }

        fn mount(&mut self, point: &str, source: &str, proto: &'static str) -> u32 {
            let id = self.lowest_free(30, |m| m.id);
            let dev = self.lowest_free(50, |m| m.dev);
            if !self.used.insert(id) {
                self.reused += 1;
            }
            self.mounts.push(KMount {
                id,
                dev,
                point: point.into(),
                source: source.into(),
                proto,
            });
            self.publish();
            id
        }

        /// Removes the topmost mount on `point` (all mounts here have parent 1, so the last).
        fn unmount_path(&mut self, point: &str) -> bool {
            match self.mounts.iter().rposition(|m| m.point == point) {
                Some(i) => {
                    self.mounts.remove(i);
                    self.publish();
                    true
                }
                None => false,
            }
        }

        fn publish(&mut self) {
            let mut info = BEFORE.to_string();
            let mut stats = BEFORE_STATS.to_string();
            for m in &self.mounts {
                let port = if m.proto == "tcp" { "" } else { ",port=20049" };
                info.push_str(&format!(
                    "{} 1 0:{} / {} rw,relatime - nfs4 {} rw,vers=4.2,proto={}{port},addr=10.0.2.15\n",
                    m.id, m.dev, m.point, m.source, m.proto
                ));
                stats.push_str(&format!(
                    "device {} mounted on {} with fstype nfs4 statvers=1.1\n\
\topts:\trw,vers=4.2,hard,proto={}{port}\n\
\txprt:\t{} 0 0 1 0 0 121 121 0 1096 0 131 1 11\n",
                    m.source, m.point, m.proto, m.proto
                ));
            }
            self.publishes += 1;
            for (name, text) in [("mountinfo", info), ("mountstats", stats)] {
                let dir = self.dir.join("proc/self");
                let tmp = dir.join(format!(".{name}.{}", self.publishes));
                std::fs::write(&tmp, text).unwrap();
                std::fs::rename(&tmp, dir.join(name)).unwrap();
            }
        }
    }

    fn pause(seed: &mut u64) {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_micros((*seed >> 33) % 400));
    }

    #[derive(Default, Debug)]
    struct Tally {
        runs: usize,
        tcp_kept: usize,
        rdma_refused: usize,
        wrong_unmounts: usize,
    }

    #[test]
    fn reused_mount_ids_never_keep_a_refused_mount_or_refuse_a_good_one() {
        const HELPERS: usize = 20;
        const RUNS: usize = 15;
        let t = Tree::new();
        let kernel = Arc::new(Mutex::new(Kernel {
            dir: t.path().to_owned(),
            mounts: Vec::new(),
            publishes: 0,
            reused: 0,
            used: Default::default(),
        }));
        kernel.lock().unwrap().publish();
        let tally = Arc::new(Mutex::new(Tally::default()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        // Unmounts of a mount other than the one that helper made.
        let wrong = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        // Other mounts, mounted and unmounted all the time: their ids are freed and reused.
        let churn = {
            let kernel = kernel.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut seed = 7u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let point = format!("/mnt/other{}", seed % 5);
                    kernel.lock().unwrap().mount(&point, "10.0.2.99:/e", "rdma");
                    pause(&mut seed);
                    kernel.lock().unwrap().unmount_path(&point);
                    pause(&mut seed);
                }
            })
        };
        let helpers: Vec<_> = (0..HELPERS)
            .map(|i| {
                let kernel = kernel.clone();
                let tally = tally.clone();
                let root = t.path().to_owned();
                let wrong = wrong.clone();
                std::thread::spawn(move || {
                    let proto: &'static str = if i % 2 == 0 { "rdma" } else { "tcp" };
                    let target = format!("/mnt/gds{i}");
                    let spec = format!("10.0.3.{i}:/export");
                    let mut seed = i as u64 + 1;
                    for _ in 0..RUNS {
                        let args = HelperArgs {
                            spec: spec.clone().into(),
                            dir: target.clone().into(),
                            options: vec!["rw".into()],
                            ..Default::default()
                        };
                        let req =
                            MountRequest::new(&args, OptionDefaults::default(), Path::new("/"))
                                .unwrap();
                        let policy = parse("[checks]\nrpcrdma-hook-export = \"off\"\n")
                            .unwrap()
                            .for_mount(&req.target, &req.spec, None, None);
                        let mine = Arc::new(Mutex::new(None::<u32>));
                        let (k1, k2, mine1, mine2) =
                            (kernel.clone(), kernel.clone(), mine.clone(), mine.clone());
                        let (t1, s1) = (target.clone(), spec.clone());
                        let k2_wrong = wrong.clone();
                        let mut seed1 = seed;
                        let mut m = RecordingMounter::new(
                            move |_| {
                                pause(&mut seed1);
                                let id = k1.lock().unwrap().mount(&t1, &s1, proto);
                                *mine1.lock().unwrap() = Some(id);
                                pause(&mut seed1);
                                Ok(MountStatus::Exited(0))
                            },
                            // umount2 of the mount with that identity, as the real
                            // unmounter does through the descriptor it verified.
                            move |mount| {
                                let mut k = k2.lock().unwrap();
                                let at = k.mounts.iter().position(|m| {
                                    m.id == mount.mount_id
                                        && format!("0:{}", m.dev) == mount.device
                                        && Path::new(&m.point) == mount.mount_point
                                });
                                let Some(at) = at else {
                                    return Err(UnmountError::NotThatMount {
                                        target: mount.mount_point.clone(),
                                        why: "no such mount".into(),
                                    });
                                };
                                if Some(k.mounts[at].id) != *mine2.lock().unwrap() {
                                    k2_wrong.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                }
                                k.mounts.remove(at);
                                k.publish();
                                Ok(())
                            },
                        );
                        let r = Root::new(&root);
                        let clock = FakeClock::default();
                        let (mut out, mut err) = (Vec::new(), Vec::new());
                        let code = Helper {
                            root: &r,
                            mounter: &mut m,
                            loader: None,
                            clock: &clock,
                            out: &mut out,
                            err: &mut err,
                        }
                        .run(&req, &policy);
                        let mut k = kernel.lock().unwrap();
                        let left = k.mounts.iter().any(|m| m.point == target);
                        let mut tl = tally.lock().unwrap();
                        tl.runs += 1;
                        if proto == "tcp" && left {
                            tl.tcp_kept += 1;
                        }
                        if proto == "rdma" && (code != 0 || !left) {
                            tl.rdma_refused += 1;
                        }
                        if m.calls.iter().any(|c| c.starts_with("unmount")) && proto == "rdma" {
                            tl.wrong_unmounts += 1;
                        }
                        drop(tl);
                        // The admin unmounts it again: its id is free for the next mount.
                        while k.unmount_path(&target) {}
                        drop(k);
                        pause(&mut seed);
                    }
                })
            })
            .collect();
        for h in helpers {
            h.join().unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        churn.join().unwrap();
        let mut tl = tally.lock().unwrap();
        tl.wrong_unmounts += wrong.load(std::sync::atomic::Ordering::Relaxed);
        let reused = kernel.lock().unwrap().reused;
        eprintln!("{tl:?}, {reused} mounts got a reused id");
        assert_eq!(tl.runs, HELPERS * RUNS);
        assert!(reused >= tl.runs / 2, "the test must reuse ids: {reused}");
        assert_eq!(
            (tl.tcp_kept, tl.rdma_refused, tl.wrong_unmounts),
            (0, 0, 0),
            "{tl:?}"
        );
    }
}
