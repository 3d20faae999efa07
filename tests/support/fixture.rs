//! Root trees that look like a node to `nfs-gds --root`: `/proc`, `/sys/module`, `/dev`,
//! `/lib/modules/<release>` and `/boot`, built in a temporary directory per test.
//!
//! A fresh [`Fixture`] is a node of kernel `release` with the stock module index (sunrpc and
//! friends in `modules.dep`, rpcrdma's aliases in `modules.alias`) but no rpcrdma file, nothing
//! loaded and no nvidia_fs; each scenario adds what it needs.

use std::fs;
use std::ops::Deref;
use std::path::PathBuf;

use super::module_gen::{build_id_note, HOOKS};
use super::tree::Tree;

/// Where an rpcrdma file lives in each packaging.
pub const INBOX: &str = "kernel/net/sunrpc/xprtrdma/rpcrdma";
pub const DKMS: &str = "updates/dkms/rpcrdma";
pub const RPM: &str = "extra/mlnx-nfsrdma/rpcrdma";

const STOCK_DEP: &str = "kernel/net/sunrpc/sunrpc.ko:\n\
kernel/drivers/infiniband/core/ib_core.ko:\n\
kernel/drivers/infiniband/core/rdma_cm.ko: kernel/drivers/infiniband/core/iw_cm.ko kernel/drivers/infiniband/core/ib_cm.ko kernel/drivers/infiniband/core/ib_core.ko\n";
const RPCRDMA_DEPS: &str = "kernel/drivers/infiniband/core/rdma_cm.ko kernel/drivers/infiniband/core/ib_core.ko kernel/net/sunrpc/sunrpc.ko";

/// How the loaded rpcrdma shows in `/proc/kallsyms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KallsymsHooks {
    /// No hook lines at all.
    None,
    /// `T`: in the module's non-GPL export table.
    Upper,
    /// `t`: GPL export (or not exported).
    Lower,
}

/// What `/sys/module/rpcrdma` says about the loaded build.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    pub build_id: Option<Vec<u8>>,
    pub srcversion: Option<String>,
    pub version: Option<String>,
}

/// A node's root tree; it writes files as the [`Tree`] it derefs to.
#[derive(Debug)]
pub struct Fixture {
    dir: Tree,
    pub release: String,
    proc_modules: Vec<String>,
    kallsyms: Vec<String>,
}

impl Fixture {
    pub fn new(release: &str) -> Self {
        let f = Fixture {
            dir: Tree::new(),
            release: release.to_string(),
            proc_modules: Vec::new(),
            kallsyms: vec![
                "0000000000000000 T _text".into(),
                "0000000000000000 T sunrpc_cache_lookup_rcu\t[sunrpc]".into(),
            ],
        };
        f.write("proc/sys/kernel/osrelease", format!("{release}\n"));
        f.write(
            "proc/version",
            format!(
                "Linux version {release} (builder@example) (gcc 12.2.0) #1 SMP PREEMPT_DYNAMIC\n"
            ),
        );
        f.write(format!("{}/modules.dep", f.tree()), STOCK_DEP);
        f.write(
            format!("{}/modules.alias", f.tree()),
            "# Aliases extracted from modules themselves.\nalias rpcrdma6 rpcrdma\nalias xprtrdma rpcrdma\nalias svcrdma rpcrdma\n",
        );
        f.write(
            format!("{}/modules.builtin", f.tree()),
            "kernel/fs/ext4/ext4.ko\n",
        );
        // A kernel that checks signatures but does not enforce them, as without Secure Boot.
        f.write("sys/module/module/parameters/sig_enforce", "N\n");
        f.write(
            "sys/kernel/security/lockdown",
            "[none] integrity confidentiality\n",
        );
        f.flush();
        f
    }

    /// A Debian 12 node: release `6.1.0-50-amd64`, upstream 6.1.176 in `/proc/version`.
    pub fn debian12() -> Self {
        let f = Fixture::new("6.1.0-50-amd64");
        f.write(
            "proc/version",
            "Linux version 6.1.0-50-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.176-1 (2026-05-02)\n",
        );
        f
    }

    /// Module signatures enforced the way the firmware decides it: no live `sig_enforce` or
    /// lockdown file, a configuration that locks down under Secure Boot, and the EFI variable
    /// saying Secure Boot is `on`.
    pub fn secure_boot(&self, on: bool) {
        self.remove("sys/module/module/parameters/sig_enforce");
        self.remove("sys/kernel/security/lockdown");
        self.write(
            format!("boot/config-{}", self.release),
            "CONFIG_MODULES=y\nCONFIG_MODVERSIONS=y\nCONFIG_MODULE_SIG=y\n# CONFIG_MODULE_SIG_FORCE is not set\nCONFIG_SECURITY_LOCKDOWN_LSM=y\nCONFIG_LOCK_DOWN_IN_EFI_SECURE_BOOT=y\n",
        );
        self.write(
            "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0a9f7a9b0ae",
            [6, 0, 0, 0, u8::from(on)],
        );
    }

    /// `lib/modules/<release>`, relative to the root.
    pub fn tree(&self) -> String {
        format!("lib/modules/{}", self.release)
    }

    /// Installs an rpcrdma file at `<stem><suffix>` in the module tree (`stem` one of
    /// [`INBOX`], [`DKMS`], [`RPM`]) and points `modules.dep` at it, as depmod would.
    pub fn install_rpcrdma(&self, stem: &str, suffix: &str, bytes: &[u8]) -> PathBuf {
        let rel = format!("{stem}{suffix}");
        let path = self.write(format!("{}/{rel}", self.tree()), bytes);
        self.set_rpcrdma_dep_line(&format!("{rel}: {RPCRDMA_DEPS}"));
        path
    }

    /// Replaces rpcrdma's `modules.dep` line with `line` as written (odd spacing included).
    pub fn set_rpcrdma_dep_line(&self, line: &str) {
        let dep = format!("{}/modules.dep", self.tree());
        let old = fs::read_to_string(self.path(&dep)).expect("modules.dep");
        let mut lines: Vec<&str> = old.lines().filter(|l| !l.contains("rpcrdma.ko")).collect();
        lines.push(line);
        self.write(&dep, lines.join("\n") + "\n");
    }

    /// rpcrdma built into the kernel: listed in `modules.builtin`, absent from `modules.dep`,
    /// and its hooks (if any) in kallsyms without a module tag.
    pub fn builtin_rpcrdma(&mut self, hooks: KallsymsHooks) {
        let dep = format!("{}/modules.dep", self.tree());
        let old = fs::read_to_string(self.path(&dep)).expect("modules.dep");
        let kept: Vec<&str> = old.lines().filter(|l| !l.contains("rpcrdma.ko")).collect();
        self.write(&dep, kept.join("\n") + "\n");
        self.write(
            format!("{}/modules.builtin", self.tree()),
            "kernel/fs/ext4/ext4.ko\nkernel/net/sunrpc/xprtrdma/rpcrdma.ko\n",
        );
        if let Some(letter) = hooks_letter(hooks) {
            for hook in HOOKS {
                self.kallsyms
                    .push(format!("ffffffff81a00000 {letter} {hook}"));
            }
        }
        self.flush();
    }

    /// nvidia_fs loaded, with `/dev/nvidia-fs0..` nodes (plain files).
    pub fn nvidia_fs(&mut self, version: &str, devices: usize) {
        self.write("sys/module/nvidia_fs/version", format!("{version}\n"));
        self.write("sys/module/nvidia_fs/initstate", "live\n");
        for i in 0..devices {
            self.write(format!("dev/nvidia-fs{i}"), "");
        }
        self.proc_modules
            .push("nvidia_fs 270336 0 - Live 0x0000000000000000 (OE)".into());
        self.flush();
    }

    /// rpcrdma loaded: a `/proc/modules` line, `/sys/module/rpcrdma/…` as `loaded` says, and the
    /// hook lines of kallsyms.
    pub fn load_rpcrdma(&mut self, loaded: &Loaded, hooks: KallsymsHooks) {
        self.write("sys/module/rpcrdma/initstate", "live\n");
        if let Some(v) = &loaded.version {
            self.write("sys/module/rpcrdma/version", format!("{v}\n"));
        }
        if let Some(s) = &loaded.srcversion {
            self.write("sys/module/rpcrdma/srcversion", format!("{s}\n"));
        }
        if let Some(id) = &loaded.build_id {
            self.write(
                "sys/module/rpcrdma/notes/.note.gnu.build-id",
                build_id_note(id),
            );
        }
        self.proc_modules
            .push("rpcrdma 430080 0 - Live 0x0000000000000000".into());
        if let Some(letter) = hooks_letter(hooks) {
            for hook in HOOKS {
                self.kallsyms
                    .push(format!("0000000000000000 r __ksymtab_{hook}\t[rpcrdma]"));
                self.kallsyms
                    .push(format!("0000000000000000 {letter} {hook}\t[rpcrdma]"));
            }
        }
        self.kallsyms
            .push("0000000000000000 t rpcrdma_ep_create\t[rpcrdma]".into());
        self.flush();
    }

    /// Makes `/proc/kallsyms` a FIFO with no writer: a reader that opens it is refused (or,
    /// without the reader's rules, would hang), so a check that still answers from it shows
    /// kallsyms was never read. Call it last: the other setters rewrite kallsyms.
    pub fn kallsyms_fifo(&self) {
        self.remove("proc/kallsyms");
        nix::unistd::mkfifo(&self.path("proc/kallsyms"), nix::sys::stat::Mode::S_IRUSR)
            .expect("mkfifo proc/kallsyms");
    }

    /// A kernel image for this release.
    pub fn boot_image(&self, bytes: &[u8]) {
        self.write(format!("boot/vmlinuz-{}", self.release), bytes);
    }

    fn flush(&self) {
        let mut modules = self.proc_modules.join("\n");
        if !modules.is_empty() {
            modules.push('\n');
        }
        self.write("proc/modules", modules);
        self.write("proc/kallsyms", self.kallsyms.join("\n") + "\n");
    }
}

fn hooks_letter(hooks: KallsymsHooks) -> Option<char> {
    match hooks {
        KallsymsHooks::None => None,
        KallsymsHooks::Upper => Some('T'),
        KallsymsHooks::Lower => Some('t'),
    }
}

impl Deref for Fixture {
    type Target = Tree;

    fn deref(&self) -> &Tree {
        &self.dir
    }
}
