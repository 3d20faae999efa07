//! Looks for a byte string inside a kernel image's decompressed payload, without holding the
//! payload — or the image — in memory: an image is an [`ImageSource`] read at offsets (an open
//! file, or bytes in memory), its header is read first, and only the payload is streamed through
//! the decoder, so a 1 GiB `vmlinuz` costs the decoder's buffers, not a gigabyte.
//!
//! A `vmlinuz` is a boot stub followed by the compressed kernel (gzip, xz or zstd on the
//! distributions we know; Debian 12 uses xz, Debian 13 zstd), or a plain ELF `vmlinux`. Where
//! the image says where its payload is, only that payload is read: the x86 boot protocol
//! header (`HdrS`, version 2.08 or later: `payload_offset`/`payload_length` after the setup
//! sectors) and the EFI zboot header of arm64/riscv (`zimg`: offset and size). Otherwise at
//! most [`MAX_CANDIDATES`] positions where a supported magic number appears are tried, in file
//! order. Every scan runs within a [`Budget`] of time and decompressed bytes; a scan that runs
//! out says it could not decide instead of stalling a mount at boot. The two headers are a
//! handful of little-endian fields, read here by hand: the crates that model them (rust-vmm's
//! `linux-loader`) are kernel loaders that would bring a VMM's dependencies for four integers.

use std::fs::File;
use std::io::{BufReader, Read};
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use super::decompress::Compression;

/// Magic-number positions tried when the image has no header naming its payload.
pub const MAX_CANDIDATES: usize = 4;

/// How much one scan may spend: wall time and decompressed bytes, over all candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub time: Duration,
    pub bytes: u64,
}

impl Budget {
    /// Decompressing a real payload (30-70 MiB) takes about a second on a slow core.
    pub const DEFAULT: Budget = Budget {
        time: Duration::from_secs(10),
        bytes: IMAGE_PAYLOAD_CAP,
    };
}

/// Largest payload read: kernel images decompress to well under 100 MiB.
pub const IMAGE_PAYLOAD_CAP: u64 = 512 << 20;

/// A candidate that fails before producing this much output is taken for a false magic match.
const MIN_REAL_PAYLOAD: u64 = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanOutcome {
    /// The text is in the payload of the given format.
    Found { format: &'static str },
    /// The whole payload decompressed and the text is not in it.
    NotFound { format: &'static str },
    /// No part of the file decompressed to a kernel-sized payload.
    NoPayload,
    /// The file could not be read, or the payload broke off midway.
    Error(String),
}

/// Where the image header says the compressed kernel is, when it says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeclaredPayload {
    pub offset: u64,
    pub length: u64,
    /// `bzImage` or `zboot`.
    pub header: &'static str,
}

fn le_u32(image: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(image.get(at..at + 4)?.try_into().ok()?))
}

fn le_u16(image: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(image.get(at..at + 2)?.try_into().ok()?))
}

/// The payload an x86 boot protocol or EFI zboot header declares, from the image's first bytes
/// (`head`, at least [`HEADER_BYTES`] of them when the file has that many) and its size. `Err`
/// when a header is there but its payload does not fit in the file.
pub fn declared_payload(head: &[u8], size: u64) -> Result<Option<DeclaredPayload>, String> {
    // x86: boot protocol header at 0x1f1 (Documentation/arch/x86/boot.rst).
    if head.get(0x202..0x206) == Some(b"HdrS") && le_u16(head, 0x206).unwrap_or(0) >= 0x0208 {
        let setup_sects = match head[0x1f1] {
            0 => 4,
            n => u64::from(n),
        };
        let (Some(offset), Some(length)) = (le_u32(head, 0x248), le_u32(head, 0x24c)) else {
            return Ok(None);
        };
        let start = (setup_sects + 1) * 512 + u64::from(offset);
        return fits(size, start, u64::from(length), "bzImage").map(Some);
    }
    // EFI zboot (drivers/firmware/efi/libstub/zboot-header.S): "MZ", 0, "zimg", offset, size.
    if head.starts_with(b"MZ") && head.get(4..8) == Some(b"zimg") {
        let (Some(offset), Some(length)) = (le_u32(head, 8), le_u32(head, 12)) else {
            return Ok(None);
        };
        return fits(size, u64::from(offset), u64::from(length), "zboot").map(Some);
    }
    Ok(None)
}

/// How much of the image's start the headers are read from (both lie in the first 0x250 bytes).
pub const HEADER_BYTES: usize = 4096;

fn fits(
    size: u64,
    offset: u64,
    length: u64,
    header: &'static str,
) -> Result<DeclaredPayload, String> {
    match offset.checked_add(length) {
        Some(end) if end <= size && length > 0 => Ok(DeclaredPayload {
            offset,
            length,
            header,
        }),
        _ => Err(format!(
            "the {header} header declares a payload of {length} bytes at offset {offset}, beyond the file's {size} bytes"
        )),
    }
}

/// The compression a payload starts with, by magic number.
fn format_of(payload: &[u8]) -> Option<Compression> {
    MAGICS
        .iter()
        .find(|(magic, _)| payload.starts_with(magic))
        .map(|(_, f)| *f)
}

/// What a budget-bounded decode of one candidate gave.
enum Tried {
    Decided(ScanOutcome),
    /// Not a kernel payload (failed early, or too small to be one).
    NotAPayload,
    OutOfBudget(String),
}

fn try_candidate(
    format: Compression,
    input: Section<'_>,
    needle: &[u8],
    deadline: Instant,
    bytes_left: &mut u64,
) -> Tried {
    let offset = input.pos;
    let Some(reader) = single_stream_decoder(format, input) else {
        return Tried::NotAPayload;
    };
    let limit = (*bytes_left).min(IMAGE_PAYLOAD_CAP);
    let result = stream_contains(reader, needle, limit, Some(deadline));
    let produced = match &result {
        Ok((_, p)) | Err((_, p)) => *p,
    };
    *bytes_left = bytes_left.saturating_sub(produced);
    match result {
        Ok((true, _)) => Tried::Decided(ScanOutcome::Found {
            format: format.as_str(),
        }),
        Ok((false, produced)) if produced >= MIN_REAL_PAYLOAD => {
            Tried::Decided(ScanOutcome::NotFound {
                format: format.as_str(),
            })
        }
        Ok(_) => Tried::NotAPayload,
        Err((e, _)) if e == OUT_OF_TIME || e == OUT_OF_BYTES => Tried::OutOfBudget(e),
        Err((e, produced)) if produced >= MIN_REAL_PAYLOAD => {
            Tried::Decided(ScanOutcome::Error(format!(
                "the {} payload at offset {offset} broke off after {produced} bytes: {e}",
                format.as_str()
            )))
        }
        Err(_) => Tried::NotAPayload,
    }
}

fn undecided(why: &str, budget: Budget) -> ScanOutcome {
    ScanOutcome::Error(format!(
        "could not decide: {why} (budget {} s, {} MiB decompressed)",
        budget.time.as_secs(),
        budget.bytes >> 20
    ))
}

/// Where an image's bytes come from: memory, or an open file read piece by piece (so a 1 GiB
/// file costs what its payload's decoder holds, not its size).
pub trait ImageSource {
    fn size(&self) -> u64;
    /// Fills `buf` from offset `at`; fewer bytes only at the end.
    fn read_at(&self, at: u64, buf: &mut [u8]) -> std::io::Result<usize>;
}

impl ImageSource for &[u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }

    fn read_at(&self, at: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let rest = usize::try_from(at)
            .ok()
            .and_then(|at| self.get(at..))
            .unwrap_or_default();
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        Ok(n)
    }
}

/// An open image file of a known size (the size `fstat` gave when it was checked).
#[derive(Debug)]
pub struct FileImage<'a> {
    pub file: &'a File,
    pub size: u64,
}

impl ImageSource for FileImage<'_> {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, at: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let want = buf
            .len()
            .min(usize::try_from(self.size.saturating_sub(at)).unwrap_or(usize::MAX));
        let mut done = 0;
        while done < want {
            match self.file.read_at(&mut buf[done..want], at + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
}

/// The bytes `pos..end` of a source, read in order.
struct Section<'a> {
    src: &'a dyn ImageSource,
    pos: u64,
    end: u64,
}

impl<'a> Section<'a> {
    fn new(src: &'a dyn ImageSource, pos: u64, len: u64) -> Self {
        Section {
            src,
            pos,
            end: pos.saturating_add(len).min(src.size()),
        }
    }
}

impl Read for Section<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = usize::try_from(self.end.saturating_sub(self.pos)).unwrap_or(usize::MAX);
        let n = buf.len().min(left);
        if n == 0 {
            return Ok(0);
        }
        let got = self.src.read_at(self.pos, &mut buf[..n])?;
        self.pos += got as u64;
        Ok(got)
    }
}

/// Scans image bytes for `needle` in its payload, within `budget`.
pub fn scan_bytes(image: &[u8], needle: &[u8], budget: Budget) -> ScanOutcome {
    scan(&image, needle, budget)
}

/// Scans an open image file for `needle` in its payload, within `budget`: its header is read,
/// then only the payload it declares is streamed through the decoder.
pub fn scan_file(image: &FileImage<'_>, needle: &[u8], budget: Budget) -> ScanOutcome {
    scan(image, needle, budget)
}

fn scan(src: &dyn ImageSource, needle: &[u8], budget: Budget) -> ScanOutcome {
    let deadline = Instant::now() + budget.time;
    let mut bytes_left = budget.bytes;
    let size = src.size();
    let mut head = vec![0u8; HEADER_BYTES];
    let head = match src.read_at(0, &mut head) {
        Ok(n) => &head[..n],
        Err(e) => return ScanOutcome::Error(format!("cannot read the image: {e}")),
    };
    if head.starts_with(b"\x7fELF") {
        return match stream_contains(
            Section::new(src, 0, size),
            needle,
            budget.bytes,
            Some(deadline),
        ) {
            Ok((true, _)) => ScanOutcome::Found { format: "elf" },
            Ok((false, _)) => ScanOutcome::NotFound { format: "elf" },
            Err((e, _)) if e == OUT_OF_TIME || e == OUT_OF_BYTES => undecided(&e, budget),
            Err((e, _)) => ScanOutcome::Error(e),
        };
    }
    match declared_payload(head, size) {
        Err(e) => return ScanOutcome::Error(e),
        Ok(Some(p)) => {
            let mut magic = [0u8; 8];
            let n = src.read_at(p.offset, &mut magic).unwrap_or(0);
            let Some(format) = format_of(&magic[..n]) else {
                return ScanOutcome::Error(format!(
                    "the {} payload at offset {} is compressed in a format nfs-gds does not read (only gzip, xz and zstd)",
                    p.header, p.offset
                ));
            };
            let payload = Section::new(src, p.offset, p.length);
            return match try_candidate(format, payload, needle, deadline, &mut bytes_left) {
                Tried::Decided(o) => o,
                Tried::OutOfBudget(e) => undecided(&e, budget),
                Tried::NotAPayload => ScanOutcome::Error(format!(
                    "the {} {} payload at offset {} does not decompress to a kernel",
                    p.header,
                    format.as_str(),
                    p.offset
                )),
            };
        }
        Ok(None) => {}
    }
    let all = match candidates(src, MAX_CANDIDATES + 1, deadline) {
        Ok(all) => all,
        Err(e) if e == OUT_OF_TIME => return undecided(&e, budget),
        Err(e) => return ScanOutcome::Error(e),
    };
    for &(offset, format) in all.iter().take(MAX_CANDIDATES) {
        let rest = Section::new(src, offset, size - offset);
        match try_candidate(format, rest, needle, deadline, &mut bytes_left) {
            Tried::Decided(o) => return o,
            Tried::OutOfBudget(e) => return undecided(&e, budget),
            Tried::NotAPayload => {}
        }
    }
    if all.len() > MAX_CANDIDATES {
        return undecided(
            &format!(
                "no header names the payload and none of the first {MAX_CANDIDATES} possible starts decompressed to a kernel"
            ),
            budget,
        );
    }
    ScanOutcome::NoPayload
}

/// A decoder that stops at the end of the first stream: a kernel image has other data after
/// its payload, which a multi-stream decoder would try to read as a second stream.
fn single_stream_decoder(format: Compression, input: Section<'_>) -> Option<Box<dyn Read + '_>> {
    let input = BufReader::with_capacity(256 << 10, input);
    Some(match format {
        Compression::Gzip => Box::new(flate2::bufread::GzDecoder::new(input)),
        Compression::Xz => Box::new(liblzma::bufread::XzDecoder::new(input)),
        Compression::Zstd => {
            let mut d = zstd::stream::read::Decoder::with_buffer(input)
                .ok()?
                .single_frame();
            // Kernel images use up to `zstd -22 --ultra`: windows of 2^27 and beyond.
            d.window_log_max(31).ok()?;
            Box::new(d)
        }
        Compression::None => Box::new(input),
    })
}

const MAGICS: [(&[u8], Compression); 3] = [
    (b"\xfd7zXZ\x00", Compression::Xz),
    (b"\x28\xb5\x2f\xfd", Compression::Zstd),
    (b"\x1f\x8b\x08", Compression::Gzip),
];

/// The first `limit` offsets where a supported compressed stream may start, in file order,
/// read a chunk at a time (with the longest magic's overlap) until `deadline`.
fn candidates(
    src: &dyn ImageSource,
    limit: usize,
    deadline: Instant,
) -> Result<Vec<(u64, Compression)>, String> {
    const CHUNK: usize = 1 << 20;
    let overlap = MAGICS.iter().map(|(m, _)| m.len()).max().unwrap_or(0) - 1;
    let mut found = Vec::new();
    let mut buf = vec![0u8; CHUNK + overlap];
    let mut at = 0u64;
    while at < src.size() && found.len() < limit {
        let n = src.read_at(at, &mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        // Positions in the overlap are looked at again with the next chunk.
        let last = if (n as u64) < src.size() - at {
            n - overlap.min(n)
        } else {
            n
        };
        for i in 0..last.max(1) {
            if found.len() >= limit {
                break;
            }
            if let Some(format) = format_of(&buf[i..n]) {
                found.push((at + i as u64, format));
            }
        }
        at += last.max(1) as u64;
        if Instant::now() >= deadline {
            return Err(OUT_OF_TIME.to_string());
        }
    }
    Ok(found)
}

const OUT_OF_TIME: &str = "the scan ran out of time";
const OUT_OF_BYTES: &str = "the scan decompressed its byte budget";

/// Reads `reader` to the end (or `cap`, or `deadline`), reporting whether `needle` occurs and
/// how many bytes were produced. Keeps only one buffer plus the needle's length of overlap in
/// memory.
fn stream_contains(
    mut reader: impl Read,
    needle: &[u8],
    cap: u64,
    deadline: Option<Instant>,
) -> Result<(bool, u64), (String, u64)> {
    let keep = needle.len().saturating_sub(1);
    let mut buf = vec![0u8; 256 << 10];
    let mut carry = 0usize;
    let mut produced = 0u64;
    loop {
        let n = match reader.read(&mut buf[carry..]) {
            Ok(0) => return Ok((false, produced)),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err((e.to_string(), produced)),
        };
        produced += n as u64;
        let filled = carry + n;
        if contains(&buf[..filled], needle) {
            return Ok((true, produced));
        }
        if produced > cap {
            return Err((OUT_OF_BYTES.to_string(), produced));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err((OUT_OF_TIME.to_string(), produced));
        }
        carry = keep.min(filled);
        buf.copy_within(filled - carry..filled, 0);
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    if needle.is_empty() {
        return true;
    }
    let first = needle[0];
    hay.iter()
        .enumerate()
        .any(|(i, &b)| b == first && hay.get(i..i + needle.len()).is_some_and(|w| w == needle))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn payload_with(text: &[u8]) -> Vec<u8> {
        let mut p: Vec<u8> = (0..(3u32 << 20)).map(|i| (i % 251) as u8).collect();
        let at = p.len() / 2 + 3;
        p[at..at + text.len()].copy_from_slice(text);
        p
    }

    fn bzimage(payload: &[u8]) -> Vec<u8> {
        // A boot stub with a false gzip magic in it, then the real payload.
        let mut img = b"MZ stub \x1f\x8b\x08 not really gzip ".to_vec();
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(payload).unwrap();
        img.extend(e.finish().unwrap());
        img.extend_from_slice(b"trailing data");
        img
    }

    #[test]
    fn finds_text_across_buffer_boundaries() {
        let needle = b"failing symbol_get of non-GPLONLY symbol";
        let img = bzimage(&payload_with(needle));
        assert_eq!(
            scan_bytes(&img, needle, Budget::DEFAULT),
            ScanOutcome::Found { format: "gzip" }
        );
    }

    #[test]
    fn whole_payload_without_text_is_not_found() {
        let img = bzimage(&payload_with(b"something else entirely"));
        assert_eq!(
            scan_bytes(
                &img,
                b"failing symbol_get of non-GPLONLY symbol",
                Budget::DEFAULT
            ),
            ScanOutcome::NotFound { format: "gzip" }
        );
    }

    #[test]
    fn no_payload_in_random_bytes() {
        assert_eq!(
            scan_bytes(b"just a text file", b"x", Budget::DEFAULT),
            ScanOutcome::NoPayload
        );
    }

    #[test]
    fn needle_split_by_reads_is_still_found() {
        let needle = b"abcdef";
        // A reader that returns one byte at a time.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                if self.0.is_empty() || out.is_empty() {
                    return Ok(0);
                }
                out[0] = self.0[0];
                self.0 = &self.0[1..];
                Ok(1)
            }
        }
        let data = b"xxxxabcdefyyyy";
        assert_eq!(
            stream_contains(Trickle(data), needle, 1 << 20, None),
            Ok((true, 10))
        );
    }

    const NEEDLE: &[u8] = b"failing symbol_get of non-GPLONLY symbol";

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn xz(data: &[u8]) -> Vec<u8> {
        let mut e = liblzma::write::XzEncoder::new(Vec::new(), 0);
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// 16 MiB of `\x1f\x8b\x08` false gzip starts.
    fn false_gzip_magics() -> Vec<u8> {
        b"\x1f\x8b\x08\x00".repeat(4 << 20)
    }

    /// A bzImage: boot sector and one setup sector full of false magics, then the protected-mode
    /// part, whose payload starts `pad` bytes in.
    fn bzimage_with_header(payload: &[u8], pad: usize) -> Vec<u8> {
        let mut img = b"\x1f\x8b\x08\x00".repeat(256); // 2 sectors
        img[0..2].copy_from_slice(b"MZ");
        img[0x1f1] = 1;
        img[0x202..0x206].copy_from_slice(b"HdrS");
        img[0x206..0x208].copy_from_slice(&0x020fu16.to_le_bytes());
        img[0x248..0x24c].copy_from_slice(&(pad as u32).to_le_bytes());
        img[0x24c..0x250].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        img.extend(b"\xfd7zXZ\x00 decompressor stub ".iter().cycle().take(pad));
        img.extend_from_slice(payload);
        img.extend(b"\x28\xb5\x2f\xfd trailer");
        img
    }

    #[test]
    fn the_bzimage_header_names_the_only_payload_read() {
        let payload = gzip(&payload_with(NEEDLE));
        let img = bzimage_with_header(&payload, 5000);
        let p = declared_payload(&img, img.len() as u64).unwrap().unwrap();
        assert_eq!(
            (p.offset, p.length, p.header),
            (1024 + 5000, payload.len() as u64, "bzImage")
        );
        assert_eq!(
            scan_bytes(&img, NEEDLE, Budget::DEFAULT),
            ScanOutcome::Found { format: "gzip" }
        );
        let img = bzimage_with_header(&xz(&payload_with(b"nothing here")), 77);
        assert_eq!(
            scan_bytes(&img, NEEDLE, Budget::DEFAULT),
            ScanOutcome::NotFound { format: "xz" }
        );
    }

    #[test]
    fn a_header_pointing_past_the_file_or_at_an_unknown_format_is_named() {
        let mut img = bzimage_with_header(&gzip(b"x"), 10);
        img[0x24c..0x250].copy_from_slice(&u32::MAX.to_le_bytes());
        let ScanOutcome::Error(e) = scan_bytes(&img, NEEDLE, Budget::DEFAULT) else {
            panic!("a payload beyond the file is an error");
        };
        assert!(e.contains("beyond the file"), "{e}");
        let img = bzimage_with_header(b"\x02\x21\x4c\x18 lz4 legacy", 10);
        let ScanOutcome::Error(e) = scan_bytes(&img, NEEDLE, Budget::DEFAULT) else {
            panic!("lz4 is not read");
        };
        assert!(e.contains("does not read (only gzip, xz and zstd)"), "{e}");
    }

    #[test]
    fn the_efi_zboot_header_names_the_payload() {
        let payload = gzip(&payload_with(NEEDLE));
        let mut img = b"MZ\0\0zimg".to_vec();
        img.extend_from_slice(&64u32.to_le_bytes());
        img.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        img.resize(64, 0);
        img.extend_from_slice(&payload);
        assert_eq!(
            declared_payload(&img, img.len() as u64)
                .unwrap()
                .unwrap()
                .header,
            "zboot"
        );
        assert_eq!(
            scan_bytes(&img, NEEDLE, Budget::DEFAULT),
            ScanOutcome::Found { format: "gzip" }
        );
    }

    #[test]
    fn sixteen_mib_of_false_gzip_magics_is_undecided_not_a_stall() {
        let ScanOutcome::Error(e) = scan_bytes(&false_gzip_magics(), NEEDLE, Budget::DEFAULT)
        else {
            panic!("must not claim an answer");
        };
        assert!(
            e.starts_with("could not decide: no header names the payload and none of the first 4"),
            "{e}"
        );
    }

    #[test]
    fn many_small_xz_streams_are_undecided() {
        let one = xz(b"tiny");
        let img: Vec<u8> = one.iter().copied().cycle().take(2 << 20).collect();
        let ScanOutcome::Error(e) = scan_bytes(&img, NEEDLE, Budget::DEFAULT) else {
            panic!("must not claim an answer");
        };
        assert!(e.starts_with("could not decide"), "{e}");
    }

    #[test]
    fn a_spent_budget_is_undecided() {
        let img = bzimage_with_header(&gzip(&payload_with(b"nothing")), 10);
        let none = Budget {
            time: Duration::ZERO,
            bytes: IMAGE_PAYLOAD_CAP,
        };
        let ScanOutcome::Error(e) = scan_bytes(&img, NEEDLE, none) else {
            panic!("no time, no answer");
        };
        assert!(
            e.starts_with("could not decide: the scan ran out of time"),
            "{e}"
        );
        let small = Budget {
            time: Duration::from_secs(60),
            bytes: 1 << 20,
        };
        let ScanOutcome::Error(e) = scan_bytes(&img, NEEDLE, small) else {
            panic!("no bytes, no answer");
        };
        assert!(e.contains("decompressed its byte budget"), "{e}");
    }
}
