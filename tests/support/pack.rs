//! Compresses module and kernel images the way distributions do, with the encoders the crate
//! already links (liblzma, zstd, flate2) set up as the distributions' tools are, so the default
//! test suite needs nothing but the Rust toolchain. The `external-tools` feature adds a test
//! group that checks these settings against the real `xz`, `zstd` and `gzip` ([`filter`]).

use std::io::Write;
use std::process::{Command, Stdio};

use liblzma::stream::{Check, Filters, LzmaOptions, Stream};
/// How a module file is stored on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    /// Plain ELF `.ko` (Debian 12).
    Plain,
    /// `xz --check=crc32 --lzma2=dict=1MiB`: `scripts/Makefile.modinst` (the in-kernel
    /// decompressor checks only CRC32), Debian 13, RHEL.
    XzCrc32,
    /// `xz` with its defaults (preset 6: 8 MiB dictionary, CRC64), as some signing scripts do.
    XzCrc64,
    /// `zstd -T0 -q`: level 3 (Ubuntu, Arch).
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

/// xz with `check` and a dictionary of `dict` bytes, LZMA2 preset 6 otherwise (the `xz`
/// default level), optionally behind the x86 BCJ filter (`--x86`).
pub fn xz(data: &[u8], check: Check, dict: u32, x86: bool) -> Vec<u8> {
    let mut lzma2 = LzmaOptions::new_preset(6).expect("preset 6 exists");
    lzma2.dict_size(dict);
    let mut filters = Filters::new();
    if x86 {
        filters.x86();
    }
    filters.lzma2(&lzma2);
    let stream = Stream::new_stream_encoder(&filters, check).expect("valid xz filter chain");
    let mut enc = liblzma::write::XzEncoder::new_stream(Vec::new(), stream);
    enc.write_all(data).expect("xz encodes into memory");
    enc.finish().expect("xz finishes")
}

/// A single zstd frame at `level` with the content size and an XXH64 checksum, as the `zstd`
/// command line writes by default.
pub fn zstd(data: &[u8], level: i32) -> Vec<u8> {
    let mut c = zstd::bulk::Compressor::new(level).expect("zstd level");
    c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))
        .expect("zstd checksum flag");
    c.compress(data).expect("zstd encodes into memory")
}

/// A zstd stream as the kernel build writes a `vmlinuz` payload (`cat vmlinux.bin | zstd -22
/// --ultra`, then the size appended): streamed, so the frame has no content size and declares
/// its whole window (`2^window_log`), followed by the decompressed size as a little-endian u32.
pub fn zstd_kernel_stream(data: &[u8], window_log: u32) -> Vec<u8> {
    use zstd::zstd_safe::CParameter;
    let mut enc = zstd::stream::Encoder::new(Vec::new(), 1).expect("zstd encoder");
    enc.set_parameter(CParameter::WindowLog(window_log))
        .expect("zstd window log");
    enc.include_contentsize(false).expect("no content size");
    enc.write_all(data).expect("zstd encodes into memory");
    let mut out = enc.finish().expect("zstd finishes");
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

/// `gzip -n`: no file name, no time stamp, level 6, Unix as the operating system.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::GzBuilder::new()
        .operating_system(3)
        .write(Vec::new(), flate2::Compression::new(6));
    enc.write_all(data).expect("gzip encodes into memory");
    enc.finish().expect("gzip finishes")
}

/// The dictionary `xz` uses at its default level (preset 6).
pub const XZ_DEFAULT_DICT: u32 = 8 << 20;

/// Compresses `elf` as `how` says.
pub fn pack(elf: &[u8], how: Packing) -> Vec<u8> {
    match how {
        Packing::Plain => elf.to_vec(),
        Packing::XzCrc32 => xz(elf, Check::Crc32, 1 << 20, false),
        Packing::XzCrc64 => xz(elf, Check::Crc64, XZ_DEFAULT_DICT, false),
        Packing::Zstd => zstd(elf, 3),
        Packing::Gzip => gzip(elf),
    }
}

/// The command line of the distribution tool that writes `how` (None for a plain `.ko`).
pub fn tool_for(how: Packing) -> Option<(&'static str, &'static [&'static str])> {
    match how {
        Packing::Plain => None,
        Packing::XzCrc32 => Some(("xz", &["--check=crc32", "--lzma2=dict=1MiB", "-c"])),
        Packing::XzCrc64 => Some(("xz", &["-c"])),
        Packing::Zstd => Some(("zstd", &["-T0", "-q", "-c"])),
        Packing::Gzip => Some(("gzip", &["-n", "-c"])),
    }
}

/// Runs `tool args…` with `input` on stdin and returns stdout (the `external-tools` tests).
pub fn filter(tool: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("the external-tools tests need `{tool}` on PATH (Debian: xz-utils, zstd, gzip): {e}")
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

/// How far into a fake image the compressed kernel starts: the boot sector and 31 setup
/// sectors of a bzImage.
const STUB_BYTES: usize = 16 << 10;

/// A fake `vmlinuz`: a boot stub (with a false gzip magic in it, as real stubs can have), the
/// compressed kernel, then trailing data. The payload is 3 MiB of kernel-like bytes that contain
/// the GPL-only rule's warning text when `with_rule`. No header names the payload.
pub fn vmlinuz(with_rule: bool, format: ImageFormat) -> Vec<u8> {
    around_stub(&image_payload(&kernel_text(with_rule), format))
}

/// [`vmlinuz`] with the x86 boot protocol header a real bzImage has (version 2.15, 31 setup
/// sectors, `payload_offset` 0, `payload_length`), which names the compressed kernel.
pub fn bzimage(with_rule: bool, format: ImageFormat) -> Vec<u8> {
    bzimage_around(&image_payload(&kernel_text(with_rule), format))
}

/// A bzImage ([`bzimage`]) whose header names `compressed` as its payload.
pub fn bzimage_around(compressed: &[u8]) -> Vec<u8> {
    let mut image = around_stub(compressed);
    image[0x1f1] = (STUB_BYTES / 512 - 1) as u8;
    image[0x202..0x206].copy_from_slice(b"HdrS");
    image[0x206..0x208].copy_from_slice(&0x020fu16.to_le_bytes());
    image[0x248..0x24c].copy_from_slice(&0u32.to_le_bytes());
    image[0x24c..0x250].copy_from_slice(&(compressed.len() as u32).to_le_bytes());
    image
}

/// 3 MiB of kernel-like bytes, with the GPL-only rule's warning text two thirds in when
/// `with_rule` (another warning otherwise).
fn kernel_text(with_rule: bool) -> Vec<u8> {
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
    payload
}

/// The stub, `compressed` at [`STUB_BYTES`], then 4 KiB of trailing data.
fn around_stub(compressed: &[u8]) -> Vec<u8> {
    let mut image = b"MZ\x00\x00 boot stub \x1f\x8b\x08 not a real gzip stream ".to_vec();
    image.resize(STUB_BYTES, 0);
    image.extend_from_slice(compressed);
    image.extend_from_slice(&[0u8; 4096]);
    image
}

/// How the kernel build compresses a `vmlinuz` payload.
pub fn image_payload(payload: &[u8], format: ImageFormat) -> Vec<u8> {
    match format {
        ImageFormat::Xz => xz(payload, Check::Crc32, 32 << 20, true),
        ImageFormat::Zstd => zstd(payload, 3),
        ImageFormat::Gzip => gzip(payload),
    }
}
