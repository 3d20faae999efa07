//! Doctor's plan on one representative failing node per distribution family, each a snapshot:
//! every command is the family's own (package manager and package names, where its DKMS keeps
//! the signing key, `update-initramfs` or `dracut`, the boot loader's tool).
//!
//! - Debian 12: Secure Boot refuses the unsigned DKMS mlnx-nfsrdma.
//! - Ubuntu 26.04: the DKMS key changed since its enrolment (a reimaged node); Canonical's signed
//!   DOCA-OFED modules are the way without a MOK.
//! - Rocky 9: mlnx-nfsrdma built by DKMS without GDS, rebuilt and put in the initramfs by dracut.
//! - SLES 15 SP6: the proprietary GPU driver, no nvidia-fs, and the inbox rpcrdma.
//! - Ubuntu 26.04 on NVIDIA's `linux-nvidia` kernel: the in-tree rpcrdma has the hooks (NVIDIA's
//!   GDS patch) but exports them plain, which the kernel refuses: a GPL kernel or the patch by
//!   DKMS, never a DOCA rebuild.

use crate::doctor::{doctor_json, doctor_text, gpu_driver, os_release, plan_titles, record};
use crate::support::mok;
use crate::support::*;

const DOCA: &str = "26.01.OFED.26.01.1.0.0.1";

/// The DKMS status of DOCA-OFED's mlnx-ofed-kernel and mlnx-nfsrdma for `release`.
fn doca_dkms(f: &Fixture, release: &str) {
    record(f, "ofed_info", &["-s"], "OFED-internal-26.01-1.0.0:\n");
    record(
        f,
        "dkms",
        &["status"],
        &format!("mlnx-ofed-kernel/{DOCA}, {release}, x86_64: installed\nmlnx-nfsrdma/{DOCA}, {release}, x86_64: installed\n"),
    );
}

fn plan_commands(doc: &serde_json::Value) -> String {
    serde_json::to_string(&doc["plan"]).unwrap()
}

#[test]
fn debian_secure_boot_refusing_an_unsigned_dkms_build_enrolls_dkms_s_own_key() {
    let release = "6.1.0-50-amd64";
    let f = node_with(&ModuleSpec::rpcrdma(release), DKMS, Packing::XzCrc32);
    f.secure_boot(true);
    os_release(
        &f,
        "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n",
    );
    gpu_driver(&f);
    doca_dkms(&f, release);
    let (code, doc) = doctor_json(&f, &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(status(&doc, "module-signature"), "fail");
    let plan = plan_commands(&doc);
    for cmd in [
        "dkms generate_mok",
        &format!("dkms remove mlnx-nfsrdma/{DOCA} -k {release} && dkms install mlnx-nfsrdma/{DOCA} -k {release}"),
        "mokutil --import /var/lib/dkms/mok.pub",
    ] {
        assert!(plan.contains(cmd), "{cmd}: {plan}");
    }
    assert!(!plan.contains("shim-signed"), "{plan}");
    assert_snapshot!("doctor_family_debian", doctor_text(&f, &["doctor"]));
}

#[test]
fn ubuntu_2604_with_a_changed_dkms_key_offers_canonicals_signed_modules_or_the_shim_key() {
    let release = "7.0.0-14-generic";
    let signed = signature_trailer(&pkcs7_signed_data(
        "DKMS module signing key",
        &[0x5e, 0xe1, 0x13, 0x31],
        "2.16.840.1.101.3.4.2.1",
        &[0xa5; 256],
    ));
    let f = node_with(
        &ModuleSpec::rpcrdma(release).signed_with(signed),
        DKMS,
        Packing::Zstd,
    );
    f.secure_boot(true);
    f.write(
        format!("sys/firmware/efi/efivars/MokListRT-{}", mok::SHIM_GUID),
        mok::efivar(&[mok::certificate(
            "DKMS module signing key",
            &[0x01, 0x02, 0x03],
        )]),
    );
    os_release(
        &f,
        "PRETTY_NAME=\"Ubuntu 26.04 LTS\"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID=\"26.04\"\n",
    );
    gpu_driver(&f);
    doca_dkms(&f, release);
    let (code, doc) = doctor_json(&f, &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert!(
        check_result(&doc, "module-signature")["summary"]
            .as_str()
            .unwrap()
            .contains("enrolled key of that name has serial 01:02:03"),
        "{doc:#}"
    );
    let plan = plan_commands(&doc);
    for cmd in [
        "apt-get install doca-ofed-generic",
        "update-secureboot-policy --new-key",
        "mokutil --import /var/lib/shim-signed/mok/MOK.der",
    ] {
        assert!(plan.contains(cmd), "{cmd}: {plan}");
    }
    assert!(!plan.contains("/var/lib/dkms/mok.pub"), "{plan}");
    assert_snapshot!("doctor_family_ubuntu", doctor_text(&f, &["doctor"]));
}

#[test]
fn rocky_dkms_build_without_gds_is_rebuilt_and_put_in_the_initramfs_by_dracut() {
    let release = "5.14.0-427.13.1.el9_4.x86_64";
    let f = node_with(
        &ModuleSpec::rpcrdma(release).hooks(None),
        "extra/rpcrdma",
        Packing::XzCrc32,
    );
    os_release(
        &f,
        "NAME=\"Rocky Linux\"\nID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.4\"\nPRETTY_NAME=\"Rocky Linux 9.4 (Blue Onyx)\"\n",
    );
    gpu_driver(&f);
    doca_dkms(&f, release);
    f.write(
        format!("usr/src/ofa_kernel/x86_64/{release}/configure.mk.kernel"),
        "CONFIG_MLX5_CORE=m\n",
    );
    f.write(
        "proc/self/mountinfo",
        "25 1 253:0 / / rw - xfs /dev/mapper/rl-root rw\n",
    );
    let (code, doc) = doctor_json(&f, &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["stack"]["provenance"], "mofed-dkms");
    let plan = plan_commands(&doc);
    for cmd in [
        &format!("dkms install mlnx-nfsrdma/{DOCA} -k {release}"),
        &format!("dracut -f --kver {release}"),
    ] {
        assert!(plan.contains(cmd.as_str()), "{cmd}: {plan}");
    }
    assert!(!plan.contains("update-initramfs -u"), "{plan}");
    assert_snapshot!("doctor_family_rhel", doctor_text(&f, &["doctor"]));
}

#[test]
fn sles_with_the_proprietary_driver_and_no_nvidia_fs_gets_zypper_and_suse_s_signed_open_driver() {
    let release = "6.4.0-150600.23.25-default";
    let f = Fixture::new(release);
    f.install_rpcrdma(
        INBOX,
        ".ko.zst",
        &pack(
            &build(&ModuleSpec::rpcrdma(release).hooks(None)),
            Packing::Zstd,
        ),
    );
    os_release(
        &f,
        "NAME=\"SLES\"\nVERSION_ID=\"15.6\"\nID=\"sles\"\nID_LIKE=\"suse\"\nPRETTY_NAME=\"SUSE Linux Enterprise Server 15 SP6\"\n",
    );
    f.write("sys/module/nvidia/version", "550.127.05\n");
    f.write(
        "proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024\n",
    );
    let (code, doc) = doctor_json(&f, &[]);
    assert_eq!(code, 1, "{doc:#}");
    let plan = plan_commands(&doc);
    for cmd in [
        "zypper install nvidia-open-driver-G06-signed-kmp-default",
        "zypper install nvidia-gds",
        "zypper install doca-ofed mlnx-nfsrdma",
    ] {
        assert!(plan.contains(cmd), "{cmd}: {plan}");
    }
    for foreign in ["apt-get", "dnf ", "update-initramfs -u"] {
        assert!(!plan.contains(foreign), "{foreign}: {plan}");
    }
    assert!(!plan_titles(&doc).is_empty());
    assert_snapshot!("doctor_family_sles", doctor_text(&f, &["doctor"]));
}

#[test]
fn ubuntu_linux_nvidia_kernel_with_a_plain_in_tree_export_gets_its_own_fix_not_doca() {
    let release = "7.0.0-1003-nvidia";
    let f = node_with(
        &ModuleSpec::rpcrdma(release).hooks(Some(HookExport::Plain)),
        INBOX,
        Packing::Zstd,
    );
    os_release(
        &f,
        "PRETTY_NAME=\"Ubuntu 26.04 LTS\"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID=\"26.04\"\n",
    );
    f.write(
        "proc/version_signature",
        "Ubuntu 7.0.0-1003.3-nvidia 7.0.2\n",
    );
    gpu_driver(&f);
    let (code, doc) = doctor_json(&f, &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["stack"]["provenance"], "nvidia-kernel");
    assert_eq!(status(&doc, "rpcrdma-hooks"), "pass");
    assert_eq!(status(&doc, "rpcrdma-hook-export"), "fail");
    let plan = plan_commands(&doc);
    assert!(
        plan_titles(&doc)[0]
            .starts_with("Boot a linux-nvidia kernel whose in-tree rpcrdma exports the hooks GPL"),
        "{plan}"
    );
    for cmd in [
        "nfs-gds inspect-module /lib/modules/<new release>/kernel/net/sunrpc/xprtrdma/rpcrdma.ko*",
        "EXPORT_SYMBOL_GPL",
        "dkms install rpcrdma-nvfs/1.0 -k 7.0.0-1003-nvidia",
    ] {
        assert!(plan.contains(cmd), "{cmd}: {plan}");
    }
    for doca in ["doca-ofed", "mlnx-nfsrdma", "ofed_info"] {
        assert!(!plan.contains(doca), "{doca}: {plan}");
    }
    assert_snapshot!("doctor_family_linux_nvidia", doctor_text(&f, &["doctor"]));
}
