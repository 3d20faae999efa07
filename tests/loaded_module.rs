//! The loaded rpcrdma decides the mount; the file modprobe resolves predicts the next load. One
//! test per row of the table in docs/checks.md (loaded: none / hooked GPL / hooked plain / no hooks ×
//! file: same build / another with hooks / another without), then where a loaded build that
//! matches no file of the tree is said to come from.

use crate::support::*;

/// Upstream ≥ 6.6: the GPL-only `__symbol_get` rule applies by version.
const KERNEL: &str = "6.8.0-45-generic";

#[derive(Debug, Clone, Copy)]
enum LoadedAs {
    None,
    HookedGpl,
    HookedPlain,
    NoHooks,
}

#[derive(Debug, Clone, Copy)]
enum FileIs {
    /// The loaded build itself (same build-id); its hooks follow the loaded module's.
    Same,
    OtherWithHooks,
    OtherWithout,
}

/// A node with nvidia_fs, a DKMS rpcrdma file and (unless `LoadedAs::None`) a loaded rpcrdma.
fn node(loaded: LoadedAs, file: FileIs) -> Fixture {
    let hooks = match (file, loaded) {
        (FileIs::OtherWithHooks, _) => Some(HookExport::Gpl),
        (FileIs::OtherWithout, _) | (FileIs::Same, LoadedAs::NoHooks) => None,
        (FileIs::Same, LoadedAs::HookedPlain) => Some(HookExport::Plain),
        (FileIs::Same, _) => Some(HookExport::Gpl),
    };
    let spec = ModuleSpec::rpcrdma(KERNEL)
        .hooks(hooks)
        .build_id(Some(build_id_of("on-disk")));
    let mut f = node_with(&spec, DKMS, Packing::Zstd);
    let build_id = match file {
        FileIs::Same => build_id_of("on-disk"),
        _ => build_id_of("loaded-elsewhere"),
    };
    let letter = match loaded {
        LoadedAs::None => return f,
        LoadedAs::HookedGpl => KallsymsHooks::Lower,
        LoadedAs::HookedPlain => KallsymsHooks::Upper,
        LoadedAs::NoHooks => KallsymsHooks::None,
    };
    f.load_rpcrdma(
        &Loaded {
            build_id: Some(build_id),
            ..Loaded::default()
        },
        letter,
    );
    f
}

/// Runs `check --json`; asserts the exit code and each `(id, status)`.
fn expect(f: &Fixture, code: i32, statuses: &[(&str, &str)]) -> serde_json::Value {
    let (got, doc) = check_json(f);
    assert_eq!(got, code, "{doc:#}");
    for (id, want) in statuses {
        assert_eq!(
            &status(&doc, id),
            want,
            "{id}: {:#}",
            check_result(&doc, id)
        );
    }
    doc
}

fn summary(doc: &serde_json::Value, id: &str) -> String {
    check_result(doc, id)["summary"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn not_loaded_file_with_hooks_is_ready() {
    let f = node(LoadedAs::None, FileIs::OtherWithHooks);
    expect(
        &f,
        0,
        &[
            ("rpcrdma-hooks", "pass"),
            ("rpcrdma-loaded", "skip"),
            ("rpcrdma-next-load", "skip"),
        ],
    );
}

#[test]
fn not_loaded_file_without_hooks_is_refused() {
    let f = node(LoadedAs::None, FileIs::OtherWithout);
    expect(
        &f,
        1,
        &[("rpcrdma-hooks", "fail"), ("rpcrdma-next-load", "skip")],
    );
}

#[test]
fn hooked_gpl_loaded_from_the_file_is_ready() {
    let f = node(LoadedAs::HookedGpl, FileIs::Same);
    expect(
        &f,
        0,
        &[
            ("rpcrdma-loaded", "pass"),
            ("rpcrdma-hooks", "pass"),
            ("rpcrdma-fresh", "pass"),
            ("rpcrdma-next-load", "pass"),
        ],
    );
}

#[test]
fn hooked_gpl_loaded_beside_another_hooked_file_is_ready() {
    let f = node(LoadedAs::HookedGpl, FileIs::OtherWithHooks);
    let doc = expect(
        &f,
        0,
        &[
            ("rpcrdma-loaded", "pass"),
            ("rpcrdma-hooks", "skip"),
            ("rpcrdma-hook-export", "skip"),
            ("rpcrdma-fresh", "skip"),
            ("rpcrdma-next-load", "pass"),
        ],
    );
    assert!(
        summary(&doc, "rpcrdma-next-load").contains("which also carries the hooks"),
        "{doc:#}"
    );
}

#[test]
fn hooked_gpl_loaded_beside_an_unhooked_file_is_ready_with_a_prediction() {
    let f = node(LoadedAs::HookedGpl, FileIs::OtherWithout);
    let doc = expect(
        &f,
        0,
        &[
            ("rpcrdma-loaded", "pass"),
            ("rpcrdma-hooks", "skip"),
            ("rpcrdma-fresh", "skip"),
            ("rpcrdma-next-load", "fail"),
        ],
    );
    let s = summary(&doc, "rpcrdma-next-load");
    assert!(
        s.contains("after `modprobe -r rpcrdma` or a reboot, modprobe loads")
            && s.contains("updates/dkms/rpcrdma.ko.zst, which has no hooks"),
        "{s}"
    );
    assert_eq!(check_result(&doc, "rpcrdma-next-load")["level"], "warn");
}

#[test]
fn hooked_plain_loaded_from_the_file_is_refused_where_the_rule_applies() {
    let f = node(LoadedAs::HookedPlain, FileIs::Same);
    expect(
        &f,
        1,
        &[
            ("rpcrdma-loaded", "fail"),
            ("rpcrdma-hook-export", "fail"),
            ("rpcrdma-next-load", "pass"),
        ],
    );
}

#[test]
fn hooked_plain_loaded_beside_a_gpl_file_is_refused_until_reloaded() {
    let f = node(LoadedAs::HookedPlain, FileIs::OtherWithHooks);
    let doc = expect(
        &f,
        1,
        &[
            ("rpcrdma-loaded", "fail"),
            ("rpcrdma-hook-export", "skip"),
            ("rpcrdma-fresh", "skip"),
            ("rpcrdma-next-load", "pass"),
        ],
    );
    assert!(summary(&doc, "rpcrdma-loaded").contains("exports its hooks plain"));
}

#[test]
fn hooked_plain_loaded_beside_an_unhooked_file_is_refused() {
    let f = node(LoadedAs::HookedPlain, FileIs::OtherWithout);
    expect(
        &f,
        1,
        &[("rpcrdma-loaded", "fail"), ("rpcrdma-next-load", "fail")],
    );
}

#[test]
fn hooked_plain_loaded_passes_on_a_kernel_without_the_rule() {
    let spec = ModuleSpec::rpcrdma("5.15.0-70-generic")
        .hooks(Some(HookExport::Gpl))
        .build_id(Some(build_id_of("on-disk")));
    let mut f = node_with(&spec, DKMS, Packing::Zstd);
    f.load_rpcrdma(
        &Loaded {
            build_id: Some(build_id_of("loaded-elsewhere")),
            ..Loaded::default()
        },
        KallsymsHooks::Upper,
    );
    expect(
        &f,
        0,
        &[("rpcrdma-loaded", "pass"), ("rpcrdma-next-load", "pass")],
    );
}

#[test]
fn unhooked_loaded_from_the_file_is_refused() {
    let f = node(LoadedAs::NoHooks, FileIs::Same);
    expect(
        &f,
        1,
        &[
            ("rpcrdma-loaded", "fail"),
            ("rpcrdma-hooks", "fail"),
            ("rpcrdma-fresh", "pass"),
        ],
    );
}

#[test]
fn unhooked_loaded_while_the_file_has_hooks_waits_for_a_reload() {
    let f = node(LoadedAs::NoHooks, FileIs::OtherWithHooks);
    let doc = expect(
        &f,
        1,
        &[
            ("rpcrdma-loaded", "fail"),
            ("rpcrdma-fresh", "fail"),
            ("rpcrdma-next-load", "pass"),
        ],
    );
    assert!(check_result(&doc, "rpcrdma-fresh")["remedy"]
        .as_str()
        .unwrap()
        .contains("modprobe -r rpcrdma && modprobe rpcrdma"));
}

#[test]
fn unhooked_loaded_beside_an_unhooked_file_is_refused() {
    let f = node(LoadedAs::NoHooks, FileIs::OtherWithout);
    let doc = expect(
        &f,
        1,
        &[
            ("rpcrdma-loaded", "fail"),
            ("rpcrdma-fresh", "skip"),
            ("rpcrdma-next-load", "fail"),
        ],
    );
    assert!(summary(&doc, "rpcrdma-fresh").contains("a reload would not help"));
}

#[test]
fn a_driver_container_build_is_said_to_come_from_outside_the_tree() {
    let mut f = node(LoadedAs::None, FileIs::OtherWithout);
    f.write("run/nvidia/driver/usr/bin/nvidia-smi", "");
    f.write("run/mellanox/drivers/.driver-ready", "");
    f.load_rpcrdma(
        &Loaded {
            build_id: Some(build_id_of("built-in-the-container")),
            ..Loaded::default()
        },
        KallsymsHooks::Lower,
    );
    let doc = expect(
        &f,
        0,
        &[("rpcrdma-loaded", "pass"), ("rpcrdma-next-load", "fail")],
    );
    for id in ["rpcrdma-loaded", "rpcrdma-next-load"] {
        let ev = evidence(&doc, id);
        assert!(
            ev.contains("matches no file of the host's module tree")
                && ev.contains("driver container or a manual insmod"),
            "{ev}"
        );
        assert!(
            ev.contains("driver-container markers: /run/mellanox/drivers, /run/nvidia/driver"),
            "{ev}"
        );
    }
    assert!(check_result(&doc, "rpcrdma-next-load")["remedy"]
        .as_str()
        .unwrap()
        .contains("driver container loads this rpcrdma"));
    // The container loads its own build again: doctor plans nothing for the host's file.
    let out = run(&f, &["doctor", "--json"]);
    let doctor: serde_json::Value = serde_json::from_slice(&out.stdout).expect("doctor --json");
    assert_eq!(doctor["plan"], serde_json::json!([]), "{doctor:#}");
}

#[test]
fn a_hand_loaded_file_of_the_tree_is_named() {
    let mut f = node(LoadedAs::None, FileIs::OtherWithout);
    let other = ModuleSpec::rpcrdma(KERNEL).build_id(Some(build_id_of("hand-built")));
    f.write(
        format!("{}/extra/rpcrdma-test/rpcrdma.ko", f.tree()),
        build(&other),
    );
    f.load_rpcrdma(
        &Loaded {
            build_id: Some(build_id_of("hand-built")),
            ..Loaded::default()
        },
        KallsymsHooks::Lower,
    );
    let doc = expect(&f, 0, &[("rpcrdma-loaded", "pass")]);
    let ev = evidence(&doc, "rpcrdma-loaded");
    assert!(
        ev.contains("extra/rpcrdma-test/rpcrdma.ko") && ev.contains("modprobe does not resolve"),
        "{ev}"
    );
    assert!(!ev.contains("driver-container markers"), "{ev}");
}

#[test]
fn at_most_four_candidate_files_are_opened() {
    let mut f = node(LoadedAs::None, FileIs::OtherWithout);
    for dir in ["a", "b", "c", "d", "e", "f"] {
        f.write(
            format!("{}/updates/{dir}/rpcrdma.ko", f.tree()),
            "not a module",
        );
    }
    f.load_rpcrdma(
        &Loaded {
            build_id: Some(build_id_of("elsewhere")),
            ..Loaded::default()
        },
        KallsymsHooks::Lower,
    );
    let doc = expect(&f, 0, &[("rpcrdma-loaded", "pass")]);
    let ev = evidence(&doc, "rpcrdma-loaded");
    assert!(
        ev.contains("updates/a/rpcrdma.ko") && ev.contains("(2 more not opened)"),
        "{ev}"
    );
    assert!(ev.contains("driver-container markers: none found"), "{ev}");
}

/// The evidence a check shows under `what`, or "" when it shows none.
fn evidence_of(doc: &serde_json::Value, id: &str, what: &str) -> String {
    check_result(doc, id)["evidence"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["what"] == what)
        .and_then(|e| e["seen"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_loaded_build_with_the_files_build_id_needs_no_kallsyms() {
    // Kallsyms is a FIFO: opening it is refused, so every answer below comes from elsewhere,
    // and each is the one the table above gives with a readable kallsyms.
    for (loaded, code, want, said) in [
        (LoadedAs::HookedGpl, 0, "pass", "carries both nvfs hooks"),
        (
            LoadedAs::HookedPlain,
            1,
            "fail",
            "plain (in the file it was loaded from)",
        ),
        (LoadedAs::NoHooks, 1, "fail", "no nvfs hooks (none in "),
    ] {
        let f = node(loaded, FileIs::Same);
        let (_, with_kallsyms) = check_json(&f);
        f.kallsyms_fifo();
        let doc = expect(
            &f,
            code,
            &[("rpcrdma-loaded", want), ("rpcrdma-fresh", "pass")],
        );
        for c in with_kallsyms["checks"].as_array().unwrap() {
            let id = c["id"].as_str().unwrap();
            assert_eq!(status(&doc, id), c["status"], "{loaded:?} {id}: {doc:#}");
        }
        assert!(summary(&doc, "rpcrdma-loaded").contains(said), "{doc:#}");
        let why = evidence_of(&doc, "rpcrdma-loaded", "loaded build-id");
        assert!(
            why.contains(&hex(&build_id_of("on-disk"))) && why.contains("/proc/kallsyms not read"),
            "{loaded:?}: {doc:#}"
        );
        let file = f.path(format!("{}/{DKMS}.ko.zst", f.tree()));
        let hooks = evidence_of(&doc, "rpcrdma-loaded", &file.display().to_string());
        if matches!(loaded, LoadedAs::NoHooks) {
            assert!(!hooks.contains("defined"), "{doc:#}");
        } else {
            assert!(
                hooks.contains("rpcrdma_register_nvfs_dma_ops defined, exported"),
                "{doc:#}"
            );
        }
    }
}

#[test]
fn a_loaded_build_of_another_build_id_is_judged_by_kallsyms() {
    let f = node(LoadedAs::HookedGpl, FileIs::OtherWithHooks);
    let doc = expect(&f, 0, &[("rpcrdma-loaded", "pass")]);
    assert!(
        evidence_of(&doc, "rpcrdma-loaded", "/proc/kallsyms").contains("[rpcrdma]"),
        "{doc:#}"
    );
    assert_eq!(evidence_of(&doc, "rpcrdma-loaded", "loaded build-id"), "");
    // The same node with kallsyms unreadable: the loaded hooks cannot be known.
    f.kallsyms_fifo();
    let doc = expect(&f, 1, &[("rpcrdma-loaded", "unknown")]);
    assert!(
        summary(&doc, "rpcrdma-loaded").contains("kallsyms cannot be read"),
        "{doc:#}"
    );
}

#[test]
fn an_unloaded_rpcrdma_needs_no_kallsyms() {
    let f = node(LoadedAs::None, FileIs::OtherWithHooks);
    let (code, before) = check_json(&f);
    f.kallsyms_fifo();
    let (after_code, after) = check_json(&f);
    assert_eq!((code, after_code), (0, 0), "{after:#}");
    assert_eq!(before["checks"], after["checks"]);
}

/// A kallsyms far larger than a real one (96 MiB; a real one is about 5 MB) is searched a
/// buffer at a time, never held whole: `check` answers from it with its data segment limited
/// to 48 MiB, where holding the file would fail to allocate.
#[test]
fn a_huge_kallsyms_is_searched_streamed_not_held() {
    use std::io::Write;
    let f = node(LoadedAs::HookedGpl, FileIs::OtherWithHooks);
    let path = f.path("proc/kallsyms");
    let hooks = std::fs::read(&path).unwrap();
    let filler = "ffffffffc0a00000 t some_other_symbol_of_a_module\t[other]\n".repeat(4096);
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for _ in 0..(96 << 20) / filler.len() {
        out.write_all(filler.as_bytes()).unwrap();
    }
    out.write_all(&hooks).unwrap();
    drop(out);
    let doc = check_json_within_data_limit(&f, 49152);
    assert_eq!(status(&doc, "rpcrdma-loaded"), "pass", "{doc:#}");
    assert!(
        evidence_of(&doc, "rpcrdma-loaded", "/proc/kallsyms").contains("[rpcrdma]"),
        "{doc:#}"
    );
}
