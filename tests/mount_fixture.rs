//! Fixture root trees for the mount helper: a GDS-ready node, mount tables, and recording fakes
//! of `mount.nfs`, `modprobe` and `umount`.
//!
//! The helper finds its tools by absolute path below the root, so each tree carries one shell
//! script installed as `usr/sbin/mount.nfs`, `usr/sbin/modprobe`, `usr/bin/umount` and
//! `usr/bin/mount` (which the helper runs as `mount --move STAGED DIR` in a tree). It uses
//! shell builtins only (the helper runs with no `PATH`), and when run as NAME it:
//! - appends its arguments, `|`-terminated, as one line to `record/NAME.argv` (with the run's
//!   staging directory, which is named after its process, shown as `RUN`), and the `PATH` it
//!   was given to `record/NAME.path`;
//! - plays `scenario/NAME/`: copies `mountinfo`/`mountstats` over `proc/self/…` and
//!   `modules`/`kallsyms` over `proc/…` (to simulate the new mount, an unmount, a loaded
//!   module), with [`STAGED`] in them standing for its second argument (the staging point
//!   mount.nfs is given), prints `stdout` and `stderr`, and exits with the number in `exit`
//!   (default 0).

use std::ops::Deref;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

pub use crate::support::mount_table::{nfs_info, nfs_stats, with_mount, BEFORE, BEFORE_STATS};
use crate::support::{self, Tree, HOOKS};

pub const RELEASE: &str = "6.1.0-50-amd64";
const BUILD_ID: [u8; 20] = [0x5a; 20];

/// What a scenario's table says for "the point mount.nfs was given" (the run's staging point).
pub const STAGED: &str = "@STAGED@";

pub const FAKE_TOOL: &str = r#"#!/bin/sh
# Recording fake of a system tool for nfs-gds's tests. Builtins only: there is no PATH.
name=${0##*/}
root=${0%/usr/*}
point=$2
# $1 with every $2 replaced by $3.
replace() {
    r=$1 o=""
    while :; do
        case $r in
        *"$2"*) o="$o${r%%"$2"*}$3"; r=${r#*"$2"} ;;
        *) break ;;
        esac
    done
    printf '%s\n' "$o$r"
}
# The run's staging directory, named after its process, as RUN.
runs() {
    r=$1 o=""
    while :; do
        case $r in
        */run/nfs-gds/stage/*)
            o="$o${r%%/run/nfs-gds/stage/*}/run/nfs-gds/stage/RUN"
            r=${r#*/run/nfs-gds/stage/}
            case $r in */*) r="/${r#*/}" ;; *) r="" ;; esac ;;
        *) break ;;
        esac
    done
    printf '%s\n' "$o$r"
}
line=""
for a in "$@"; do line="$line$a|"; done
runs "$line" >> "$root/record/$name.argv"
printf '%s\n' "${PATH-<unset>}" >> "$root/record/$name.path"
dir="$root/scenario/$name"
show() { while IFS= read -r l || [ -n "$l" ]; do replace "$l" "@STAGED@" "$point"; done < "$1"; }
[ -f "$dir/mountinfo" ] && show "$dir/mountinfo" > "$root/proc/self/mountinfo"
[ -f "$dir/mountstats" ] && show "$dir/mountstats" > "$root/proc/self/mountstats"
[ -f "$dir/modules" ] && show "$dir/modules" > "$root/proc/modules"
[ -f "$dir/kallsyms" ] && show "$dir/kallsyms" > "$root/proc/kallsyms"
[ -f "$dir/stdout" ] && show "$dir/stdout"
[ -f "$dir/stderr" ] && show "$dir/stderr" >&2
code=0
[ -f "$dir/exit" ] && read -r code < "$dir/exit"
exit "$code"
"#;

/// A DKMS rpcrdma for this release that defines both hooks and exports them GPL.
pub fn rpcrdma_ko() -> Vec<u8> {
    support::build(&support::ModuleSpec::rpcrdma(RELEASE).build_id(Some(BUILD_ID.to_vec())))
}

pub fn loaded_kallsyms() -> String {
    HOOKS
        .iter()
        .map(|h| format!("0000000000000000 t {h}\t[rpcrdma]\n"))
        .collect()
}

pub const MODULES_WITH_RPCRDMA: &str = "nvidia_fs 262144 0 - Live 0x0 (OE)\nrpcrdma 364544 0 - Live 0x0\nsunrpc 692224 1 rpcrdma, Live 0x0\n";

/// A root tree for the helper; it writes files as the [`Tree`] it derefs to.
pub struct Fixture {
    dir: Tree,
}

impl Fixture {
    /// A node where every pre-check passes: nvidia_fs loaded with a device node, the modprobe
    /// rpcrdma is a GPL-hooked module file, loaded, same build-id; no NFS mounts; root's
    /// capabilities; the fake tools installed.
    pub fn ready() -> Self {
        let f = Fixture { dir: Tree::new() };
        f.write("proc/sys/kernel/osrelease", format!("{RELEASE}\n"));
        f.write(
            "proc/version",
            format!("Linux version {RELEASE} (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC Debian 6.1.176-1 (2026-05-02)\n"),
        );
        f.write(
            "proc/self/status",
            "Name:\tmount.nfs-gds\nCapEff:\t000001ffffffffff\n",
        );
        f.write("proc/modules", MODULES_WITH_RPCRDMA);
        f.write("proc/kallsyms", loaded_kallsyms());
        f.write("sys/module/nvidia_fs/version", "2.28.4\n");
        f.write("dev/nvidia-fs0", "");
        // Signatures checked, not enforced: no Secure Boot.
        f.write("sys/module/module/parameters/sig_enforce", "N\n");
        f.write(
            "sys/kernel/security/lockdown",
            "[none] integrity confidentiality\n",
        );
        let tree = format!("lib/modules/{RELEASE}");
        f.write(
            format!("{tree}/modules.dep"),
            "updates/dkms/rpcrdma.ko: kernel/net/sunrpc/sunrpc.ko\nkernel/net/sunrpc/sunrpc.ko:\n",
        );
        f.write(format!("{tree}/updates/dkms/rpcrdma.ko"), rpcrdma_ko());
        f.write("sys/module/rpcrdma/initstate", "live\n");
        f.write(
            "sys/module/rpcrdma/notes/.note.gnu.build-id",
            support::module_gen::build_id_note(&BUILD_ID),
        );
        f.table(BEFORE, BEFORE_STATS);
        // The nfs module, loaded, built without LOCALIO (no `localio_enabled` among its
        // parameters), as on every Debian kernel.
        f.write("sys/module/nfs/parameters/enable_ino64", "Y\n");
        std::fs::create_dir_all(f.root().join("record")).unwrap();
        std::fs::create_dir_all(f.root().join("mnt/gds")).unwrap();
        for tool in [
            "usr/sbin/mount.nfs",
            "usr/sbin/modprobe",
            "usr/bin/umount",
            "usr/bin/mount",
        ] {
            f.executable(tool, FAKE_TOOL);
        }
        f
    }

    /// The running kernel built with NFS LOCALIO (`CONFIG_NFS_LOCALIO=y`), its nfs module's
    /// `localio_enabled` at `enabled` (`Y` or `N`), `addresses` this host's IPv4 addresses in
    /// `/proc/net/fib_trie`, and a process list without an nfsd. No Debian kernel is built so.
    pub fn localio_kernel(&self, enabled: &str, addresses: &[&str]) {
        self.write(
            format!("boot/config-{RELEASE}"),
            "CONFIG_MODULES=y\nCONFIG_NFS_FS=m\nCONFIG_NFSD=m\nCONFIG_NFS_LOCALIO=y\n",
        );
        self.write(
            "sys/module/nfs/parameters/localio_enabled",
            format!("{enabled}\n"),
        );
        let mut fib = String::from("Local:\n  +-- 0.0.0.0/0 3 0 5\n");
        for a in addresses {
            fib.push_str(&format!("     |-- {a}\n        /32 host LOCAL\n"));
        }
        self.write("proc/net/fib_trie", fib);
        self.write("proc/1/comm", "systemd\n");
    }

    /// An nfsd kernel thread among the processes (an nfsd of some network namespace).
    pub fn nfsd_thread(&self) {
        self.write("proc/4242/comm", "nfsd\n");
    }

    /// The kernel's own LOCALIO state of the superblock `dev` (Linux 6.16+).
    pub fn kernel_localio_state(&self, dev: &str, state: &str) {
        self.write(format!("sys/fs/nfs/{dev}/localio"), format!("{state}\n"));
    }

    /// The node's rpcrdma replaced by the same build without the nvfs hooks, loaded: not ready
    /// at `enforce` (`rpcrdma-hooks`).
    pub fn without_rpcrdma_hooks(&self) {
        self.write(
            format!("lib/modules/{RELEASE}/updates/dkms/rpcrdma.ko"),
            support::build(
                &support::ModuleSpec::rpcrdma(RELEASE)
                    .hooks(None)
                    .build_id(Some(BUILD_ID.to_vec())),
            ),
        );
        self.write("proc/kallsyms", "");
    }

    /// What `tool` does when run.
    pub fn scenario(&self, tool: &str, file: &str, text: &str) {
        self.write(format!("scenario/{tool}/{file}"), text);
    }

    /// `tool` turns the table into (info, stats).
    pub fn scenario_table(&self, tool: &str, table: &(String, String)) {
        self.scenario(tool, "mountinfo", &table.0);
        self.scenario(tool, "mountstats", &table.1);
    }

    /// mount.nfs mounts `table` at its staging point (with [`STAGED`] in it for that point), and
    /// `mount --move` puts the same table with `dir` for it.
    pub fn staged_then_moved(&self, table: &(String, String), dir: &str) {
        self.scenario_table("mount.nfs", table);
        self.scenario_table(
            "mount",
            &(table.0.replace(STAGED, dir), table.1.replace(STAGED, dir)),
        );
    }

    /// Every invocation of `tool`, one line each.
    pub fn record(&self, tool: &str) -> Vec<String> {
        std::fs::read_to_string(self.path(format!("record/{tool}.argv")))
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    pub fn recorded_path(&self, tool: &str) -> Vec<String> {
        std::fs::read_to_string(self.path(format!("record/{tool}.path")))
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    pub fn policy(&self, text: &str) -> PathBuf {
        self.write("etc/nfs-gds/nfs-gds.toml", text)
    }

    /// The binary started as mount(8) starts a helper: argv[0] `/sbin/mount.nfs-gds`, an
    /// environment without PATH or HOME; the root comes from `NFS_GDS_ROOT`.
    pub fn helper(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_nfs-gds"));
        c.arg0("/sbin/mount.nfs-gds")
            .env_clear()
            .env("NFS_GDS_ROOT", self.root());
        c
    }

    /// One agent pass (`agent --once`) and the Prometheus textfile it wrote.
    pub fn agent_prom(&self) -> String {
        let out = tempfile::tempdir().unwrap();
        let a = self
            .nfs_gds()
            .args(["agent", "--once", "--textfile-dir"])
            .arg(out.path())
            .output()
            .unwrap();
        assert!(
            a.status.code().is_some(),
            "{}",
            String::from_utf8_lossy(&a.stderr)
        );
        std::fs::read_to_string(out.path().join("nfs-gds.prom")).unwrap()
    }

    /// `nfs-gds --root ROOT ARGS…`, also without PATH.
    pub fn nfs_gds(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_nfs-gds"));
        c.env_clear().arg("--root").arg(self.root());
        c
    }
}

impl Deref for Fixture {
    type Target = Tree;

    fn deref(&self) -> &Tree {
        &self.dir
    }
}
