//! Cross-checks against the real tools, run with `cargo test --features external-tools` (CI
//! installs xz-utils, zstd, gzip, binutils and man-db first): the encoders of [`crate::support::pack`]
//! write what `xz`, `zstd` and `gzip` write with the distributions' settings, nfs-gds reads the
//! tools' own output the same way, and the module generator writes what binutils' `readelf`
//! recognises as a kbuild module; and `man` renders the manual pages without warnings. A missing
//! tool fails these tests; it never skips them.

use std::path::Path;
use std::process::Command;

use nfs_gds::kmod::{self, RPCRDMA_HOOKS};

use crate::support::pack::{filter, image_payload, tool_for, ImageFormat};
use crate::support::*;

/// Runs `tool args… file` and returns its stdout.
fn run_on(tool: &str, args: &[&str], file: &Path) -> String {
    let out = Command::new(tool)
        .args(args)
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("the external-tools tests need `{tool}` on PATH: {e}"));
    assert!(
        out.status.success(),
        "`{tool} {args:?} {}` failed: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("tool output is UTF-8")
}

/// The stored properties of a compressed file, as its own tool lists them: for xz the check and
/// filter chain of every block, for zstd the frame header (window, content size, checksum), for
/// gzip the ten header bytes (flags, time stamp, level hint, operating system).
fn properties(packing: Packing, file: &Path) -> Vec<String> {
    match packing.compression() {
        "xz" => run_on("xz", &["--robot", "--list", "-vv"], file)
            .lines()
            .filter(|l| l.starts_with("block\t"))
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                format!("check {} filters {}", f[9], f[f.len() - 1])
            })
            .collect(),
        "zstd" => run_on("zstd", &["--list", "-v"], file)
            .lines()
            .filter(|l| {
                ["Window Size:", "Decompressed Size:", "Check:", "DictID:"]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .map(str::to_string)
            .collect(),
        "gzip" => vec![format!("{:02x?}", &std::fs::read(file).unwrap()[..10])],
        other => panic!("no properties for {other}"),
    }
}

#[test]
fn the_encoders_write_what_the_distribution_tools_write() {
    let dir = tempfile::tempdir().unwrap();
    let spec = ModuleSpec::rpcrdma("6.8.0-45-generic").hooks(Some(HookExport::Gpl));
    let elf = build(&spec);
    let plain = dir.path().join("rpcrdma.ko");
    std::fs::write(&plain, &elf).unwrap();
    for packing in Packing::ALL {
        let Some((tool, args)) = tool_for(packing) else {
            continue;
        };
        // The tool compresses a file, as modules_install does (zstd then records the size).
        let theirs = dir
            .path()
            .join(format!("theirs-{packing:?}{}", packing.suffix()));
        let out = Command::new(tool).args(args).arg(&plain).output().unwrap();
        assert!(out.status.success(), "{tool} {args:?}");
        std::fs::write(&theirs, &out.stdout).unwrap();
        let ours = dir
            .path()
            .join(format!("ours-{packing:?}{}", packing.suffix()));
        std::fs::write(&ours, pack(&elf, packing)).unwrap();

        let want = properties(packing, &theirs);
        assert!(!want.is_empty(), "{tool} listed nothing for {packing:?}");
        assert_eq!(properties(packing, &ours), want, "{packing:?}");
        // The tool decodes ours to the same bytes.
        assert!(filter(tool, &["-dc"], &std::fs::read(&ours).unwrap()) == elf);
        // And nfs-gds reads the tool's file exactly as it reads ours.
        let read = |path: &Path| {
            let bytes = std::fs::read(path).unwrap();
            let name = format!("rpcrdma{}", packing.suffix());
            let mut f = kmod::inspect_bytes(Path::new(&name), &bytes, &RPCRDMA_HOOKS)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            // Two deflate implementations need not agree on the compressed size.
            f.file_size = 0;
            format!("{f:?}")
        };
        assert_eq!(read(&theirs), read(&ours), "{packing:?}");
    }
}

#[test]
fn the_xz_kernel_image_payload_is_what_xz_wrap_writes() {
    let dir = tempfile::tempdir().unwrap();
    let payload: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
    let theirs = dir.path().join("theirs.xz");
    std::fs::write(
        &theirs,
        filter(
            "xz",
            &["--check=crc32", "--x86", "--lzma2=dict=32MiB", "-c"],
            &payload,
        ),
    )
    .unwrap();
    let ours = dir.path().join("ours.xz");
    std::fs::write(&ours, image_payload(&payload, ImageFormat::Xz)).unwrap();
    let want = properties(Packing::XzCrc32, &theirs);
    assert_eq!(want, ["check CRC32 filters --x86 --lzma2=dict=32MiB"]);
    assert_eq!(properties(Packing::XzCrc32, &ours), want);
}

/// The generator writes what kbuild writes, as binutils sees it.
#[test]
fn readelf_sees_a_kbuild_shaped_module() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rpcrdma.ko");
    let spec = ModuleSpec::rpcrdma("6.1.0-50-amd64").hooks(Some(HookExport::Plain));
    std::fs::write(&path, build(&spec)).unwrap();
    let readelf = |args: &[&str]| {
        let out = Command::new("readelf")
            .args(args)
            .arg(&path)
            .output()
            .expect("the tests need `readelf` (Debian: binutils)");
        assert!(out.status.success(), "readelf {args:?} failed");
        String::from_utf8(out.stdout).unwrap()
    };
    let sections = readelf(&["-SW"]);
    for name in [
        ".note.gnu.build-id",
        ".text",
        ".modinfo",
        "__ksymtab ",
        "__ksymtab_gpl",
        ".rela__ksymtab",
        "__ksymtab_strings",
        ".gnu.linkonce.this_module",
        ".symtab",
    ] {
        assert!(sections.contains(name), "no {name} in\n{sections}");
    }
    assert!(sections.contains("NOTE"), "{sections}");
    // Section index -> name, from lines like "  [ 5] __ksymtab   PROGBITS ...".
    let section_names: Vec<(String, String)> = sections
        .lines()
        .filter_map(|l| {
            let (idx, rest) = l.trim_start().strip_prefix('[')?.split_once(']')?;
            Some((
                idx.trim().to_string(),
                rest.split_whitespace().next()?.to_string(),
            ))
        })
        .collect();
    let symbols = readelf(&["-Ws"]);
    // "Num: Value Size Type Bind Vis Ndx Name" -> (type, bind, section name)
    let symbol = |name: &str| -> (String, String, String) {
        let f: Vec<&str> = symbols
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.len() == 8 && f[7] == name)
            .unwrap_or_else(|| panic!("no {name} in readelf -Ws"));
        let section = section_names
            .iter()
            .find(|(i, _)| i == f[6])
            .map(|(_, n)| n.clone())
            .unwrap_or_else(|| f[6].to_string());
        (f[3].to_string(), f[4].to_string(), section)
    };
    for hook in HOOKS {
        assert_eq!(
            symbol(hook),
            ("FUNC".into(), "GLOBAL".into(), ".text".into())
        );
        assert_eq!(
            symbol(&format!("__ksymtab_{hook}")),
            ("NOTYPE".into(), "LOCAL".into(), "__ksymtab".into()),
            "a plain export's entry sits in __ksymtab"
        );
        assert_eq!(symbol(&format!("__kstrtab_{hook}")).2, "__ksymtab_strings");
    }
    assert_eq!(symbol("__ksymtab_rpcrdma_reply_handler").2, "__ksymtab_gpl");
    let notes = readelf(&["-n"]);
    assert!(
        notes.contains(&format!("Build ID: {}", spec.build_id_hex().unwrap())),
        "{notes}"
    );
}

/// `man --warnings` renders every page the packages install without a warning (groff's and
/// man's own): the hand-written one, and those `nfs-gds generate-man` writes.
#[test]
fn man_renders_every_page_without_warnings() {
    use clap::ValueEnum;
    use nfs_gds::cli::reference::man::{page, Page};
    let tmp = tempfile::tempdir().unwrap();
    let mut paths =
        vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/man/nfs-gds.toml.5")];
    for p in Page::value_variants() {
        let path = tmp.path().join(p.file_name());
        std::fs::write(&path, page(*p).unwrap()).unwrap();
        paths.push(path);
    }
    for path in &paths {
        let out = Command::new("man")
            .args(["--warnings", "-l"])
            .arg(path)
            .env("MANWIDTH", "80")
            .env("LC_ALL", "C.UTF-8")
            .env("MAN_KEEP_FORMATTING", "")
            .output()
            .expect("the external-tools tests need `man` (Debian: man-db)");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{}: {stderr}", path.display());
        assert!(stderr.is_empty(), "{}: {stderr}", path.display());
        assert!(String::from_utf8_lossy(&out.stdout).contains("NAME"));
    }
    assert_eq!(paths.len(), 3);
}
