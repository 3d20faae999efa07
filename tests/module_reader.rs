//! The module reader on generated modules: every packing distributions use, both export
//! layouts, and the generator itself checked against binutils' `readelf`.

use std::path::Path;
use std::process::Command;

use nfs_gds::kmod::{self, Compression, Export, ExportLayout, RPCRDMA_HOOKS};

use crate::support::*;

fn inspect(spec: &ModuleSpec, packing: Packing) -> kmod::ModuleFile {
    let bytes = pack(&build(spec), packing);
    let name = format!("rpcrdma{}", packing.suffix());
    kmod::inspect_bytes(Path::new(&name), &bytes, &RPCRDMA_HOOKS)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn exports(f: &kmod::ModuleFile) -> Vec<Export> {
    f.symbols.iter().map(|s| s.export.clone()).collect()
}

#[test]
fn every_packing_reads_the_same_identity_and_hooks() {
    let spec = ModuleSpec::rpcrdma("6.8.0-45-generic");
    for packing in Packing::ALL {
        let f = inspect(&spec, packing);
        assert_eq!(f.compression.as_str(), packing.compression(), "{packing:?}");
        assert_eq!(f.modinfo.name.as_deref(), Some("rpcrdma"), "{packing:?}");
        assert_eq!(
            f.modinfo.vermagic.as_deref(),
            Some("6.8.0-45-generic SMP preempt mod_unload modversions"),
            "{packing:?}"
        );
        assert_eq!(f.modinfo.srcversion, spec.srcversion, "{packing:?}");
        assert_eq!(f.modinfo.version.as_deref(), Some("24.07-0.6.1"));
        assert_eq!(f.modinfo.license.as_deref(), Some("Dual BSD/GPL"));
        assert_eq!(f.modinfo.depends, ["sunrpc", "ib_core", "rdma_cm"]);
        assert_eq!(f.build_id, spec.build_id_hex(), "{packing:?}");
        assert!(f.has_symtab);
        assert_eq!(f.export_layout, ExportLayout::SplitTables);
        assert!(f.symbols.iter().all(|s| s.defined), "{packing:?}: {f:?}");
        assert_eq!(exports(&f), [Export::Gpl, Export::Gpl], "{packing:?}");
        if packing != Packing::Plain {
            assert!(f.file_size < f.elf_size, "{packing:?} is compressed");
        }
    }
}

#[test]
fn hook_exports_are_told_apart_in_both_layouts() {
    for layout in [Layout::SplitTables, Layout::FlagsTable] {
        for (hooks, want) in [
            (Some(HookExport::Gpl), Some(Export::Gpl)),
            (Some(HookExport::Plain), Some(Export::Plain)),
            (Some(HookExport::NotExported), Some(Export::NotExported)),
            (None, None),
        ] {
            let spec = ModuleSpec::rpcrdma("7.1.0").layout(layout).hooks(hooks);
            let f = inspect(&spec, Packing::Zstd);
            match want {
                Some(export) => {
                    assert!(f.symbols.iter().all(|s| s.defined), "{layout:?} {hooks:?}");
                    assert_eq!(
                        exports(&f),
                        [export.clone(), export],
                        "{layout:?} {hooks:?}"
                    );
                }
                None => {
                    assert!(f.symbols.iter().all(|s| !s.defined), "{layout:?}: {f:?}");
                    assert_eq!(exports(&f), [Export::NotExported, Export::NotExported]);
                }
            }
        }
    }
}

#[test]
fn flags_table_layout_is_recognised_and_read_without_labels_too() {
    for spec in [
        ModuleSpec::rpcrdma("7.1.0").layout(Layout::FlagsTable),
        ModuleSpec::rpcrdma("7.1.0")
            .layout(Layout::FlagsTable)
            .without_flag_labels(),
    ] {
        let gpl = inspect(&spec, Packing::Plain);
        assert_eq!(gpl.export_layout, ExportLayout::FlagsTable);
        assert_eq!(exports(&gpl), [Export::Gpl, Export::Gpl], "{spec:?}");
        let plain = inspect(&spec.clone().hooks(Some(HookExport::Plain)), Packing::Plain);
        assert_eq!(exports(&plain), [Export::Plain, Export::Plain], "{spec:?}");
    }
}

#[test]
fn a_module_that_exports_nothing_says_so() {
    let mut spec = ModuleSpec::rpcrdma("6.1.0-50-amd64").hooks(None);
    spec.other_exports.clear();
    let f = inspect(&spec, Packing::Plain);
    assert_eq!(f.export_layout, ExportLayout::NoExports);
}

#[test]
fn a_realistically_sized_module_parses() {
    let spec = ModuleSpec::rpcrdma("6.1.0-50-amd64").padded_to(800 << 10);
    let elf = build(&spec);
    assert!(
        (700 << 10..1000 << 10).contains(&elf.len()),
        "padded module is {} bytes",
        elf.len()
    );
    let xz = pack(&elf, Packing::XzCrc32);
    let ratio = elf.len() as f64 / xz.len() as f64;
    assert!(
        (2.5..20.0).contains(&ratio),
        "compresses {ratio:.1}x, unlike real modules (rpcrdma.ko: about 6.7x)"
    );
    let f = kmod::inspect_bytes(Path::new("rpcrdma.ko.xz"), &xz, &RPCRDMA_HOOKS).unwrap();
    assert_eq!(f.compression, Compression::Xz);
    assert_eq!(f.elf_size, elf.len() as u64);
    assert_eq!(exports(&f), [Export::Gpl, Export::Gpl]);
}

/// The generator writes what kbuild writes, as binutils sees it.
#[test]
fn readelf_sees_a_kbuild_shaped_module() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rpcrdma.ko");
    let spec = ModuleSpec::rpcrdma("6.1.0-50-amd64").hooks(Some(HookExport::Plain));
    std::fs::write(&path, build(&spec)).unwrap();
    let readelf = |args: &[&str]| {
        let out = Command::new("readelf")
            .args(args)
            .arg(&path)
            .output()
            .expect("the tests need `readelf` (Debian: binutils)");
        assert!(out.status.success(), "readelf {args:?} failed");
        String::from_utf8(out.stdout).unwrap()
    };
    let sections = readelf(&["-SW"]);
    for name in [
        ".note.gnu.build-id",
        ".text",
        ".modinfo",
        "__ksymtab ",
        "__ksymtab_gpl",
        ".rela__ksymtab",
        "__ksymtab_strings",
        ".gnu.linkonce.this_module",
        ".symtab",
    ] {
        assert!(sections.contains(name), "no {name} in\n{sections}");
    }
    assert!(sections.contains("NOTE"), "{sections}");
    // Section index -> name, from lines like "  [ 5] __ksymtab   PROGBITS ...".
    let section_names: Vec<(String, String)> = sections
        .lines()
        .filter_map(|l| {
            let (idx, rest) = l.trim_start().strip_prefix('[')?.split_once(']')?;
            Some((
                idx.trim().to_string(),
                rest.split_whitespace().next()?.to_string(),
            ))
        })
        .collect();
    let symbols = readelf(&["-Ws"]);
    // "Num: Value Size Type Bind Vis Ndx Name" -> (type, bind, section name)
    let symbol = |name: &str| -> (String, String, String) {
        let f: Vec<&str> = symbols
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.len() == 8 && f[7] == name)
            .unwrap_or_else(|| panic!("no {name} in readelf -Ws"));
        let section = section_names
            .iter()
            .find(|(i, _)| i == f[6])
            .map(|(_, n)| n.clone())
            .unwrap_or_else(|| f[6].to_string());
        (f[3].to_string(), f[4].to_string(), section)
    };
    for hook in HOOKS {
        assert_eq!(
            symbol(hook),
            ("FUNC".into(), "GLOBAL".into(), ".text".into())
        );
        assert_eq!(
            symbol(&format!("__ksymtab_{hook}")),
            ("NOTYPE".into(), "LOCAL".into(), "__ksymtab".into()),
            "a plain export's entry sits in __ksymtab"
        );
        assert_eq!(symbol(&format!("__kstrtab_{hook}")).2, "__ksymtab_strings");
    }
    assert_eq!(symbol("__ksymtab_rpcrdma_reply_handler").2, "__ksymtab_gpl");
    let notes = readelf(&["-n"]);
    assert!(
        notes.contains(&format!("Build ID: {}", spec.build_id_hex().unwrap())),
        "{notes}"
    );
}
