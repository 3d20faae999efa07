//! `nfs-gds check` as an admin runs it, against fixture nodes: exit codes, the text report and
//! the `--json` document, scenario by scenario.

use crate::support::module_gen;
use crate::support::pack::{bzimage, bzimage_around, vmlinuz, ImageFormat};
use crate::support::*;

const HOOK: &str = "rpcrdma_register_nvfs_dma_ops";

/// Ubuntu 24.04 style release: upstream ≥ 6.6, so the GPL-only rule applies by version.
const NEW_KERNEL: &str = "6.8.0-45-generic";

#[test]
fn stock_inbox_rpcrdma_without_hooks_is_not_ready() {
    let spec = ModuleSpec::rpcrdma("6.1.0-50-amd64").hooks(None);
    let f = node_with(&spec, INBOX, Packing::Plain);
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["command"], "check");
    assert_eq!(doc["verdict"], "not-ready");
    assert_eq!(doc["kernel_release"], "6.1.0-50-amd64");
    assert_eq!(status(&doc, "nvidia-fs-loaded"), "pass");
    assert_eq!(status(&doc, "nvidia-fs-devices"), "pass");
    assert_eq!(status(&doc, "rpcrdma-module"), "pass");
    assert!(
        check_result(&doc, "rpcrdma-module")["summary"]
            .as_str()
            .unwrap()
            .contains("the kernel's own module (kernel/)"),
        "{doc:#}"
    );
    assert_eq!(status(&doc, "rpcrdma-hooks"), "fail");
    let hooks = check_result(&doc, "rpcrdma-hooks");
    assert!(
        hooks["summary"].as_str().unwrap().contains(HOOK),
        "{hooks:#}"
    );
    assert!(
        hooks["remedy"]
            .as_str()
            .unwrap()
            .contains("distribution's own rpcrdma"),
        "{hooks:#}"
    );
    assert!(evidence(&doc, "rpcrdma-hooks")
        .contains("missing: rpcrdma_register_nvfs_dma_ops, rpcrdma_unregister_nvfs_dma_ops"));
    assert_eq!(status(&doc, "rpcrdma-hook-export"), "skip");
    assert_eq!(status(&doc, "rpcrdma-loaded"), "skip");
    assert_eq!(status(&doc, "rpcrdma-fresh"), "skip");
}

#[test]
fn dkms_zst_build_with_gpl_hooks_is_ready() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let f = node_with(&spec, DKMS, Packing::Zstd);
    let (code, doc) = check_json(&f);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["verdict"], "ready");
    for id in [
        "nvidia-fs-loaded",
        "nvidia-fs-devices",
        "rpcrdma-module",
        "rpcrdma-hooks",
        "rpcrdma-hook-export",
    ] {
        assert_eq!(status(&doc, id), "pass", "{id}: {doc:#}");
    }
    let module = evidence(&doc, "rpcrdma-module");
    assert!(module.contains("updates/dkms/rpcrdma.ko.zst"), "{module}");
    assert!(module.contains("compression: zstd"), "{module}");
    assert!(check_result(&doc, "rpcrdma-module")["summary"]
        .as_str()
        .unwrap()
        .contains("a DKMS build (updates/dkms/)"));
    assert!(evidence(&doc, "rpcrdma-hook-export").contains(&format!("{HOOK}: EXPORT_SYMBOL_GPL")));
    // A pass needs no remedy.
    assert!(check_result(&doc, "rpcrdma-hooks").get("remedy").is_none());
    // Not loaded yet: the kernel loads it at the first RDMA mount.
    assert_eq!(status(&doc, "rpcrdma-loaded"), "skip");
    assert!(check_result(&doc, "rpcrdma-loaded")["summary"]
        .as_str()
        .unwrap()
        .contains("rpcrdma is not loaded"));
    assert_eq!(status(&doc, "rpcrdma-fresh"), "skip");

    let text = run(&f, &["check"]);
    assert_eq!(text.status.code(), Some(0));
    let out = stdout(&text);
    assert!(out.starts_with("nfs-gds check: READY\n"), "{out}");
    assert!(out.contains("PASS     rpcrdma-hooks"), "{out}");
}

#[test]
fn rpm_xz_build_with_plain_hooks_fails_on_a_kernel_with_the_rule() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL).hooks(Some(HookExport::Plain));
    let f = node_with(&spec, RPM, Packing::XzCrc32);
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["verdict"], "not-ready");
    assert_eq!(status(&doc, "rpcrdma-hooks"), "pass");
    assert_eq!(status(&doc, "rpcrdma-hook-export"), "fail");
    let export = check_result(&doc, "rpcrdma-hook-export");
    assert!(export["summary"]
        .as_str()
        .unwrap()
        .contains("failing symbol_get of non-GPLONLY symbol"));
    assert!(export["remedy"]
        .as_str()
        .unwrap()
        .contains("EXPORT_SYMBOL_GPL"));
    let ev = evidence(&doc, "rpcrdma-hook-export");
    assert!(
        ev.contains(&format!("{HOOK}: EXPORT_SYMBOL (plain)")),
        "{ev}"
    );
    assert!(ev.contains("upstream version 6.8.0"), "{ev}");
    assert!(evidence(&doc, "rpcrdma-module").contains("extra/mlnx-nfsrdma/rpcrdma.ko.xz"));

    let text = stdout(&run(&f, &["check"]));
    assert!(
        text.starts_with("nfs-gds check: NOT READY (1 failed)\n"),
        "{text}"
    );
    assert!(text.contains("FAIL     rpcrdma-hook-export"), "{text}");
    assert!(
        text.contains("fix: install a build that exports the hooks with EXPORT_SYMBOL_GPL"),
        "{text}"
    );
}

#[test]
fn plain_hooks_pass_on_a_kernel_known_not_to_enforce() {
    let spec = ModuleSpec::rpcrdma("5.15.0-70-generic").hooks(Some(HookExport::Plain));
    let f = node_with(&spec, DKMS, Packing::Zstd);
    f.write(
        "proc/version_signature",
        "Ubuntu 5.15.0-70.77-generic 5.15.92\n",
    );
    let (code, doc) = check_json(&f);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["verdict"], "ready");
    assert_eq!(status(&doc, "rpcrdma-hook-export"), "pass");
    let r = check_result(&doc, "rpcrdma-hook-export");
    assert!(
        r["summary"].as_str().unwrap().contains("still accepts"),
        "{r:#}"
    );
    assert!(evidence(&doc, "rpcrdma-hook-export")
        .contains("5.15.92 (from /proc/version_signature) predates the rule"));
}

#[test]
fn plain_hooks_on_a_vendor_kernel_without_image_warn() {
    let spec = ModuleSpec::rpcrdma("5.14.0-427.el9.x86_64").hooks(Some(HookExport::Plain));
    let f = node_with(&spec, RPM, Packing::XzCrc32);
    let (code, doc) = check_json(&f);
    assert_eq!(code, 0, "a warning is not a refusal: {doc:#}");
    assert_eq!(doc["verdict"], "ready-with-warnings");
    assert_eq!(status(&doc, "rpcrdma-hook-export"), "warn");
    let ev = evidence(&doc, "rpcrdma-hook-export");
    assert!(ev.contains("no kernel image found under /boot"), "{ev}");
    assert!(ev.contains("backport"), "{ev}");
    let text = stdout(&run(&f, &["check"]));
    assert!(
        text.starts_with("nfs-gds check: READY, WITH WARNINGS (1 warning)\n"),
        "{text}"
    );
}

#[test]
fn the_kernel_image_decides_for_a_vendor_kernel() {
    let spec = ModuleSpec::rpcrdma("5.14.0-427.el9.x86_64").hooks(Some(HookExport::Plain));
    for (format, name) in [
        (ImageFormat::Xz, "xz"),
        (ImageFormat::Zstd, "zstd"),
        (ImageFormat::Gzip, "gzip"),
    ] {
        let f = node_with(&spec, RPM, Packing::XzCrc32);
        f.boot_image(&vmlinuz(true, format));
        let (code, doc) = check_json(&f);
        assert_eq!(code, 1, "{name}: {doc:#}");
        assert_eq!(status(&doc, "rpcrdma-hook-export"), "fail", "{name}");
        let ev = evidence(&doc, "rpcrdma-hook-export");
        assert!(
            ev.contains(&format!("/boot/vmlinuz-5.14.0-427.el9.x86_64 ({name} payload) contains the rule's warning text")),
            "{ev}"
        );

        f.boot_image(&vmlinuz(false, format));
        let (code, doc) = check_json(&f);
        assert_eq!(code, 0, "{name}: {doc:#}");
        assert_eq!(status(&doc, "rpcrdma-hook-export"), "pass", "{name}");
        assert!(evidence(&doc, "rpcrdma-hook-export")
            .contains("does not contain the rule's warning text"));
    }
}

/// A kernel image larger than the data segment `check` may have (a gigabyte, sparse: it costs
/// no disk) is scanned streamed, the payload its header declares and nothing else: with the
/// data limited to 128 MiB, reading it whole would fail to allocate.
#[test]
fn a_gigabyte_kernel_image_is_scanned_within_a_data_limit() {
    let spec = ModuleSpec::rpcrdma("5.14.0-427.el9.x86_64").hooks(Some(HookExport::Plain));
    let f = node_with(&spec, RPM, Packing::XzCrc32);
    f.boot_image(&bzimage(true, ImageFormat::Gzip));
    let image = std::fs::OpenOptions::new()
        .write(true)
        .open(f.path("boot/vmlinuz-5.14.0-427.el9.x86_64"))
        .unwrap();
    image.set_len(1 << 30).unwrap();
    drop(image);
    let doc = check_json_within_data_limit(&f, 131072);
    assert_eq!(status(&doc, "rpcrdma-hook-export"), "fail", "{doc:#}");
    let ev = evidence(&doc, "rpcrdma-hook-export");
    assert!(
        ev.contains("(gzip payload) contains the rule's warning text"),
        "{ev}"
    );
}

/// The peak RSS (KiB) of `check` on `f`, from GNU time; `None` without it.
fn peak_rss_kib(f: &Fixture) -> Option<u64> {
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(assert_cmd::cargo::cargo_bin!("nfs-gds"))
        .env("NFS_GDS_NO_CACHE", "1")
        .arg("--root")
        .arg(f.root())
        .args(["check", "--json"])
        .output()
        .ok()?;
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines().last()?.trim().parse().ok()
}

/// The kernel-image scan holds the decoder's window as the image declares it, and no more of
/// it than the payload decompresses to, plus at most 4 MiB: an xz bzImage's 32 MiB dictionary,
/// a zstd stream's declared window (128 MiB for `zstd -22 --ultra` piped, as the kernel build
/// writes it, with no content size), each over a 10 MiB kernel without the rule's text (so all
/// of it is decompressed), against the same scan of a gzip image (a 32 KiB window).
#[test]
fn the_image_scan_holds_its_window_capped_at_the_payload_plus_four_mib() {
    use crate::support::pack::{gzip, xz, zstd_kernel_stream};
    const MIB: u64 = 1 << 20;
    let release = "6.12.48+deb13-amd64";
    let spec = ModuleSpec::rpcrdma(release).hooks(Some(HookExport::Plain));
    let mut text = Vec::with_capacity(10 << 20);
    let mut n = 0u64;
    while text.len() < 10 << 20 {
        n = n
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        text.extend_from_slice(format!("{:016x} t kernel_symbol_{}\n", n, n >> 40).as_bytes());
    }
    let payload = text.len() as u64;
    let peak = |compressed: Vec<u8>| {
        let f = node_with(&spec, DKMS, Packing::Plain);
        f.boot_image(&bzimage_around(&compressed));
        let (_, doc) = check_json(&f);
        assert!(
            evidence(&doc, "rpcrdma-hook-export")
                .contains("does not contain the rule's warning text"),
            "the whole payload is scanned: {doc:#}"
        );
        peak_rss_kib(&f)
    };
    let Some(floor) = peak(gzip(&text)) else {
        eprintln!("no /usr/bin/time: the peak RSS cannot be measured here");
        return;
    };
    let cases = [
        (
            "xz, 32 MiB dictionary",
            xz(&text, liblzma::stream::Check::Crc32, 32 << 20, true),
            32 * MIB,
        ),
        (
            "zstd, 128 MiB window",
            zstd_kernel_stream(&text, 27),
            128 * MIB,
        ),
        ("zstd, 8 MiB window", zstd_kernel_stream(&text, 23), 8 * MIB),
    ];
    for (name, compressed, window) in cases {
        let rss = peak(compressed).expect("measured once already") * 1024;
        let allowed = window.min(payload) + 4 * MIB;
        assert!(
            rss <= floor * 1024 + allowed,
            "{name}: peak RSS {} KiB, {} KiB over the gzip scan's {floor} KiB; allowed {} KiB",
            rss / 1024,
            (rss / 1024).saturating_sub(floor),
            allowed / 1024
        );
        eprintln!(
            "{name}: {} KiB over the gzip scan ({floor} KiB)",
            (rss / 1024).saturating_sub(floor)
        );
    }
}

#[test]
fn a_stale_loaded_module_is_caught_by_build_id() {
    // A rebuild with the hooks waits on disk while the old build without them is loaded.
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL).build_id(Some(build_id_of("rebuilt")));
    let mut f = node_with(&spec, DKMS, Packing::Zstd);
    f.load_rpcrdma(
        &Loaded {
            build_id: Some(build_id_of("old")),
            srcversion: spec.srcversion.clone(),
            version: spec.version.clone(),
        },
        KallsymsHooks::None,
    );
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(status(&doc, "rpcrdma-loaded"), "fail");
    assert_eq!(status(&doc, "rpcrdma-fresh"), "fail");
    let ev = evidence(&doc, "rpcrdma-fresh");
    assert!(
        ev.contains(&format!(
            "loaded build-id: {}",
            module_gen::hex(&build_id_of("old"))
        )),
        "{ev}"
    );
    assert!(
        ev.contains(&format!(
            "on-disk build-id: {}",
            spec.build_id_hex().unwrap()
        )),
        "{ev}"
    );
    assert!(check_result(&doc, "rpcrdma-fresh")["remedy"]
        .as_str()
        .unwrap()
        .contains("modprobe -r rpcrdma && modprobe rpcrdma"));
}

#[test]
fn the_same_build_loaded_is_fresh() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let mut f = node_with(&spec, DKMS, Packing::Zstd);
    f.load_rpcrdma(
        &Loaded {
            build_id: spec.build_id.clone(),
            srcversion: None,
            version: None,
        },
        KallsymsHooks::Lower,
    );
    let (code, doc) = check_json(&f);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(status(&doc, "rpcrdma-fresh"), "pass");
    assert!(evidence(&doc, "rpcrdma-fresh").contains(&spec.build_id_hex().unwrap()));
    assert_eq!(status(&doc, "rpcrdma-loaded"), "pass");
    // The build-id names the file: its hooks answer, and kallsyms is not read.
    let ev = evidence(&doc, "rpcrdma-loaded");
    assert!(
        ev.contains(&format!("{HOOK} defined, exported GPL")),
        "{ev}"
    );
    assert!(ev.contains("(/proc/kallsyms not read)"), "{ev}");
}

#[test]
fn without_build_ids_srcversion_decides_freshness() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL).build_id(None);
    let mut same = node_with(&spec, DKMS, Packing::Gzip);
    same.load_rpcrdma(
        &Loaded {
            build_id: None,
            srcversion: spec.srcversion.clone(),
            version: None,
        },
        KallsymsHooks::Lower,
    );
    let (code, doc) = check_json(&same);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(status(&doc, "rpcrdma-fresh"), "pass");
    assert!(check_result(&doc, "rpcrdma-fresh")["summary"]
        .as_str()
        .unwrap()
        .contains("same srcversion"));

    let mut other = node_with(&spec, DKMS, Packing::Gzip);
    other.load_rpcrdma(
        &Loaded {
            build_id: None,
            srcversion: Some("FFFFFFFFFFFFFFFFFFFFFFF".into()),
            version: None,
        },
        KallsymsHooks::None,
    );
    let (code, doc) = check_json(&other);
    assert_eq!(code, 1);
    assert_eq!(status(&doc, "rpcrdma-fresh"), "fail");
    assert!(evidence(&doc, "rpcrdma-fresh").contains("loaded srcversion: FFFFFFFFFFFFFFFFFFFFFFF"));

    // A stock module with neither: cannot tell, says so.
    let stock = ModuleSpec::rpcrdma(NEW_KERNEL)
        .build_id(None)
        .srcversion(None);
    let mut neither = node_with(&stock, DKMS, Packing::Plain);
    neither.load_rpcrdma(&Loaded::default(), KallsymsHooks::Lower);
    let (code, doc) = check_json(&neither);
    assert_eq!(code, 0);
    assert_eq!(status(&doc, "rpcrdma-fresh"), "warn");
}

#[test]
fn rpcrdma_built_into_the_kernel() {
    let mut f = Fixture::new(NEW_KERNEL);
    f.nvidia_fs("2.28.4", 2);
    f.builtin_rpcrdma(KallsymsHooks::Lower);
    let (code, doc) = check_json(&f);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["verdict"], "ready-with-warnings");
    assert_eq!(status(&doc, "rpcrdma-module"), "pass");
    assert!(check_result(&doc, "rpcrdma-module")["summary"]
        .as_str()
        .unwrap()
        .contains("built into the kernel"));
    assert_eq!(status(&doc, "rpcrdma-hooks"), "pass");
    assert!(evidence(&doc, "rpcrdma-hooks").contains(&format!("t {HOOK}")));
    assert_eq!(status(&doc, "rpcrdma-hook-export"), "warn");
    assert_eq!(status(&doc, "rpcrdma-loaded"), "skip");
    assert_eq!(status(&doc, "rpcrdma-fresh"), "skip");

    let mut bare = Fixture::new(NEW_KERNEL);
    bare.nvidia_fs("2.28.4", 1);
    bare.builtin_rpcrdma(KallsymsHooks::None);
    let (code, doc) = check_json(&bare);
    assert_eq!(code, 1);
    assert_eq!(status(&doc, "rpcrdma-hooks"), "fail");
}

#[test]
fn nvidia_fs_absent_fails_and_skips_the_devices() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let f = Fixture::new(NEW_KERNEL);
    f.install_rpcrdma(DKMS, ".ko.zst", &pack(&build(&spec), Packing::Zstd));
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(status(&doc, "nvidia-fs-loaded"), "fail");
    assert!(evidence(&doc, "nvidia-fs-loaded").contains("/sys/module/nvidia_fs: absent"));
    assert!(check_result(&doc, "nvidia-fs-loaded")["remedy"]
        .as_str()
        .unwrap()
        .contains("modprobe nvidia-fs"));
    assert_eq!(status(&doc, "nvidia-fs-devices"), "skip");
    assert_eq!(status(&doc, "rpcrdma-hooks"), "pass");

    let mut no_dev = Fixture::new(NEW_KERNEL);
    no_dev.nvidia_fs("2.28.4", 0);
    let (_, doc) = check_json(&no_dev);
    assert_eq!(status(&doc, "nvidia-fs-loaded"), "pass");
    assert!(check_result(&doc, "nvidia-fs-loaded")["summary"]
        .as_str()
        .unwrap()
        .contains("2.28.4"));
    assert_eq!(status(&doc, "nvidia-fs-devices"), "fail");
}

#[test]
fn kallsyms_letter_of_the_loaded_hooks() {
    // The file on disk exports GPL, but the loaded (older) module, another build, exports
    // plain: T.
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let mut upper = node_with(&spec, DKMS, Packing::Zstd);
    upper.load_rpcrdma(
        &Loaded {
            build_id: Some(build_id_of("older")),
            ..Loaded::default()
        },
        KallsymsHooks::Upper,
    );
    let (code, doc) = check_json(&upper);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(status(&doc, "rpcrdma-loaded"), "fail");
    assert!(check_result(&doc, "rpcrdma-loaded")["summary"]
        .as_str()
        .unwrap()
        .contains("type T"));
    assert!(evidence(&doc, "rpcrdma-loaded").contains(&format!("T {HOOK}\t[rpcrdma]")));

    let mut lower = node_with(&spec, DKMS, Packing::Zstd);
    lower.load_rpcrdma(
        &Loaded {
            build_id: spec.build_id,
            ..Loaded::default()
        },
        KallsymsHooks::Lower,
    );
    let (code, doc) = check_json(&lower);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(status(&doc, "rpcrdma-loaded"), "pass");

    // With the __kflagstab layout every export is T; the letter proves nothing.
    let flags = ModuleSpec::rpcrdma("7.1.0").layout(Layout::FlagsTable);
    let mut new_layout = node_with(&flags, DKMS, Packing::XzCrc64);
    new_layout.load_rpcrdma(
        &Loaded {
            build_id: flags.build_id,
            ..Loaded::default()
        },
        KallsymsHooks::Upper,
    );
    let (code, doc) = check_json(&new_layout);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(status(&doc, "rpcrdma-loaded"), "pass");
    assert_eq!(status(&doc, "rpcrdma-hook-export"), "pass");
}

#[test]
fn loaded_module_without_hooks_while_the_file_has_them() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let mut f = node_with(&spec, DKMS, Packing::Zstd);
    f.load_rpcrdma(
        &Loaded {
            build_id: Some(build_id_of("inbox")),
            ..Loaded::default()
        },
        KallsymsHooks::None,
    );
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1);
    assert_eq!(status(&doc, "rpcrdma-loaded"), "fail");
    assert!(check_result(&doc, "rpcrdma-loaded")["remedy"]
        .as_str()
        .unwrap()
        .contains("older build is loaded"));
    assert_eq!(status(&doc, "rpcrdma-fresh"), "fail");
}

#[test]
fn an_alias_only_tree_and_odd_modules_dep_spacing_resolve() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let f = node_with(&spec, DKMS, Packing::Zstd);
    f.set_rpcrdma_dep_line(
        "  updates/dkms/rpcrdma.ko.zst:\tkernel/net/sunrpc/sunrpc.ko   kernel/drivers/infiniband/core/ib_core.ko  \r",
    );
    let (code, doc) = check_json(&f);
    assert_eq!(code, 0, "{doc:#}");
    assert!(evidence(&doc, "rpcrdma-module").contains("updates/dkms/rpcrdma.ko.zst"));
}

#[test]
fn dangling_modules_dep_entry_fails_rpcrdma_module() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let f = node_with(&spec, DKMS, Packing::Zstd);
    f.remove(format!("{}/updates/dkms/rpcrdma.ko.zst", f.tree()));
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1);
    assert_eq!(status(&doc, "rpcrdma-module"), "fail");
    let r = check_result(&doc, "rpcrdma-module");
    assert!(
        r["summary"].as_str().unwrap().contains("does not exist"),
        "{r:#}"
    );
    assert!(r["remedy"].as_str().unwrap().contains("depmod -a"));
}

#[test]
fn no_module_tree_and_no_rpcrdma_at_all() {
    let f = Fixture::new(NEW_KERNEL);
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1);
    assert_eq!(status(&doc, "rpcrdma-module"), "fail");
    assert!(check_result(&doc, "rpcrdma-module")["summary"]
        .as_str()
        .unwrap()
        .contains("knows no rpcrdma module"));

    f.remove(format!("{}/modules.dep", f.tree()));
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "rpcrdma-module"), "unknown");
}

#[test]
fn the_root_comes_from_the_environment_too() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let f = node_with(&spec, DKMS, Packing::Zstd);
    let out = nfs_gds()
        .env("NFS_GDS_ROOT", f.root())
        .args(["check", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["root"], f.root().display().to_string());
}

/// `-v` says which policy applies, `-vv` which check decided what, `-vvv` every file read,
/// listed or looked for; the default says none of it. Paths are escaped like everything shown.
#[test]
fn verbosity_traces_the_policy_the_decisions_and_the_files_read() {
    let f = ready_node();
    let err_of = |v: &[&str]| {
        let mut args: Vec<&str> = v.to_vec();
        args.push("check");
        stderr(&run(&f, &args))
    };
    let quiet = err_of(&[]);
    assert!(!quiet.contains("policy:"), "{quiet}");
    let one = err_of(&["-v"]);
    assert!(
        one.contains("policy: ") && one.contains("etc/nfs-gds/nfs-gds.toml"),
        "{one}"
    );
    assert!(!one.contains("check rpcrdma-hooks:"), "{one}");
    let two = err_of(&["-vv"]);
    assert!(two.contains("check rpcrdma-hooks: pass: "), "{two}");
    assert!(two.contains("check nvidia-fs-loaded: pass: "), "{two}");
    assert!(!two.contains("proc/modules ("), "{two}");
    let three = err_of(&["-vvv"]);
    let modules = f.path("proc/modules");
    assert!(
        three.contains(&format!("read {} (", modules.display())),
        "{three}"
    );
    assert!(
        three.contains(&format!("listed {}", f.path("dev").display())),
        "{three}"
    );
}

/// `check --probe` on a node without nvidia_fs: the probe is skipped with the reason, and no
/// raw system error reaches the report.
#[test]
fn the_probe_is_skipped_with_the_reason_when_nvidia_fs_is_not_loaded() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let f = Fixture::new(NEW_KERNEL);
    f.install_rpcrdma(DKMS, ".ko.zst", &pack(&build(&spec), Packing::Zstd));
    let out = run(&f, &["check", "--probe", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status(&doc, "nvidia-fs-loaded"), "fail");
    let probe = check_result(&doc, "nvfs-registration");
    assert_eq!(probe["status"], "skip", "{probe:#}");
    assert_eq!(
        probe["summary"],
        "nvidia_fs is not loaded, so there is no device to probe (see nvidia-fs-loaded)"
    );
    let text = stdout(&run(&f, &["check", "--probe"]));
    assert!(!text.contains("os error"), "{text}");
    assert!(!text.contains("cannot open the nvidia-fs device"), "{text}");
}
