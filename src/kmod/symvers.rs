//! A kernel build's `Module.symvers`: every export of `vmlinux` and of every in-tree module,
//! with its CRC, one line each — `CRC<TAB>symbol<TAB>module<TAB>export type[<TAB>namespace]`,
//! the module being `vmlinux` or the module's path in the build tree without `.ko`
//! (`drivers/infiniband/core/ib_core`). The kernel's own build writes it (`scripts/mod/modpost`)
//! and the headers packages ship it; RHEL and SUSE also ship it gzipped as
//! `/boot/symvers-<release>.gz`.
//!
//! Pure: a reader of the file in (gzip is undone as it is read), the entries asked for out. The
//! file is scanned as it is read, 64 KiB at a time, never held whole: a distribution kernel's is
//! 1.7 MB, which held whole would be some 420 freshly faulted pages, more of a cold check's
//! kernel time than reading it. Which file belongs to which build, and when its CRCs may stand
//! in for a module file's, is decided by `host::modules::build_symvers`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// The module field of the kernel image's own exports.
pub const VMLINUX: &str = super::abi::IMAGE;

/// The most bytes a symvers may hold, gunzipped (a distribution kernel's is under 2 MB).
pub const TEXT_CAP: u64 = 64 << 20;

/// The longest line a symvers may have (modpost's are a symbol, a path and a namespace).
const LINE_CAP: usize = 64 << 10;

/// One export as the build recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymversEntry {
    pub crc: u32,
    /// `vmlinux`, or the module's path in the build tree without `.ko`.
    pub module: String,
}

fn parse_crc(field: &[u8]) -> Option<u32> {
    let hex = std::str::from_utf8(field).ok()?.strip_prefix("0x")?;
    u32::from_str_radix(hex, 16).ok()
}

/// What one pass over a symvers found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// The entries of the symbols asked for, by symbol.
    pub symbols: HashMap<String, SymversEntry>,
    /// Every export recorded for the module asked for, by symbol.
    pub module_exports: BTreeMap<String, u32>,
}

/// One pass over a symvers as `source` reads it (gzip, `/boot/symvers-*.gz`, is undone): the
/// entries of the symbols in `wanted`, and every export of `module` (a build-tree path or
/// `vmlinux`). A line that is not an entry is an error naming the file and the line (empty lines
/// are skipped): every line must start with a CRC field (`0x` and eight characters) and a
/// symbol, and a line that is used must have its CRC written `0x%08x` as modpost writes them
/// all, its module and its export type too. Most lines are passed over after that: one table
/// look-up of their symbol's first byte and length, and a comparison of their module field's
/// start. More than [`TEXT_CAP`] bytes, or a line longer than 64 KiB, is an error.
pub fn read(
    source: impl Read,
    path: &Path,
    wanted: &HashSet<&str>,
    module: &str,
) -> Result<Found, String> {
    let mut source = BufReader::with_capacity(LINE_CAP, source);
    let gzip = source
        .fill_buf()
        .map_err(|e| format!("{}: {e}", path.display()))?
        .starts_with(&[0x1f, 0x8b]);
    let mut scan = Scan::new(path, wanted, module);
    if gzip {
        let text = flate2::read::MultiGzDecoder::new(source).take(TEXT_CAP + 1);
        scan.lines(BufReader::with_capacity(LINE_CAP, text))
            .map_err(|e| {
                e.unwrap_or_else(|e| format!("{}: not a readable gzip file: {e}", path.display()))
            })?;
    } else {
        scan.lines(source.take(TEXT_CAP + 1))
            .map_err(|e| e.unwrap_or_else(|e| format!("{}: {e}", path.display())))?;
    }
    if scan.bytes > TEXT_CAP {
        return Err(format!(
            "{}: more than {} MiB of text",
            path.display(),
            TEXT_CAP >> 20
        ));
    }
    Ok(scan.found)
}

/// The state of one pass: what is asked for, what was found, where it is.
struct Scan<'a> {
    path: &'a Path,
    /// Symbols asked for, by their first byte and length: most lines fail this at once.
    shapes: [u64; 256],
    /// A third of a distribution kernel's lines pass the shape: their look-up is hashed with
    /// foldhash, a tenth of the cost of the standard library's SipHash.
    wanted: HashSet<&'a [u8], foldhash::fast::FixedState>,
    module: &'a [u8],
    found: Found,
    /// Lines seen, and bytes.
    n: usize,
    bytes: u64,
}

impl<'a> Scan<'a> {
    fn new(path: &'a Path, wanted: &HashSet<&'a str>, module: &'a str) -> Self {
        let mut shapes = [0u64; 256];
        for s in wanted {
            if let (Some(&first), l) = (s.as_bytes().first(), s.len()) {
                shapes[first as usize] |= 1 << l.min(63);
            }
        }
        Scan {
            path,
            shapes,
            wanted: wanted.iter().map(|s| s.as_bytes()).collect(),
            module: module.as_bytes(),
            found: Found::default(),
            n: 0,
            bytes: 0,
        }
    }

    /// Every line `text` holds, a buffer at a time; a line cut by a buffer's end is carried
    /// over to the next. `Err(Ok(message))`: a line that is not an entry; `Err(Err(e))`: the
    /// read failed.
    fn lines(&mut self, mut text: impl BufRead) -> Result<(), Result<String, std::io::Error>> {
        let mut carry: Vec<u8> = Vec::new();
        loop {
            let chunk = match text.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Err(e)),
            };
            let len = chunk.len();
            if len == 0 {
                break;
            }
            self.bytes += len as u64;
            let mut rest = chunk;
            if !carry.is_empty() {
                let Some(end) = memchr::memchr(b'\n', rest) else {
                    carry.extend_from_slice(rest);
                    if carry.len() > LINE_CAP {
                        return Err(Ok(self.bad(self.n + 1)));
                    }
                    text.consume(len);
                    continue;
                };
                carry.extend_from_slice(&rest[..end]);
                if carry.len() > LINE_CAP {
                    return Err(Ok(self.bad(self.n + 1)));
                }
                self.line(&carry).map_err(Ok)?;
                carry.clear();
                rest = &rest[end + 1..];
            }
            let whole = memchr::memrchr(b'\n', rest).map_or(0, |i| i + 1);
            let mut start = 0;
            while start < whole {
                let end = start + memchr::memchr(b'\n', &rest[start..whole]).unwrap_or(0);
                self.line(&rest[start..end]).map_err(Ok)?;
                start = end + 1;
            }
            carry.extend_from_slice(&rest[whole..]);
            if carry.len() > LINE_CAP {
                return Err(Ok(self.bad(self.n + 1)));
            }
            text.consume(len);
        }
        // A last line without its newline.
        if !carry.is_empty() {
            self.line(&carry).map_err(Ok)?;
        }
        Ok(())
    }

    /// The error of line `n`.
    fn bad(&self, n: usize) -> String {
        format!(
            "{} line {n}: not a Module.symvers entry (CRC, symbol, module, export type)",
            self.path.display(),
        )
    }

    /// One line, without its newline.
    fn line(&mut self, line: &[u8]) -> Result<(), String> {
        self.n += 1;
        if line.is_empty() {
            return Ok(());
        }
        let bad = || self.bad(self.n);
        // `0x` and eight hex digits (read whole on the lines used), a tab, then the symbol up
        // to the next tab.
        const SYMBOL: usize = 11;
        if line.len() <= SYMBOL || line[SYMBOL - 1] != b'\t' || !line.starts_with(b"0x") {
            return Err(bad());
        }
        let b = SYMBOL + memchr::memchr(b'\t', &line[SYMBOL..]).ok_or_else(bad)?;
        let symbol = &line[SYMBOL..b];
        let shaped = symbol
            .first()
            .is_some_and(|&f| self.shapes[f as usize] & (1 << symbol.len().min(63)) != 0);
        let asked = shaped && self.wanted.contains(symbol);
        let rest = &line[b + 1..];
        let module = self.module;
        let of_module =
            rest.len() > module.len() && rest.starts_with(module) && rest[module.len()] == b'\t';
        if !asked && !of_module {
            return Ok(());
        }
        // A line used has its module and export type.
        let c = memchr::memchr(b'\t', rest).ok_or_else(bad)?;
        let m = &rest[..c];
        let crc = Some(&line[..SYMBOL - 1])
            .filter(|c| is_crc(c))
            .and_then(parse_crc)
            .ok_or_else(bad)?;
        let name = String::from_utf8_lossy(symbol).into_owned();
        if of_module {
            self.found.module_exports.insert(name.clone(), crc);
        }
        if asked {
            let module = String::from_utf8_lossy(m).into_owned();
            self.found
                .symbols
                .insert(name, SymversEntry { crc, module });
        }
        Ok(())
    }
}

/// Whether a CRC field is written as modpost writes every CRC, `0x%08x`.
fn is_crc(field: &[u8]) -> bool {
    field.len() == 10 && field.starts_with(b"0x") && field[2..].iter().all(u8::is_ascii_hexdigit)
}

/// The build-tree path a module file of the installed tree has in a symvers: its path below
/// `kernel/` without the `.ko` and compression suffix (`kernel/drivers/x/y.ko.xz` →
/// `drivers/x/y`). `None` for a file outside `kernel/` (`updates/`, `extra/`,
/// `weak-updates/`, an absolute path): only the kernel build's own modules are in its symvers.
pub fn build_path_of(dep_file: &str) -> Option<&str> {
    let rest = dep_file.strip_prefix("kernel/")?;
    [".ko", ".ko.xz", ".ko.zst", ".ko.gz"]
        .iter()
        .find_map(|s| rest.strip_suffix(s))
        .filter(|p| !p.is_empty() && !p.split('/').any(|c| c == ".." || c.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &[u8] =
        b"0x12345678\tib_drain_qp\tdrivers/infiniband/core/ib_core\tEXPORT_SYMBOL_GPL\t\n\
0x0badcafe\tprintk\tvmlinux\tEXPORT_SYMBOL\t\n\
\n\
0x00000001\tsvc_xprt_put\tnet/sunrpc/sunrpc\tEXPORT_SYMBOL_GPL\tSUNRPC\n";

    #[test]
    fn entries_asked_for_are_found_with_their_module() {
        let wanted: HashSet<&str> = ["ib_drain_qp", "printk", "absent"].into();
        let found = read(
            TEXT,
            Path::new("Module.symvers"),
            &wanted,
            "net/sunrpc/sunrpc",
        )
        .unwrap();
        let symbols = &found.symbols;
        assert_eq!(symbols.len(), 2);
        assert_eq!(symbols["printk"].crc, 0x0bad_cafe);
        assert_eq!(symbols["printk"].module, VMLINUX);
        assert_eq!(
            symbols["ib_drain_qp"].module,
            "drivers/infiniband/core/ib_core"
        );
        assert_eq!(
            found.module_exports,
            BTreeMap::from([("svc_xprt_put".to_string(), 1)])
        );
    }

    #[test]
    fn a_line_that_is_not_an_entry_is_named() {
        let wanted: HashSet<&str> = ["x"].into();
        let e = read(
            &b"0x00000001\tx\tvmlinux\tEXPORT_SYMBOL\nnonsense\n"[..],
            Path::new("/s"),
            &wanted,
            "m",
        )
        .unwrap_err();
        assert_eq!(
            e,
            "/s line 2: not a Module.symvers entry (CRC, symbol, module, export type)"
        );
        let e = read(
            &b"0xZZ\tx\tvmlinux\tEXPORT_SYMBOL\n"[..],
            Path::new("/s"),
            &wanted,
            "m",
        )
        .unwrap_err();
        assert!(e.contains("line 1"), "{e}");
    }

    #[test]
    fn a_last_line_without_its_newline_is_read() {
        let wanted: HashSet<&str> = ["x"].into();
        let found = read(
            &b"0x00000002\ty\tvmlinux\tEXPORT_SYMBOL\t\n0x0000000a\tx\tvmlinux\tEXPORT_SYMBOL\t"[..],
            Path::new("/s"),
            &wanted,
            "m",
        )
        .unwrap();
        assert_eq!(found.symbols["x"].crc, 10);
    }

    #[test]
    fn a_line_used_must_be_whole() {
        // Asked for, but without its export type, or with a CRC that is not hex.
        let wanted: HashSet<&str> = ["x"].into();
        for text in [
            &b"0x00000001\tx\tvmlinux\n"[..],
            b"0x0000000g\tx\tvmlinux\tEXPORT_SYMBOL\n",
            b"0x00000001\n",
        ] {
            let e = read(text, Path::new("/s"), &wanted, "m").unwrap_err();
            assert!(
                e.starts_with("/s line 1: not a Module.symvers entry"),
                "{e}"
            );
        }
        // The module's own lines too.
        let e = read(
            &b"0x0000000g\tz\tm\tEXPORT_SYMBOL\n"[..],
            Path::new("/s"),
            &wanted,
            "m",
        )
        .unwrap_err();
        assert!(e.contains("line 1"), "{e}");
    }

    #[test]
    fn gzip_is_undone_as_it_is_read() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(TEXT).unwrap();
        let packed = gz.finish().unwrap();
        let wanted: HashSet<&str> = ["printk", "ib_drain_qp"].into();
        let plain = read(TEXT, Path::new("s"), &wanted, "net/sunrpc/sunrpc").unwrap();
        let gunzipped = read(
            packed.as_slice(),
            Path::new("s.gz"),
            &wanted,
            "net/sunrpc/sunrpc",
        )
        .unwrap();
        assert_eq!(plain, gunzipped);
        assert_eq!(plain.symbols.len(), 2);
        let e = read(
            &[0x1f, 0x8b, 0, 1][..],
            Path::new("/boot/symvers-x.gz"),
            &wanted,
            "m",
        )
        .unwrap_err();
        assert!(
            e.starts_with("/boot/symvers-x.gz: not a readable gzip"),
            "{e}"
        );
    }

    /// Reads a few bytes at a time, as a slow pipe or a short read would.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn lines_cut_by_the_buffer_are_read_whole() {
        // 5,000 lines (some 300 KB): several buffers, and lines cut at every place.
        let mut text = Vec::new();
        for i in 0..5000u32 {
            let module = if i % 7 == 0 { "m/x" } else { "vmlinux" };
            text.extend_from_slice(
                format!("0x{i:08x}\tsym_{i}\t{module}\tEXPORT_SYMBOL_GPL\t\n").as_bytes(),
            );
        }
        let names: Vec<String> = (0..5000).step_by(97).map(|i| format!("sym_{i}")).collect();
        let wanted: HashSet<&str> = names.iter().map(String::as_str).collect();
        for step in [usize::MAX, 4096, 1000, 7] {
            let found = read(Trickle(&text, step), Path::new("s"), &wanted, "m/x").unwrap();
            assert_eq!(found.symbols.len(), names.len(), "{step}");
            for (i, name) in (0..5000).step_by(97).zip(&names) {
                assert_eq!(found.symbols[name].crc, i, "{name}");
            }
            assert_eq!(found.module_exports.len(), 715, "{step}");
            assert_eq!(found.module_exports["sym_4998"], 4998);
        }
        // A line longer than 64 KiB is not an entry.
        let mut long = b"0x00000001\t".to_vec();
        long.extend(std::iter::repeat_n(b'a', 70 << 10));
        long.extend_from_slice(b"\tvmlinux\tEXPORT_SYMBOL\n");
        let e = read(long.as_slice(), Path::new("/s"), &wanted, "m").unwrap_err();
        assert!(
            e.starts_with("/s line 1: not a Module.symvers entry"),
            "{e}"
        );
    }

    #[test]
    fn only_in_tree_files_have_a_build_path() {
        assert_eq!(
            build_path_of("kernel/drivers/infiniband/core/ib_core.ko.xz"),
            Some("drivers/infiniband/core/ib_core")
        );
        assert_eq!(
            build_path_of("kernel/net/sunrpc/sunrpc.ko"),
            Some("net/sunrpc/sunrpc")
        );
        for outside in [
            "updates/dkms/ib_core.ko",
            "extra/ib_core.ko.xz",
            "weak-updates/ib_core.ko",
            "/lib/modules/x/kernel/a.ko",
            "kernel/../updates/a.ko",
            "kernel/a.o",
        ] {
            assert_eq!(build_path_of(outside), None, "{outside}");
        }
    }
}
