//! Debian's 7.x kernels, which carry no symbol CRCs: `rpcrdma-abi` judges Debian's own
//! `rpcrdma.ko` of 7.3.4 and 7.2.13 (shrunk, `tests/fixtures/kernels/README.md`) on a 7.3.4 node
//! with that kernel's real configuration, by the vermagic and the BTF the kernel checks instead,
//! and `inspect-module` says what such a module carries.

use std::io::Read;

use crate::support::*;

const RELEASE: &str = "7.3.4+deb13-amd64";

fn fixture_file(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/kernels/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn unxz(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    liblzma::read::XzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("xz");
    out
}

/// A BTF blob with `types` records and `str_len` bytes of names: what the prediction reads of
/// `/sys/kernel/btf/vmlinux` (the real one is 5 MB; its two numbers are in the README).
fn vmlinux_btf(types: u32, str_len: u32) -> Vec<u8> {
    let type_len = types * 12;
    let mut b = vec![0x9f, 0xeb, 1, 0];
    for w in [24u32, 0, type_len, type_len, str_len] {
        b.extend_from_slice(&w.to_le_bytes());
    }
    for _ in 0..types {
        b.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0]); // PTR to void
    }
    b.resize(b.len() + str_len as usize, 0);
    b
}

/// A 7.3.4 node with Debian's configuration, the kernel's BTF of `base` dimensions (none:
/// not there), and `module` (a fixture file name) as its in-tree rpcrdma.
fn node(module: &str, base: Option<(u32, u32)>) -> Fixture {
    node_with_btf(
        module,
        base.map(|(types, str_len)| vmlinux_btf(types, str_len)),
    )
}

/// The same with `btf` as the kernel's BTF.
fn node_with_btf(module: &str, btf: Option<Vec<u8>>) -> Fixture {
    let f = Fixture::new(RELEASE);
    f.write(
        format!("{}/config", f.tree()),
        unxz(&fixture_file(&format!("config-{RELEASE}.xz"))),
    );
    if let Some(btf) = btf {
        f.write("sys/kernel/btf/vmlinux", btf);
    }
    f.install_rpcrdma(INBOX, ".ko.xz", &fixture_file(module));
    f
}

const BASE_73: (u32, u32) = (127_424, 2_317_542);
const BASE_72: (u32, u32) = (124_639, 2_273_004);

fn abi(f: &Fixture) -> (String, String) {
    let (_, doc) = check_json(f);
    let r = check_result(&doc, "rpcrdma-abi");
    (
        status(&doc, "rpcrdma-abi"),
        r["summary"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn the_kernels_own_rpcrdma_passes_by_vermagic_and_btf() {
    let (status, summary) = abi(&node("rpcrdma-7.3.4+deb13-amd64.ko.xz", Some(BASE_73)));
    assert_eq!(status, "pass", "{summary}");
    assert!(
        summary.contains("vermagic `7.3.4+deb13-amd64 SMP preempt mod_unload` is this kernel's"),
        "{summary}"
    );
    assert!(summary.contains("2317542 bytes of names"), "{summary}");
}

#[test]
fn a_module_without_btf_loads_on_its_vermagic_alone() {
    let (status, summary) = abi(&node(
        "rpcrdma-7.3.4+deb13-amd64-nobtf.ko.xz",
        Some(BASE_73),
    ));
    assert_eq!(status, "pass", "{summary}");
    assert!(
        summary.contains("carries no BTF (built where no vmlinux was at hand"),
        "{summary}"
    );
}

#[test]
fn another_builds_module_is_refused_for_what_the_kernel_checks() {
    let (status, summary) = abi(&node("rpcrdma-7.2.13+deb14-amd64.ko.xz", Some(BASE_73)));
    assert_eq!(status, "fail", "{summary}");
    assert!(
        summary.contains("version magic '7.2.13+deb14-amd64 SMP preempt mod_unload' should be '7.3.4+deb13-amd64 SMP preempt mod_unload'"),
        "{summary}"
    );
    // The same release, built against a smaller kernel BTF (7.2.13's dimensions).
    let (status, summary) = abi(&node("rpcrdma-7.3.4+deb13-amd64.ko.xz", Some(BASE_72)));
    assert_eq!(status, "fail", "{summary}");
    assert!(
        summary.contains("failed to validate module [rpcrdma] BTF"),
        "{summary}"
    );
}

/// An out-of-tree build by Debian 7.3.4's own kbuild (what DKMS makes there): its BTF has a
/// distilled base and the 32-byte header of libbpf's writer. The 7.3.4 kernel loaded both
/// builds in the VM suite, relocating their distilled bases onto its own types by name; the
/// prediction repeats that relocation against the types of 7.3.4's real BTF that they name.
#[test]
fn a_dkms_build_with_a_distilled_base_passes_by_its_relocation() {
    let dir = tempfile::tempdir().unwrap();
    let kernel_types = unxz(&fixture_file(&format!("vmlinux-{RELEASE}-reloc.btf.xz")));
    for (name, types) in [
        ("rpcrdma-7.3.4+deb13-amd64-dkms.ko.xz", 689),
        ("rpcrdma-7.3.4+deb13-amd64-dkms-612btf.ko.xz", 623),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, fixture_file(name)).unwrap();
        let text = inspect(&p);
        assert!(
            text.contains(
                "distilled base (.BTF.base: the kernel relocates it onto its own types by name)"
            ) && !text.contains("unreadable"),
            "{name}: {text}"
        );
        let (status, summary) = abi(&node_with_btf(name, Some(kernel_types.clone())));
        assert_eq!(status, "pass", "{name}: {summary}");
        assert!(
            summary.contains(&format!("each of its {types} types maps by name")),
            "{name}: {summary}"
        );
    }
    // Against 6.12.117's types, 7.3.4's distilled base names a struct that kernel lacks.
    let older = unxz(&fixture_file("vmlinux-6.12.117+deb13-amd64-reloc.btf.xz"));
    let (status, summary) = abi(&node_with_btf(
        "rpcrdma-7.3.4+deb13-amd64-dkms.ko.xz",
        Some(older),
    ));
    assert_eq!(status, "fail", "{summary}");
    assert!(
        summary.contains("`distilled base BTF type 'bio_crypt_ctx' [13] is not mapped to base BTF id`, then `failed to validate module [rpcrdma] BTF: -22`"),
        "{summary}"
    );
}

#[test]
fn without_the_kernels_btf_nothing_decides() {
    let (status, summary) = abi(&node("rpcrdma-7.3.4+deb13-amd64.ko.xz", None));
    assert_eq!(status, "unknown", "{summary}");
    assert!(summary.contains("/sys/kernel/btf/vmlinux"), "{summary}");
}

fn inspect(path: &std::path::Path) -> String {
    let f = Fixture::new(RELEASE);
    let out = run(&f, &["inspect-module", &path.display().to_string()]);
    stdout(&out)
}

#[test]
fn inspect_module_says_a_kernel_build_without_crcs_and_the_frwr_generation() {
    let dir = tempfile::tempdir().unwrap();
    let put = |name: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, fixture_file(name)).unwrap();
        p
    };
    let text = inspect(&put("rpcrdma-7.3.4+deb13-amd64.ko.xz"));
    assert!(
        text.contains("symbol CRCs:  none: built for a kernel without CONFIG_MODVERSIONS"),
        "{text}"
    );
    assert!(
        text.contains("built against a kernel BTF of 2317542 bytes of names"),
        "{text}"
    );
    assert!(
        text.contains(
            "frwr_map:     rpcrdma_xdr_cursor (frwr_map of 7.2 and later) (from its BTF)"
        ),
        "{text}"
    );
    let text = inspect(&put("rpcrdma-7.2.13+deb14-amd64.ko.xz"));
    assert!(text.contains("frwr_map:     rpcrdma_xdr_cursor"), "{text}");
    let text = inspect(&put("rpcrdma-6.12.117+deb13-amd64.ko.xz"));
    assert!(
        text.contains("symbol CRCs:  199 imports versioned"),
        "{text}"
    );
    assert!(
        text.contains("frwr_map:     rpcrdma_mr_seg (frwr_map of 7.1 and before) (from its BTF)"),
        "{text}"
    );
    let text = inspect(&put("rpcrdma-7.3.4+deb13-amd64-nobtf.ko.xz"));
    assert!(
        text.contains(
            "BTF:          none (built where no vmlinux was at hand, so kbuild made none"
        ),
        "{text}"
    );
    assert!(
        text.contains("frwr_map:     unknown (neither its BTF nor its symbols tell)"),
        "{text}"
    );
}

#[test]
fn without_btf_the_symbol_table_can_still_tell_the_segment_generation() {
    let spec = ModuleSpec {
        other_exports: vec![("rpcrdma_convert_iovs".into(), true)],
        ..ModuleSpec::rpcrdma("6.12.117+deb13-amd64")
    };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rpcrdma.ko");
    std::fs::write(&p, build(&spec)).unwrap();
    let text = inspect(&p);
    assert!(
        text.contains("frwr_map:     rpcrdma_mr_seg (frwr_map of 7.1 and before) (from its symbols: rpcrdma_convert_iovs)"),
        "{text}"
    );
    let plain = dir.path().join("plain.ko");
    std::fs::write(&plain, build(&ModuleSpec::rpcrdma("6.12.117+deb13-amd64"))).unwrap();
    assert!(inspect(&plain).contains("frwr_map:     unknown"));
}

/// A Debian 12 node with its hooked DKMS rpcrdma, rebooting into Debian's 7.3.4 whose only
/// rpcrdma is its own (cursor generation, no hooks).
fn rebooting_into_73() -> Fixture {
    let mut f = Fixture::debian12();
    let running = f.release.clone();
    f.install_rpcrdma(DKMS, ".ko", &build(&ModuleSpec::rpcrdma(&running)));
    f.nvidia_fs("2.28.4", 1);
    f.write("etc/os-release", "ID=debian\nVERSION_ID=\"12\"\n");
    let tree = format!("lib/modules/{RELEASE}");
    f.write(
        format!("{tree}/{INBOX}.ko.xz"),
        fixture_file("rpcrdma-7.3.4+deb13-amd64.ko.xz"),
    );
    f.write(
        format!("{tree}/modules.dep"),
        format!("{INBOX}.ko.xz: kernel/net/sunrpc/sunrpc.ko\nkernel/net/sunrpc/sunrpc.ko:\n"),
    );
    f.boot_image(b"");
    f.write(format!("boot/vmlinuz-{RELEASE}"), b"");
    grub_menu(&f, &[running.as_str(), RELEASE], RELEASE);
    f
}

#[test]
fn doctor_names_an_unported_hook_patch_for_a_cursor_generation_next_boot() {
    let f = rebooting_into_73();
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "next-boot"), "fail", "{doc:#}");
    let ev = serde_json::to_string(&check_result(&doc, "next-boot")["evidence"]).unwrap();
    assert!(
        ev.contains("rpcrdma_xdr_cursor (frwr_map of 7.2 and later)"),
        "{ev}"
    );

    let out = run(&f, &["doctor", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("doctor --json");
    let plan = serde_json::to_string(&doc["plan"]).unwrap();
    assert!(
        plan.contains("the likely cause is a hook patch not yet re-ported to it"),
        "{plan}"
    );
    assert!(
        plan.contains("whether its hooked rpcrdma supports 7.3.4+deb13-amd64"),
        "{plan}"
    );
}

#[test]
fn doctor_explains_what_replaced_the_crc_refusal() {
    let f = node("rpcrdma-7.3.4+deb13-amd64.ko.xz", Some(BASE_73));
    let out = run(&f, &["doctor", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("doctor --json");
    let text: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["topic"] == "symbol-crcs")
        .map(|f| f["text"].as_str().unwrap())
        .collect();
    assert_eq!(text.len(), 1, "{doc:#}");
    for words in [
        "this kernel checks no symbol CRCs (CONFIG_MODVERSIONS is not set in /lib/modules/7.3.4+deb13-amd64/config)",
        "no longer fails with `disagrees about version of symbol`",
        "failed to validate module [rpcrdma] BTF",
        "loads on its vermagic alone",
        "a distilled base (an out-of-tree build on Debian 13, DKMS's included) is relocated onto the kernel's types by name",
    ] {
        assert!(text[0].contains(words), "{words}: {}", text[0]);
    }
    // A kernel with CRCs gets no such finding.
    let out = run(&Fixture::debian12(), &["doctor", "--json"]);
    assert!(!stdout(&out).contains("symbol-crcs"));
}
