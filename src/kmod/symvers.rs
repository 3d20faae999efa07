//! A kernel build's `Module.symvers`: every export of `vmlinux` and of every in-tree module,
//! with its CRC, one line each — `CRC<TAB>symbol<TAB>module<TAB>export type[<TAB>namespace]`,
//! the module being `vmlinux` or the module's path in the build tree without `.ko`
//! (`drivers/infiniband/core/ib_core`). The kernel's own build writes it (`scripts/mod/modpost`)
//! and the headers packages ship it; RHEL and SUSE also ship it gzipped as
//! `/boot/symvers-<release>.gz`.
//!
//! Pure: the bytes (already decompressed, see [`text_of`]) in, the entries asked for out. Which
//! file belongs to which build, and when its CRCs may stand in for a module file's, is decided
//! by `host::modules::build_symvers`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::Path;

/// The module field of the kernel image's own exports.
pub const VMLINUX: &str = super::abi::IMAGE;

/// The most bytes a gzipped symvers may decompress to (a distribution kernel's is under 2 MB).
pub const TEXT_CAP: u64 = 64 << 20;

/// One export as the build recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymversEntry {
    pub crc: u32,
    /// `vmlinux`, or the module's path in the build tree without `.ko`.
    pub module: String,
}

/// The text of a symvers file's bytes: gunzipped when they are gzip (`/boot/symvers-*.gz`),
/// at most [`TEXT_CAP`] bytes.
pub fn text_of(path: &Path, bytes: Vec<u8>) -> Result<Vec<u8>, String> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(bytes);
    }
    let mut text = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes.as_slice())
        .take(TEXT_CAP + 1)
        .read_to_end(&mut text)
        .map_err(|e| format!("{}: not a readable gzip file: {e}", path.display()))?;
    if text.len() as u64 > TEXT_CAP {
        return Err(format!(
            "{}: decompresses to more than {} MiB",
            path.display(),
            TEXT_CAP >> 20
        ));
    }
    Ok(text)
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

/// One pass over a symvers's text: the entries of the symbols in `wanted`, and every export
/// of `module` (a build-tree path or `vmlinux`). A line that is not an entry is an error naming
/// the file and the line (empty lines are skipped): every line must start with a CRC field
/// (`0x` and eight characters) and a symbol, and a line that is used must have its CRC written
/// `0x%08x` as modpost writes them all, its module and its export type too. Most lines are passed over after that: one table look-up of
/// their symbol's first byte and length, and a comparison of their module field's start.
pub fn read(
    text: &[u8],
    path: &Path,
    wanted: &HashSet<&str>,
    module: &str,
) -> Result<Found, String> {
    // Symbols asked for, by their first byte and length: most lines fail this at once.
    let mut shapes = [0u64; 256];
    for s in wanted {
        if let (Some(&first), l) = (s.as_bytes().first(), s.len()) {
            shapes[first as usize] |= 1 << l.min(63);
        }
    }
    // A third of a distribution kernel's lines pass the shape: their look-up is hashed with
    // foldhash, a tenth of the cost of the standard library's SipHash.
    let wanted_bytes: HashSet<&[u8], foldhash::fast::FixedState> =
        wanted.iter().map(|s| s.as_bytes()).collect();
    let module = module.as_bytes();
    let mut found = Found::default();
    let mut start = 0;
    let mut n = 0;
    while start < text.len() {
        let end = memchr::memchr(b'\n', &text[start..]).map_or(text.len(), |i| start + i);
        let line = &text[start..end];
        start = end + 1;
        n += 1;
        if line.is_empty() {
            continue;
        }
        let bad = || {
            format!(
                "{} line {n}: not a Module.symvers entry (CRC, symbol, module, export type)",
                path.display()
            )
        };
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
            .is_some_and(|&f| shapes[f as usize] & (1 << symbol.len().min(63)) != 0);
        let asked = shaped && wanted_bytes.contains(symbol);
        let rest = &line[b + 1..];
        let of_module =
            rest.len() > module.len() && rest.starts_with(module) && rest[module.len()] == b'\t';
        if !asked && !of_module {
            continue;
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
            found.module_exports.insert(name.clone(), crc);
        }
        if asked {
            let module = String::from_utf8_lossy(m).into_owned();
            found.symbols.insert(name, SymversEntry { crc, module });
        }
    }
    Ok(found)
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
            b"0x00000001\tx\tvmlinux\tEXPORT_SYMBOL\nnonsense\n",
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
            b"0xZZ\tx\tvmlinux\tEXPORT_SYMBOL\n",
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
            b"0x00000002\ty\tvmlinux\tEXPORT_SYMBOL\t\n0x0000000a\tx\tvmlinux\tEXPORT_SYMBOL\t",
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
            b"0x0000000g\tz\tm\tEXPORT_SYMBOL\n",
            Path::new("/s"),
            &wanted,
            "m",
        )
        .unwrap_err();
        assert!(e.contains("line 1"), "{e}");
    }

    #[test]
    fn gzip_is_undone_and_plain_text_kept() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(TEXT).unwrap();
        let packed = gz.finish().unwrap();
        assert_eq!(text_of(Path::new("s.gz"), packed).unwrap(), TEXT);
        assert_eq!(text_of(Path::new("s"), TEXT.to_vec()).unwrap(), TEXT);
        let e = text_of(Path::new("/boot/symvers-x.gz"), vec![0x1f, 0x8b, 0, 1]).unwrap_err();
        assert!(
            e.starts_with("/boot/symvers-x.gz: not a readable gzip"),
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
