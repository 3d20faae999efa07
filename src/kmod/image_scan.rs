//! Looks for a byte string inside a kernel image's decompressed payload, without holding the
//! payload in memory.
//!
//! A `vmlinuz` is a boot stub followed by the compressed kernel (gzip, xz or zstd on the
//! distributions we know; Debian 12 uses xz, Debian 13 zstd), or a plain ELF `vmlinux`. The
//! payload's offset differs per architecture and format, so every position where a supported
//! magic number appears is tried in file order until one decompresses.

use std::io::Read;
use std::path::Path;

use super::decompress::Compression;
use crate::host::{FileKind, Root};

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

/// Scans the file at `path` (named on the command line) for `needle`.
pub fn scan_file(path: &Path, needle: &[u8]) -> ScanOutcome {
    match crate::host::reader::read_named(path, FileKind::KernelImage) {
        Ok(Some(file)) => scan_bytes(&file.bytes, needle),
        Ok(None) => ScanOutcome::Error(format!("cannot read {}: no such file", path.display())),
        Err(e) => ScanOutcome::Error(e.to_string()),
    }
}

/// Scans the image at `path` (a host path below `root`, read inside it) for `needle`, answered
/// from `cache` when it holds the answer for this very version of the image (same identity and
/// content hash): the scan decompresses tens of MB.
pub fn scan_file_with_cache(
    root: &Root,
    path: &Path,
    needle: &[u8],
    cache: Option<&super::cache::FactsCache>,
) -> ScanOutcome {
    let rel = root.rel_of(path).unwrap_or_else(|| path.to_owned());
    let file = match root.read_file(&rel, FileKind::KernelImage) {
        Ok(Some(file)) => file,
        Ok(None) => {
            return ScanOutcome::Error(format!("cannot read {}: no such file", path.display()))
        }
        Err(e) => return ScanOutcome::Error(e.to_string()),
    };
    let Some(cache) = cache else {
        return scan_bytes(&file.bytes, needle);
    };
    let file = super::cache::ReadFile::from(file);
    let key = file.identity();
    if let Some(outcome) = cache.image_scan(&key, needle) {
        return outcome;
    }
    let outcome = scan_bytes(&file.bytes, needle);
    cache.store_image_scan(&key, needle, &outcome);
    outcome
}

/// Scans image bytes for `needle` in the first payload that decompresses.
pub fn scan_bytes(image: &[u8], needle: &[u8]) -> ScanOutcome {
    if image.starts_with(b"\x7fELF") {
        return match stream_contains(image, needle, IMAGE_PAYLOAD_CAP) {
            Ok((true, _)) => ScanOutcome::Found { format: "elf" },
            Ok((false, _)) => ScanOutcome::NotFound { format: "elf" },
            Err((e, _)) => ScanOutcome::Error(e),
        };
    }
    for (offset, format) in candidates(image) {
        let Some(reader) = single_stream_decoder(format, &image[offset..]) else {
            continue;
        };
        match stream_contains(reader, needle, IMAGE_PAYLOAD_CAP) {
            Ok((true, _)) => {
                return ScanOutcome::Found {
                    format: format.as_str(),
                }
            }
            Ok((false, produced)) if produced >= MIN_REAL_PAYLOAD => {
                return ScanOutcome::NotFound {
                    format: format.as_str(),
                }
            }
            Ok(_) => continue,
            Err((e, produced)) if produced >= MIN_REAL_PAYLOAD => {
                return ScanOutcome::Error(format!(
                    "the {} payload at offset {offset} broke off after {produced} bytes: {e}",
                    format.as_str()
                ))
            }
            Err(_) => continue,
        }
    }
    ScanOutcome::NoPayload
}

/// A decoder that stops at the end of the first stream: a kernel image has other data after
/// its payload, which a multi-stream decoder would try to read as a second stream.
fn single_stream_decoder(format: Compression, input: &[u8]) -> Option<Box<dyn Read + '_>> {
    Some(match format {
        Compression::Gzip => Box::new(flate2::read::GzDecoder::new(input)),
        Compression::Xz => Box::new(liblzma::read::XzDecoder::new(input)),
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

/// Offsets where a supported compressed stream may start, in file order.
fn candidates(image: &[u8]) -> Vec<(usize, Compression)> {
    const MAGICS: [(&[u8], Compression); 3] = [
        (b"\xfd7zXZ\x00", Compression::Xz),
        (b"\x28\xb5\x2f\xfd", Compression::Zstd),
        (b"\x1f\x8b\x08", Compression::Gzip),
    ];
    let mut found = Vec::new();
    for (i, w) in image.windows(6).enumerate() {
        for (magic, format) in MAGICS {
            if w.starts_with(magic) {
                found.push((i, format));
            }
        }
    }
    found
}

/// Reads `reader` to the end (or `cap`), reporting whether `needle` occurs and how many bytes
/// were produced. Keeps only one buffer plus the needle's length of overlap in memory.
fn stream_contains(
    mut reader: impl Read,
    needle: &[u8],
    cap: u64,
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
            return Err((format!("payload larger than {} MiB", cap >> 20), produced));
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
            scan_bytes(&img, needle),
            ScanOutcome::Found { format: "gzip" }
        );
    }

    #[test]
    fn whole_payload_without_text_is_not_found() {
        let img = bzimage(&payload_with(b"something else entirely"));
        assert_eq!(
            scan_bytes(&img, b"failing symbol_get of non-GPLONLY symbol"),
            ScanOutcome::NotFound { format: "gzip" }
        );
    }

    #[test]
    fn no_payload_in_random_bytes() {
        assert_eq!(
            scan_bytes(b"just a text file", b"x"),
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
            stream_contains(Trickle(data), needle, 1 << 20),
            Ok((true, 10))
        );
    }
}
