//! Broken and hostile module files: each is a clear error that names the file (exit 2 from
//! `inspect-module`, a failed `rpcrdma-module` check from `check`), never a panic or a hang.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::support::pack::{gzip, zstd};
use crate::support::*;

const NEW_KERNEL: &str = "6.8.0-45-generic";

/// `inspect-module PATH`: asserts exit 2, no panic, and an error naming the file and saying
/// `what`; returns stderr.
fn refuses(path: &Path, what: &str) -> String {
    let out = nfs_gds()
        .arg("inspect-module")
        .arg(path)
        .output()
        .expect("nfs-gds runs");
    let err = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}: stdout {} stderr {err}",
        path.display(),
        stdout(&out)
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.starts_with("nfs-gds: "), "{err}");
    assert!(
        err.contains(&path.display().to_string()),
        "names the file: {err}"
    );
    assert!(err.contains(what), "says {what:?}: {err}");
    assert!(stdout(&out).is_empty());
    err
}

fn file_with(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn module() -> Vec<u8> {
    build(&ModuleSpec::rpcrdma(NEW_KERNEL))
}

/// Byte offset of a section header field, for patching: (e_shoff, e_shentsize) from the ELF64
/// header, then header `index`'s `field` offset.
fn shdr_field(elf: &[u8], index: usize, field: usize) -> usize {
    let shoff = u64::from_le_bytes(elf[0x28..0x30].try_into().unwrap()) as usize;
    let entsize = u16::from_le_bytes(elf[0x3a..0x3c].try_into().unwrap()) as usize;
    shoff + index * entsize + field
}

/// Index of the section named `name`.
fn section_index(elf: &[u8], name: &str) -> usize {
    let shnum = u16::from_le_bytes(elf[0x3c..0x3e].try_into().unwrap()) as usize;
    let shstrndx = u16::from_le_bytes(elf[0x3e..0x40].try_into().unwrap()) as usize;
    let read_u64 = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().unwrap()) as usize;
    let read_u32 = |at: usize| u32::from_le_bytes(elf[at..at + 4].try_into().unwrap()) as usize;
    let strtab = read_u64(shdr_field(elf, shstrndx, 0x18));
    (0..shnum)
        .find(|&i| {
            let off = strtab + read_u32(shdr_field(elf, i, 0));
            elf[off..].starts_with(name.as_bytes()) && elf[off + name.len()] == 0
        })
        .unwrap_or_else(|| panic!("no section {name}"))
}

#[test]
fn truncated_elf() {
    let dir = tempfile::tempdir().unwrap();
    let elf = module();
    let path = file_with(dir.path(), "rpcrdma.ko", &elf[..elf.len() * 3 / 5]);
    refuses(&path, "lies outside the file");
    let path = file_with(dir.path(), "tiny.ko", &elf[..40]);
    refuses(&path, "not a valid ELF file");
}

#[test]
fn section_offsets_past_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut elf = module();
    let modinfo = section_index(&elf, ".modinfo");
    let at = shdr_field(&elf, modinfo, 0x18); // sh_offset
    elf[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let path = file_with(dir.path(), "rpcrdma.ko", &elf);
    refuses(&path, "section .modinfo lies outside the file");

    // A size that wraps around when added to the offset.
    let mut elf = module();
    let symtab = section_index(&elf, ".symtab");
    let at = shdr_field(&elf, symtab, 0x20); // sh_size
    elf[at..at + 8].copy_from_slice(&(u64::MAX - 8).to_le_bytes());
    let path = file_with(dir.path(), "wrap.ko", &elf);
    refuses(&path, "lies outside the file");

    // A section header table claiming 65535 entries.
    let mut elf = module();
    elf[0x3c..0x3e].copy_from_slice(&u16::MAX.to_le_bytes());
    let path = file_with(dir.path(), "many.ko", &elf);
    refuses(&path, "section header table lies outside the file");

    // e_shnum = 0 means "the count is in section 0's sh_size": make that huge.
    let mut elf = module();
    elf[0x3c..0x3e].copy_from_slice(&0u16.to_le_bytes());
    let at = shdr_field(&elf, 0, 0x20);
    elf[at..at + 8].copy_from_slice(&(1u64 << 58).to_le_bytes());
    let path = file_with(dir.path(), "huge-count.ko", &elf);
    refuses(&path, "section header table");

    // A symbol table whose string table link points nowhere.
    let mut elf = module();
    let at = shdr_field(&elf, symtab, 0x28); // sh_link
    elf[at..at + 4].copy_from_slice(&999u32.to_le_bytes());
    let path = file_with(dir.path(), "link.ko", &elf);
    refuses(&path, "symbol table links to missing section 999");
}

#[test]
fn truncated_compressed_files() {
    let dir = tempfile::tempdir().unwrap();
    let elf = module();
    for (packing, what) in [
        (Packing::XzCrc32, "corrupt or truncated xz data"),
        (Packing::XzCrc64, "corrupt or truncated xz data"),
        (Packing::Zstd, "corrupt or truncated zstd data"),
        (Packing::Gzip, "corrupt or truncated gzip data"),
    ] {
        let packed = pack(&elf, packing);
        let name = format!("cut{}", packing.suffix());
        let path = file_with(dir.path(), &name, &packed[..packed.len() / 2]);
        refuses(&path, what);
        // Flipped bytes in the middle of the stream are caught by the format's checks.
        let mut flipped = packed.clone();
        let mid = flipped.len() / 2;
        for b in &mut flipped[mid..mid + 16] {
            *b ^= 0x5a;
        }
        let path = file_with(
            dir.path(),
            &format!("flipped{}", packing.suffix()),
            &flipped,
        );
        refuses(&path, &path.display().to_string());
    }
}

#[test]
fn decompression_bombs_hit_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    // 65 MiB of zeros: a few KB compressed, one MiB over the 64 MiB cap.
    let zeros = vec![0u8; 65 << 20];
    for (tool, bomb, suffix) in [
        ("zstd -19", zstd(&zeros, 19), ".ko.zst"),
        ("xz -0", xz_preset_0(&zeros), ".ko.xz"),
        ("gzip -n", gzip(&zeros), ".ko.gz"),
    ] {
        assert!(
            bomb.len() < 200 << 10,
            "{tool} bomb is {} bytes",
            bomb.len()
        );
        let path = file_with(dir.path(), &format!("bomb{suffix}"), &bomb);
        refuses(&path, "decompresses to more than 64 MiB");
    }
}

#[test]
fn a_zstd_frame_asking_for_a_huge_window_is_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    // As `zstd --long=27` writes from a pipe: the size is unknown, so the frame keeps its
    // 128 MiB window, twice the cap.
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    enc.long_distance_matching(true).unwrap();
    enc.window_log(27).unwrap();
    enc.write_all(&module()).unwrap();
    let packed = enc.finish().unwrap();
    let path = file_with(dir.path(), "window.ko.zst", &packed);
    refuses(&path, "corrupt or truncated zstd data");
}

#[test]
fn empty_files_directories_and_strangers() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_with(dir.path(), "empty.ko", b"");
    refuses(&path, "is empty");
    let sub = dir.path().join("rpcrdma.ko");
    std::fs::create_dir(&sub).unwrap();
    refuses(&sub, "is a directory, not a module file");
    let path = file_with(dir.path(), "text.ko", b"#!/bin/sh\necho not a module\n");
    refuses(
        &path,
        "neither an ELF module nor gzip/xz/zstd-compressed (first bytes: 23 21 2f 62 69 6e)",
    );
    let missing = dir.path().join("missing.ko");
    refuses(&missing, "no such file");
}

#[test]
fn an_elf_that_is_not_a_module() {
    let dir = tempfile::tempdir().unwrap();
    let mut elf = module();
    let modinfo = section_index(&elf, ".modinfo");
    // Rename .modinfo to .xodinfo in the section name table.
    let shstrndx = u16::from_le_bytes(elf[0x3e..0x40].try_into().unwrap()) as usize;
    let strtab = u64::from_le_bytes(
        elf[shdr_field(&elf, shstrndx, 0x18)..shdr_field(&elf, shstrndx, 0x20)]
            .try_into()
            .unwrap(),
    ) as usize;
    let name = u32::from_le_bytes(
        elf[shdr_field(&elf, modinfo, 0)..shdr_field(&elf, modinfo, 4)]
            .try_into()
            .unwrap(),
    ) as usize;
    elf[strtab + name + 1] = b'x';
    let path = file_with(dir.path(), "x.ko", &elf);
    refuses(&path, "not a kernel module: it has no .modinfo section");
}

#[test]
fn dangling_modules_dep_entry_for_inspect_module() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let f = node_with(&spec, DKMS, Packing::Zstd);
    let file = f.path(format!("{}/updates/dkms/rpcrdma.ko.zst", f.tree()));
    std::fs::remove_file(&file).unwrap();
    let out = run(&f, &["inspect-module", "rpcrdma"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("cannot read {}", file.display())),
        "{err}"
    );
}

#[test]
fn check_reports_a_broken_module_file_as_a_failed_check() {
    let spec = ModuleSpec::rpcrdma(NEW_KERNEL);
    let f = node_with(&spec, DKMS, Packing::Zstd);
    let packed = pack(&build(&spec), Packing::Zstd);
    let file = f.install_rpcrdma(DKMS, ".ko.zst", &packed[..packed.len() / 3]);
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(status(&doc, "rpcrdma-module"), "fail");
    let summary = check_result(&doc, "rpcrdma-module")["summary"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(summary.contains(&file.display().to_string()), "{summary}");
    assert!(
        summary.contains("corrupt or truncated zstd data"),
        "{summary}"
    );
    assert_eq!(status(&doc, "rpcrdma-hooks"), "skip");
}

#[test]
fn unreadable_host_files_are_errors_that_name_them() {
    let f = Fixture::new(NEW_KERNEL);
    // /proc/modules as a directory: not "absent", an I/O error the user must see.
    f.remove("proc/modules");
    std::fs::create_dir_all(f.path("proc/modules")).unwrap();
    let out = run(&f, &["check"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(&f.path("proc/modules").display().to_string()),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

/// Found by `examples/fuzz-inspect.rs`: a `__kflagstab` module without `__flags_<sym>` labels
/// whose `__ksymtab` claims size 0 made the index lookup divide by zero.
#[test]
fn flags_table_with_an_empty_ksymtab_is_unrecognised_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let spec = ModuleSpec::rpcrdma("7.1.0")
        .layout(Layout::FlagsTable)
        .without_flag_labels();
    let mut elf = build(&spec);
    let ksymtab = section_index(&elf, "__ksymtab");
    let at = shdr_field(&elf, ksymtab, 0x20); // sh_size
    elf[at..at + 8].copy_from_slice(&0u64.to_le_bytes());
    let path = file_with(dir.path(), "rpcrdma.ko", &elf);
    let out = nfs_gds().arg("inspect-module").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("exported from unrecognised section __ksymtab (its flag in __kflagstab cannot be found)"),
        "{text}"
    );
    assert!(text.contains("UNCERTAIN"), "{text}");
}

/// `xz -0`: the smallest preset, default CRC64 check.
fn xz_preset_0(data: &[u8]) -> Vec<u8> {
    let stream = liblzma::stream::Stream::new_easy_encoder(0, liblzma::stream::Check::Crc64)
        .expect("xz preset 0");
    let mut enc = liblzma::write::XzEncoder::new_stream(Vec::new(), stream);
    enc.write_all(data).expect("xz encodes into memory");
    enc.finish().expect("xz finishes")
}

/// A wrong `--root` (or `NFS_GDS_ROOT`) is an error naming it, not a verdict about an empty host:
/// one message from every entry point, exit 2 (1, mount(8)'s usage code, from the helper), and a
/// JSON error on stdout under `--json`.
#[test]
fn a_root_that_is_not_a_directory_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let missing = dir.path().join("nonexistent");
    for (root, why) in [(&missing, "No such file"), (&file, "not a directory")] {
        for cmd in [
            &["check"][..],
            &["doctor"],
            &["agent", "--once"],
            &["verify", "/mnt"],
        ] {
            let o = nfs_gds()
                .arg("--root")
                .arg(root)
                .args(cmd)
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(2), "{cmd:?}: {}", stdout(&o));
            let err = stderr(&o);
            let named = format!(
                "nfs-gds: root {} (--root or NFS_GDS_ROOT): ",
                root.display()
            );
            assert!(err.contains(&named), "{err}");
            assert!(err.contains(why), "{err}");
            assert!(stdout(&o).is_empty(), "{}", stdout(&o));
        }
        let o = nfs_gds()
            .env("NFS_GDS_ROOT", root)
            .arg("check")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        let named = format!(
            "nfs-gds: root {} (--root or NFS_GDS_ROOT): ",
            root.display()
        );
        for cmd in [&["check", "--json"][..], &["verify", "/mnt", "--json"]] {
            let o = nfs_gds()
                .arg("--root")
                .arg(root)
                .args(cmd)
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(2), "{cmd:?}");
            let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
            assert!(doc["error"].as_str().unwrap().contains(why), "{doc}");
        }
        // The helper, both ways: the same message, mount(8)'s usage code.
        let o = nfs_gds()
            .arg("--root")
            .arg(root)
            .args(["mount", "srv:/x", "/mnt", "-f"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains(&named), "{}", stderr(&o));
        let helper = dir.path().join("mount.nfs-gds");
        if !helper.exists() {
            std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_nfs-gds"), &helper).unwrap();
        }
        let o = std::process::Command::new(&helper)
            .env("NFS_GDS_ROOT", root)
            .args(["srv:/x", "/mnt", "-f"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains(&named), "{}", stderr(&o));
    }
}
