//! The module reader on generated modules: every packing distributions use and both export
//! layouts (the generator is checked against binutils' `readelf` in `external_tools`).

use std::path::Path;

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
