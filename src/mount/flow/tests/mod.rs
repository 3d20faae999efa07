//! The flow against fixture trees, with recording fakes for every side effect.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;
use crate::mount::args::HelperArgs;
use crate::mount::fake::RecordingMounter;
use crate::mount::mounter::MountStatus;
use crate::mount::unmount::UnmountError;
use crate::nfs::OptionDefaults;
use crate::policy::file::parse;
use crate::system::{Answer, Call, Fake};
use crate::testkit::mount_text::{nfs_info, nfs_stats, with_mount, BEFORE, BEFORE_STATS};
use crate::testkit::{write_below, write_table, Tree};

/// A node ready for GDS (nvidia_fs loaded, a built-in rpcrdma with GPL hooks) and no NFS mount.
fn gds_node() -> Tree {
    let t = Tree::new();
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
    // The nfs module, loaded, built without LOCALIO (no `localio_enabled` among its parameters).
    t.write("sys/module/nfs/parameters/enable_ino64", "Y\n");
    t
}

/// Where a table of the tests says "the point the mount call was given": the run's staging
/// point, which the helper makes anew for each run.
const STAGED: &str = "@STAGED@";

/// The tree's table with every `from` path replaced by `to`: what the kernel shows after a move.
fn move_in_tree(root: &Path, from: &Path, to: &Path) {
    let read = |rel: &str| std::fs::read_to_string(root.join(rel)).unwrap_or_default();
    let (from, to) = (from.display().to_string(), to.display().to_string());
    let moved = |text: String| {
        text.lines()
            .map(|l| {
                let fields: Vec<&str> = l.split(' ').collect();
                // mountinfo: the mount point is the 5th field; mountstats: after "mounted on".
                if fields.get(4) == Some(&from.as_str()) || l.contains(&format!(" on {from} ")) {
                    l.replacen(&from, &to, 1)
                } else {
                    l.to_string()
                }
            })
            .map(|l| l + "\n")
            .collect::<String>()
    };
    write_table(
        root,
        &moved(read("proc/self/mountinfo")),
        &moved(read("proc/self/mountstats")),
    );
}

/// A mounter whose mount makes `info`/`stats` the table (with [`STAGED`] standing for the point
/// it was given) and exits with `code`, whose move moves the staged mount in the table, and
/// whose unmount restores the table before (or fails with `unmount_fails`).
fn mounter(
    root: &Path,
    after: Option<(String, String)>,
    code: i32,
    unmount_fails: bool,
) -> RecordingMounter {
    let r1: PathBuf = root.to_owned();
    let r2: PathBuf = root.to_owned();
    let r3: PathBuf = root.to_owned();
    RecordingMounter::new(
        move |call| {
            if let Some((info, stats)) = &after {
                let at = call.target.display().to_string();
                write_table(&r1, &info.replace(STAGED, &at), &stats.replace(STAGED, &at));
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
            write_table(&r2, BEFORE, BEFORE_STATS);
            Ok(())
        },
    )
    .moving(move |staged, target| {
        move_in_tree(&r3, &staged.mount_point, target);
        Ok(())
    })
}

/// A mounter whose mount adds an NFS mount of /mnt/data over `proto` and exits 0.
fn mounts(t: &Tree, proto: &str) -> RecordingMounter {
    mounter(t.root(), mounted(proto), 0, false)
}

/// A mounter whose mount adds nothing to the table (the mount point is already mounted, or
/// mount.nfs mounted nothing) and exits with `code`.
fn no_new_mount(t: &Tree, code: i32) -> RecordingMounter {
    mounter(t.root(), None, code, false)
}

/// Puts an NFS mount of /mnt/data over `proto` into the table before the helper runs.
fn already_mounted(t: &Tree, proto: &str) {
    let (info, stats) = with_mount(70, "/mnt/data", proto);
    t.table(&info, &stats);
}

/// The table after a mount call that mounted 10.0.2.15:/export over `proto` where it was told.
fn mounted(proto: &str) -> Option<(String, String)> {
    Some(with_mount(70, STAGED, proto))
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

/// Where the tests' `modprobe` is: what the fake system is asked to run to load a module.
const MODPROBE: &str = "/sbin/modprobe";

/// Runs the helper with the fake `system` (its clock and everything it runs), and a `modprobe`
/// when `modprobe` (the system's script says what loading does).
fn run_with(
    tree: &Tree,
    req: &MountRequest,
    policy_text: &str,
    m: RecordingMounter,
    system: &Fake,
    modprobe: bool,
) -> Outcome {
    let mut o = run_through(tree, req, policy_text, m, system, modprobe);
    o.loads = system
        .calls()
        .iter()
        .filter_map(|c| c.strip_prefix(&format!("exec {MODPROBE} ")))
        .map(str::to_string)
        .collect();
    o
}

/// [`run_with`] through any system (a recording, a replay); `loads` is left empty.
fn run_through(
    tree: &Tree,
    req: &MountRequest,
    policy_text: &str,
    mut m: RecordingMounter,
    system: &dyn System,
    modprobe: bool,
) -> Outcome {
    let modprobe = modprobe.then(|| Modprobe {
        program: MODPROBE.into(),
    });
    let policy = parse(policy_text).unwrap().for_mount(
        &req.target,
        crate::nfs::ShownExport::written(&req.spec),
        &crate::nfs::ServerAddrs::blind(),
        req.options.policy,
        req.options.wait,
    );
    let root = Root::new(tree.root());
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = {
        let mut h = Helper::new(&root, &mut m, modprobe.as_ref(), system, &mut out, &mut err);
        h.run(req, &policy)
    };
    Outcome {
        code,
        out: String::from_utf8(out).unwrap(),
        err: String::from_utf8(err).unwrap(),
        calls: m.calls.iter().map(|c| runs_named(c)).collect(),
        loads: Vec::new(),
    }
}

/// `line` with each run's own staging directory (named after its process) shown as `RUN`.
fn runs_named(line: &str) -> String {
    const AREA: &str = "/run/nfs-gds/stage/";
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find(AREA) {
        out.push_str(&rest[..i + AREA.len()]);
        rest = &rest[i + AREA.len()..];
        let end = rest.find('/').unwrap_or(rest.len());
        out.push_str("RUN");
        rest = &rest[end..];
    }
    out + rest
}

/// The mount call and the move of a run that mounted and kept its mount, as recorded.
const MOUNTED_AND_MOVED: [&str; 2] = [
    "fake-mount 10.0.2.15:/export /run/nfs-gds/stage/RUN/mnt -o rw,vers=4.2,proto=rdma,port=20049",
    "move /run/nfs-gds/stage/RUN/mnt (id 70) onto /mnt/data",
];

fn run(tree: &Tree, req: &MountRequest, policy: &str, m: RecordingMounter) -> Outcome {
    run_with(tree, req, policy, m, &Fake::new(), false)
}

mod checks;
mod kernel_table;
mod modules;
mod outcomes;
mod refusals;
mod remounts;
mod staging;
