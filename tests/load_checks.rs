//! The checks that predict whether the kernel will load the modules GDS needs, on fixture
//! nodes: `rpcrdma-abi` (MOFED ib_core beside the inbox rpcrdma), `module-signature` (Secure
//! Boot on and off through the efivars bytes, signed and unsigned generated modules) and
//! `next-boot` (a second kernel without the DKMS build, GRUB and BLS menus), through `check`
//! and doctor's plan.

use nfs_gds::host::io::recorded::{record_key, RECORDED_DIR};
use serde_json::Value;

use crate::support::mok;
use crate::support::*;

const RELEASE: &str = "6.1.0-50-amd64";
const IB_SYMBOLS: [&str; 3] = ["ib_dma_virt_map_sg", "ib_alloc_pd_user", "ib_drain_qp"];

fn record(f: &Fixture, program: &str, args: &[&str], stdout: &str) {
    f.write(
        format!("{RECORDED_DIR}/{}", record_key(program, args)),
        stdout,
    );
}

fn summary(doc: &Value, id: &str) -> String {
    check_result(doc, id)["summary"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn remedy(doc: &Value, id: &str) -> String {
    check_result(doc, id)["remedy"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn doctor(f: &Fixture) -> Value {
    let out = run(f, &["doctor", "--json"]);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor --json: {e}: {}", stderr(&out)))
}

fn plan_text(doc: &Value) -> String {
    serde_json::to_string_pretty(&doc["plan"]).unwrap()
}

/// The inbox rpcrdma (built against the kernel's own ib_core CRCs) beside an ib_core at
/// `ib_core_rel` exporting with `seed`, modules.symbols naming ib_core.
fn abi_node(ib_core_rel: &str, seed: &str) -> Fixture {
    let mut f = Fixture::debian12();
    f.nvidia_fs("2.28.4", 1);
    abi_tree(f, ib_core_rel, seed)
}

/// The module tree of [`abi_node`] on `f`.
fn abi_tree(f: Fixture, ib_core_rel: &str, seed: &str) -> Fixture {
    let tree = f.tree();
    let exports: Vec<(&str, bool)> = IB_SYMBOLS.iter().map(|s| (*s, true)).collect();
    f.write(
        format!("{tree}/{ib_core_rel}"),
        build(&ModuleSpec::provider("ib_core", RELEASE, &exports).crc_seed(seed)),
    );
    f.write(
        format!("{tree}/{INBOX}.ko"),
        build(&ModuleSpec::rpcrdma(RELEASE)),
    );
    f.write(
        format!("{tree}/modules.dep"),
        format!("{ib_core_rel}:\n{INBOX}.ko: {ib_core_rel}\nkernel/net/sunrpc/sunrpc.ko:\n"),
    );
    let symbols: String = IB_SYMBOLS
        .iter()
        .map(|s| format!("alias symbol:{s} ib_core\n"))
        .collect();
    f.write(format!("{tree}/modules.symbols"), symbols);
    f
}

#[test]
fn a_mofed_ib_core_beside_the_inbox_rpcrdma_fails_before_modprobe_would() {
    let f = abi_node("updates/dkms/ib_core.ko", "mlnx-ofed-24.10");
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(status(&doc, "rpcrdma-abi"), "fail");
    let s = summary(&doc, "rpcrdma-abi");
    let wanted = symbol_crc("6.1-inbox", "ib_dma_virt_map_sg");
    let provided = symbol_crc("mlnx-ofed-24.10", "ib_dma_virt_map_sg");
    assert!(
        s.contains(&format!(
            "rpcrdma.ko wants ib_dma_virt_map_sg {wanted:#010x}; ib_core.ko (a DKMS build (updates/dkms/), updates/dkms/ib_core.ko)"
        )),
        "{s}"
    );
    assert!(s.contains(&format!("exports {provided:#010x}")), "{s}");
    assert!(s.contains("updates/dkms/ib_core.ko"), "{s}");
    assert!(s.contains("disagrees about version of symbol"), "{s}");
    assert!(s.contains("2 more import(s) disagree"), "{s}");
    assert!(
        remedy(&doc, "rpcrdma-abi").contains("install the mlnx-nfsrdma built for this MOFED"),
        "{doc:#}"
    );
    let ev = evidence(&doc, "rpcrdma-abi");
    assert!(ev.contains("compared: 0 agree, 3 disagree"), "{ev}");

    // Doctor shows the kernel's own verdict and plans the matching build.
    record(
        &f,
        "dmesg",
        &[],
        "[   12.5] rpcrdma: disagrees about version of symbol ib_dma_virt_map_sg\n[   12.5] rpcrdma: Unknown symbol ib_dma_virt_map_sg (err -22)\n",
    );
    let doc = doctor(&f);
    let ev = evidence(&doc, "rpcrdma-abi");
    assert!(
        ev.contains("kernel log line 1: [   12.5] rpcrdma: disagrees about version of symbol ib_dma_virt_map_sg"),
        "{ev}"
    );
    assert!(ev.contains("Unknown symbol"), "{ev}");
    // The kernel's own rpcrdma here has the hooks (as NVIDIA's linux-nvidia kernels build it):
    // what disagrees with it is MOFED's ib_core, and rebuilding MOFED's rpcrdma would only
    // trade the hooked in-tree module for another.
    let plan = plan_text(&doc);
    assert!(
        plan.contains("Use the kernel's own RDMA core with its hooked rpcrdma"),
        "{plan}"
    );
    assert!(
        !plan.contains("Install the mlnx-nfsrdma built for this MOFED"),
        "{plan}"
    );
}

#[test]
fn the_inbox_ib_core_agrees_and_a_kernel_without_modversions_is_not_asked() {
    let f = abi_node("kernel/drivers/infiniband/core/ib_core.ko", "6.1-inbox");
    let (code, doc) = check_json(&f);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(status(&doc, "rpcrdma-abi"), "pass");
    assert!(
        summary(&doc, "rpcrdma-abi").starts_with("all 3 imports provided by modules agree"),
        "{doc:#}"
    );

    let f = abi_node("updates/dkms/ib_core.ko", "mlnx-ofed-24.10");
    f.write(
        format!("boot/config-{RELEASE}"),
        "CONFIG_MODULES=y\n# CONFIG_MODVERSIONS is not set\n",
    );
    let (_, doc) = check_json(&f);
    // No CRC is compared (the MOFED ib_core's differ): what the kernel checks instead is the
    // vermagic, of which this two-line configuration gives the release only.
    assert_eq!(status(&doc, "rpcrdma-abi"), "unknown", "{doc:#}");
    let s = summary(&doc, "rpcrdma-abi");
    assert!(!s.contains("disagrees about version"), "{s}");
    assert!(
        s.contains(&format!("its vermagic names the running release {RELEASE}, but the rest of this kernel's vermagic is not known")),
        "{s}"
    );
    let ev = serde_json::to_string(&check_result(&doc, "rpcrdma-abi")["evidence"]).unwrap();
    assert!(ev.contains("this kernel carries no symbol CRCs"), "{ev}");
}

#[test]
fn a_loaded_rpcrdma_turns_the_refusal_into_a_warning_for_the_next_load() {
    let mut f = abi_node("updates/dkms/ib_core.ko", "mlnx-ofed-24.10");
    f.load_rpcrdma(&Loaded::default(), KallsymsHooks::Lower);
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "rpcrdma-abi"), "warn", "{doc:#}");
    assert!(summary(&doc, "rpcrdma-abi").contains("the next load"));
}

const P2P: [&str; 3] = [
    "nvidia_p2p_get_pages_persistent",
    "nvidia_p2p_dma_map_pages",
    "nvidia_p2p_put_pages_persistent",
];

/// The Debian node above with the GPU driver's `nvidia.ko` exporting the peer-to-peer interface
/// as `driver` builds it, and an nvidia-fs built against the driver `built_against`, loaded or not.
fn nvidia_fs_node(driver: &str, built_against: &str, loaded: bool) -> Fixture {
    let mut f = Fixture::debian12();
    if loaded {
        f.nvidia_fs("2.28.4", 1);
    }
    let f = abi_tree(f, "kernel/drivers/infiniband/core/ib_core.ko", "6.1-inbox");
    f.write("sys/module/nvidia/version", "580.82.07\n");
    f.write(
        "proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.82.07  Release Build\n",
    );
    let tree = f.tree();
    let exports: Vec<(&str, bool)> = P2P.iter().map(|s| (*s, false)).collect();
    f.write(
        format!("{tree}/updates/dkms/nvidia.ko"),
        build(&ModuleSpec::provider("nvidia", RELEASE, &exports).crc_seed(driver)),
    );
    let imports: Vec<(&str, u32)> = P2P
        .iter()
        .map(|s| (*s, symbol_crc(built_against, s)))
        .collect();
    let nvfs = ModuleSpec {
        name: "nvidia_fs".into(),
        hooks: None,
        depends: vec!["nvidia".into()],
        other_exports: Vec::new(),
        ..ModuleSpec::rpcrdma(RELEASE)
    }
    .imports(&imports);
    f.write(format!("{tree}/updates/dkms/nvidia-fs.ko"), build(&nvfs));
    let dep = std::fs::read_to_string(f.path(format!("{tree}/modules.dep"))).unwrap();
    f.write(
        format!("{tree}/modules.dep"),
        format!(
            "{dep}updates/dkms/nvidia.ko:\nupdates/dkms/nvidia-fs.ko: updates/dkms/nvidia.ko\n"
        ),
    );
    let symbols = std::fs::read_to_string(f.path(format!("{tree}/modules.symbols"))).unwrap();
    let p2p: String = P2P
        .iter()
        .map(|s| format!("alias symbol:{s} nvidia\n"))
        .collect();
    f.write(format!("{tree}/modules.symbols"), format!("{symbols}{p2p}"));
    f
}

#[test]
fn an_nvidia_fs_built_against_the_previous_gpu_driver_is_refused_before_its_load() {
    let f = nvidia_fs_node("r580.82.05", "r570.86.15", false);
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(status(&doc, "nvidia-fs-abi"), "fail", "{doc:#}");
    let s = summary(&doc, "nvidia-fs-abi");
    let sym = P2P[0];
    let wanted = symbol_crc("r570.86.15", sym);
    let provided = symbol_crc("r580.82.05", sym);
    assert!(
        s.contains(&format!(
            "nvidia-fs.ko wants {sym} {wanted:#010x}; nvidia.ko"
        )),
        "{s}"
    );
    assert!(s.contains(&format!("exports {provided:#010x}")), "{s}");
    assert!(
        s.contains("nvidia_fs: disagrees about version of symbol"),
        "{s}"
    );
    assert!(s.contains("2 more import(s) disagree"), "{s}");
    assert!(
        remedy(&doc, "nvidia-fs-abi").contains("R580.82.05"),
        "{doc:#}"
    );
    // rpcrdma's own comparison is untouched by nvidia-fs's.
    assert_eq!(status(&doc, "rpcrdma-abi"), "pass", "{doc:#}");

    f.write("etc/os-release", "ID=debian\nVERSION_ID=\"12\"\n");
    let plan = plan_text(&doctor(&f));
    assert!(
        plan.contains("Rebuild nvidia-fs against the installed GPU driver"),
        "{plan}"
    );
    assert!(
        plan.contains("apt-get install --reinstall nvidia-fs-dkms"),
        "{plan}"
    );
}

#[test]
fn an_nvidia_fs_rebuilt_for_the_installed_driver_passes_and_a_loaded_one_warns() {
    let f = nvidia_fs_node("r580.82.05", "r580.82.05", true);
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "nvidia-fs-abi"), "pass", "{doc:#}");
    assert!(
        summary(&doc, "nvidia-fs-abi").contains("all 3 imports provided by modules agree"),
        "{doc:#}"
    );

    let f = nvidia_fs_node("r580.82.05", "r570.86.15", true);
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "nvidia-fs-abi"), "warn", "{doc:#}");
    assert!(
        summary(&doc, "nvidia-fs-abi").contains("next load"),
        "{doc:#}"
    );
}

/// A node whose signature enforcement the firmware decides: no live `sig_enforce` or lockdown
/// file, a Debian configuration that locks down under Secure Boot, and the EFI variable.
fn secure_boot_node(on: bool, rpcrdma: &ModuleSpec) -> Fixture {
    let f = node_with(rpcrdma, DKMS, Packing::XzCrc32);
    f.secure_boot(on);
    f
}

fn dkms_signed() -> Vec<u8> {
    signature_trailer(&pkcs7_signed_data(
        "DKMS module signing key",
        &[0x5e, 0xe1, 0x13, 0x31],
        "2.16.840.1.101.3.4.2.1",
        &[0xa5; 256],
    ))
}

#[test]
fn secure_boot_on_refuses_an_unsigned_dkms_rpcrdma_and_doctor_plans_the_mok() {
    let f = secure_boot_node(true, &ModuleSpec::rpcrdma(RELEASE));
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(status(&doc, "module-signature"), "fail");
    let s = summary(&doc, "module-signature");
    assert!(s.contains("rpcrdma.ko.xz is not signed"), "{s}");
    assert!(s.contains("Key was rejected by service"), "{s}");
    let ev = evidence(&doc, "module-signature");
    assert!(ev.contains("enforcement: enforced:"), "{ev}");
    assert!(
        ev.contains("Secure Boot is on (/sys/firmware/efi/efivars/SecureBoot-"),
        "{ev}"
    );
    assert!(ev.contains("CONFIG_LOCK_DOWN_IN_EFI_SECURE_BOOT=y"), "{ev}");
    assert!(ev.contains("rpcrdma file:"), "{ev}");
    assert!(remedy(&doc, "module-signature").contains("mokutil --import /var/lib/dkms/mok.pub"));

    let doc = doctor(&f);
    let plan = plan_text(&doc);
    assert!(
        plan.contains("Sign the GDS modules with an enrolled Machine Owner Key"),
        "{plan}"
    );
    assert!(
        plan.contains("mokutil --import /var/lib/dkms/mok.pub"),
        "{plan}"
    );
    assert!(plan.contains("dkms generate_mok"), "{plan}");
}

#[test]
fn a_signed_rpcrdma_passes_under_secure_boot_and_names_its_signer() {
    let spec = ModuleSpec::rpcrdma(RELEASE).signed_with(dkms_signed());
    let f = secure_boot_node(true, &spec);
    let (code, doc) = check_json(&f);
    assert_eq!(status(&doc, "module-signature"), "pass", "{doc:#}");
    assert_eq!(code, 0, "{doc:#}");
    let s = summary(&doc, "module-signature");
    assert!(
        s.contains("rpcrdma.ko.xz is signed by DKMS module signing key (key 5E:E1:13:31)"),
        "{s}"
    );
    assert!(evidence(&doc, "module-signature").contains("digest sha256"));
}

#[test]
fn a_dkms_key_changed_since_its_enrolment_is_refused_before_the_reboot_until_enrolled() {
    // The rpcrdma is signed by this node's DKMS key (serial 5E:E1:13:31); the MOK list still holds
    // the key of the same name from before the node was reimaged.
    let spec = ModuleSpec::rpcrdma(RELEASE).signed_with(dkms_signed());
    let f = secure_boot_node(true, &spec);
    let old = mok::certificate("DKMS module signing key", &[0x01, 0x02, 0x03]);
    let new = mok::certificate("DKMS module signing key", &[0x5e, 0xe1, 0x13, 0x31]);
    let canonical = mok::certificate("Canonical Ltd. Master Certificate Authority", &[0x42]);
    f.write(
        format!("sys/firmware/efi/efivars/MokListRT-{}", mok::SHIM_GUID),
        mok::efivar(&[canonical.clone(), old.clone()]),
    );
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(status(&doc, "module-signature"), "fail", "{doc:#}");
    let s = summary(&doc, "module-signature");
    assert!(
        s.contains("signed by DKMS module signing key (key 5E:E1:13:31), but the enrolled key of that name has serial 01:02:03"),
        "{s}"
    );
    assert!(s.contains("Key was rejected by service"), "{s}");
    let ev = evidence(&doc, "module-signature");
    assert!(
        ev.contains("MokListRT-605dab50-e046-4300-abb6-3dd810dd8b23: Canonical Ltd. Master Certificate Authority (serial 42), DKMS module signing key (serial 01:02:03)"),
        "{ev}"
    );
    let plan = plan_text(&doctor(&f));
    assert!(
        plan.contains("mokutil --import /var/lib/dkms/mok.pub"),
        "{plan}"
    );

    // `mokutil --import` queued the new key: the next boot's MOK manager completes it.
    f.write(
        format!("sys/firmware/efi/efivars/MokNew-{}", mok::SHIM_GUID),
        mok::efivar(std::slice::from_ref(&new)),
    );
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "module-signature"), "warn", "{doc:#}");
    assert!(summary(&doc, "module-signature").contains("enrolment is pending"));

    // Enrolled: the kernel's mirror of the list (preferred over efivars) holds it.
    f.remove(format!(
        "sys/firmware/efi/efivars/MokNew-{}",
        mok::SHIM_GUID
    ));
    f.write(
        "sys/firmware/efi/mok-variables/MokListRT",
        mok::signature_lists(&[canonical, old, new]),
    );
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "module-signature"), "pass", "{doc:#}");
    assert!(
        summary(&doc, "module-signature")
            .contains("enrolled in /sys/firmware/efi/mok-variables/MokListRT"),
        "{doc:#}"
    );
}

#[test]
fn a_key_the_keyrings_do_not_name_fails_and_a_damaged_mok_list_is_named() {
    let spec = ModuleSpec::rpcrdma(RELEASE).signed_with(dkms_signed());
    let f = secure_boot_node(true, &spec);
    f.write(
        "proc/keys",
        "1e6ea5ee I------     1 perm 1f030000     0     0 asymmetri Debian Secure Boot CA: 6ccece7e4c6c0d1f6149f3dd27dfcc5cbb419ea1: X509.rsa bb419ea1 []\n",
    );
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "module-signature"), "fail", "{doc:#}");
    assert!(
        summary(&doc, "module-signature").contains("a key this node has not enrolled"),
        "{doc:#}"
    );
    f.write("sys/firmware/efi/mok-variables/MokListRT", [0u8; 12]);
    let (_, doc) = check_json(&f);
    assert!(
        evidence(&doc, "module-signature").contains(
            "the MOK list could not be read: /sys/firmware/efi/mok-variables/MokListRT: a signature list header is truncated"
        ),
        "{doc:#}"
    );
}

#[test]
fn a_logged_refusal_of_an_unsigned_build_says_nothing_against_the_signed_file_now_there() {
    // The refused unsigned build was replaced by a signed one; the kernel's line names no module.
    let spec = ModuleSpec::rpcrdma(RELEASE).signed_with(dkms_signed());
    let f = secure_boot_node(true, &spec);
    record(
        &f,
        "dmesg",
        &[],
        "[   40.1] Loading of unsigned module is rejected\n",
    );
    let doc = doctor(&f);
    assert_eq!(status(&doc, "module-signature"), "pass", "{doc:#}");
    assert!(evidence(&doc, "module-signature").contains("Loading of unsigned module is rejected"));

    // A key the kernel does not know is about a signed file: that one fails.
    record(
        &f,
        "dmesg",
        &[],
        "[   40.1] Loading of module with unavailable key is rejected\n",
    );
    let doc = doctor(&f);
    assert_eq!(status(&doc, "module-signature"), "fail", "{doc:#}");
    assert!(summary(&doc, "module-signature").contains("that key is not enrolled"));
}

#[test]
fn secure_boot_off_accepts_an_unsigned_module_and_says_why() {
    let f = secure_boot_node(false, &ModuleSpec::rpcrdma(RELEASE));
    let (code, doc) = check_json(&f);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(status(&doc, "module-signature"), "pass");
    assert!(summary(&doc, "module-signature").contains("not signed, which this kernel accepts"));
    assert!(evidence(&doc, "module-signature").contains("Secure Boot is off"));
}

#[test]
fn an_unsigned_nvidia_fs_is_judged_too_and_unknown_enforcement_warns() {
    let f = secure_boot_node(
        true,
        &ModuleSpec::rpcrdma(RELEASE).signed_with(dkms_signed()),
    );
    let tree = f.tree();
    let nvfs = ModuleSpec::provider("nvidia_fs", RELEASE, &[("nvfs_io_start", true)]);
    f.write(format!("{tree}/updates/dkms/nvidia-fs.ko"), build(&nvfs));
    let dep = std::fs::read_to_string(f.path(format!("{tree}/modules.dep"))).unwrap();
    f.write(
        format!("{tree}/modules.dep"),
        format!("{dep}updates/dkms/nvidia-fs.ko:\n"),
    );
    let (_, doc) = check_json(&f);
    // nvidia_fs is loaded (this node has it), so only its next load would be refused.
    assert_eq!(status(&doc, "module-signature"), "warn", "{doc:#}");
    assert!(summary(&doc, "module-signature").contains("nvidia-fs.ko is not signed"));

    // No evidence at all about enforcement: an unsigned module is a warning, not a pass.
    let f = node_with(&ModuleSpec::rpcrdma(RELEASE), DKMS, Packing::Plain);
    f.remove("sys/module/module/parameters/sig_enforce");
    f.remove("sys/kernel/security/lockdown");
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "module-signature"), "warn", "{doc:#}");
    assert!(summary(&doc, "module-signature").contains("not known"));
}

/// [`two_kernels`] with nvidia_fs loaded and boot images that say nothing of the GPL-only rule.
fn node() -> Fixture {
    let mut f = two_kernels();
    f.nvidia_fs("2.28.4", 1);
    f.write("etc/os-release", "ID=debian\nVERSION_ID=\"12\"\n");
    f.boot_image(b"");
    f.write(format!("boot/vmlinuz-{NEXT}"), b"");
    f
}

fn grub(f: &Fixture, saved: &str) {
    grub_menu(f, &[RELEASE, NEXT], saved);
}

#[test]
fn grub_booting_a_kernel_without_the_dkms_build_warns_with_the_dkms_install() {
    let f = node();
    grub(&f, NEXT);
    let (code, doc) = check_json(&f);
    // Advisory: the node is ready now, the next boot is not.
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(status(&doc, "next-boot"), "fail", "{doc:#}");
    assert_eq!(check_result(&doc, "next-boot")["level"], "warn");
    let s = summary(&doc, "next-boot");
    assert!(
        s.starts_with(&format!("after reboot into {NEXT}, modprobe loads")),
        "{s}"
    );
    assert!(
        s.contains("the kernel's own module (kernel/)), which has no nvfs hooks"),
        "{s}"
    );
    assert!(
        s.contains(&format!(
            "dkms status shows mlnx-nfsrdma ({MOFED}) not built for it (built for: {RELEASE})"
        )),
        "{s}"
    );
    let cmd = format!("dkms install -m mlnx-nfsrdma -v {MOFED} -k {NEXT}");
    assert!(remedy(&doc, "next-boot").contains(&cmd), "{doc:#}");
    let ev = evidence(&doc, "next-boot");
    assert!(ev.contains("saved_entry=gnulinux-6.12.117"), "{ev}");
    assert!(
        ev.contains("rpcrdma_register_nvfs_dma_ops: missing"),
        "{ev}"
    );

    let doc = doctor(&f);
    let plan = plan_text(&doc);
    assert!(
        plan.contains(&format!("Build mlnx-nfsrdma for {NEXT} before rebooting")),
        "{plan}"
    );
    assert!(plan.contains(&cmd), "{plan}");
    assert!(
        plan.contains(&format!("update-initramfs -u -k {NEXT}")),
        "{plan}"
    );
    let kernels: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["topic"] == "installed-kernel")
        .map(|f| f["text"].as_str().unwrap())
        .collect();
    assert_eq!(kernels.len(), 2, "{kernels:?}");
    assert!(
        kernels[0].starts_with(&format!("{RELEASE} (running)")),
        "{kernels:?}"
    );
    assert!(
        kernels[1].starts_with(&format!("{NEXT} (the next boot): modprobe loads")),
        "{kernels:?}"
    );
    assert!(kernels[1].contains("no hooks"), "{kernels:?}");
}

#[test]
fn grub_booting_the_running_kernel_again_passes_and_lists_the_other() {
    let f = node();
    grub(&f, RELEASE);
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "next-boot"), "pass", "{doc:#}");
    assert!(summary(&doc, "next-boot").contains(&format!("running kernel {RELEASE} again")));
    assert!(evidence(&doc, "next-boot").contains(&format!("installed {NEXT}: modprobe loads")));
}

#[test]
fn bls_entries_choose_the_next_kernel_and_a_hooked_build_there_passes() {
    let f = node();
    let next_tree = format!("lib/modules/{NEXT}");
    f.write(
        format!("{next_tree}/updates/dkms/rpcrdma.ko"),
        build(&ModuleSpec::rpcrdma(NEXT)),
    );
    f.write(
        format!("{next_tree}/modules.dep"),
        "updates/dkms/rpcrdma.ko: kernel/net/sunrpc/sunrpc.ko\nkernel/net/sunrpc/sunrpc.ko:\n",
    );
    f.write(
        "boot/grub2/grub.cfg",
        "set default=\"${saved_entry}\"\ninsmod blscfg\nblscfg\n",
    );
    for rel in [RELEASE, NEXT] {
        f.write(
            format!("boot/loader/entries/1b2c-{rel}.conf"),
            format!("title Linux {rel}\nversion {rel}\nlinux /vmlinuz-{rel}\noptions root=UUID=1b2c ro\n"),
        );
    }
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "next-boot"), "pass", "{doc:#}");
    let s = summary(&doc, "next-boot");
    assert!(s.contains(&format!("after reboot into {NEXT}")), "{s}");
    assert!(s.contains("which has both hooks exported GPL"), "{s}");
    assert!(evidence(&doc, "next-boot").contains("BLS entry"), "{doc:#}");
}
