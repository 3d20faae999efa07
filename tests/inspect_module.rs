//! `nfs-gds inspect-module [NAME|PATH]` as an admin runs it: resolution like modprobe, the text
//! and JSON reports, and exit codes 0 (usable), 1 (not usable), 2 (could not inspect).

use serde_json::Value;

use crate::support::*;

const NEW_KERNEL: &str = "6.8.0-45-generic";

fn inspect_json(f: &Fixture, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["inspect-module"];
    all.extend_from_slice(args);
    all.push("--json");
    let out = run(f, &all);
    let doc = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}): {} {}", stdout(&out), stderr(&out)));
    (out.status.code().unwrap(), doc)
}

#[test]
fn default_is_the_rpcrdma_modprobe_would_load() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let f = node_with(&spec, DKMS, Packing::Zstd);
    let out = run(&f, &["inspect-module"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let file = f.path(format!("{}/updates/dkms/rpcrdma.ko.zst", f.tree()));
    assert!(
        text.contains(&format!("file:         {}\n", file.display())),
        "{text}"
    );
    assert!(text.contains("compression:  zstd ("), "{text}");
    assert!(text.contains("name:         rpcrdma\n"), "{text}");
    assert!(
        text.contains("srcversion:   0A1B2C3D4E5F60718293A4B\n"),
        "{text}"
    );
    assert!(
        text.contains("depends:      sunrpc,ib_core,rdma_cm\n"),
        "{text}"
    );
    assert!(
        text.contains(&format!("build-id:     {}\n", spec.build_id_hex().unwrap())),
        "{text}"
    );
    for hook in HOOKS {
        assert!(
            text.lines().any(|l| l.starts_with("hook:")
                && l.contains(hook)
                && l.ends_with("defined, exported GPL")),
            "{text}"
        );
    }
    assert!(text.contains("verdict:      usable for GDS"), "{text}");
    assert!(
        text.contains("exports:      __ksymtab / __ksymtab_gpl (GPL-only by table)\n"),
        "{text}"
    );
}

#[test]
fn the_flags_table_layout_is_shown() {
    let spec = ModuleSpec::rpcrdma("7.1.0").layout(Layout::FlagsTable);
    let f = node_with(&spec, DKMS, Packing::XzCrc64);
    let out = run(&f, &["inspect-module"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("exports:      __ksymtab + __kflagstab (GPL-only by flag)\n"),
        "{text}"
    );
    let (code, doc) = inspect_json(&f, &[]);
    assert_eq!(code, 0);
    assert_eq!(doc["module"]["export_layout"], "flags-table");
    assert_eq!(doc["module"]["symbols"][0]["export"]["kind"], "gpl");
}

#[test]
fn json_report_describes_the_file() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let f = node_with(&spec, RPM, Packing::XzCrc64);
    let (code, doc) = inspect_json(&f, &[]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["command"], "inspect-module");
    assert_eq!(doc["hooks"], "usable");
    let m = &doc["module"];
    assert_eq!(m["compression"], "xz");
    assert!(m["path"]
        .as_str()
        .unwrap()
        .ends_with("extra/mlnx-nfsrdma/rpcrdma.ko.xz"));
    assert!(m["elf_size"].as_u64().unwrap() > m["file_size"].as_u64().unwrap());
    assert_eq!(m["modinfo"]["name"], "rpcrdma");
    assert_eq!(m["modinfo"]["version"], "24.07-0.6.1");
    assert_eq!(m["build_id"], spec.build_id_hex().unwrap());
    assert_eq!(m["export_layout"], "split-tables");
    let symbols = m["symbols"].as_array().unwrap();
    assert_eq!(symbols.len(), 2);
    for (s, hook) in symbols.iter().zip(HOOKS) {
        assert_eq!(s["symbol"], hook);
        assert_eq!(s["defined"], true);
        assert_eq!(s["export"]["kind"], "gpl");
    }
    assert!(
        doc.get("kernel_rule").is_none(),
        "only judged for plain exports"
    );
}

#[test]
fn an_alias_resolves_like_modprobe() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let f = node_with(&spec, DKMS, Packing::Zstd);
    let (code, doc) = inspect_json(&f, &["xprtrdma"]);
    assert_eq!(code, 0, "{doc:#}");
    assert!(doc["module"]["path"]
        .as_str()
        .unwrap()
        .ends_with("updates/dkms/rpcrdma.ko.zst"));
}

#[test]
fn a_path_is_read_as_given() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL).hooks(None);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rpcrdma.ko.gz");
    std::fs::write(&path, pack(&build(&spec), Packing::Gzip)).unwrap();
    let out = nfs_gds()
        .args(["inspect-module", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["hooks"], "missing");
    assert_eq!(doc["module"]["compression"], "gzip");
    assert_eq!(doc["module"]["symbols"][0]["defined"], false);
    let text = nfs_gds().arg("inspect-module").arg(&path).output().unwrap();
    assert_eq!(text.status.code(), Some(1));
    let text = stdout(&text);
    assert!(text.contains("MISSING"), "{text}");
    assert!(
        text.contains("NOT usable: built without GDS support"),
        "{text}"
    );
}

#[test]
fn plain_hooks_are_judged_against_the_kernel_rule() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL).hooks(Some(HookExport::Plain));
    let f = node_with(&spec, DKMS, Packing::Zstd);
    let (code, doc) = inspect_json(&f, &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["hooks"], "plain-refused");
    assert_eq!(doc["kernel_rule"]["enforcement"], "enforced");
    // The same two checks `check` runs, for this file.
    assert_eq!(status(&doc, "rpcrdma-hooks"), "pass");
    assert_eq!(status(&doc, "rpcrdma-hook-export"), "fail");
    assert!(evidence(&doc, "rpcrdma-hook-export").contains("kernel rule"));
    assert_eq!(doc["module"]["symbols"][0]["export"]["kind"], "plain");

    let old = ModuleSpec::rpcrdma("5.15.0-70-generic").hooks(Some(HookExport::Plain));
    let f = node_with(&old, DKMS, Packing::Zstd);
    f.write(
        "proc/version_signature",
        "Ubuntu 5.15.0-70.77-generic 5.15.92\n",
    );
    let (code, doc) = inspect_json(&f, &[]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["hooks"], "usable");
    assert_eq!(doc["kernel_rule"]["enforcement"], "not-enforced");

    let vendor = ModuleSpec::rpcrdma("5.14.0-427.el9.x86_64").hooks(Some(HookExport::Plain));
    let f = node_with(&vendor, RPM, Packing::XzCrc32);
    let out = run(&f, &["inspect-module"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains("kernel rule:  GPL-only symbol_get unknown"),
        "{text}"
    );
    assert!(text.contains("UNCERTAIN"), "{text}");
}

#[test]
fn hooks_defined_but_not_exported() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL).hooks(Some(HookExport::NotExported));
    let f = node_with(&spec, DKMS, Packing::Plain);
    let (code, doc) = inspect_json(&f, &[]);
    assert_eq!(code, 1);
    assert_eq!(doc["hooks"], "not-exported");
    assert_eq!(
        doc["module"]["symbols"][1]["export"]["kind"],
        "not-exported"
    );
}

#[test]
fn names_that_resolve_to_no_file_are_errors() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let f = node_with(&spec, DKMS, Packing::Zstd);
    let out = run(&f, &["inspect-module", "nvidia_peermem"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).is_empty());
    let err = stderr(&out);
    assert!(
        err.contains("no module named nvidia_peermem for kernel 6.8.0-45-generic"),
        "{err}"
    );

    let mut builtin = Fixture::new(NEW_KERNEL);
    builtin.builtin_rpcrdma(KallsymsHooks::Lower);
    let out = run(&builtin, &["inspect-module", "rpcrdma"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("rpcrdma is built into kernel 6.8.0-45-generic"));

    let no_release = Fixture::new(NEW_KERNEL);
    no_release.remove("proc/sys/kernel/osrelease");
    let out = run(&no_release, &["inspect-module"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("proc/sys/kernel/osrelease is missing"),
        "{err}"
    );
}

/// A module that is not rpcrdma (sunrpc, say) does not carry the hooks and is not judged as if
/// it were: its facts, no hook lines, no FAIL, no rebuild advice, exit 0. One named something
/// else that defines a hook is still judged.
#[test]
fn a_module_that_is_not_rpcrdma_is_not_judged_for_the_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let sunrpc = ModuleSpec::provider("sunrpc", NEW_KERNEL, &[("rpc_create", true)]);
    let path = dir.path().join("sunrpc.ko.xz");
    std::fs::write(&path, pack(&build(&sunrpc), Packing::XzCrc64)).unwrap();
    let out = nfs_gds().arg("inspect-module").arg(&path).output().unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("name:         sunrpc\n"), "{text}");
    assert!(
        text.contains("verdict:      not judged: sunrpc is not rpcrdma"),
        "{text}"
    );
    for absent in ["FAIL", "rpcrdma-hooks", "hook:", "NOT usable", "MISSING"] {
        assert!(!text.contains(absent), "{absent}: {text}");
    }
    let out = nfs_gds()
        .args(["inspect-module", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["hooks"], "not-rpcrdma");
    assert!(doc.get("checks").is_none(), "{doc}");
    assert_eq!(doc["module"]["modinfo"]["name"], "sunrpc");

    // Renamed, but it defines the hooks: judged.
    let mut renamed = ModuleSpec::rpcrdma(NEW_KERNEL);
    renamed.name = "xprtrdma_gds".into();
    let path = dir.path().join("xprtrdma_gds.ko");
    std::fs::write(&path, build(&renamed)).unwrap();
    let out = nfs_gds().arg("inspect-module").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("verdict:      usable for GDS"));
}

#[test]
fn an_argument_shaped_like_a_file_is_a_path_and_a_missing_one_says_so() {
    let f = node_with(&ModuleSpec::rpcrdma(NEW_KERNEL), DKMS, Packing::Zstd);
    for wanted in [
        "nosuch.ko",
        "nosuch.ko.zst",
        "nosuch.ko.xz",
        "nosuch.ko.gz",
        "./nosuch",
    ] {
        let out = run(&f, &["inspect-module", wanted]);
        assert_eq!(out.status.code(), Some(2), "{wanted}");
        let err = stderr(&out);
        assert_eq!(err, format!("nfs-gds: {wanted}: no such file\n"));
    }
}

/// A module built for another kernel than the running one is judged by the GPL rule of the
/// kernel its vermagic names, and the report says so.
#[test]
fn a_module_for_another_kernel_is_judged_by_that_kernels_rule() {
    let old = ModuleSpec::rpcrdma("5.15.0-70-generic");
    let f = node_with(&old, DKMS, Packing::Zstd);
    f.write(
        "proc/version_signature",
        "Ubuntu 5.15.0-70.77-generic 5.15.92\n",
    );
    let new = ModuleSpec::rpcrdma(NEW_KERNEL).hooks(Some(HookExport::Plain));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rpcrdma.ko");
    std::fs::write(&path, build(&new)).unwrap();
    let path = path.to_str().unwrap();
    let (code, doc) = inspect_json(&f, &[path]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["hooks"], "plain-refused");
    assert_eq!(doc["kernel_rule"]["enforcement"], "enforced");
    let text = stdout(&run(&f, &["inspect-module", path]));
    assert!(
        text.contains(&format!(
            "judged for kernel {NEW_KERNEL}, the one the module was built for (vermagic), not the running 5.15.0-70-generic"
        )),
        "{text}"
    );
    // Built for the running kernel: its own rule, with no word about another.
    let same = ModuleSpec::rpcrdma("5.15.0-70-generic").hooks(Some(HookExport::Plain));
    let path = dir.path().join("same.ko");
    std::fs::write(&path, build(&same)).unwrap();
    let (code, doc) = inspect_json(&f, &[path.to_str().unwrap()]);
    assert_eq!(code, 0, "{doc:#}");
    assert!(!doc["kernel_rule"]["evidence"]
        .as_str()
        .unwrap()
        .contains("judged for kernel"));
}
