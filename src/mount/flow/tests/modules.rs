//! Kernel modules: waiting for nvidia_fs, loading rpcrdma, and the live probe of its registration.

use super::*;

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
