//! The host readers behind "every installed kernel, and the one the next boot starts": fixture
//! nodes with two kernels (one without the DKMS build), GRUB and BLS next boots, Secure Boot on
//! and off through efivars bytes, lockdown and the command line, modprobe.d blacklist and
//! install lines, and the kernel log's own verdict as doctor shows it.

use nfs_gds::host::boot::dkms::{self, DkmsState, MLNX_NFSRDMA};
use nfs_gds::host::boot::installed_kernels::{self, read_installed_kernels};
use nfs_gds::host::boot::next_boot::{read_next_boot, Bootloader};
use nfs_gds::host::io::recorded::{record_key, RECORDED_DIR};
use nfs_gds::host::kernel::KernelInfo;
use nfs_gds::host::modules::gpl_rule::Enforcement;
use nfs_gds::host::modules::kernel_config::read_kernel_config;
use nfs_gds::host::modules::modprobe_config::read_modprobe_config;
use nfs_gds::host::modules::modprobe_effect::{
    explain_request, InstallKind, ModuleOutcome, TreeIndex, KERNEL_REQUEST_LEGACY,
    KERNEL_REQUEST_RDMA6,
};
use nfs_gds::host::modules::sig_enforcement::{
    judge_boot, judge_running, SignatureEvidence, CONFIG_OPTIONS,
};
use nfs_gds::host::modules::{ModuleOrigin, ModuleTree, Resolution};
use nfs_gds::host::Root;
use nfs_gds::kmod::RPCRDMA;

use crate::support::pack::{vmlinuz, ImageFormat};
use crate::support::*;

const RUNNING: &str = "6.1.0-50-amd64";

fn root(f: &Fixture) -> Root {
    Root::new(f.root())
}

/// [`two_kernels`] with images and configs for both kernels, the running one's with the GPL-only
/// rule; and a rescue image without a tree and a tree without an image, neither a kernel.
fn node() -> Fixture {
    let f = two_kernels();
    f.write(
        format!("boot/vmlinuz-{RUNNING}"),
        vmlinuz(true, ImageFormat::Gzip),
    );
    f.write(format!("boot/config-{RUNNING}"), "CONFIG_MODULE_SIG=y\n");
    f.write(
        format!("boot/vmlinuz-{NEXT}"),
        vmlinuz(false, ImageFormat::Gzip),
    );
    f.write(
        format!("boot/config-{NEXT}"),
        "CONFIG_MODULE_SIG=y\nCONFIG_LOCK_DOWN_IN_EFI_SECURE_BOOT=y\n",
    );
    f.write("boot/vmlinuz-0-rescue-0123abcd", b"MZ");
    f.write("lib/modules/5.10.0-28-amd64/modules.dep", "");
    f
}

const DEBIAN_GRUB_CFG: &str = "\
if [ \"${next_entry}\" ] ; then
   set default=\"${next_entry}\"
   set next_entry=
   save_env next_entry
else
   set default=\"${saved_entry}\"
fi
menuentry 'Debian GNU/Linux' --class debian $menuentry_id_option 'gnulinux-simple-1b2c' {
\tlinux\t/boot/vmlinuz-6.12.117+deb13-amd64 root=UUID=1b2c ro quiet
}
submenu 'Advanced options for Debian GNU/Linux' $menuentry_id_option 'gnulinux-advanced-1b2c' {
\tmenuentry 'Debian GNU/Linux, with Linux 6.12.117+deb13-amd64' $menuentry_id_option 'gnulinux-6.12.117+deb13-amd64-advanced-1b2c' {
\t\tlinux\t/boot/vmlinuz-6.12.117+deb13-amd64 root=UUID=1b2c ro quiet
\t}
\tmenuentry 'Debian GNU/Linux, with Linux 6.1.0-50-amd64' $menuentry_id_option 'gnulinux-6.1.0-50-amd64-advanced-1b2c' {
\t\tlinux\t/boot/vmlinuz-6.1.0-50-amd64 root=UUID=1b2c ro quiet
\t}
}
";

#[test]
fn every_installed_kernel_is_found_with_its_tree_and_its_own_gpl_rule() {
    let f = node();
    let r = root(&f);
    let kernels = read_installed_kernels(&r, Some(RUNNING)).unwrap();
    let releases: Vec<&str> = kernels.iter().map(|k| k.release.as_str()).collect();
    assert_eq!(releases, vec![RUNNING, NEXT]);
    assert!(kernels[0].running && !kernels[1].running);

    let running_info = KernelInfo::read(&r).unwrap();
    let origins: Vec<ModuleOrigin> = kernels
        .iter()
        .map(|k| {
            match installed_kernels::module_tree(&r, k)
                .unwrap()
                .resolve(&r, "xprtrdma")
                .unwrap()
            {
                Resolution::File { origin, exists, .. } => {
                    assert!(exists, "{}", k.release);
                    origin
                }
                other => panic!("{}: {other:?}", k.release),
            }
        })
        .collect();
    assert_eq!(
        origins,
        vec![ModuleOrigin::UpdatesDkms, ModuleOrigin::Inbox]
    );

    let rules: Vec<Enforcement> = kernels
        .iter()
        .map(|k| {
            let info = installed_kernels::kernel_info(k, &running_info);
            installed_kernels::gpl_rule(&r, k, &info).enforcement
        })
        .collect();
    assert_eq!(rules, vec![Enforcement::Enforced, Enforcement::NotEnforced]);
}

#[test]
fn dkms_tree_shows_the_second_kernel_without_the_build() {
    let f = node();
    let entries = dkms::read_dkms_tree(&root(&f)).unwrap();
    assert_eq!(
        dkms::dkms_state(&entries, MLNX_NFSRDMA, RUNNING),
        DkmsState::Installed {
            version: MOFED.into()
        }
    );
    let next = dkms::dkms_state(&entries, MLNX_NFSRDMA, NEXT);
    assert!(matches!(next, DkmsState::NotBuilt { .. }), "{next:?}");
    assert_eq!(
        next.fix(MLNX_NFSRDMA, NEXT).as_deref(),
        Some("dkms install -m mlnx-nfsrdma -v 24.10.OFED.24.10.1.1.4.1 -k 6.12.117+deb13-amd64")
    );
}

#[test]
fn grub_saved_entry_and_one_shot_next_entry() {
    let f = node();
    f.write("boot/grub/grub.cfg", DEBIAN_GRUB_CFG);
    f.write("etc/default/grub", "GRUB_DEFAULT=saved\nGRUB_TIMEOUT=5\n");
    f.write(
        "boot/grub/grubenv",
        "# GRUB Environment Block\nsaved_entry=gnulinux-advanced-1b2c>gnulinux-6.1.0-50-amd64-advanced-1b2c\n#####\n",
    );
    let r = root(&f);
    let kernels = read_installed_kernels(&r, Some(RUNNING)).unwrap();
    let nb = read_next_boot(&r, &kernels).unwrap();
    assert_eq!(nb.bootloader, Bootloader::Grub);
    assert_eq!(nb.release.as_deref(), Some(RUNNING));
    assert!(
        nb.decided_by
            .contains("saved_entry=gnulinux-advanced-1b2c>"),
        "{}",
        nb.decided_by
    );
    assert!(nb.notes.is_empty(), "{:?}", nb.notes);

    // grub-reboot into the new kernel once.
    f.write(
        "boot/grub/grubenv",
        "# GRUB Environment Block\nsaved_entry=gnulinux-advanced-1b2c>gnulinux-6.1.0-50-amd64-advanced-1b2c\nnext_entry=gnulinux-advanced-1b2c>gnulinux-6.12.117+deb13-amd64-advanced-1b2c\n",
    );
    let nb = read_next_boot(&r, &kernels).unwrap();
    assert_eq!(nb.release.as_deref(), Some(NEXT));
    assert!(nb.decided_by.contains("next_entry"), "{}", nb.decided_by);
    assert_eq!(nb.cmdline.as_deref(), Some("root=UUID=1b2c ro quiet"));

    // A stale saved entry falls back to the first entry, and a changed GRUB_DEFAULT that was
    // not applied is reported.
    f.write(
        "boot/grub/grubenv",
        "# GRUB Environment Block\nsaved_entry=gone\n",
    );
    f.write("etc/default/grub", "GRUB_DEFAULT=\"1>1\"\n");
    let nb = read_next_boot(&r, &kernels).unwrap();
    assert_eq!(nb.release.as_deref(), Some(NEXT));
    assert!(
        nb.notes.iter().any(|n| n.contains("falls back")),
        "{:?}",
        nb.notes
    );
    assert!(
        nb.notes.iter().any(|n| n.contains("update-grub")),
        "{:?}",
        nb.notes
    );
}

#[test]
fn bls_entries_with_saved_entry_as_on_rhel() {
    let f = Fixture::new("5.14.0-427.13.1.el9_4.x86_64");
    let mid = "0123abcd";
    for rel in [
        "5.14.0-427.13.1.el9_4.x86_64",
        "5.14.0-503.11.1.el9_5.x86_64",
    ] {
        f.write(format!("boot/vmlinuz-{rel}"), b"MZ");
        f.write(format!("lib/modules/{rel}/modules.dep"), "");
        f.write(
            format!("boot/loader/entries/{mid}-{rel}.conf"),
            format!("title Red Hat Enterprise Linux ({rel}) 9.4 (Plow)\nversion {rel}\nlinux /vmlinuz-{rel}\ninitrd /initramfs-{rel}.img $tuned_initrd\noptions $kernelopts $tuned_params\ngrub_users $grub_users\n"),
        );
    }
    f.write("boot/vmlinuz-0-rescue-0123abcd", b"MZ");
    f.write(
        format!("boot/loader/entries/{mid}-0-rescue.conf"),
        "title Rescue\nversion 0-rescue-0123abcd\nlinux /vmlinuz-0-rescue-0123abcd\n",
    );
    f.write(
        "boot/grub2/grub.cfg",
        "set default=\"${saved_entry}\"\nif [ x\"${feature_menuentry_id}\" = xy ]; then\n  menuentry_id_option=\"--id\"\nfi\ninsmod blscfg\nblscfg\n",
    );
    f.write(
        "boot/grub2/grubenv",
        format!("# GRUB Environment Block\nsaved_entry={mid}-5.14.0-427.13.1.el9_4.x86_64\nkernelopts=root=/dev/mapper/rhel-root ro module.sig_enforce=1\n"),
    );
    let r = root(&f);
    let kernels = read_installed_kernels(&r, Some("5.14.0-427.13.1.el9_4.x86_64")).unwrap();
    assert_eq!(
        kernels.len(),
        2,
        "the rescue image has no tree: {kernels:?}"
    );
    let nb = read_next_boot(&r, &kernels).unwrap();
    assert_eq!(nb.bootloader, Bootloader::GrubBls);
    assert_eq!(nb.release.as_deref(), Some("5.14.0-427.13.1.el9_4.x86_64"));
    assert_eq!(
        nb.cmdline.as_deref(),
        Some("root=/dev/mapper/rhel-root ro module.sig_enforce=1 $tuned_params")
    );
    assert!(
        nb.decided_by.contains("saved_entry=0123abcd-5.14.0-427"),
        "{}",
        nb.decided_by
    );

    // Without a saved entry, blscfg's first entry: the newest version.
    f.write("boot/grub2/grubenv", "# GRUB Environment Block\n");
    let nb = read_next_boot(&r, &kernels).unwrap();
    assert_eq!(nb.release.as_deref(), Some("5.14.0-503.11.1.el9_5.x86_64"));
}

fn efivar(f: &Fixture, value: u8) {
    f.write(
        "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0a9f7a9b0ae",
        [6, 0, 0, 0, value],
    );
}

#[test]
fn secure_boot_on_locks_down_the_running_and_the_next_kernel() {
    let f = node();
    efivar(&f, 1);
    f.write(
        "sys/kernel/security/lockdown",
        "none [integrity] confidentiality\n",
    );
    f.write("sys/module/module/parameters/sig_enforce", "N\n");
    f.write(
        "proc/cmdline",
        "BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-amd64 root=UUID=1b2c ro quiet\n",
    );
    let r = root(&f);
    let evidence = SignatureEvidence::read(&r).unwrap();
    let running = judge_running(
        &evidence,
        read_kernel_config(&r, RUNNING, CONFIG_OPTIONS)
            .unwrap()
            .as_ref(),
    );
    assert_eq!(running.enforcement, Enforcement::Enforced);
    assert!(
        running.evidence.contains("[integrity]"),
        "{}",
        running.evidence
    );

    let next = judge_boot(
        &evidence.secure_boot,
        Some("root=UUID=1b2c ro quiet"),
        read_kernel_config(&r, NEXT, CONFIG_OPTIONS)
            .unwrap()
            .as_ref(),
    );
    assert_eq!(next.enforcement, Enforcement::Enforced);
    assert!(
        next.evidence.contains("Secure Boot is on"),
        "{}",
        next.evidence
    );
    assert!(
        next.evidence.contains(&format!("/boot/config-{NEXT}")),
        "{}",
        next.evidence
    );
}

#[test]
fn secure_boot_off_enforces_nothing_unless_the_command_line_asks() {
    let f = node();
    efivar(&f, 0);
    f.write(
        "sys/kernel/security/lockdown",
        "[none] integrity confidentiality\n",
    );
    f.write("sys/module/module/parameters/sig_enforce", "N\n");
    f.write("proc/cmdline", "root=UUID=1b2c ro quiet\n");
    let r = root(&f);
    let evidence = SignatureEvidence::read(&r).unwrap();
    let running = judge_running(
        &evidence,
        read_kernel_config(&r, RUNNING, CONFIG_OPTIONS)
            .unwrap()
            .as_ref(),
    );
    assert_eq!(running.enforcement, Enforcement::NotEnforced);
    let config = read_kernel_config(&r, NEXT, CONFIG_OPTIONS).unwrap();
    let next = judge_boot(&evidence.secure_boot, Some("ro quiet"), config.as_ref());
    assert_eq!(
        next.enforcement,
        Enforcement::NotEnforced,
        "{}",
        next.evidence
    );
    let next = judge_boot(
        &evidence.secure_boot,
        Some("ro module.sig_enforce=1"),
        config.as_ref(),
    );
    assert_eq!(next.enforcement, Enforcement::Enforced);

    // The live parameter wins over everything for the running kernel.
    f.write("sys/module/module/parameters/sig_enforce", "Y\n");
    let evidence = SignatureEvidence::read(&r).unwrap();
    assert_eq!(
        judge_running(&evidence, None).enforcement,
        Enforcement::Enforced
    );

    // A malformed variable is unknown, with the reason.
    f.write(
        "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0a9f7a9b0ae",
        [6, 0],
    );
    let evidence = SignatureEvidence::read(&r).unwrap();
    let next = judge_boot(&evidence.secure_boot, Some("ro"), None);
    assert_eq!(next.enforcement, Enforcement::Unknown);
}

#[test]
fn modprobe_d_blacklist_and_install_lines_for_each_request() {
    let f = Fixture::debian12();
    f.install_rpcrdma(DKMS, ".ko", &build(&ModuleSpec::rpcrdma(RUNNING)));
    f.write(
        "usr/lib/modprobe.d/50-rdma.conf",
        "install rpcrdma /bin/false\n",
    );
    // Same name in /etc: hides the distribution's file entirely.
    f.write(
        "etc/modprobe.d/50-rdma.conf",
        "# local\nblacklist rpcrdma\n",
    );
    f.write(
        "lib/modprobe.d/60-nfs.conf",
        "options rpcrdma max_requests=64\n",
    );
    let r = root(&f);
    let tree = ModuleTree::read(&r, RUNNING).unwrap();
    let index = TreeIndex::new(&r, &tree);
    let config = read_modprobe_config(&r, Some(&tree.dir_rel), Some("ro quiet")).unwrap();
    assert_eq!(
        config.files[0].hides,
        vec!["/usr/lib/modprobe.d/50-rdma.conf"]
    );

    let by_name = explain_request(&config, &index, RPCRDMA);
    assert!(by_name.loads("rpcrdma"));
    assert!(by_name
        .effects
        .iter()
        .any(|e| e.says.contains("does not stop")
            && e.origin.to_string() == "/etc/modprobe.d/50-rdma.conf:2"));
    let target = by_name
        .steps
        .iter()
        .find(|s| s.module == "rpcrdma")
        .unwrap();
    assert_eq!(
        target.outcome,
        ModuleOutcome::Loads {
            file: Some("updates/dkms/rpcrdma.ko".into())
        }
    );
    assert_eq!(target.options[0].0, "max_requests=64");
    for request in [KERNEL_REQUEST_LEGACY, KERNEL_REQUEST_RDMA6] {
        let e = explain_request(&config, &index, request);
        assert!(!e.loads("rpcrdma"), "{request}: {e:#?}");
    }

    // An install line in /etc replaces the load by every name.
    f.write("etc/modprobe.d/50-rdma.conf", "install rpcrdma /bin/true\n");
    let config = read_modprobe_config(&r, Some(&tree.dir_rel), None).unwrap();
    for request in [RPCRDMA, KERNEL_REQUEST_LEGACY] {
        let e = explain_request(&config, &index, request);
        let target = e.steps.iter().find(|s| s.module == "rpcrdma").unwrap();
        assert!(
            matches!(&target.outcome, ModuleOutcome::Replaced { kind: InstallKind::Disables, origin, .. }
                if origin.to_string() == "/etc/modprobe.d/50-rdma.conf:1"),
            "{request}: {:?}",
            target.outcome
        );
    }
}

#[test]
fn doctor_shows_the_kernels_own_refusal_of_rpcrdma() {
    let mut f = Fixture::debian12();
    f.nvidia_fs("2.28.4", 1);
    f.install_rpcrdma(
        INBOX,
        ".ko",
        &build(&ModuleSpec::rpcrdma(RUNNING).hooks(None)),
    );
    f.write(
        format!("{RECORDED_DIR}/{}", record_key("dmesg", &[])),
        "[   12.5] rpcrdma: disagrees about version of symbol ib_dma_virt_map_sg\n\
         [   12.5] rpcrdma: Unknown symbol ib_dma_virt_map_sg (err -22)\n\
         [   12.6] mlx5_ib: Unknown symbol ib_unrelated (err -22)\n",
    );
    let out = run(&f, &["doctor", "--json"]);
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    let log: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["topic"] == "kernel-log")
        .filter_map(|x| x["text"].as_str())
        .collect();
    assert_eq!(
        log,
        vec![
            "[   12.5] rpcrdma: disagrees about version of symbol ib_dma_virt_map_sg",
            "[   12.5] rpcrdma: Unknown symbol ib_dma_virt_map_sg (err -22)",
        ]
    );
}

/// What `modprobe -n -v` prints for a request, rebuilt from the explanation: `insmod FILE OPTS`
/// per loaded module, `install CMD` per replaced one, nothing for a blacklisted alias.
fn dry_run(e: &nfs_gds::host::modules::modprobe_effect::RequestExplanation) -> String {
    e.steps
        .iter()
        .filter_map(|s| match &s.outcome {
            ModuleOutcome::Loads { file } => {
                let mut line = format!("insmod {}", file.as_deref().unwrap_or("(built in)"));
                for (o, _) in &s.options {
                    line.push(' ');
                    line.push_str(o);
                }
                Some(line)
            }
            ModuleOutcome::Replaced { command, .. } => Some(format!("install {command}")),
            ModuleOutcome::Blacklisted { .. } => None,
            ModuleOutcome::Missing => Some(format!("missing {}", s.module)),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The same configurations given to kmod 30's `modprobe -d ROOT -S REL -C CONF -n -v` on a tree
/// built by `depmod` with the same three modules and aliases; its output, with the tree's path
/// stripped, is the expected column.
#[test]
fn explanations_agree_with_modprobe_dry_runs() {
    let f = Fixture::new(RUNNING);
    f.write(
        format!("{}/modules.dep", f.tree()),
        "updates/dkms/rpcrdma.ko:\nkernel/net/sunrpc/sunrpc.ko:\nkernel/drivers/infiniband/core/ib_core.ko:\n",
    );
    f.write(
        format!("{}/modules.alias", f.tree()),
        "alias xprtrdma rpcrdma\nalias rpcrdma6 rpcrdma\nalias svcrdma rpcrdma\n",
    );
    let r = root(&f);
    let tree = ModuleTree::read(&r, RUNNING).unwrap();
    let index = TreeIndex::new(&r, &tree);
    const INSMOD: &str = "insmod updates/dkms/rpcrdma.ko";
    const TRUE: &str = "install /bin/true";
    let cases: [(&str, [&str; 3]); 9] = [
        ("", [INSMOD, INSMOD, INSMOD]),
        ("blacklist rpcrdma\n", [INSMOD, "", ""]),
        ("install rpcrdma /bin/true\n", [TRUE, TRUE, TRUE]),
        ("install rpcrdma /bin/true\ninstall rpcrdma /bin/false\n", [TRUE, TRUE, TRUE]),
        ("alias xprt* off\nblacklist off\n", [INSMOD, "", INSMOD]),
        ("alias rpcrdma sunrpc\n", ["insmod kernel/net/sunrpc/sunrpc.ko", INSMOD, INSMOD]),
        (
            "options rpcrdma max_requests=64\nsoftdep rpcrdma pre: ib_core\n",
            [
                "insmod kernel/drivers/infiniband/core/ib_core.ko | insmod updates/dkms/rpcrdma.ko max_requests=64",
                "insmod kernel/drivers/infiniband/core/ib_core.ko | insmod updates/dkms/rpcrdma.ko max_requests=64",
                "insmod kernel/drivers/infiniband/core/ib_core.ko | insmod updates/dkms/rpcrdma.ko max_requests=64",
            ],
        ),
        ("install xprtrdma /bin/true\n", [INSMOD, TRUE, INSMOD]),
        ("blacklist rpcrdma\ninstall rpcrdma /bin/true\n", [TRUE, "", ""]),
    ];
    for (conf, expected) in cases {
        f.write("etc/modprobe.d/t.conf", conf);
        let config = read_modprobe_config(&r, None, None).unwrap();
        for (request, want) in [RPCRDMA, KERNEL_REQUEST_LEGACY, KERNEL_REQUEST_RDMA6]
            .iter()
            .zip(expected)
        {
            let e = explain_request(&config, &index, request);
            assert_eq!(dry_run(&e), want, "modprobe {request} with {conf:?}");
        }
    }
}

/// Every pure parser of these readers, fed pseudo-random text built from the characters and
/// words that steer them (quotes, brackets, backslashes, `>`, `=`, multibyte characters,
/// directive names): none may panic, whatever the text.
#[test]
fn parsers_survive_arbitrary_text() {
    use nfs_gds::host::boot::{bls, grub, version_order};
    use nfs_gds::host::modules::{kernel_config, kernel_log, modprobe_config, sig_enforcement};
    const PIECES: [&str; 32] = [
        "'",
        "\"",
        "\\",
        "\n",
        " ",
        "\t",
        "[",
        "]",
        "{",
        "}",
        ">",
        "=",
        "#",
        "é",
        "€",
        "-",
        "menuentry ",
        "submenu ",
        "linux ",
        "set default=",
        "alias ",
        "blacklist ",
        "install ",
        "softdep ",
        "pre: ",
        "options ",
        "search ",
        "override ",
        ": disagrees about version of symbol ",
        "Key was rejected by service",
        "CONFIG_X=",
        "0",
    ];
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..3000 {
        let len = (next() % 60) as usize;
        let text: String = (0..len).map(|_| PIECES[(next() % 32) as usize]).collect();
        let _ = kernel_log::parse_load_failures(&text, &nfs_gds::kmod::GDS_MODULES);
        let _ = kernel_config::scan_kernel_config(text.as_bytes(), &["CONFIG_X", "CONFIG_MODULES"]);
        let _ = modprobe_config::parse_modprobe_conf(&text, "/f");
        let _ = modprobe_config::parse_cmdline_config(&text);
        let cfg = grub::parse_grub_cfg(&text);
        let _ = grub::select_entry(&cfg.menu, &text);
        let _ = grub::parse_grubenv(&text);
        let _ = grub::parse_grub_default(&text);
        let e = bls::parse_bls_entry(&text, &text, "/f");
        let _ = e.release_among(&["6.1.0"]);
        let _ = bls::expand_grubenv_vars(&text, &grub::parse_grubenv(&text));
        let _ = bls::parse_loader_conf_default(&text);
        let _ = bls::parse_efi_string(text.as_bytes());
        let _ = sig_enforcement::parse_lockdown(&text);
        let _ = sig_enforcement::cmdline_sig_enforce(&text);
        let _ = sig_enforcement::parse_efi_bool(text.as_bytes());
        let _ = dkms::parse_dkms_status(&text);
        let _ = version_order::compare(&text, "6.1.0-50");
    }
}
