//! Shared helpers of the integration tests: module generation ([`module_gen`]), compression the
//! way distributions do it ([`pack`]), fixture root trees ([`fixture`]), enrolled keys
//! ([`mok`]) and running the real
//! binary against them.

#![allow(dead_code)] // each test module uses a different part

pub mod fake_nri;
pub mod fixture;
pub mod generated;
pub mod json_schema;
pub mod kmod_index;
pub mod module_gen;
pub mod mok;
pub mod mount_table;
pub mod pack;
pub mod tree;
pub mod two_kernels;

use std::process::Output;

use serde_json::Value;

pub use fixture::{Fixture, KallsymsHooks, Loaded, DKMS, INBOX, RPM};
pub use module_gen::{
    build, build_id_of, hex, pkcs7_signed_data, signature_trailer, symbol_crc, CrcLayout,
    HookExport, ImportTables, Layout, ModuleSpec, HOOKS,
};
pub use pack::{pack, Packing};
pub use tree::Tree;
pub use two_kernels::{grub_menu, two_kernels, MOFED, NEXT};

/// The `nfs-gds` binary, with no `NFS_GDS_*` variables inherited from the caller's environment
/// and colour off.
pub fn nfs_gds() -> assert_cmd::Command {
    let mut cmd = assert_cmd::cargo::cargo_bin_cmd!("nfs-gds");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("NFS_GDS_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("NO_COLOR", "1");
    cmd
}

/// `insta::assert_snapshot!`, under the one bless switch: with `NFS_GDS_BLESS=1` it writes the
/// snapshot ([`generated::insta_follows_bless`]). Every snapshot assertion goes through it.
macro_rules! assert_snapshot {
    ($($arg:tt)*) => {{
        $crate::support::generated::insta_follows_bless();
        insta::assert_snapshot!($($arg)*);
    }};
}
pub(crate) use assert_snapshot;

/// `nfs-gds --root <fixture> ARGS…`, run to completion.
pub fn run(f: &Fixture, args: &[&str]) -> Output {
    nfs_gds()
        .arg("--root")
        .arg(f.root())
        .args(args)
        .output()
        .expect("nfs-gds runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `doctor --json` run on an unpacked support bundle, as support replays one.
pub fn replayed_doctor(bundle: &std::path::Path) -> Value {
    let replay = nfs_gds()
        .arg("--root")
        .arg(bundle)
        .args(["doctor", "--json"])
        .output()
        .expect("nfs-gds runs");
    serde_json::from_slice(&replay.stdout)
        .unwrap_or_else(|e| panic!("no JSON from the replay ({e}): {}", stderr(&replay)))
}

/// `check --json`: the exit code and the parsed document.
pub fn check_json(f: &Fixture) -> (i32, Value) {
    let out = run(f, &["check", "--json"]);
    let code = out.status.code().expect("exited normally");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "check --json printed no JSON ({e}); stdout: {} stderr: {}",
            stdout(&out),
            stderr(&out)
        )
    });
    (code, doc)
}

/// `check --json` without the facts cache, in a child whose data segment (`ulimit -d`,
/// RLIMIT_DATA: the heap and every private writable mapping) is limited to `kib` KiB: an input
/// read whole instead of streamed fails to allocate. The limit is the child's own, so tests
/// running beside it cannot move the outcome. The parsed document.
pub fn check_json_within_data_limit(f: &Fixture, kib: u32) -> Value {
    let out = std::process::Command::new("sh")
        .args(["-c", &format!("ulimit -d {kib} && exec \"$0\" \"$@\"")])
        .arg(assert_cmd::cargo::cargo_bin!("nfs-gds"))
        .env("NFS_GDS_NO_CACHE", "1")
        .arg("--root")
        .arg(f.root())
        .args(["check", "--json"])
        .output()
        .expect("nfs-gds runs");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}), exit {:?}: {}", out.status, stderr(&out)))
}

/// The result object of check `id` in a report.
pub fn check_result<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["checks"]
        .as_array()
        .expect("checks is an array")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id} in {doc:#}"))
}

pub fn status(doc: &Value, id: &str) -> String {
    check_result(doc, id)["status"]
        .as_str()
        .expect("status is a string")
        .to_string()
}

/// All evidence of one check as `what: seen` lines, for substring assertions.
pub fn evidence(doc: &Value, id: &str) -> String {
    check_result(doc, id)["evidence"]
        .as_array()
        .expect("evidence is an array")
        .iter()
        .map(|e| {
            format!(
                "{}: {}",
                e["what"].as_str().unwrap_or(""),
                e["seen"].as_str().unwrap_or("")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A ready node: nvidia_fs loaded with one device, and an rpcrdma file built from `spec`
/// installed at `stem` with `packing`.
pub fn node_with(spec: &ModuleSpec, stem: &str, packing: Packing) -> Fixture {
    let mut f = Fixture::new(&spec_release(spec));
    f.nvidia_fs("2.28.4", 1);
    f.install_rpcrdma(stem, packing.suffix(), &pack(&build(spec), packing));
    f
}

/// A ready node (nvidia_fs loaded, a DKMS rpcrdma with GPL hooks) whose own mount table holds
/// only its root filesystem.
pub fn ready_node() -> Fixture {
    let f = node_with(
        &ModuleSpec::rpcrdma("6.8.0-45-generic"),
        DKMS,
        Packing::Plain,
    );
    f.write(
        "proc/self/mountinfo",
        "1 0 254:0 / / rw - ext4 /dev/vda rw\n",
    );
    f
}

/// The kernel release a spec was built for (first word of its vermagic).
pub fn spec_release(spec: &ModuleSpec) -> String {
    spec.vermagic
        .split_whitespace()
        .next()
        .expect("vermagic has a release")
        .to_string()
}

/// `nfs-gds collect` of a fixture, unpacked: the temporary directory that holds it, and the
/// bundle's root inside.
pub fn collect_bundle(f: &Fixture) -> (tempfile::TempDir, std::path::PathBuf) {
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("node.tgz");
    let out = run(f, &["collect", "-o", archive.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let bundle = work.path().join("bundle");
    std::fs::create_dir(&bundle).unwrap();
    let file = std::fs::File::open(&archive).expect("archive");
    tar::Archive::new(flate2::read::GzDecoder::new(file))
        .unpack(&bundle)
        .expect("unpack");
    (work, bundle)
}
