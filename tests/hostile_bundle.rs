//! Hostile inputs to the readers: a `--root` bundle whose symlinks, FIFOs, device links and
//! kernel release point outside it, files that are not UTF-8, FIFOs named on the command line,
//! and mount tables full of credentials for `collect`. Each run is bounded by a timeout: a hang
//! is a failure, like a leak.

use std::os::unix::fs::{symlink, FileTypeExt};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use crate::support::*;

/// A run that takes longer than this has hung.
const PATIENCE: Duration = Duration::from_secs(30);

/// What lives beside the bundle, outside the root: every test asserts none of it shows up.
const OUTSIDE: &str = "OUTSIDE-THE-ROOT";

fn run_bounded(root: &Path, args: &[&str]) -> Output {
    let out = nfs_gds()
        .arg("--root")
        .arg(root)
        .args(args)
        .timeout(PATIENCE)
        .output()
        .expect("nfs-gds runs");
    assert!(
        out.status.code().is_some(),
        "{args:?} hung or was killed: stderr {}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    out
}

/// A ready-looking node, and a directory outside it holding files full of [`OUTSIDE`].
fn node_and_outside() -> (Fixture, tempfile::TempDir) {
    let mut f = Fixture::debian12();
    f.nvidia_fs("2.28.4", 1);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), format!("{OUTSIDE}\n")).unwrap();
    std::fs::write(
        outside.path().join("os-release"),
        format!("PRETTY_NAME=\"{OUTSIDE}\"\nID={OUTSIDE}\n"),
    )
    .unwrap();
    (f, outside)
}

/// Replaces `rel` in the fixture by a symlink to `target`.
fn link(f: &Fixture, rel: &str, target: impl AsRef<Path>) {
    let path = f.path(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&path);
    symlink(target, path).unwrap();
}

fn fifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(path);
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap();
}

/// `../` enough times to climb from anywhere in the fixture to `/`, then `abs`.
fn escaping(abs: &Path) -> PathBuf {
    let mut p = PathBuf::new();
    for _ in 0..32 {
        p.push("..");
    }
    p.join(abs.strip_prefix("/").unwrap())
}

#[test]
fn symlinks_out_of_a_bundle_are_not_followed_out() {
    let (f, outside) = node_and_outside();
    link(
        &f,
        "sys/module/nvidia_fs/version",
        outside.path().join("secret"),
    );
    link(&f, "etc/os-release", outside.path().join("os-release"));
    link(&f, "proc/version", escaping(&outside.path().join("secret")));
    link(&f, "etc/cufile.json", "/dev/zero");
    link(&f, "proc/driver/nvidia-fs/modules", "/proc/self/mountinfo");
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("node.tgz");
    for args in [
        &["doctor", "--json"][..],
        &["check", "--json"],
        &["collect", "-o", archive.to_str().unwrap()],
    ] {
        let out = run_bounded(f.root(), args);
        assert!(
            !stdout(&out).contains(OUTSIDE) && !stderr(&out).contains(OUTSIDE),
            "{args:?}: stdout {} stderr {}",
            stdout(&out),
            stderr(&out)
        );
    }
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "nvidia-fs-loaded"), "pass", "{doc:#}");
}

#[test]
fn a_release_with_dot_dot_does_not_load_modules_from_outside() {
    let (f, outside) = node_and_outside();
    // A module tree outside the bundle, where an escaping release would find it.
    let tree = outside.path().join("lib/modules/x");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("modules.dep"), format!("{OUTSIDE}/rpcrdma.ko:\n")).unwrap();
    let release = escaping(&tree);
    let release = release
        .strip_prefix("../")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    f.write("proc/sys/kernel/osrelease", format!("{release}\n"));
    let out = run_bounded(f.root(), &["check", "--json"]);
    assert!(!stdout(&out).contains(OUTSIDE), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("is not a plain name"),
        "says why the release is ignored: {}",
        stderr(&out)
    );
}

#[test]
fn fifos_in_a_bundle_give_an_error_or_an_unknown_not_a_hang() {
    for rel in [
        "sys/module/nvidia_fs/version",
        "etc/os-release",
        "proc/kallsyms",
        "proc/self/mountinfo",
    ] {
        let (f, _outside) = node_and_outside();
        fifo(&f.path(rel));
        for args in [&["doctor", "--json"][..], &["check", "--json"]] {
            let out = run_bounded(f.root(), args);
            let code = out.status.code().unwrap();
            if code == 2 {
                let err = stderr(&out);
                assert!(
                    err.contains(rel) && err.contains("is a FIFO"),
                    "{rel}: {err}"
                );
            }
        }
    }
}

#[test]
fn a_bundle_device_is_not_opened_by_the_probe() {
    let (f, outside) = node_and_outside();
    f.write("proc/driver/nvidia-fs/modules", "wekafsio: 1\n");
    // The device as a FIFO (opening blocks), then as a link to one outside the bundle.
    fifo(&f.path("dev/nvidia-fs0"));
    let out = run_bounded(f.root(), &["check", "--json", "--probe"]);
    assert!(
        stdout(&out).contains("nvfs-registration"),
        "{}",
        stdout(&out)
    );
    let outside_fifo = outside.path().join("fifo");
    fifo(&outside_fifo);
    std::fs::remove_file(f.path("dev/nvidia-fs0")).unwrap();
    link(&f, "dev/nvidia-fs0", &outside_fifo);
    run_bounded(f.root(), &["check", "--json", "--probe"]);
}

#[test]
fn a_non_utf8_byte_makes_one_fact_unreadable_not_the_command() {
    let (f, _outside) = node_and_outside();
    let tree = f.tree();
    f.write(
        format!("{tree}/modules.builtin"),
        b"kernel/fs/ext4/ext4.ko\nkernel/\xff.ko\n",
    );
    f.write(
        "proc/modules",
        b"nvidia_fs 270336 0 - Live 0x0 (OE)\n\xff 1 0 - Live 0x0\n",
    );
    f.write("sys/module/nvidia_fs/version", b"2.28\xff\n");
    f.write("proc/driver/nvidia-fs/version", b"version: 2.\xff\n");
    f.write(
        "etc/cufile.json",
        b"{ \"properties\": { \"allow_compat_mode\": \xff } }\n",
    );
    f.write("etc/os-release", b"ID=debian\nPRETTY_NAME=\"\xff\"\n");
    for args in [&["doctor", "--json"][..], &["check", "--json"]] {
        let out = run_bounded(f.root(), args);
        assert_ne!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(status(&doc, "nvidia-fs-loaded"), "pass", "{doc:#}");
    }
    let (_, doc) = doctor_json_of(&f);
    assert_eq!(doc["stack"]["os"]["id"], "debian", "{:#}", doc["stack"]);
}

fn doctor_json_of(f: &Fixture) -> (i32, serde_json::Value) {
    let out = run_bounded(f.root(), &["doctor", "--json"]);
    (
        out.status.code().unwrap(),
        serde_json::from_slice(&out.stdout).expect("JSON"),
    )
}

#[test]
fn a_fifo_named_on_the_command_line_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("nfs-gds.toml");
    fifo(&policy);
    let (f, _outside) = node_and_outside();
    let out = nfs_gds()
        .arg("--root")
        .arg(f.root())
        .arg("--config")
        .arg(&policy)
        .args(["mount", "srv:/export", "/mnt/gds", "-f"])
        .timeout(PATIENCE)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&policy.display().to_string()) && err.contains("is a FIFO"),
        "{err}"
    );

    let module = dir.path().join("rpcrdma.ko");
    fifo(&module);
    let out = nfs_gds()
        .arg("inspect-module")
        .arg(&module)
        .timeout(PATIENCE)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("rpcrdma.ko is a FIFO, not a regular file"),
        "{err}"
    );
}

/// Eleven credentials, each where the old redactor missed or might miss one.
const PLANTED: [&str; 11] = [
    "PLANT01", "PLANT02", "PLANT03", "PLANT04", "PLANT05", "PLANT06", "PLANT07", "PLANT08",
    "PLANT09", "PLANT10", "PLANT11",
];

#[test]
fn collect_carries_off_none_of_eleven_planted_credentials() {
    let mut f = Fixture::debian12();
    f.nvidia_fs("2.28.4", 1);
    f.load_rpcrdma(&Loaded::default(), KallsymsHooks::Lower);
    f.write(
        "proc/kallsyms",
        "ffffffffc0a01234 t rpcrdma_register_nvfs_dma_ops\t[rpcrdma]\nffffffffc0a05678 t rpcrdma_unregister_nvfs_dma_ops\t[rpcrdma]\n",
    );
    f.write(
        "etc/fstab",
        "//srv/share /mnt/s cifs username=alice,password=PLANT01 0 0\n\
         10.0.0.1:6789:/ /mnt/ceph ceph name=admin,secret=PLANT02,_netdev 0 0\n\
         //srv/b /mnt/b cifs password2=PLANT03 0 0\n\
         //srv/c /mnt/c cifs passwd=PLANT04,vers=3.0 0 0\n\
         //srv/d /mnt/d cifs pw=PLANT05 0 0\n",
    );
    f.write(
        "proc/self/mountinfo",
        "25 1 254:0 / / rw - ext4 /dev/vda rw\n\
         42 25 0:52 / /mnt/s rw - cifs //srv/share rw,vers=3.0,password=PLANT08\n\
         40 25 0:50 / /mnt/k rw shared:2 - fuse.x srv:/k rw,authkey=PLANT06\n\
         41 25 0:51 / /mnt/t rw - fuse.y srv:/t rw,x-token=PLANT07,ro\n",
    );
    f.write(
        "proc/self/mounts",
        "//srv/share /mnt/s cifs rw,password=PLANT09,sec=ntlmssp 0 0\n\
         //srv/e /mnt/e cifs rw,credentials=PLANT10 0 0\n",
    );
    f.write(
        "proc/self/mountstats",
        "device srv:/x mounted on /mnt/x with fstype nfs4 statvers=1.1\n\topts:\trw,vers=4.2,key=PLANT11\n",
    );
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("node.tgz");
    let out = run_bounded(f.root(), &["collect", "-o", archive.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut text = Vec::new();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(&archive).unwrap(),
    ));
    let mut kallsyms = String::new();
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().display().to_string();
        let mut body = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut body).unwrap();
        if name == "proc/kallsyms" {
            kallsyms = String::from_utf8_lossy(&body).into_owned();
        }
        text.extend_from_slice(&body);
    }
    let text = String::from_utf8_lossy(&text);
    let leaked: Vec<&str> = PLANTED
        .iter()
        .copied()
        .filter(|s| text.contains(s))
        .collect();
    assert_eq!(leaked, Vec::<&str>::new(), "leaked credentials");
    assert!(
        !text.contains("alice"),
        "the user paired with a password went too"
    );
    assert!(text.contains("password=REDACTED"), "redacted, not dropped");
    assert!(
        kallsyms.starts_with("0000000000000000 t rpcrdma_register_nvfs_dma_ops"),
        "{kallsyms}"
    );
    assert!(!kallsyms.contains("ffffffffc0a0"), "{kallsyms}");
}

/// A collected archive unpacked into `work/bundle`, the node to doctor.
fn unpacked(archive: &Path, work: &Path) -> PathBuf {
    let bundle = work.join("bundle");
    std::fs::create_dir(&bundle).unwrap();
    tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(archive).unwrap(),
    ))
    .unpack(&bundle)
    .unwrap();
    bundle
}

/// The entries of a collected archive, by path.
fn archived(archive: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(archive).unwrap(),
    ));
    let mut out = std::collections::BTreeMap::new();
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().display().to_string();
        let mut body = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut body).unwrap();
        out.insert(name, body);
    }
    out
}

#[test]
fn collect_keeps_only_the_container_variable_of_pid_1() {
    // In a pod without the host's PID namespace, PID 1 is the workload and its environment
    // holds the workload's secrets; the container check needs only `container=`.
    let (f, _outside) = node_and_outside();
    f.write(
        "proc/1/environ",
        b"PATH=/bin\0AWS_SECRET_ACCESS_KEY=PLANT12\0container=oci\0DB_PASSWORD=PLANT13\0",
    );
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("node.tgz");
    let out = run_bounded(f.root(), &["collect", "-o", archive.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let files = archived(&archive);
    let environ = files
        .get("proc/1/environ")
        .expect("the container check read it");
    assert_eq!(environ.as_slice(), b"container=oci\0");
    for (name, body) in &files {
        let text = String::from_utf8_lossy(body);
        assert!(!text.contains("PLANT1"), "{name} carries a secret: {text}");
    }
}

#[test]
fn a_failed_collect_leaves_no_partial_archive() {
    let (f, _outside) = node_and_outside();
    // A directory where a file is collected: the read fails midway through the archive.
    std::fs::create_dir_all(f.path("etc/fstab")).unwrap();
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("node.tgz");
    let out = run_bounded(f.root(), &["collect", "-o", archive.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("etc/fstab"), "{}", stderr(&out));
    let left: Vec<_> = std::fs::read_dir(work.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn collect_replaces_only_a_regular_file() {
    let (f, _outside) = node_and_outside();
    let work = tempfile::tempdir().unwrap();
    // A FIFO and a symlink where the archive is to go: neither is swapped out by the rename.
    let pipe = work.path().join("pipe.tgz");
    fifo(&pipe);
    let target = work.path().join("target");
    std::fs::write(&target, "kept\n").unwrap();
    let linked = work.path().join("linked.tgz");
    symlink(&target, &linked).unwrap();
    for out in [&pipe, &linked] {
        // Refused without --force, and with it, in the same words (a rename never swaps these
        // out, so --force is not offered).
        for force in [&[][..], &["--force"][..]] {
            let args = [&["collect", "-o", out.to_str().unwrap()][..], force].concat();
            let run = run_bounded(f.root(), &args);
            assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
            assert!(
                stderr(&run).contains("is not a regular file: give the path of a new file")
                    && !stderr(&run).contains("--force"),
                "{}",
                stderr(&run)
            );
        }
    }
    assert!(std::fs::symlink_metadata(&pipe)
        .unwrap()
        .file_type()
        .is_fifo());
    assert!(std::fs::symlink_metadata(&linked)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept\n");
    let names: Vec<_> = std::fs::read_dir(work.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 3, "no temporary file left: {names:?}");
}

/// Each check's id and status in a doctor document, with the verdict.
fn judged(doc: &serde_json::Value) -> (String, Vec<(String, String)>) {
    let checks = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].to_string(), c["status"].to_string()))
        .collect();
    (doc["verdict"].to_string(), checks)
}

#[test]
fn collect_redacts_every_form_of_credential_and_the_bundle_replays_to_the_same_verdict() {
    let mut f = Fixture::debian12();
    f.nvidia_fs("2.28.4", 1);
    f.load_rpcrdma(&Loaded::default(), KallsymsHooks::Lower);
    f.write(
        "etc/fstab",
        "//srv/a /mnt/a cifs user=bob%SECRET01,vers=3.0 0 0\n\
         //srv/b /mnt/b cifs username=DOM/bob%SECRET02 0 0\n\
         curlftpfs#ftp.example /mnt/f fuse user=bob:SECRET03,allow_other 0 0\n\
         mfsmount /mnt/m fuse mfsmaster=m,mfspassword=SECRET04 0 0\n\
         //srv/q /mnt/q cifs rw,\"password=SECRET05\" 0 0\n\
         bob:SECRET06@host:/data /mnt/h fuse.sshfs ro 0 0\n",
    );
    // Words the checks read, and secrets beside them.
    f.write(
        "proc/cmdline",
        "BOOT_IMAGE=/vmlinuz ro password=SECRET07 netroot=iscsi:bob:SECRET08@10.0.0.1::3260::iqn.x module.sig_enforce=1 lockdown=integrity iommu=pt modprobe.blacklist=nouveau rpcrdma.max_requests=64 quiet\n",
    );
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("node.tgz");
    let out = run_bounded(f.root(), &["collect", "-o", archive.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let files = archived(&archive);
    let text: String = files
        .values()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect();
    let leaked: Vec<String> = (1..=8)
        .map(|i| format!("SECRET{i:02}"))
        .filter(|s| text.contains(s.as_str()))
        .collect();
    assert_eq!(leaked, Vec::<String>::new(), "leaked credentials");
    let cmdline = String::from_utf8_lossy(&files["proc/cmdline"]).into_owned();
    assert!(
        cmdline.contains(" ro password=REDACTED netroot=REDACTED module.sig_enforce=1 lockdown=integrity iommu=pt modprobe.blacklist=nouveau rpcrdma.max_requests=64 quiet"),
        "{cmdline}"
    );
    // Unpacked, the bundle is the node to doctor.
    let bundle = unpacked(&archive, work.path());
    let (_, live) = doctor_json_of(&f);
    let replayed = run_bounded(&bundle, &["doctor", "--json"]);
    let replayed: serde_json::Value = serde_json::from_slice(&replayed.stdout).expect("JSON");
    assert_eq!(judged(&replayed), judged(&live));
}

/// The next-boot check's whole result in a doctor document.
fn next_boot_result(doc: &serde_json::Value) -> serde_json::Value {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "next-boot")
        .cloned()
        .unwrap_or_else(|| panic!("no next-boot check: {doc:#}"))
}

/// A node with two kernels whose next boot is the one DKMS built nothing for, chosen by GRUB's
/// menu (`bls` false) or by its BLS entries: every file holding a kernel command line carries
/// secrets beside the words the checks read.
fn node_with_secret_command_lines(bls: bool) -> Fixture {
    let mut f = two_kernels();
    f.nvidia_fs("2.28.4", 1);
    f.boot_image(b"");
    f.write(format!("boot/vmlinuz-{NEXT}"), b"");
    let running = f.release.clone();
    let mut cfg = String::from("set default=\"${saved_entry}\"\nif [ -z \"${kernelopts}\" ]; then\n  set kernelopts=\"root=/dev/sda1 ro rd.iscsi.password=SECRET21\"\nfi\n");
    for rel in [running.as_str(), NEXT] {
        cfg.push_str(&format!(
            "menuentry 'Debian GNU/Linux, with Linux {rel}' $menuentry_id_option 'gnulinux-{rel}-advanced-1b2c' {{\n\tlinux\t/boot/vmlinuz-{rel} root=UUID=1b2c ro quiet password=SECRET22 module.sig_enforce=1 iommu=pt -- --token SECRET23\n}}\n"
        ));
    }
    cfg.push_str("menuentry 'EFI' {\n\tlinuxefi /vmlinuz-efi netroot=iscsi:bob:SECRET24@10.0.0.1::3260::iqn.x quiet\n}\nmenuentry 'memtest' {\n\tlinux16 /memtest86+x64.bin secret=SECRET25\n}\n");
    if bls {
        cfg.push_str("insmod blscfg\nblscfg\n");
    }
    f.write("boot/grub/grub.cfg", cfg);
    let saved = if bls {
        format!("1b2c-{NEXT}")
    } else {
        format!("gnulinux-{NEXT}-advanced-1b2c")
    };
    f.write(
        "boot/grub/grubenv",
        format!("# GRUB Environment Block\nsaved_entry={saved}\nkernelopts=root=/dev/sda1 ro token=SECRET26 lockdown=integrity\n"),
    );
    f.write(
        "etc/default/grub",
        "GRUB_DEFAULT=saved\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet pass=SECRET27\"\nGRUB_CMDLINE_LINUX='iommu=pt cifs.password=SECRET28 rpcrdma.max_requests=64'\n",
    );
    for rel in [running.as_str(), NEXT] {
        f.write(
            format!("boot/loader/entries/1b2c-{rel}.conf"),
            format!("title Linux {rel}\nversion {rel}\nlinux /vmlinuz-{rel}\noptions $kernelopts key=SECRET29 module.sig_enforce=1\n"),
        );
    }
    f.write(
        "proc/cmdline",
        "BOOT_IMAGE=/vmlinuz ro iommu=pt quiet -- --token SECRET30 --password SECRET31\n",
    );
    f.write(
        "etc/fstab",
        "//srv/s /mnt/s cifs vers=3.0,pass\\075SECRET32 0 0\n//srv/t /mnt/t cifs rw\\054password=SECRET33 0 0\n",
    );
    f
}

#[test]
fn collect_redacts_every_kernel_command_line_and_keeps_the_next_boot_verdict() {
    for bls in [false, true] {
        let f = node_with_secret_command_lines(bls);
        let work = tempfile::tempdir().unwrap();
        let archive = work.path().join("node.tgz");
        let out = run_bounded(f.root(), &["collect", "-o", archive.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let files = archived(&archive);
        for (name, body) in &files {
            let text = String::from_utf8_lossy(body);
            assert!(
                !text.contains("SECRET"),
                "bls {bls}: {name} carries a secret: {text}"
            );
        }
        let file = |rel: &str| {
            let body = files
                .get(rel)
                .unwrap_or_else(|| panic!("{rel} not collected"));
            String::from_utf8_lossy(body).into_owned()
        };
        // Every word a check reads is kept, and what picks the next boot.
        for (rel, kept) in [
            ("boot/grub/grub.cfg", "ro quiet password=REDACTED module.sig_enforce=1 iommu=pt -- REDACTED REDACTED\n"),
            ("boot/grub/grub.cfg", "set default=\"${saved_entry}\"\n"),
            ("boot/grub/grub.cfg", &format!("$menuentry_id_option 'gnulinux-{NEXT}-advanced-1b2c' {{\n\tlinux\t/boot/vmlinuz-{NEXT} ")),
            ("boot/grub/grubenv", "kernelopts=root=REDACTED ro token=REDACTED lockdown=integrity\n"),
            ("etc/default/grub", "GRUB_DEFAULT=saved\n"),
            ("etc/default/grub", "'iommu=pt cifs.password=REDACTED rpcrdma.max_requests=64'"),
            ("proc/cmdline", "ro iommu=pt quiet -- REDACTED REDACTED REDACTED REDACTED\n"),
            ("etc/fstab", " vers=3.0,pass=REDACTED "),
            ("etc/fstab", " rw,password=REDACTED "),
            (&format!("boot/loader/entries/1b2c-{NEXT}.conf"), &format!("version {NEXT}\nlinux /vmlinuz-{NEXT}\noptions $kernelopts key=REDACTED module.sig_enforce=1\n")),
        ] {
            assert!(file(rel).contains(kept), "bls {bls}: {kept:?} lost from {rel}: {}", file(rel));
        }
        let saved = if bls {
            format!("1b2c-{NEXT}")
        } else {
            format!("gnulinux-{NEXT}-advanced-1b2c")
        };
        assert!(file("boot/grub/grubenv").contains(&format!("saved_entry={saved}\n")));

        let bundle = unpacked(&archive, work.path());
        // DKMS's install link goes in as the link it is.
        let link = bundle.join(format!(
            "var/lib/dkms/mlnx-nfsrdma/kernel-{}-x86_64",
            f.release
        ));
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            Path::new(&format!("{MOFED}/{}/x86_64", f.release))
        );
        let (_, live) = doctor_json_of(&f);
        let replayed = run_bounded(&bundle, &["doctor", "--json"]);
        let replayed: serde_json::Value = serde_json::from_slice(&replayed.stdout).expect("JSON");
        // The same result, but for the root the module paths are under.
        let node = next_boot_result(&live).to_string();
        let node = node.replace(f.root().to_str().unwrap(), "ROOT");
        let again = next_boot_result(&replayed).to_string();
        let again = again.replace(bundle.to_str().unwrap(), "ROOT");
        assert!(node.contains("\"status\":\"fail\""), "bls {bls}: {node}");
        assert!(
            node.contains(&format!("after reboot into {NEXT}")),
            "{node}"
        );
        assert!(node.contains("built for: 6.1.0-50-amd64"), "{node}");
        assert_eq!(again, node, "bls {bls}");
        assert_eq!(judged(&replayed), judged(&live), "bls {bls}");
    }
}
