//! The providers' CRCs from the kernel build's `Module.symvers`, on fixture nodes: a DKMS
//! rpcrdma importing from two in-tree providers (ib_core, small; sunrpc, larger) and from the
//! kernel image, with the headers' symvers beside the tree. Used only where it is proven to be
//! the providers' build; read from the files in every other case; and a cached verdict drawn
//! from it is drawn again when the headers, the `build` link or the modules change.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use nfs_gds::host::modules::symbol_providers::TreeProviders;
use nfs_gds::host::modules::ModuleTree;
use nfs_gds::host::Root;
use nfs_gds::kmod::abi::{
    compare_import_crcs, AbiReport, AbiVerdict, CrcOrigin, KernelModversions, Uncompared,
};
use nfs_gds::kmod::modversions::ImportVersions;
use serde_json::Value;

use crate::support::*;

const RELEASE: &str = "6.1.0-50-amd64";
const IB_CORE: &str = "kernel/drivers/infiniband/core/ib_core.ko";
const SUNRPC: &str = "kernel/net/sunrpc/sunrpc.ko";
const RPCRDMA: &str = "updates/dkms/rpcrdma.ko";
const IB: [&str; 3] = ["ib_dma_virt_map_sg", "ib_alloc_pd_user", "ib_drain_qp"];
const RPC: [&str; 2] = ["svc_xprt_put", "xprt_wake_pending_tasks"];
/// What the inbox build's CRCs are seeded with (the DKMS rpcrdma is built against them).
const INBOX_SEED: &str = "6.1-inbox";
const HEADERS: &str = "usr/src/linux-headers-6.1.0-50-amd64";

fn provider(name: &str, exports: &[&str], seed: &str) -> ModuleSpec {
    let exports: Vec<(&str, bool)> = exports.iter().map(|s| (*s, true)).collect();
    ModuleSpec::provider(name, RELEASE, &exports).crc_seed(seed)
}

/// The node: ib_core at `ib_core_rel` exporting with `ib_seed`, an in-tree sunrpc four times
/// its size, a DKMS rpcrdma built against the inbox CRCs, the indexes naming them. No symvers.
fn node(ib_core_rel: &str, ib_seed: &str) -> Fixture {
    let f = Fixture::debian12();
    let tree = f.tree();
    let ib_core = build(&provider("ib_core", &IB, ib_seed));
    let sunrpc = build(&provider("sunrpc", &RPC, INBOX_SEED).padded_to(ib_core.len() * 4));
    f.write(format!("{tree}/{ib_core_rel}"), ib_core);
    f.write(format!("{tree}/{SUNRPC}"), sunrpc);
    let imports: Vec<(&str, u32)> = IB
        .iter()
        .chain(&RPC)
        .chain(&["module_layout"])
        .map(|s| (*s, symbol_crc(INBOX_SEED, s)))
        .collect();
    f.write(
        format!("{tree}/{RPCRDMA}"),
        build(&ModuleSpec::rpcrdma(RELEASE).imports(&imports)),
    );
    f.write(
        format!("{tree}/modules.dep"),
        format!("{ib_core_rel}:\n{SUNRPC}:\n{RPCRDMA}: {SUNRPC} {ib_core_rel}\n"),
    );
    let symbols: String = IB
        .iter()
        .map(|s| format!("alias symbol:{s} ib_core\n"))
        .chain(RPC.iter().map(|s| format!("alias symbol:{s} sunrpc\n")))
        .collect();
    f.write(format!("{tree}/modules.symbols"), symbols);
    f
}

/// A `Module.symvers` of a build whose ib_core, sunrpc and image export with these seeds
/// (`None`: that module is not listed), plus exports nobody imports.
fn symvers(ib: Option<&str>, rpc: &str, image: &str) -> String {
    let mut text = String::from("0x0000beef\tprintk\tvmlinux\tEXPORT_SYMBOL\t\n");
    let mut line = |seed: &str, symbol: &str, module: &str| {
        text.push_str(&format!(
            "{:#010x}\t{symbol}\t{module}\tEXPORT_SYMBOL_GPL\t\n",
            symbol_crc(seed, symbol)
        ));
    };
    line(image, "module_layout", "vmlinux");
    if let Some(ib) = ib {
        for s in IB {
            line(ib, s, "drivers/infiniband/core/ib_core");
        }
    }
    for s in RPC {
        line(rpc, s, "net/sunrpc/sunrpc");
    }
    text
}

/// Installs the headers as Debian does: the symvers in `/usr/src/linux-headers-<release>`, the
/// tree's `build` link pointing there.
fn headers(f: &Fixture, dir: &str, text: &str) {
    f.write(format!("{dir}/Module.symvers"), text);
    let link = f.path(format!("{}/build", f.tree()));
    let _ = fs::remove_file(&link);
    symlink(format!("/{dir}"), link).unwrap();
}

fn gzip(text: &str) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(text.as_bytes()).unwrap();
    gz.finish().unwrap()
}

/// The comparison as the check draws it (the symvers used where proven).
fn compared(f: &Fixture) -> AbiReport {
    compared_with_origins(f).0
}

/// [`compared`], with where each provider module's CRCs came from.
fn compared_with_origins(f: &Fixture) -> (AbiReport, BTreeMap<String, CrcOrigin>) {
    let root = Root::new(f.root());
    let tree = ModuleTree::read(&root, RELEASE).expect("tree");
    let file = f.path(format!("{}/{RPCRDMA}", f.tree()));
    let facts = nfs_gds::host::modules::module_files::read_load_facts(&file).expect("reads");
    let ImportVersions::Versioned { versions, .. } = &facts.imports else {
        panic!("unversioned")
    };
    let symbols: Vec<&str> = versions.iter().map(|v| v.symbol.as_str()).collect();
    let mut providers = TreeProviders::new(&tree);
    providers.use_build_symvers(&symbols);
    let symvers: Option<PathBuf> = providers.build_symvers().map(Path::to_path_buf);
    let mut origins = BTreeMap::new();
    let v = compare_import_crcs(&facts.imports, &KernelModversions::Unknown, |s| {
        let p = providers.provider_of(s);
        if let nfs_gds::kmod::abi::Provider::Module { origin, module, .. } = &p {
            origins.insert(module.clone(), *origin);
        }
        p
    });
    let AbiVerdict::Compared(mut r) = v else {
        panic!("not compared: {v:?}")
    };
    r.build_symvers = symvers;
    assert!(
        r.build_symvers.is_some() || origins.values().all(|o| *o == CrcOrigin::File),
        "{origins:?}"
    );
    (r, origins)
}

/// Makes sunrpc's file unreadable as a module (same size): only a comparison that does not
/// read it still agrees.
fn spoil_sunrpc(f: &Fixture) {
    let path = f.path(format!("{}/{SUNRPC}", f.tree()));
    let len = fs::metadata(&path).unwrap().len() as usize;
    fs::write(&path, vec![b'x'; len]).unwrap();
}

fn unreadable(r: &AbiReport) -> Vec<&str> {
    r.uncompared
        .iter()
        .filter_map(|u| match u {
            Uncompared::ProviderUnreadable { symbol, .. } => Some(symbol.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_proven_symvers_answers_for_the_other_in_tree_providers_and_the_image() {
    let f = node(IB_CORE, INBOX_SEED);
    spoil_sunrpc(&f);
    // Without headers, sunrpc must be read, and cannot be.
    let r = compared(&f);
    assert_eq!(unreadable(&r), RPC, "{r:?}");
    assert_eq!(r.image_matched, 0);

    headers(
        &f,
        HEADERS,
        &symvers(Some(INBOX_SEED), INBOX_SEED, INBOX_SEED),
    );
    let (r, origins) = compared_with_origins(&f);
    assert_eq!((r.matched, r.image_matched), (6, 1), "{r:?}");
    // The smaller ib_core read as the proof, the larger sunrpc answered by the symvers.
    assert_eq!(origins["ib_core"], CrcOrigin::File);
    assert_eq!(origins["sunrpc"], CrcOrigin::BuildSymvers);
    assert!(r.mismatches.is_empty() && r.uncompared.is_empty(), "{r:?}");
    assert!(r
        .build_symvers
        .unwrap()
        .ends_with("lib/modules/6.1.0-50-amd64/build/Module.symvers"));

    // The image's CRC differing in the symvers is a mismatch named as the image's.
    headers(
        &f,
        HEADERS,
        &symvers(Some(INBOX_SEED), INBOX_SEED, "6.1-other-image"),
    );
    let r = compared(&f);
    assert_eq!(r.mismatches.len(), 1, "{r:?}");
    assert_eq!(r.mismatches[0].provider, "vmlinux");
    assert!(
        r.mismatches[0]
            .describe()
            .contains("the kernel image (per "),
        "{r:?}"
    );
}

#[test]
fn a_symvers_disagreeing_with_the_provider_file_read_is_not_used() {
    // ib_core (the smaller, read as the proof) is another build than the symvers says; the
    // rpcrdma was built against the symvers: only the files tell the truth.
    let f = node(IB_CORE, "6.1-rebuilt");
    headers(
        &f,
        HEADERS,
        &symvers(Some(INBOX_SEED), INBOX_SEED, INBOX_SEED),
    );
    let r = compared(&f);
    assert_eq!(r.build_symvers, None, "{r:?}");
    let mut wrong: Vec<&str> = r.mismatches.iter().map(|m| m.symbol.as_str()).collect();
    wrong.sort();
    assert_eq!(
        wrong,
        ["ib_alloc_pd_user", "ib_dma_virt_map_sg", "ib_drain_qp"]
    );
    for m in &r.mismatches {
        assert_eq!(m.origin, CrcOrigin::File);
        assert_eq!(m.provided, symbol_crc("6.1-rebuilt", &m.symbol));
    }
    assert_eq!(
        r.matched, 2,
        "sunrpc read from its file and agreeing: {r:?}"
    );
    assert_eq!(
        r.uncompared,
        vec![Uncompared::KernelImage {
            symbol: "module_layout".into()
        }]
    );

    // Even when the unproven symvers would answer for a provider that cannot be read.
    spoil_sunrpc(&f);
    assert_eq!(unreadable(&compared(&f)), RPC);
}

#[test]
fn a_provider_under_updates_is_read_from_its_file_whatever_the_symvers_says() {
    let f = node("updates/dkms/ib_core.ko", "mlnx-ofed-24.10");
    headers(
        &f,
        HEADERS,
        &symvers(Some(INBOX_SEED), INBOX_SEED, INBOX_SEED),
    );
    let r = compared(&f);
    assert_eq!(r.mismatches.len(), 3, "{r:?}");
    let dkms = f.path(format!("{}/updates/dkms/ib_core.ko", f.tree()));
    let from: Vec<_> = r
        .mismatches
        .iter()
        .map(|m| (m.origin, m.provider_path.clone()))
        .collect();
    assert_eq!(from, vec![(CrcOrigin::File, Some(dkms)); 3]);
    // sunrpc, read as the proof, agrees with the symvers: the image's CRC is compared.
    assert_eq!((r.matched, r.image_matched), (3, 1), "{r:?}");
}

#[test]
fn a_gzipped_boot_symvers_serves_as_the_headers_do() {
    let f = node(IB_CORE, INBOX_SEED);
    spoil_sunrpc(&f);
    f.write(
        format!("boot/symvers-{RELEASE}.gz"),
        gzip(&symvers(Some(INBOX_SEED), INBOX_SEED, INBOX_SEED)),
    );
    let r = compared(&f);
    assert_eq!((r.matched, r.image_matched), (6, 1), "{r:?}");
    assert!(r
        .build_symvers
        .unwrap()
        .ends_with("boot/symvers-6.1.0-50-amd64.gz"));
}

#[test]
fn a_symvers_of_another_release_is_not_used() {
    let f = node(IB_CORE, INBOX_SEED);
    spoil_sunrpc(&f);
    let text = symvers(Some(INBOX_SEED), INBOX_SEED, INBOX_SEED);
    // The build link left pointing at the previous release's headers, and that release's
    // symvers in /boot.
    headers(&f, "usr/src/linux-headers-6.1.0-49-amd64", &text);
    f.write("boot/symvers-6.1.0-49-amd64.gz", gzip(&text));
    let r = compared(&f);
    assert_eq!(r.build_symvers, None, "{r:?}");
    assert_eq!(unreadable(&r), RPC, "sunrpc had to be read: {r:?}");
}

// ---- the cached verdict (root only: the cache is root's) ----

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

fn abi_entry(f: &Fixture) -> PathBuf {
    let found: Vec<PathBuf> = fs::read_dir(f.path("var/cache/nfs-gds"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("abi-"))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].clone()
}

/// The rpcrdma-abi result of `check`: status and summary.
fn abi_check(f: &Fixture) -> (String, String) {
    let (_, doc) = check_json(f);
    let summary = check_result(&doc, "rpcrdma-abi")["summary"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (status(&doc, "rpcrdma-abi"), summary)
}

/// A node whose first check passes from the headers' symvers and fills the cache; `None` when
/// not root (then nothing was cached).
fn cached_node() -> Option<Fixture> {
    let f = node(IB_CORE, INBOX_SEED);
    headers(
        &f,
        HEADERS,
        &symvers(Some(INBOX_SEED), INBOX_SEED, INBOX_SEED),
    );
    let (status, summary) = abi_check(&f);
    assert_eq!(status, "pass", "{summary}");
    assert!(
        summary.contains("1 of them the kernel image's, per ")
            && summary.contains("build/Module.symvers"),
        "{summary}"
    );
    if !is_root() {
        assert!(!f.path("var/cache/nfs-gds").exists());
        eprintln!("not root: the cache itself needs root");
        return None;
    }
    abi_entry(&f);
    Some(f)
}

/// Replaces a file as packages do: a new file renamed over the old one.
fn replace(f: &Fixture, rel: &str, bytes: impl AsRef<[u8]>) {
    let new = f.write(format!("{rel}.new"), bytes);
    fs::rename(&new, f.path(rel)).unwrap();
}

#[test]
fn an_upgraded_headers_package_draws_the_verdict_again() {
    let Some(f) = cached_node() else { return };
    replace(
        &f,
        &format!("{HEADERS}/Module.symvers"),
        symvers(Some(INBOX_SEED), INBOX_SEED, "6.1-next-image"),
    );
    let (status, summary) = abi_check(&f);
    assert_eq!(status, "fail", "{summary}");
    assert!(summary.contains("wants module_layout"), "{summary}");
}

#[test]
fn removed_headers_or_a_moved_build_link_draw_the_verdict_again() {
    let Some(f) = cached_node() else { return };
    // A cached verdict that says otherwise: a hit would show it.
    let lie = |f: &Fixture| {
        let entry = abi_entry(f);
        let mut v: Value = serde_json::from_slice(&fs::read(&entry).unwrap()).unwrap();
        let mismatches = &mut v["value"]["verdict"]["compared"]["mismatches"];
        assert!(
            mismatches.is_array(),
            "the entry keeps a compared report: {v:#}"
        );
        *mismatches = serde_json::json!([{
            "symbol": "ib_drain_qp", "wanted": 1, "provided": 2, "provider": "ib_core",
            "provider_path": null, "origin": "file"
        }]);
        fs::write(&entry, serde_json::to_vec(&v).unwrap()).unwrap();
    };
    lie(&f);
    assert_eq!(
        abi_check(&f).0,
        "fail",
        "the entry answers while nothing changed"
    );

    // The link moved to another directory of this release (same symvers content, found there
    // as well): drawn again, not the entry.
    let other = "usr/src/linux-kbuild-6.1.0-50-amd64";
    headers(
        &f,
        other,
        &symvers(Some(INBOX_SEED), INBOX_SEED, INBOX_SEED),
    );
    let (status, summary) = abi_check(&f);
    assert_eq!(status, "pass", "{summary}");

    // The headers removed: drawn again from the files, the image's imports not compared.
    lie(&f);
    fs::remove_dir_all(f.path(HEADERS)).unwrap();
    fs::remove_dir_all(f.path(other)).unwrap();
    let (status, summary) = abi_check(&f);
    assert_eq!(status, "pass", "{summary}");
    assert!(
        summary.contains("(1 provided by the kernel image, not compared)"),
        "{summary}"
    );
}

#[test]
fn a_kernel_rebuilt_with_the_same_release_draws_the_verdict_again() {
    let Some(f) = cached_node() else { return };
    // New modules and new headers of the same release; the DKMS rpcrdma still the old build.
    let tree = f.tree();
    replace(
        &f,
        &format!("{tree}/{IB_CORE}"),
        build(&provider("ib_core", &IB, "6.1-rebuilt")),
    );
    let ib_len = fs::metadata(f.path(format!("{tree}/{IB_CORE}")))
        .unwrap()
        .len() as usize;
    replace(
        &f,
        &format!("{tree}/{SUNRPC}"),
        build(&provider("sunrpc", &RPC, "6.1-rebuilt").padded_to(ib_len * 4)),
    );
    replace(
        &f,
        &format!("{HEADERS}/Module.symvers"),
        symvers(Some("6.1-rebuilt"), "6.1-rebuilt", "6.1-rebuilt"),
    );
    let (status, summary) = abi_check(&f);
    assert_eq!(status, "fail", "{summary}");
    assert!(
        summary.contains("disagrees about version of symbol"),
        "{summary}"
    );

    // Only the modules rebuilt, the old headers left: the proof fails, the files answer.
    let f = cached_node().unwrap();
    replace(
        &f,
        &format!("{tree}/{IB_CORE}"),
        build(&provider("ib_core", &IB, "6.1-rebuilt")),
    );
    let (status, summary) = abi_check(&f);
    assert_eq!(status, "fail", "{summary}");
    assert!(summary.contains("ib_core.ko"), "{summary}");
}

#[test]
fn a_symvers_that_does_not_parse_is_not_used() {
    let f = node(IB_CORE, INBOX_SEED);
    spoil_sunrpc(&f);
    let text = symvers(Some(INBOX_SEED), INBOX_SEED, INBOX_SEED)
        + "0xnothex\tkfree\tvmlinux\tEXPORT_SYMBOL\t\n";
    headers(&f, HEADERS, &text);
    let r = compared(&f);
    assert_eq!(r.build_symvers, None, "{r:?}");
    assert_eq!(unreadable(&r), RPC, "sunrpc had to be read: {r:?}");
}
