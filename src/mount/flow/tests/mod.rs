//! The flow against fixture trees, with recording fakes for every side effect.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use super::*;
use crate::mount::args::HelperArgs;
use crate::mount::fake::RecordingMounter;
use crate::mount::mounter::MountStatus;
use crate::mount::unmount::UnmountError;
use crate::nfs::OptionDefaults;
use crate::policy::file::parse;
use crate::system::{Answer, Call, Fake};
use crate::testkit::mount_text::{nfs_info, with_mount, BEFORE, BEFORE_STATS};
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
    t
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
                write_table(&r1, info, stats);
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

fn mounted(proto: &str) -> Option<(String, String)> {
    Some(with_mount(70, "/mnt/data", proto))
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
        let mut h = Helper {
            root: &root,
            system,
            mounter: &mut m,
            modprobe: modprobe.as_ref(),
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
        loads: Vec::new(),
    }
}

fn run(tree: &Tree, req: &MountRequest, policy: &str, m: RecordingMounter) -> Outcome {
    run_with(tree, req, policy, m, &Fake::new(), false)
}

mod checks;
mod concurrent;
mod kernel_table;
mod modules;
mod outcomes;
mod refusals;
mod remounts;
mod same_target;
