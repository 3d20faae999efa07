//! The node the next-boot tests share: a Debian 12 node running `6.1.0-50-amd64` with the hooked
//! rpcrdma of mlnx-nfsrdma from DKMS, and [`NEXT`] installed beside it with only the inbox
//! rpcrdma, which has no hooks, because DKMS built mlnx-nfsrdma for the running kernel only.

use nfs_gds::host::boot::dkms::MLNX_NFSRDMA;

use super::fixture::{Fixture, DKMS, INBOX};
use super::module_gen::{build, ModuleSpec};
use super::pack::{pack, Packing};

/// The kernel installed beside the running one.
pub const NEXT: &str = "6.12.117+deb13-amd64";

/// The mlnx-nfsrdma version DKMS built.
pub const MOFED: &str = "24.10.OFED.24.10.1.1.4.1";

/// The node; it has no boot images and no nvidia_fs, which each test adds as it needs.
pub fn two_kernels() -> Fixture {
    let f = Fixture::debian12();
    let running = f.release.clone();
    f.install_rpcrdma(DKMS, ".ko", &build(&ModuleSpec::rpcrdma(&running)));
    let next_tree = format!("lib/modules/{NEXT}");
    f.write(
        format!("{next_tree}/{INBOX}.ko.xz"),
        pack(
            &build(&ModuleSpec::rpcrdma(NEXT).hooks(None)),
            Packing::XzCrc32,
        ),
    );
    f.write(
        format!("{next_tree}/modules.dep"),
        format!("{INBOX}.ko.xz: kernel/net/sunrpc/sunrpc.ko\nkernel/net/sunrpc/sunrpc.ko:\n"),
    );
    f.write(
        format!("{next_tree}/modules.alias"),
        "alias xprtrdma rpcrdma\n",
    );
    let dkms = format!("var/lib/dkms/{MLNX_NFSRDMA}");
    f.write(
        format!("{dkms}/{MOFED}/{running}/x86_64/module/rpcrdma.ko"),
        b"",
    );
    std::os::unix::fs::symlink(
        format!("{MOFED}/{running}/x86_64"),
        f.path(format!("{dkms}/kernel-{running}-x86_64")),
    )
    .expect("dkms link");
    f.write(
        format!("{dkms}/{MOFED}/source/dkms.conf"),
        "PACKAGE_NAME=mlnx-nfsrdma\n",
    );
    f
}

/// A GRUB menu with one entry per release in `releases`, the saved entry `saved`'s.
pub fn grub_menu(f: &Fixture, releases: &[&str], saved: &str) {
    let mut cfg = String::from("set default=\"${saved_entry}\"\n");
    for rel in releases {
        cfg.push_str(&format!(
            "menuentry 'Debian GNU/Linux, with Linux {rel}' $menuentry_id_option 'gnulinux-{rel}-advanced-1b2c' {{\n\tlinux\t/boot/vmlinuz-{rel} root=UUID=1b2c ro quiet\n}}\n"
        ));
    }
    f.write("boot/grub/grub.cfg", cfg);
    f.write(
        "boot/grub/grubenv",
        format!("# GRUB Environment Block\nsaved_entry=gnulinux-{saved}-advanced-1b2c\n"),
    );
}
