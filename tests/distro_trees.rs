//! Each distribution family's module world as modprobe sees it: fixture trees laid out the way
//! Ubuntu (DKMS `updates/dkms/`, the archive's `kernel/doca-ofed-<ver>/`), RHEL/Rocky (`extra/`,
//! `weak-updates/` links into another kernel's `extra/`, `dist.conf`'s search order), SLES
//! (`updates/`, `weak-updates/`) and vastnfs (`updates/bundle/`, `extra/vastnfs/bundle/`) lay
//! them out, from generated modules, indexed by the real `depmod -b ROOT -C ROOT/etc/depmod.d`.
//! For each, the rpcrdma file `check` judges is the one `modprobe -d ROOT -S KVER` loads, the
//! `stack-ownership` check names its family, and doctor names the stack and where it came from.
//!
//! `weak-modules` writes absolute links (`/lib/modules/<other>/extra/…`); `depmod -b` would follow
//! those out of the fixture, so the trees here use the same links relative to the link.

use std::path::Path;
use std::process::Command;

use nfs_gds::host::io::recorded::{record_key, RECORDED_DIR};
use serde_json::Value;

use crate::support::*;

/// ib_core's exports the generated rpcrdma imports, and rdma_cm's and sunrpc's.
const IB_CORE: [&str; 3] = ["ib_dma_virt_map_sg", "ib_alloc_pd_user", "ib_drain_qp"];
const RDMA_CM: [&str; 2] = ["rdma_create_id", "rdma_resolve_addr"];
const SUNRPC: [&str; 2] = ["xprt_alloc", "svc_xprt_init"];

/// A module file to lay out: its path below the tree and the ELF.
struct Module {
    rel: String,
    bytes: Vec<u8>,
}

/// A provider module (`ib_core`, `rdma_cm`, `sunrpc`) exporting its symbols with `seed`'s CRCs.
fn provider(name: &str, release: &str, seed: &str, rel: &str) -> Module {
    let exports: &[&str] = match name {
        "ib_core" => &IB_CORE,
        "rdma_cm" => &RDMA_CM,
        _ => &SUNRPC,
    };
    let exports: Vec<(&str, bool)> = exports.iter().map(|s| (*s, true)).collect();
    let mut spec = ModuleSpec::provider(name, release, &exports).crc_seed(seed);
    spec.build_id = Some(build_id_of(rel));
    Module {
        rel: rel.into(),
        bytes: build(&spec),
    }
}

/// An rpcrdma with hooks, built against an RDMA core (ib_core, rdma_cm) exporting with
/// `rdma_seed` and a sunrpc exporting with `sunrpc_seed`.
fn rpcrdma(release: &str, rdma_seed: &str, sunrpc_seed: &str, rel: &str) -> Module {
    module(rpcrdma_spec(release, rdma_seed, sunrpc_seed, rel), rel)
}

/// The module `spec` builds, laid out at `rel`.
fn module(spec: ModuleSpec, rel: &str) -> Module {
    Module {
        rel: rel.into(),
        bytes: build(&spec),
    }
}

/// The spec of [`rpcrdma`].
fn rpcrdma_spec(release: &str, rdma_seed: &str, sunrpc_seed: &str, rel: &str) -> ModuleSpec {
    let imports: Vec<(String, u32)> = IB_CORE
        .iter()
        .chain(&RDMA_CM)
        .map(|s| (s.to_string(), symbol_crc(rdma_seed, s)))
        .chain(
            SUNRPC
                .iter()
                .map(|s| (s.to_string(), symbol_crc(sunrpc_seed, s))),
        )
        .collect();
    let imports: Vec<(&str, u32)> = imports.iter().map(|(s, c)| (s.as_str(), *c)).collect();
    let mut spec = ModuleSpec::rpcrdma(release).imports(&imports);
    spec.build_id = Some(build_id_of(rel));
    spec
}

/// The distribution kernel's own modules, exporting with `seed`; its rpcrdma has no nvfs hooks
/// (only NVIDIA's linux-nvidia kernels build them in, and doctor tells those apart by them).
fn inbox(release: &str, seed: &str) -> Vec<Module> {
    vec![
        provider("sunrpc", release, seed, "kernel/net/sunrpc/sunrpc.ko"),
        provider(
            "ib_core",
            release,
            seed,
            "kernel/drivers/infiniband/core/ib_core.ko",
        ),
        provider(
            "rdma_cm",
            release,
            seed,
            "kernel/drivers/infiniband/core/rdma_cm.ko",
        ),
        module(
            rpcrdma_spec(release, seed, seed, "kernel/net/sunrpc/xprtrdma/rpcrdma.ko").hooks(None),
            "kernel/net/sunrpc/xprtrdma/rpcrdma.ko",
        ),
    ]
}

/// A node of `release` whose tree holds `modules`, with `/etc/depmod.d/` files `conf`,
/// indexed by the real depmod; nvidia_fs loaded.
fn node(release: &str, os_release: &str, modules: &[Module], conf: &[(&str, &str)]) -> Fixture {
    let mut f = Fixture::new(release);
    f.nvidia_fs("2.28.4", 1);
    f.write("etc/os-release", os_release);
    f.write("etc/modprobe.d/.keep", "");
    f.write("etc/depmod.d/.keep", "");
    for (name, text) in conf {
        f.write(format!("etc/depmod.d/{name}"), text);
    }
    let tree = f.tree();
    for m in modules {
        f.write(format!("{tree}/{}", m.rel), &m.bytes);
    }
    for stale in ["modules.dep", "modules.alias"] {
        f.remove(format!("{tree}/{stale}"));
    }
    depmod(&f, release);
    f
}

/// `weak-modules`' link from this kernel's `weak-updates/` to `target` (a path below the root).
fn link(f: &Fixture, rel_in_tree: &str, target: &str) {
    let at = f.path(format!("{}/{rel_in_tree}", f.tree()));
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    let depth = rel_in_tree.matches('/').count() + 3; // lib/modules/<release>/…
    let up = "../".repeat(depth);
    std::os::unix::fs::symlink(format!("{up}{target}"), &at).unwrap();
}

fn depmod(f: &Fixture, release: &str) {
    let out = Command::new("depmod")
        .arg("-b")
        .arg(f.root())
        .arg("-C")
        .arg(f.path("etc/depmod.d"))
        .arg(release)
        .output()
        .expect("depmod runs (kmod is installed)");
    assert!(
        out.status.success(),
        "depmod: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The file `modprobe rpcrdma` loads, below the tree: the last `insmod` of its dry run.
fn modprobe_loads(f: &Fixture, module: &str) -> String {
    let out = Command::new("modprobe")
        .args(["-n", "-v", "--show-depends", "-d"])
        .arg(f.root())
        .args(["-S", &f.release, "-C"])
        .arg(f.path("etc/modprobe.d"))
        .arg(module)
        .output()
        .expect("modprobe runs (kmod is installed)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "modprobe {module}: {text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = text
        .lines()
        .filter_map(|l| l.strip_prefix("insmod "))
        .next_back()
        .unwrap_or_else(|| panic!("modprobe {module} loads nothing: {text}"));
    let path = Path::new(last.trim());
    let tree = f.path(f.tree());
    path.strip_prefix(&tree)
        .unwrap_or_else(|_| panic!("{} is outside {}", path.display(), tree.display()))
        .display()
        .to_string()
}

/// What `check` judges: the rpcrdma file of `stack-ownership`'s next load, which must be the
/// file `rpcrdma-hooks` inspected.
fn check_judges(doc: &Value) -> String {
    let ev = evidence(doc, "stack-ownership");
    let line = ev
        .lines()
        .find(|l| l.starts_with("rpcrdma: next: "))
        .unwrap_or_else(|| panic!("no rpcrdma owner in {ev}"));
    let rel = line["rpcrdma: next: ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    let hooks = check_result(doc, "rpcrdma-hooks").to_string();
    assert!(
        hooks.contains(&rel),
        "rpcrdma-hooks judged another file: {hooks}"
    );
    rel
}

fn doctor(f: &Fixture) -> Value {
    let out = run(f, &["doctor", "--json"]);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor --json: {e}: {}", stderr(&out)))
}

/// Doctor's description of where rpcrdma comes from.
fn doctor_says(f: &Fixture) -> (String, String) {
    let doc = doctor(f);
    (
        doc["stack"]["provenance"]
            .as_str()
            .unwrap_or("")
            .to_string(),
        doc.to_string(),
    )
}

/// Asserts the file `check` judges is modprobe's, and returns it.
fn agrees_with_modprobe(f: &Fixture) -> (String, Value) {
    let (_, doc) = check_json(f);
    let judged = check_judges(&doc);
    assert_eq!(judged, modprobe_loads(f, "rpcrdma"), "{doc:#}");
    (judged, doc)
}

const UBUNTU_2404: &str = "ID=ubuntu\nID_LIKE=debian\nVERSION_ID=\"24.04\"\n";
const UBUNTU_2604: &str = "ID=ubuntu\nID_LIKE=debian\nVERSION_ID=\"26.04\"\n";
const ROCKY_8: &str = "ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"8.10\"\n";
const SLES_15: &str = "ID=\"sles\"\nID_LIKE=\"suse\"\nVERSION_ID=\"15.6\"\n";
const UBUNTU_CONF: (&str, &str) = ("ubuntu.conf", "search updates ubuntu built-in\n");
const DIST_CONF: (&str, &str) = ("dist.conf", "search updates extra built-in weak-updates\n");

#[test]
fn ubuntu_dkms_builds_in_updates_dkms_win_over_the_kernels_own() {
    const R: &str = "6.8.0-45-generic";
    let mut modules = inbox(R, "ubuntu-6.8");
    modules.push(provider(
        "ib_core",
        R,
        "doca-3.2",
        "updates/dkms/ib_core.ko",
    ));
    modules.push(provider(
        "rdma_cm",
        R,
        "doca-3.2",
        "updates/dkms/rdma_cm.ko",
    ));
    modules.push(rpcrdma(
        R,
        "doca-3.2",
        "ubuntu-6.8",
        "updates/dkms/rpcrdma.ko",
    ));
    let f = node(R, UBUNTU_2404, &modules, &[UBUNTU_CONF]);
    let (judged, doc) = agrees_with_modprobe(&f);
    assert_eq!(judged, "updates/dkms/rpcrdma.ko");
    assert_eq!(status(&doc, "rpcrdma-abi"), "pass", "{doc:#}");
    assert_eq!(status(&doc, "stack-ownership"), "pass", "{doc:#}");
    let ev = evidence(&doc, "stack-ownership");
    assert!(
        ev.contains("ib_core: next: updates/dkms/ib_core.ko (NVIDIA's DOCA-OFED / MLNX_OFED)"),
        "{ev}"
    );

    // DOCA-OFED's DKMS packages, as `ofed_info -s` and `dkms status` report them.
    f.write(
        format!("{RECORDED_DIR}/{}", record_key("ofed_info", &["-s"])),
        "OFED-internal-25.10-1.2.8:\n",
    );
    f.write(
        format!("{RECORDED_DIR}/{}", record_key("dkms", &["status"])),
        format!("mlnx-nfsrdma/25.10.OFED.25.10.1.2.8.1, {R}, x86_64: installed\n"),
    );
    let (provenance, doc) = doctor_says(&f);
    assert_eq!(provenance, "mofed-dkms", "{doc}");
}

/// The plan's steps as text.
fn plan_text(doc: &str) -> String {
    let doc: Value = serde_json::from_str(doc).unwrap();
    serde_json::to_string_pretty(&doc["plan"]).unwrap()
}

/// Ubuntu 26.04's archive DOCA-OFED under `kernel/doca-ofed-26.01/`. How the archive's build
/// wins over the kernel's own beside it under `kernel/` is not documented; an `override` line is
/// the way depmod offers, and the comparison with modprobe holds whichever file it picks.
#[test]
fn ubuntus_archive_doca_ofed_under_kernel_is_named_and_nvidias_dkms_beside_it_is_a_conflict() {
    const R: &str = "7.0.0-14-generic";
    const DOCA: &str = "kernel/doca-ofed-26.01";
    let archive = |mut modules: Vec<Module>| {
        modules.push(provider(
            "ib_core",
            R,
            "doca-26.01",
            &format!("{DOCA}/ib_core.ko"),
        ));
        modules.push(provider(
            "rdma_cm",
            R,
            "doca-26.01",
            &format!("{DOCA}/rdma_cm.ko"),
        ));
        modules.push(rpcrdma(
            R,
            "doca-26.01",
            "ubuntu-7.0",
            &format!("{DOCA}/rpcrdma.ko"),
        ));
        modules
    };
    let overrides = (
        "doca-ofed.conf",
        "override ib_core * kernel/doca-ofed-26.01\noverride rdma_cm * kernel/doca-ofed-26.01\noverride rpcrdma * kernel/doca-ofed-26.01\n",
    );
    // Without an override depmod picks one of the two kernel/ files itself: modprobe agrees.
    let f = node(
        R,
        UBUNTU_2604,
        &archive(inbox(R, "ubuntu-7.0")),
        &[UBUNTU_CONF],
    );
    agrees_with_modprobe(&f);

    let f = node(
        R,
        UBUNTU_2604,
        &archive(inbox(R, "ubuntu-7.0")),
        &[UBUNTU_CONF, overrides],
    );
    let (judged, doc) = agrees_with_modprobe(&f);
    assert_eq!(judged, format!("{DOCA}/rpcrdma.ko"));
    assert_eq!(status(&doc, "rpcrdma-abi"), "pass", "{doc:#}");
    assert_eq!(status(&doc, "stack-ownership"), "pass", "{doc:#}");
    let (provenance, doc) = doctor_says(&f);
    assert_eq!(provenance, "ubuntu-doca-ofed");
    assert!(
        doc.contains("Ubuntu's Canonical-signed DOCA-OFED 26.01 package"),
        "{doc}"
    );

    // NVIDIA's DOCA-OFED DKMS installed as well: `updates/` beats `kernel/` for ib_core.
    let mut modules = archive(inbox(R, "ubuntu-7.0"));
    modules.push(provider(
        "ib_core",
        R,
        "doca-3.2",
        "updates/dkms/ib_core.ko",
    ));
    let f = node(R, UBUNTU_2604, &modules, &[UBUNTU_CONF, overrides]);
    let (_, doc) = agrees_with_modprobe(&f);
    assert_eq!(status(&doc, "stack-ownership"), "warn", "{doc:#}");
    let s = check_result(&doc, "stack-ownership")["summary"].to_string();
    assert!(
        s.contains("ib_core is installed by Ubuntu's archive DOCA-OFED 26.01 and NVIDIA's DOCA-OFED / MLNX_OFED together"),
        "{s}"
    );
    let (_, doc) = doctor_says(&f);
    let plan = plan_text(&doc);
    assert!(
        plan.contains("Remove NVIDIA's DOCA-OFED / MLNX_OFED's ib_core (keeping Ubuntu's archive DOCA-OFED 26.01)"),
        "{plan}"
    );
    assert!(plan.contains("apt-get purge 'mlnx-nfsrdma*'"), "{plan}");
}

const EL_RUNNING: &str = "4.18.0-553.el8_10.x86_64";
const EL_BUILT: &str = "4.18.0-513.el8.x86_64";
const NFSRDMA_OVERRIDE: (&str, &str) = (
    "zz02-mlnx-nfsrdma-rpcrdma.conf",
    "override rpcrdma * weak-updates/mlnx-nfsrdma\n",
);

/// A Rocky 8.10 node whose kernel's own modules export with `kabi`, with a kmod mlnx-nfsrdma
/// built for 4.18.0-513 (against the kABI `el8`) linked into `weak-updates/`.
fn weak_updates_node(kabi: &str, conf: &[(&str, &str)]) -> Fixture {
    let modules = inbox(EL_RUNNING, kabi);
    // The build of the older kernel, in its own tree.
    let built = rpcrdma(EL_BUILT, "el8", "el8", "rpcrdma.ko");
    let f = node(EL_RUNNING, ROCKY_8, &modules, &[]);
    f.write(
        format!("lib/modules/{EL_BUILT}/extra/mlnx-nfsrdma/rpcrdma.ko"),
        &built.bytes,
    );
    link(
        &f,
        "weak-updates/mlnx-nfsrdma/rpcrdma.ko",
        &format!("lib/modules/{EL_BUILT}/extra/mlnx-nfsrdma/rpcrdma.ko"),
    );
    let mut confs = vec![DIST_CONF];
    confs.extend_from_slice(conf);
    for (name, text) in confs {
        f.write(format!("etc/depmod.d/{name}"), text);
    }
    depmod(&f, EL_RUNNING);
    f
}

#[test]
fn rhel_kmod_packages_in_extra_win_by_dist_conf() {
    let mut modules = inbox(EL_RUNNING, "el8");
    let ofa = "extra/mlnx-ofa_kernel/drivers/infiniband/core";
    modules.push(provider(
        "ib_core",
        EL_RUNNING,
        "mofed-24.10",
        &format!("{ofa}/ib_core.ko"),
    ));
    modules.push(provider(
        "rdma_cm",
        EL_RUNNING,
        "mofed-24.10",
        &format!("{ofa}/rdma_cm.ko"),
    ));
    modules.push(rpcrdma(
        EL_RUNNING,
        "mofed-24.10",
        "el8",
        "extra/mlnx-nfsrdma/rpcrdma.ko",
    ));
    let f = node(EL_RUNNING, ROCKY_8, &modules, &[DIST_CONF]);
    let (judged, doc) = agrees_with_modprobe(&f);
    assert_eq!(judged, "extra/mlnx-nfsrdma/rpcrdma.ko");
    assert_eq!(status(&doc, "rpcrdma-abi"), "pass", "{doc:#}");
    assert_eq!(status(&doc, "stack-ownership"), "pass", "{doc:#}");
    let (provenance, _) = doctor_says(&f);
    assert_eq!(provenance, "mofed-package");
}

#[test]
fn rhel_weak_updates_links_with_matching_kabi_load_and_are_named() {
    let f = weak_updates_node("el8", &[NFSRDMA_OVERRIDE]);
    let (judged, doc) = agrees_with_modprobe(&f);
    assert_eq!(judged, "weak-updates/mlnx-nfsrdma/rpcrdma.ko");
    assert_eq!(status(&doc, "rpcrdma-abi"), "pass", "{doc:#}");
    let ev = evidence(&doc, "stack-ownership");
    assert!(
        ev.contains(&format!("weak-updates/mlnx-nfsrdma/rpcrdma.ko -> /lib/modules/{EL_BUILT}/extra/mlnx-nfsrdma/rpcrdma.ko (NVIDIA's DOCA-OFED / MLNX_OFED)")),
        "{ev}"
    );
    let (provenance, doc) = doctor_says(&f);
    assert_eq!(provenance, "weak-updates");
    assert!(
        doc.contains(&format!(
            "RHEL weak-modules link to {EL_BUILT}'s extra/mlnx-nfsrdma"
        )),
        "{doc}"
    );
}

#[test]
fn rhel_weak_updates_links_with_another_kabi_are_refused_by_the_crc_question() {
    let f = weak_updates_node("el8.10-changed", &[NFSRDMA_OVERRIDE]);
    let (judged, doc) = agrees_with_modprobe(&f);
    assert_eq!(judged, "weak-updates/mlnx-nfsrdma/rpcrdma.ko");
    assert_eq!(status(&doc, "rpcrdma-abi"), "fail", "{doc:#}");
    let s = check_result(&doc, "rpcrdma-abi")["summary"].to_string();
    assert!(s.contains("disagrees about version of symbol"), "{s}");
    assert!(
        s.contains("kernel/drivers/infiniband/core/ib_core.ko"),
        "{s}"
    );
    let (_, doc) = doctor_says(&f);
    let plan = plan_text(&doc);
    assert!(
        plan.contains("Install the rpcrdma built for this kernel instead of the weak-updates link"),
        "{plan}"
    );
    assert!(
        plan.contains(&format!("weak-modules --remove-kernel {EL_RUNNING}")),
        "{plan}"
    );
}

#[test]
fn rhel_in_tree_rpcrdma_beats_weak_updates_without_an_override() {
    let f = weak_updates_node("el8", &[]);
    let (judged, doc) = agrees_with_modprobe(&f);
    assert_eq!(judged, "kernel/net/sunrpc/xprtrdma/rpcrdma.ko");
    let ev = evidence(&doc, "stack-ownership");
    assert!(ev.contains("installed: kernel/net/sunrpc/xprtrdma/rpcrdma.ko (the distribution's kernel), weak-updates/mlnx-nfsrdma/rpcrdma.ko ->"), "{ev}");
    let (provenance, doc) = doctor_says(&f);
    assert_eq!(provenance, "inbox");
    // kmod-mlnx-nfsrdma is installed, not missing: doctor says why it does not load and plans
    // the override line its package writes, not another install.
    assert!(
        doc.contains(&format!("is installed as weak-updates/mlnx-nfsrdma/rpcrdma.ko (a link to the build for {EL_BUILT}) but does not load")),
        "{doc}"
    );
    let plan = plan_text(&doc);
    assert!(
        plan.contains(&format!(
            "echo '{}' > /etc/depmod.d/{}",
            NFSRDMA_OVERRIDE.1.trim_end(),
            NFSRDMA_OVERRIDE.0
        )),
        "{plan}"
    );
    // And that line is the fix: with it, the real depmod ranks the link first.
    f.write(
        format!("etc/depmod.d/{}", NFSRDMA_OVERRIDE.0),
        NFSRDMA_OVERRIDE.1,
    );
    depmod(&f, EL_RUNNING);
    let (judged, _) = agrees_with_modprobe(&f);
    assert_eq!(judged, "weak-updates/mlnx-nfsrdma/rpcrdma.ko");
}

#[test]
fn sles_updates_and_weak_updates_are_searched_before_the_kernels_own() {
    const R: &str = "6.4.0-150600.23.25-default";
    const BUILT: &str = "6.4.0-150600.23.22-default";
    const SYSTEM: (&str, &str) = (
        "00-system.conf",
        "search updates extra weak-updates kgraft built-in\n",
    );
    let mut modules = inbox(R, "sle15-sp6");
    modules.push(rpcrdma(
        R,
        "sle15-sp6",
        "sle15-sp6",
        "updates/mlnx-nfsrdma/rpcrdma.ko",
    ));
    let f = node(R, SLES_15, &modules, &[SYSTEM]);
    let (judged, doc) = agrees_with_modprobe(&f);
    assert_eq!(judged, "updates/mlnx-nfsrdma/rpcrdma.ko");
    assert_eq!(status(&doc, "stack-ownership"), "pass", "{doc:#}");

    // A KMP built for the previous maintenance kernel, linked by weak-modules2.
    let f = node(R, SLES_15, &inbox(R, "sle15-sp6"), &[SYSTEM]);
    f.write(
        format!("lib/modules/{BUILT}/updates/mlnx-nfsrdma/rpcrdma.ko"),
        rpcrdma(BUILT, "sle15-sp6", "sle15-sp6", "x").bytes,
    );
    link(
        &f,
        "weak-updates/updates/mlnx-nfsrdma/rpcrdma.ko",
        &format!("lib/modules/{BUILT}/updates/mlnx-nfsrdma/rpcrdma.ko"),
    );
    depmod(&f, R);
    let (judged, doc) = agrees_with_modprobe(&f);
    assert_eq!(judged, "weak-updates/updates/mlnx-nfsrdma/rpcrdma.ko");
    assert_eq!(status(&doc, "rpcrdma-abi"), "pass", "{doc:#}");
    let (provenance, doc) = doctor_says(&f);
    assert_eq!(provenance, "weak-updates");
    assert!(
        doc.contains(&format!(
            "SLES weak-modules link to {BUILT}'s updates/mlnx-nfsrdma"
        )),
        "{doc}"
    );
}

/// vastnfs's modules under `bundle`, as its DEB (`updates/bundle/`, `search updates/bundle`) or
/// RPM (`extra/vastnfs/bundle/`, override lines) installs them.
fn vastnfs_modules(release: &str, dir: &str) -> Vec<Module> {
    let mut modules = inbox(release, "distro");
    modules.push(provider(
        "sunrpc",
        release,
        "vastnfs-4.5.8",
        &format!("{dir}/net/sunrpc/sunrpc.ko"),
    ));
    modules.push(rpcrdma(
        release,
        "distro",
        "vastnfs-4.5.8",
        &format!("{dir}/net/sunrpc/xprtrdma/rpcrdma.ko"),
    ));
    modules
}

/// sunrpc loaded: its `/sys/module` entry, the bundle's version when `bundle`, and the
/// build-id of the file at `rel`.
fn load_sunrpc(f: &Fixture, rel: &str, bundle: Option<&str>) {
    f.write("sys/module/sunrpc/initstate", "live\n");
    f.write(
        "sys/module/sunrpc/notes/.note.gnu.build-id",
        module_gen::build_id_note(&build_id_of(rel)),
    );
    if let Some(v) = bundle {
        f.write(
            "sys/module/sunrpc/parameters/nfs_bundle_version",
            format!("{v}\n"),
        );
    }
}

#[test]
fn vastnfs_deb_bundle_replaces_sunrpc_and_rpcrdma_and_is_named_with_its_version() {
    const R: &str = "6.8.0-45-generic";
    let bundle = ("nfsrdma.conf", "search updates/bundle\n");
    let f = node(
        R,
        UBUNTU_2404,
        &vastnfs_modules(R, "updates/bundle"),
        &[bundle, UBUNTU_CONF],
    );
    let (judged, doc) = agrees_with_modprobe(&f);
    assert_eq!(judged, "updates/bundle/net/sunrpc/xprtrdma/rpcrdma.ko");
    assert_eq!(
        modprobe_loads(&f, "sunrpc"),
        "updates/bundle/net/sunrpc/sunrpc.ko"
    );
    assert_eq!(status(&doc, "rpcrdma-abi"), "pass", "{doc:#}");

    // The bundle's sunrpc is loaded: one family, named with its version.
    load_sunrpc(&f, "updates/bundle/net/sunrpc/sunrpc.ko", Some("4.5.8"));
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "stack-ownership"), "pass", "{doc:#}");
    let (provenance, doc) = doctor_says(&f);
    assert_eq!(provenance, "vastnfs");
    assert!(doc.contains("vastnfs 4.5.8 bundle"), "{doc}");

    // Installed, but the kernel's own sunrpc still loaded: the next load changes family.
    f.remove("sys/module/sunrpc");
    load_sunrpc(&f, "kernel/net/sunrpc/sunrpc.ko", None);
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "stack-ownership"), "warn", "{doc:#}");
    let s = check_result(&doc, "stack-ownership")["summary"].to_string();
    assert!(
        s.contains("the loaded sunrpc is the distribution's kernel's, but the next load takes vastnfs's (updates/bundle/net/sunrpc/sunrpc.ko)"),
        "{s}"
    );
}

#[test]
fn vastnfs_rpm_bundle_beside_mlnx_nfsrdma_is_a_conflict_with_a_dnf_plan() {
    let dir = "extra/vastnfs/bundle";
    let overrides = (
        "zz02-vastnfs-rpcrdma.conf",
        "override rpcrdma * extra/vastnfs/bundle/net/sunrpc/xprtrdma\noverride sunrpc * extra/vastnfs/bundle/net/sunrpc\n",
    );
    let mut modules = vastnfs_modules(EL_RUNNING, dir);
    modules.push(rpcrdma(
        EL_RUNNING,
        "distro",
        "distro",
        "extra/mlnx-nfsrdma/rpcrdma.ko",
    ));
    let f = node(EL_RUNNING, ROCKY_8, &modules, &[DIST_CONF, overrides]);
    let (judged, doc) = agrees_with_modprobe(&f);
    assert_eq!(judged, format!("{dir}/net/sunrpc/xprtrdma/rpcrdma.ko"));
    assert_eq!(status(&doc, "stack-ownership"), "warn", "{doc:#}");
    let s = check_result(&doc, "stack-ownership")["summary"].to_string();
    assert!(
        s.contains("rpcrdma is installed by NVIDIA's DOCA-OFED / MLNX_OFED and vastnfs together: depmod's search order picks extra/vastnfs/bundle/net/sunrpc/xprtrdma/rpcrdma.ko (vastnfs)"),
        "{s}"
    );
    let (provenance, doc) = doctor_says(&f);
    assert_eq!(provenance, "vastnfs");
    let plan = plan_text(&doc);
    assert!(
        plan.contains("Remove NVIDIA's DOCA-OFED / MLNX_OFED's rpcrdma (keeping vastnfs)"),
        "{plan}"
    );
    assert!(
        plan.contains("dnf remove 'kmod-mlnx-nfsrdma*' 'mlnx-nfsrdma*'"),
        "{plan}"
    );
}
