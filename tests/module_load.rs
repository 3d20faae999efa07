//! What decides whether the kernel loads a module file, on generated modules: import versions
//! in every table layout, export CRCs of both kernel generations, signature trailers, and the
//! CRC comparison against providers found through a fixture tree's indexes (text and binary).

use std::path::Path;

use nfs_gds::host::modules::symbol_providers::TreeProviders;
use nfs_gds::host::modules::ModuleTree;
use nfs_gds::host::Root;
use nfs_gds::kmod::abi::{compare_import_crcs, AbiVerdict, CrcOrigin, KernelModversions};
use nfs_gds::kmod::load_facts::{load_facts_of_bytes, LoadFacts, SignatureFacts};
use nfs_gds::kmod::modversions::{ExportCrcSource, ImportTable, ImportVersions};
use nfs_gds::kmod::signature::SignatureIdType;
use nfs_gds::kmod::Compression;

use crate::support::kmod_index::write_index;
use crate::support::*;

pub(crate) const RELEASE: &str = "6.1.0-50-amd64";

fn facts(spec: &ModuleSpec, packing: Packing) -> LoadFacts {
    let bytes = pack(&build(spec), packing);
    load_facts_of_bytes(Path::new("rpcrdma.ko"), &bytes).expect("generated module reads")
}

fn versions(f: &LoadFacts) -> (ImportTable, Vec<(String, u32)>) {
    match &f.imports {
        ImportVersions::Versioned { table, versions } => (
            *table,
            versions.iter().map(|v| (v.symbol.clone(), v.crc)).collect(),
        ),
        ImportVersions::Unversioned => panic!("no version table"),
    }
}

#[test]
fn import_versions_read_in_every_table_layout_and_packing() {
    let long = "a_symbol_name_longer_than_the_fifty_five_bytes_modversion_info_holds";
    let imports = [
        ("module_layout", 0xba15_7484),
        ("ib_drain_qp", 0x1234_5678),
        (long, 0x0bad_cafe),
    ];
    let want: Vec<(String, u32)> = imports.iter().map(|(s, c)| (s.to_string(), *c)).collect();
    // `__versions` alone cannot hold the long name: modpost leaves it out.
    for packing in Packing::ALL {
        let spec = ModuleSpec::rpcrdma(RELEASE).imports(&imports);
        assert_eq!(
            versions(&facts(&spec, packing)),
            (ImportTable::Basic, want[..2].to_vec()),
            "{packing:?}"
        );
    }
    let spec = ModuleSpec::rpcrdma(RELEASE)
        .imports(&imports)
        .import_tables(ImportTables::Extended);
    assert_eq!(
        versions(&facts(&spec, Packing::Plain)),
        (ImportTable::Extended, want.clone())
    );
    // With both tables the loader relies on the extended one alone: __versions lacks the long name.
    let spec = ModuleSpec::rpcrdma(RELEASE)
        .imports(&imports)
        .import_tables(ImportTables::Both);
    assert_eq!(
        versions(&facts(&spec, Packing::Plain)),
        (ImportTable::Extended, want)
    );

    let spec = ModuleSpec::rpcrdma(RELEASE).imports(&[]).export_crcs(None);
    let f = facts(&spec, Packing::Zstd);
    assert_eq!(f.imports, ImportVersions::Unversioned);
    assert_eq!(f.exports.source, ExportCrcSource::None);
    assert!(f.exports.crcs.is_empty());
}

#[test]
fn export_crcs_read_in_both_kernel_generations_and_both_export_layouts() {
    for (crcs, source) in [
        (CrcLayout::AbsoluteSymbols, ExportCrcSource::AbsoluteSymbols),
        (CrcLayout::TableLabels, ExportCrcSource::CrcTableLabels),
    ] {
        for layout in [Layout::SplitTables, Layout::FlagsTable] {
            let spec = ModuleSpec::rpcrdma(RELEASE)
                .layout(layout)
                .export_crcs(Some(crcs))
                .crc_seed("mlnx-ofed-24.07");
            for packing in [Packing::Plain, Packing::XzCrc32] {
                let f = facts(&spec, packing);
                assert_eq!(f.exports.source, source, "{crcs:?} {layout:?}");
                for sym in [HOOKS[0], HOOKS[1], "rpcrdma_reply_handler"] {
                    assert_eq!(
                        f.exports.crc_of(sym),
                        Some(spec.export_crc(sym)),
                        "{sym} {crcs:?} {layout:?}"
                    );
                }
                assert_eq!(f.exports.crcs.len(), 3);
            }
        }
    }
}

#[test]
fn a_signature_trailer_names_signer_key_and_digest_even_inside_a_compressed_module() {
    let der = pkcs7_signed_data(
        "DKMS module signing key",
        &[0x5e, 0xe1, 0x13, 0x31],
        "2.16.840.1.101.3.4.2.3",
        &[0xa5; 256],
    );
    let spec = ModuleSpec::rpcrdma(RELEASE).signed_with(signature_trailer(&der));
    for packing in Packing::ALL {
        let f = facts(&spec, packing);
        let SignatureFacts::Signed(s) = &f.signature else {
            panic!("{packing:?}: {:?}", f.signature)
        };
        assert_eq!(s.id_type, SignatureIdType::Pkcs7);
        assert_eq!(s.signer.as_deref(), Some("DKMS module signing key"));
        assert_eq!(s.key_id.as_deref(), Some("5E:E1:13:31"));
        assert_eq!(s.hash_algorithm.as_deref(), Some("sha512"));
        assert_eq!(s.signature_len as usize, der.len());
        assert_eq!(
            s.signed_len as usize,
            build(&ModuleSpec::rpcrdma(RELEASE)).len()
        );
        assert_eq!(
            f.compression == Compression::None,
            packing == Packing::Plain
        );
    }
    assert_eq!(
        facts(&ModuleSpec::rpcrdma(RELEASE), Packing::Plain).signature,
        SignatureFacts::Unsigned
    );

    // A trailer whose PKCS#7 is damaged is reported, not taken for unsigned.
    let mut bad = der;
    bad[0] = 0x31;
    let spec = ModuleSpec::rpcrdma(RELEASE).signed_with(signature_trailer(&bad));
    assert!(matches!(
        facts(&spec, Packing::Plain).signature,
        SignatureFacts::Unreadable { .. }
    ));
}

/// The symbols rpcrdma takes from ib_core in these fixtures.
const FROM_IB_CORE: [&str; 3] = ["ib_dma_virt_map_sg", "ib_alloc_pd_user", "ib_drain_qp"];

/// A tree with ib_core at `ib_core_rel` exporting with `ib_core_seed`, rpcrdma built against
/// the inbox CRCs, and modules.symbols naming ib_core; binary indexes when `binary`.
pub(crate) fn mofed_tree(
    ib_core_rel: &str,
    ib_core_seed: &str,
    binary: bool,
) -> (Fixture, std::path::PathBuf) {
    let f = Fixture::new(RELEASE);
    let tree = f.tree();
    let exports: Vec<(&str, bool)> = FROM_IB_CORE.iter().map(|s| (*s, true)).collect();
    let ib_core = ModuleSpec::provider("ib_core", RELEASE, &exports).crc_seed(ib_core_seed);
    f.write(format!("{tree}/{ib_core_rel}"), build(&ib_core));
    let imports: Vec<(&str, u32)> = FROM_IB_CORE
        .iter()
        .map(|s| (*s, symbol_crc("6.1-inbox", s)))
        .chain([("module_layout", 0x1111_2222)])
        .collect();
    let rpcrdma = f.write(
        format!("{tree}/{INBOX}.ko"),
        build(&ModuleSpec::rpcrdma(RELEASE).imports(&imports)),
    );
    let dep = format!("{ib_core_rel}:\n{INBOX}.ko: {ib_core_rel}\n");
    let symbols: Vec<(String, String)> = FROM_IB_CORE
        .iter()
        .map(|s| (format!("symbol:{s}"), "ib_core".to_string()))
        .collect();
    if binary {
        let dep_bin = write_index(&[
            ("ib_core", &format!("{ib_core_rel}:")),
            ("rpcrdma", &format!("{INBOX}.ko: {ib_core_rel}")),
        ]);
        f.write(format!("{tree}/modules.dep.bin"), dep_bin);
        let pairs: Vec<(&str, &str)> = symbols
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        f.write(format!("{tree}/modules.symbols.bin"), write_index(&pairs));
        // The text files are stale: a reader that took them would find nothing.
        f.write(format!("{tree}/modules.dep"), "");
    } else {
        f.write(format!("{tree}/modules.dep"), dep);
        let text: String = symbols
            .iter()
            .map(|(k, v)| format!("alias {k} {v}\n"))
            .collect();
        f.write(format!("{tree}/modules.symbols"), text);
    }
    (f, rpcrdma)
}

fn abi_of(f: &Fixture, module: &Path) -> AbiVerdict {
    let root = Root::new(f.root());
    let tree = ModuleTree::read(&root, RELEASE).expect("tree");
    let facts =
        nfs_gds::host::modules::module_files::read_load_facts(module).expect("module reads");
    let mut providers = TreeProviders::new(&tree);
    compare_import_crcs(&facts.imports, &KernelModversions::Unknown, |s| {
        providers.provider_of(s)
    })
}

#[test]
fn a_mofed_ib_core_beside_the_inbox_rpcrdma_disagrees_on_every_ib_symbol() {
    for binary in [false, true] {
        let (f, rpcrdma) = mofed_tree("updates/dkms/ib_core.ko", "mlnx-ofed-24.07", binary);
        let AbiVerdict::Compared(r) = abi_of(&f, &rpcrdma) else {
            panic!("not compared")
        };
        assert_eq!(r.matched, 0, "binary {binary}");
        let mut wrong: Vec<&str> = r.mismatches.iter().map(|m| m.symbol.as_str()).collect();
        wrong.sort();
        assert_eq!(
            wrong,
            ["ib_alloc_pd_user", "ib_dma_virt_map_sg", "ib_drain_qp"],
            "binary {binary}"
        );
        let m = r
            .mismatches
            .iter()
            .find(|m| m.symbol == "ib_drain_qp")
            .unwrap();
        assert_eq!(m.wanted, symbol_crc("6.1-inbox", "ib_drain_qp"));
        assert_eq!(m.provided, symbol_crc("mlnx-ofed-24.07", "ib_drain_qp"));
        assert_eq!(m.provider, "ib_core");
        assert_eq!(m.origin, CrcOrigin::File);
        assert!(m
            .provider_path
            .as_ref()
            .unwrap()
            .ends_with("updates/dkms/ib_core.ko"));
        // module_layout is the kernel image's: not in any module file, so not compared.
        assert_eq!(r.uncompared.len(), 1);
    }
}

#[test]
fn the_inbox_ib_core_agrees_and_a_loaded_build_overrides_the_file() {
    let (f, rpcrdma) = mofed_tree(
        "kernel/drivers/infiniband/core/ib_core.ko",
        "6.1-inbox",
        true,
    );
    let verdict = abi_of(&f, &rpcrdma);
    assert!(!verdict.refuses_load(), "{verdict:?}");
    let AbiVerdict::Compared(r) = verdict else {
        panic!()
    };
    assert_eq!(r.matched, 3);

    // The loaded ib_core is a MOFED build: that is what the loader links against.
    let root = Root::new(f.root());
    let tree = ModuleTree::read(&root, RELEASE).unwrap();
    let exports: Vec<(&str, bool)> = FROM_IB_CORE.iter().map(|s| (*s, true)).collect();
    let loaded = ModuleSpec::provider("ib_core", RELEASE, &exports).crc_seed("mlnx-ofed-24.07");
    let loaded = load_facts_of_bytes(Path::new("ib_core.ko"), &build(&loaded)).unwrap();
    let mut providers = TreeProviders::new(&tree).with_loaded("ib_core", loaded.exports);
    let facts = nfs_gds::host::modules::module_files::read_load_facts(&rpcrdma).unwrap();
    let AbiVerdict::Compared(r) =
        compare_import_crcs(&facts.imports, &KernelModversions::Unknown, |s| {
            providers.provider_of(s)
        })
    else {
        panic!()
    };
    assert_eq!(r.mismatches.len(), 3);
    assert!(r
        .mismatches
        .iter()
        .all(|m| m.origin == CrcOrigin::LoadedBuild));
    assert!(
        r.mismatches[0].describe().contains("the loaded ib_core"),
        "{}",
        r.mismatches[0].describe()
    );
}

#[test]
fn a_provider_file_that_cannot_be_read_is_named_not_guessed() {
    let (f, rpcrdma) = mofed_tree("updates/dkms/ib_core.ko", "x", false);
    f.write(
        format!("{}/updates/dkms/ib_core.ko", f.tree()),
        b"not a module",
    );
    let AbiVerdict::Compared(r) = abi_of(&f, &rpcrdma) else {
        panic!()
    };
    assert!(r.mismatches.is_empty());
    assert_eq!(r.uncompared.len(), 4);
    let text = format!("{:?}", r.uncompared);
    assert!(text.contains("ib_core.ko"), "{text}");
}

#[test]
fn a_fifo_in_place_of_a_module_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("rpcrdma.ko");
    nix::unistd::mkfifo(
        &fifo,
        nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
    )
    .unwrap();
    let err = nfs_gds::host::modules::module_files::read_load_facts(&fifo).unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
    assert!(err.to_string().contains("rpcrdma.ko"), "{err}");
}
