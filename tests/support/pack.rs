//! Compresses module and kernel images the way distributions do, with the real command-line
//! tools, so the bytes under test are what `modules_install` and distro signing scripts write.
//!
//! A missing tool is a test failure with a message saying what to install, never a skip.

use std::io::Write;
use std::process::{Command, Stdio};

/// How a module file is stored on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    /// Plain ELF `.ko` (Debian 12).
    Plain,
    /// `xz --check=crc32 --lzma2=dict=1MiB` (Debian 13, RHEL, older kernels' `modules_install`).
    XzCrc32,
    /// `xz --lzma2=dict=2MiB`: today's `scripts/Makefile.modinst`, default CRC64 check.
    XzCrc64,
    /// `zstd -T0 -q` (Ubuntu, Arch).
    Zstd,
    /// `gzip -n`.
    Gzip,
}

impl Packing {
    pub const ALL: [Packing; 5] = [
        Packing::Plain,
        Packing::XzCrc32,
        Packing::XzCrc64,
        Packing::Zstd,
        Packing::Gzip,
    ];

    /// The file name suffix a distribution gives it.
    pub fn suffix(self) -> &'static str {
        match self {
            Packing::Plain => ".ko",
            Packing::XzCrc32 | Packing::XzCrc64 => ".ko.xz",
            Packing::Zstd => ".ko.zst",
            Packing::Gzip => ".ko.gz",
        }
    }

    /// The name nfs-gds reports for it.
    pub fn compression(self) -> &'static str {
        match self {
            Packing::Plain => "none",
            Packing::XzCrc32 | Packing::XzCrc64 => "xz",
            Packing::Zstd => "zstd",
            Packing::Gzip => "gzip",
        }
    }
}

/// Runs `tool args…` with `input` on stdin and returns stdout.
pub fn filter(tool: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("the tests need `{tool}` on PATH (Debian: xz-utils, zstd, gzip): {e}")
        });
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let data = input.to_vec();
    let writer = std::thread::spawn(move || {
        // A tool that stops reading early (it failed) closes the pipe; its status says why.
        let _ = stdin.write_all(&data);
    });
    let out = child.wait_with_output().expect("tool runs to the end");
    writer.join().expect("stdin writer");
    assert!(
        out.status.success(),
        "`{tool} {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

pub fn pack(elf: &[u8], how: Packing) -> Vec<u8> {
    match how {
        Packing::Plain => elf.to_vec(),
        Packing::XzCrc32 => filter("xz", &["--check=crc32", "--lzma2=dict=1MiB", "-c"], elf),
        Packing::XzCrc64 => filter("xz", &["--lzma2=dict=2MiB", "-c"], elf),
        Packing::Zstd => filter("zstd", &["-T0", "-q", "-c"], elf),
        Packing::Gzip => filter("gzip", &["-n", "-c"], elf),
    }
}

/// The compressed-payload formats of a `vmlinuz`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// x86 `bzImage` with `CONFIG_KERNEL_XZ`: `xz --check=crc32 --x86 --lzma2=,dict=32MiB`
    /// (`scripts/xz_wrap.sh`), Debian 12.
    Xz,
    /// `CONFIG_KERNEL_ZSTD` (`zstd -22 --ultra` upstream; level does not matter here), Debian 13.
    Zstd,
    Gzip,
}

/// A fake `vmlinuz`: a boot stub (with a false gzip magic in it, as real stubs can have), the
/// compressed kernel, then trailing data. The payload is 3 MiB of kernel-like bytes that contain
/// the GPL-only rule's warning text when `with_rule`.
pub fn vmlinuz(with_rule: bool, format: ImageFormat) -> Vec<u8> {
    let mut payload: Vec<u8> = Vec::with_capacity(3 << 20);
    let mut x = 0x1234_5678_u64;
    while payload.len() < 3 << 20 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        payload.extend_from_slice(b"\x48\x8b\x47");
        payload.push((x >> 56) as u8);
        payload.extend_from_slice(b"kernel string table entry \0");
    }
    let text: &[u8] = if with_rule {
        b"\x014failing symbol_get of non-GPLONLY symbol %s.\n\0"
    } else {
        b"\x014some other warning that is not the rule %s.\n\0"
    };
    let at = payload.len() * 2 / 3;
    payload[at..at + text.len()].copy_from_slice(text);
    let compressed = match format {
        ImageFormat::Xz => filter(
            "xz",
            &["--check=crc32", "--x86", "--lzma2=dict=32MiB", "-c"],
            &payload,
        ),
        ImageFormat::Zstd => filter("zstd", &["-q", "-c"], &payload),
        ImageFormat::Gzip => filter("gzip", &["-n", "-c"], &payload),
    };
    let mut image = b"MZ\x00\x00 boot stub \x1f\x8b\x08 not a real gzip stream ".to_vec();
    image.resize(16 << 10, 0);
    image.extend_from_slice(&compressed);
    image.extend_from_slice(&[0u8; 4096]);
    image
}
