//! Kernel modules: waiting for nvidia_fs, loading rpcrdma, and the live probe of its registration.

use super::*;

/// A system whose clock loads nvidia_fs into the tree at the `after_sleeps`th sleep.
fn module_arrives(tree: &Tree, after_sleeps: usize) -> Fake {
    let root = tree.root().to_owned();
    let mut slept = 0;
    Fake::new().on(move |call| {
        if let Call::Sleep { .. } = call {
            slept += 1;
            if slept == after_sleeps {
                write_below(&root, "sys/module/nvidia_fs/version", "2.28.4\n");
            }
        }
        None
    })
}

/// A system whose `modprobe` does `load` and exits with its code.
fn modprobe_does(load: impl FnMut(&str) -> i32 + Send + 'static) -> Fake {
    let mut load = load;
    Fake::new().on(move |call| match call {
        Call::Exec { program, args, .. } if program == Path::new(MODPROBE) => {
            let module = args.first().map(|a| a.to_string_lossy().into_owned());
            let code = load(module.as_deref().unwrap_or(""));
            Some(Answer::Exited(Ok(code << 8)))
        }
        _ => None,
    })
}

#[test]
fn the_wait_rechecks_until_the_module_arrives() {
    let t = gds_node();
    std::fs::remove_dir_all(t.root().join("sys/module/nvidia_fs")).unwrap();
    let clock = module_arrives(&t, 3);
    let o = run_with(
        &t,
        &request("rw,gds_wait=60", false),
        "",
        mounts(&t, "rdma"),
        &clock,
        false,
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert_eq!(clock.sleeps().len(), 3);
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
    std::fs::remove_dir_all(t.root().join("sys/module/nvidia_fs")).unwrap();
    let clock = Fake::new();
    let o = run_with(
        &t,
        &request("rw", false),
        "wait = 4\n",
        mounts(&t, "rdma"),
        &clock,
        false,
    );
    assert_eq!(o.code, 32);
    assert_eq!(clock.sleeps(), [Duration::from_secs(2); 2]);
    assert!(o.err.contains("gave up waiting after 4 s"), "{}", o.err);
}

/// A tree whose rpcrdma is a (dangling) module file, so it is loadable and not loaded.
fn tree_with_module_rpcrdma() -> Tree {
    let t = gds_node();
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
    let root = t.root().to_owned();
    let system = modprobe_does(move |_| {
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
        0
    });
    let o = run_with(
        &t,
        &request("rw,gds_policy=warn", false),
        "",
        mounts(&t, "rdma"),
        &system,
        true,
    );
    assert_eq!(o.loads, ["rpcrdma"]);
    assert_eq!(o.code, 0, "{}", o.err);
    // The loaded module was judged: its hooks are in kallsyms.
    assert!(!o.err.contains("rpcrdma-loaded"), "{}", o.err);
}

#[test]
fn a_failed_modprobe_is_noted_once_and_the_checks_still_run() {
    let t = tree_with_module_rpcrdma();
    let system = modprobe_does(|_| 1);
    let o = run_with(
        &t,
        &request("rw,gds_wait=4", false),
        "",
        mounts(&t, "rdma"),
        &system,
        true,
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

/// What the helper asked of the system and got back, replayed: the same run, call for call.
#[test]
fn a_recorded_helper_run_replays_call_for_call() {
    use crate::system::{Recording, Replay, Transcript};
    let t = tree_with_module_rpcrdma();
    let fake = modprobe_does(|_| 1);
    let recording = Recording::new(&fake);
    let req = request("rw,gds_wait=4", false);
    let first = run_through(&t, &req, "", mounts(&t, "rdma"), &recording, true);
    let transcript = Transcript::parse(&recording.transcript().to_lines()).unwrap();
    let asked: Vec<String> = transcript.0.iter().map(|e| e.call.to_string()).collect();
    assert_eq!(
        asked
            .iter()
            .filter(|c| c.as_str() == "exec /sbin/modprobe rpcrdma")
            .count(),
        3,
        "{asked:?}"
    );
    assert!(asked.iter().any(|c| c.starts_with("sleep ")), "{asked:?}");

    let replay = Replay::new(transcript.clone());
    let again = run_through(&t, &req, "", mounts(&t, "rdma"), &replay, true);
    assert_eq!((again.code, &again.err), (first.code, &first.err));
    replay.finish().unwrap();

    // A run that asks otherwise (no modprobe this time) departs from the recording.
    let replay = Replay::new(transcript);
    let other = run_through(&t, &req, "", mounts(&t, "rdma"), &replay, false);
    assert_eq!(other.code, 32);
    let departures = replay.finish().unwrap_err();
    assert!(
        departures
            .iter()
            .any(|d| d.contains("exec /sbin/modprobe rpcrdma")),
        "{departures:?}"
    );
}

#[test]
fn modprobe_is_not_run_when_disabled_or_built_in() {
    let t = tree_with_module_rpcrdma();
    let o = run_with(
        &t,
        &request("rw", false),
        "modprobe-rpcrdma = false\n",
        mounts(&t, "rdma"),
        &modprobe_does(|_| 0),
        true,
    );
    assert!(o.loads.is_empty());
    let t = gds_node();
    let o = run_with(
        &t,
        &request("rw", false),
        "",
        mounts(&t, "rdma"),
        &modprobe_does(|_| 0),
        true,
    );
    assert!(o.loads.is_empty());
    // No modprobe at all: said once, not fatal.
    let t = tree_with_module_rpcrdma();
    let o = run(
        &t,
        &request("rw,gds_policy=warn", false),
        "",
        mounts(&t, "rdma"),
    );
    assert!(
        o.err
            .contains("nfs-gds: no modprobe in /usr/sbin:/sbin:/usr/bin:/bin below"),
        "{}",
        o.err
    );
}

/// A system whose nvidia-fs device opens and lists, while open, what the tree's
/// `proc/driver/nvidia-fs/modules` says then.
fn device_lists(tree: &Tree) -> Fake {
    let list = tree.root().join("proc/driver/nvidia-fs/modules");
    Fake::new().on(move |call| match call {
        Call::ProbeDevice { .. } => Some(Answer::Probed(crate::system::Probed::Opened {
            list: std::fs::read_to_string(&list).map_err(|e| e.to_string()),
            close: std::time::Duration::ZERO,
        })),
        _ => None,
    })
}

#[test]
fn the_live_probe_refuses_when_rpcrdma_did_not_register() {
    let t = gds_node();
    let probing = "probe = true\n[checks]\nrpcrdma-hook-export = \"off\"\n";
    // The helper's outcome when nvidia-fs lists `listed` under `policy`, and whether it probed.
    let mount_listing = |listed: &str, policy: &str| {
        t.write("proc/driver/nvidia-fs/modules", listed);
        let system = device_lists(&t);
        let req = request("rw", false);
        let o = run_with(&t, &req, policy, mounts(&t, "rdma"), &system, false);
        let probed = system.calls().iter().any(|c| c == "probe /dev/nvidia-fs0");
        (o, probed)
    };
    let (o, probed) = mount_listing("wekafsio: 1\n", probing);
    assert_eq!(o.code, 32, "{}", o.err);
    assert!(o.calls.is_empty(), "nothing may be mounted: {:?}", o.calls);
    assert!(
        o.err.contains("FAIL nvfs-registration [enforce]"),
        "{}",
        o.err
    );
    assert!(probed);
    let (o, _) = mount_listing("wekafsio: 1\nrpcrdma: (null)\n", probing);
    assert_eq!(o.code, 0, "{}", o.err);
    // Without `probe = true` the probe does not run at all.
    let (o, probed) = mount_listing("wekafsio: 1\n", "[checks]\nrpcrdma-hook-export = \"off\"\n");
    assert_eq!(o.code, 0, "{}", o.err);
    assert!(!o.err.contains("nvfs-registration"), "{}", o.err);
    assert!(!probed);
}
