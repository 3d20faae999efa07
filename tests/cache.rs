//! The module facts cache seen from outside: `check` run twice on a fixture node, with the cache
//! entry tampered with in between to prove what was read from where. As root the cache lives in
//! `<root>/var/cache/nfs-gds`; as anyone else it must not be used at all, which
//! `only_root_uses_the_facts_cache` asserts for whoever runs it. The tests of the cache itself
//! need root, and say so: they are `#[ignore]`d with the reason, and run as root with
//! `cargo test --test integration -- --ignored cache::` (`.ci/run` does).

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::pack::{vmlinuz, ImageFormat};
use crate::support::*;

const NEW_KERNEL: &str = "6.8.0-45-generic";

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

const NEEDS_ROOT: &str =
    "needs root: the facts cache is root's only; run as root with -- --ignored";

fn require_root() {
    assert!(is_root(), "{NEEDS_ROOT}");
}

fn cache_dir(f: &Fixture) -> PathBuf {
    f.path("var/cache/nfs-gds")
}

fn entries(dir: &Path, kind: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().path())
                .filter(|p| {
                    p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with(&format!("{kind}-"))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Rewrites a cache entry in place (keeping its owner and mode) through `edit`.
fn tamper(entry: &Path, edit: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_slice(&fs::read(entry).unwrap()).unwrap();
    edit(&mut v);
    fs::write(entry, serde_json::to_vec(&v).unwrap()).unwrap();
}

fn hide_hooks(v: &mut Value) {
    for s in v["facts"]["symbols"].as_array_mut().unwrap() {
        s["defined"] = Value::Bool(false);
    }
}

/// Each kind of entry (module facts, a kernel image scan, a symbol-version verdict, a kernel
/// configuration) is written by a `check` run as root, in a directory only root can open, and by
/// nobody else, for whom the cache is off by design.
#[test]
fn only_root_uses_the_facts_cache() {
    let module = node_with(&ModuleSpec::rpcrdma(NEW_KERNEL), DKMS, Packing::XzCrc32);
    let image = node_with(
        &ModuleSpec::rpcrdma("5.14.0-427.el9.x86_64").hooks(Some(HookExport::Plain)),
        RPM,
        Packing::XzCrc32,
    );
    image.boot_image(&vmlinuz(true, ImageFormat::Zstd));
    let (abi, _) = crate::module_load::mofed_tree(
        "kernel/drivers/infiniband/core/ib_core.ko",
        "6.1-inbox",
        true,
    );
    let (config, _) = crate::module_load::mofed_tree(
        "kernel/drivers/infiniband/core/ib_core.ko",
        "6.1-inbox",
        true,
    );
    config.write(
        format!("boot/config-{}", crate::module_load::RELEASE),
        "CONFIG_MODULES=y\nCONFIG_MODVERSIONS=y\n",
    );
    for (f, kind) in [
        (&module, "module"),
        (&image, "image"),
        (&abi, "abi"),
        (&config, "config"),
    ] {
        check_json(f);
        let dir = cache_dir(f);
        if is_root() {
            let meta = fs::metadata(&dir).unwrap();
            assert_eq!(meta.mode() & 0o777, 0o700, "{kind}");
            assert_eq!(meta.uid(), 0, "{kind}");
            assert_eq!(entries(&dir, kind).len(), 1, "{kind}");
        } else {
            assert!(!dir.exists(), "{kind}: only root uses the cache");
        }
    }
    if !is_root() {
        eprintln!("not root: the cache is off, as it must be; the tests of the cache itself (cache::*, ignored here) {NEEDS_ROOT}");
    }
}

#[test]
#[ignore = "needs root (the facts cache is root's only): as root, `cargo test --test integration -- --ignored cache::`"]
fn module_facts_are_cached_and_a_rebuilt_file_is_read_again() {
    require_root();
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let f = node_with(&spec, DKMS, Packing::XzCrc32);
    let (code, _) = check_json(&f);
    assert_eq!(code, 0);
    let dir = cache_dir(&f);
    let meta = fs::metadata(&dir).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o700);
    assert_eq!(meta.uid(), 0);
    let found = entries(&dir, "module");
    assert_eq!(found.len(), 1, "{found:?}");

    // A hit: the tampered facts are what check now believes.
    tamper(&found[0], hide_hooks);
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1, "answered from the cache: {doc:#}");
    assert_eq!(status(&doc, "rpcrdma-hooks"), "fail");

    // A rebuilt module (new build-id, same path): a miss, the file is read again.
    let rebuilt = spec.build_id(Some(build_id_of("rebuilt")));
    f.install_rpcrdma(DKMS, ".ko.xz", &pack(&build(&rebuilt), Packing::XzCrc32));
    let (code, doc) = check_json(&f);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(status(&doc, "rpcrdma-hooks"), "pass");
    let out = stdout(&run(&f, &["inspect-module", "--json"]));
    assert!(out.contains(&rebuilt.build_id_hex().unwrap()), "{out}");
}

#[test]
#[ignore = "needs root (the facts cache is root's only): as root, `cargo test --test integration -- --ignored cache::`"]
fn an_untrusted_cache_directory_is_not_read() {
    require_root();
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let f = node_with(&spec, DKMS, Packing::Zstd);
    check_json(&f);
    let dir = cache_dir(&f);
    let entry = entries(&dir, "module").pop().expect("an entry");
    tamper(&entry, hide_hooks);

    fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
    let out = run(&f, &["check"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "tampered entry ignored: {}",
        stdout(&out)
    );
    let err = stderr(&out);
    assert!(err.contains("not using the module facts cache"), "{err}");
    assert!(
        err.contains("writable by group or others (mode 777)"),
        "{err}"
    );
    assert!(err.contains(&dir.display().to_string()), "{err}");

    // The directory is trusted again, the entry is not.
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    fs::set_permissions(&entry, fs::Permissions::from_mode(0o646)).unwrap();
    let out = run(&f, &["check"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("ignoring cache entry"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_cache_can_be_moved_or_turned_off() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let f = node_with(&spec, DKMS, Packing::Zstd);
    let out = nfs_gds()
        .env("NFS_GDS_NO_CACHE", "1")
        .arg("--root")
        .arg(f.root())
        .arg("check")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!cache_dir(&f).exists(), "NFS_GDS_NO_CACHE=1 writes nothing");

    let elsewhere = tempfile::tempdir().unwrap();
    let dir = elsewhere.path().join("nfs-gds-cache");
    let out = nfs_gds()
        .env("NFS_GDS_CACHE_DIR", &dir)
        .arg("--root")
        .arg(f.root())
        .arg("check")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!cache_dir(&f).exists());
    if is_root() {
        assert_eq!(entries(&dir, "module").len(), 1);
    } else {
        assert!(!dir.exists());
    }
}

#[test]
#[ignore = "needs root (the facts cache is root's only): as root, `cargo test --test integration -- --ignored cache::`"]
fn the_kernel_image_scan_is_cached_by_image_identity() {
    require_root();
    let spec = ModuleSpec::rpcrdma("5.14.0-427.el9.x86_64").hooks(Some(HookExport::Plain));
    let f = node_with(&spec, RPM, Packing::XzCrc32);
    f.boot_image(&vmlinuz(true, ImageFormat::Zstd));
    let (code, _) = check_json(&f);
    assert_eq!(code, 1);
    let dir = cache_dir(&f);
    let found = entries(&dir, "image");
    assert_eq!(found.len(), 1, "{found:?}");
    tamper(&found[0], |v| v["found"] = Value::Bool(false));
    let (code, doc) = check_json(&f);
    assert_eq!(code, 0, "answered from the cache: {doc:#}");
    assert!(
        evidence(&doc, "rpcrdma-hook-export").contains("does not contain the rule's warning text")
    );

    // A new image for the same release: scanned again.
    f.boot_image(&vmlinuz(true, ImageFormat::Gzip));
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1, "{doc:#}");
    assert!(evidence(&doc, "rpcrdma-hook-export")
        .contains("(gzip payload) contains the rule's warning text"));
}

#[test]
#[ignore = "needs root (the facts cache is root's only): as root, `cargo test --test integration -- --ignored cache::`"]
fn the_symbol_version_verdict_is_cached_until_a_provider_file_changes() {
    require_root();
    const IB_CORE: &str = "kernel/drivers/infiniband/core/ib_core.ko";
    let (f, _) = crate::module_load::mofed_tree(IB_CORE, "6.1-inbox", true);
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "rpcrdma-abi"), "pass", "{doc:#}");
    let dir = cache_dir(&f);
    let found = entries(&dir, "abi");
    assert_eq!(found.len(), 1, "{found:?}");

    // A hit: the verdict is taken from the entry, not drawn from ib_core again.
    tamper(&found[0], |v| {
        let mismatches = &mut v["value"]["verdict"]["compared"]["mismatches"];
        assert!(
            mismatches.is_array(),
            "the entry keeps a compared report: {v:#}"
        );
        *mismatches = serde_json::json!([{
            "symbol": "ib_drain_qp", "wanted": 1, "provided": 2, "provider": "ib_core",
            "provider_path": null, "origin": "file"
        }]);
    });
    let (_, doc) = check_json(&f);
    assert_eq!(
        status(&doc, "rpcrdma-abi"),
        "fail",
        "answered from the cache: {doc:#}"
    );

    // ib_core replaced as packages do (a new file renamed over the old one): the verdict is
    // drawn again from the new file, whatever the clock did.
    let spec = ModuleSpec::provider(
        "ib_core",
        crate::module_load::RELEASE,
        &[
            ("ib_dma_virt_map_sg", true),
            ("ib_alloc_pd_user", true),
            ("ib_drain_qp", true),
        ],
    )
    .crc_seed("6.1-inbox");
    let tree = f.tree();
    let new = f.write(format!("{tree}/{IB_CORE}.new"), build(&spec));
    fs::rename(&new, new.with_extension("")).unwrap();
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "rpcrdma-abi"), "pass", "drawn again: {doc:#}");
}

#[test]
#[ignore = "needs root (the facts cache is root's only): as root, `cargo test --test integration -- --ignored cache::`"]
fn the_kernel_configuration_is_cached_by_file_identity() {
    require_root();
    let (f, _) = crate::module_load::mofed_tree(
        "kernel/drivers/infiniband/core/ib_core.ko",
        "6.1-inbox",
        true,
    );
    let config = format!("boot/config-{}", crate::module_load::RELEASE);
    f.write(&config, "CONFIG_MODULES=y\nCONFIG_MODVERSIONS=y\n");
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "rpcrdma-abi"), "pass", "{doc:#}");
    let dir = cache_dir(&f);
    let found = entries(&dir, "config");
    assert_eq!(found.len(), 1, "{found:?}");

    // A hit: the options are taken from the entry, not from the file.
    tamper(&found[0], |v| {
        v["value"]["CONFIG_MODVERSIONS"] = Value::String("not-set".into());
    });
    let (_, doc) = check_json(&f);
    // Without symbol CRCs the check judges by vermagic, which this partial config cannot
    // complete: unknown, where the file itself gives pass.
    assert_eq!(
        status(&doc, "rpcrdma-abi"),
        "unknown",
        "answered from the cache: {doc:#}"
    );

    // The same text written as a new file renamed over the old one: read again.
    let new = f.write(
        format!("{config}.new"),
        "CONFIG_MODULES=y\nCONFIG_MODVERSIONS=y\n",
    );
    fs::rename(&new, f.path(&config)).unwrap();
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "rpcrdma-abi"), "pass", "read again: {doc:#}");
}

/// Until another process holds the `flock` on `lock` (`flock -n` fails with 99 then).
fn until_held_elsewhere(lock: &Path) {
    let start = std::time::Instant::now();
    loop {
        let probe = std::process::Command::new("flock")
            .args(["-n", "-E", "99"])
            .arg(lock)
            .arg("true")
            .status()
            .expect("flock(1) from util-linux");
        if probe.code() == Some(99) {
            return;
        }
        assert!(
            start.elapsed().as_secs() < 30,
            "flock(1) never took the lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn a_stuck_fill_lock_costs_each_process_one_bounded_wait() {
    if !is_root() {
        eprintln!("not root: the cache (and its lock) is used by root only");
        return;
    }
    // A check and a helper -f, each on a node whose cache is empty (several misses each),
    // while another process holds fill.lock and never lets go.
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let node = node_with(&spec, DKMS, Packing::XzCrc32);
    let helper = crate::mount_fixture::Fixture::ready();
    let mut holders = Vec::new();
    for root in [node.root(), helper.root()] {
        let dir = root.join("var/cache/nfs-gds");
        fs::create_dir_all(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        let lock = dir.join("fill.lock");
        holders.push(
            // -o: the lock is flock(1)'s own, not its child's, so killing it lets go.
            std::process::Command::new("flock")
                .arg("-o")
                .arg(&lock)
                .args(["sleep", "300"])
                .spawn()
                .expect("flock(1) from util-linux"),
        );
        until_held_elsewhere(&lock);
    }
    let timed = |run: &dyn Fn() -> Option<i32>| {
        let start = std::time::Instant::now();
        let code = run();
        (code, start.elapsed())
    };
    let (check, helper_f) = std::thread::scope(|s| {
        let check = s.spawn(|| timed(&|| check_json(&node).0.into()));
        let helper_f = s.spawn(|| {
            timed(&|| {
                helper
                    .helper()
                    .args(["10.0.2.15:/export", "/mnt/gds", "-f"])
                    .output()
                    .unwrap()
                    .status
                    .code()
            })
        });
        (check.join().unwrap(), helper_f.join().unwrap())
    });
    for mut h in holders {
        h.kill().unwrap();
        h.wait().unwrap();
    }
    eprintln!(
        "with fill.lock held elsewhere: check {:.1} s, mount.nfs-gds -f {:.1} s",
        check.1.as_secs_f64(),
        helper_f.1.as_secs_f64()
    );
    assert_eq!(check.0, Some(0));
    assert_eq!(helper_f.0, Some(0));
    // One wait of at most ten seconds each, not ten per miss (thirty and more before).
    for (what, took) in [("check", check.1), ("mount.nfs-gds -f", helper_f.1)] {
        assert!(
            took < std::time::Duration::from_secs(18),
            "{what} took {took:?} behind a stuck fill.lock"
        );
    }
    // What they derived without the lock is read again next time: nothing was stored wrong.
    let (code, _) = check_json(&node);
    assert_eq!(code, 0);
}
