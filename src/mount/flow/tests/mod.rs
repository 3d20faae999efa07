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

mod checks;
mod concurrent;
mod kernel_table;
mod modules;
mod outcomes;
mod refusals;
mod remounts;
mod same_target;
