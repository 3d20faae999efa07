//! BTF (BPF Type Format) as a module file and the kernel carry it, read far enough to predict the
//! loader's BTF step on a kernel that checks no symbol CRCs.
//!
//! A module built against a kernel's `vmlinux` keeps *split* BTF in `.BTF`: its type ids
//! continue after the last of vmlinux's, and its name offsets after the end of vmlinux's string
//! section (pahole writes only the strings the module's types use, deduplicated against the
//! base). With CONFIG_DEBUG_INFO_BTF_MODULES the kernel parses that BTF on load against its own
//! (`/sys/kernel/btf/vmlinux`, the image's `.BTF` as it is) and, unless
//! CONFIG_MODULE_ALLOW_BTF_MISMATCH is set, refuses the module when it does not validate
//! (`btf_module_notify()`: "failed to validate module [%s] BTF"). A module built out of tree
//! with pahole's distilled base also carries `.BTF.base`, which the kernel relocates onto its
//! own types by name instead.
//!
//! What is read here, from the type records (`struct btf_type` and the kind's trailing
//! records, `include/uapi/linux/btf.h`): how many types and string bytes a blob holds, the
//! largest type id and name offset a module's types refer to, the string length of the base it
//! was built against (the last own string is used, and pahole appends own strings right after
//! the base's, so the largest name offset minus that string's own offset is the base's string
//! length; measured exact on Debian's 6.12.117, 7.2.13 and 7.3.4 `rpcrdma.ko`), and which of
//! the structs that tell rpcrdma's `frwr_map()` generations apart the module defines.

use serde::{Deserialize, Serialize};

/// `BTF_MAGIC`, little-endian on disk for the hosts nfs-gds runs on.
const MAGIC: u16 = 0xeb9f;
/// `struct btf_header` as every kernel knows it; a writer may add fields after it and say so in
/// `hdr_len` (libbpf's distilled-base writer, which Debian's 7.x kbuild runs through
/// `resolve_btfids --distill_base`, writes 32 bytes, the 8 after these zero). The kernel takes
/// the sections from `hdr_len` on and refuses a longer header whose extra bytes are not zero.
const HEADER_LEN: usize = 24;

/// Why a BTF blob could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BtfError {
    #[error("BTF is {0} bytes, shorter than its 24-byte header")]
    Short(usize),
    #[error("BTF magic is {0:#06x}, not 0xeb9f")]
    Magic(u16),
    #[error("BTF header length {hdr_len} is shorter than 24 bytes, longer than the {size}-byte blob, or has non-zero bytes after the known fields")]
    Header { hdr_len: u32, size: usize },
    #[error("BTF {what} section ({off}+{len}) lies outside the {size}-byte blob")]
    Section {
        what: &'static str,
        off: usize,
        len: usize,
        size: usize,
    },
    #[error("BTF type {index} has kind {kind}, which this reader does not know")]
    UnknownKind { index: u32, kind: u32 },
    #[error("BTF type {index} runs past the end of the type section")]
    Truncated { index: u32 },
}

/// The two generations of rpcrdma's memory-registration path: `frwr_map()` took a
/// `struct rpcrdma_mr_seg` array up to 7.1, and walks a `struct rpcrdma_xdr_cursor` from 7.2
/// (Debian's 7.2.13 and 7.3.4 `rpcrdma.ko`). A hook patch written for one does not apply to the
/// other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FrwrGeneration {
    /// `struct rpcrdma_mr_seg`: the segment array of 7.1 and before.
    MrSeg,
    /// `struct rpcrdma_xdr_cursor`: the cursor of 7.2 and later.
    XdrCursor,
    /// The module's BTF defines neither struct (or both): nothing tells.
    Unknown,
}

impl FrwrGeneration {
    /// `rpcrdma_mr_seg (7.1 and before)`.
    pub fn describe(self) -> &'static str {
        match self {
            FrwrGeneration::MrSeg => "rpcrdma_mr_seg (frwr_map of 7.1 and before)",
            FrwrGeneration::XdrCursor => "rpcrdma_xdr_cursor (frwr_map of 7.2 and later)",
            FrwrGeneration::Unknown => "unknown",
        }
    }
}

/// Where a module's [`FrwrGeneration`] was told from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FrwrEvidence {
    /// The struct names of its BTF.
    Btf,
    /// Its symbol table: `rpcrdma_convert_iovs`, which fills the `rpcrdma_mr_seg` array and
    /// went with it (present in 6.12.117's `rpcrdma.ko`, absent from 7.2.13's and 7.3.4's). Its
    /// absence tells nothing: the compiler may inline it.
    Symbols,
}

/// The symbol whose definition tells [`FrwrGeneration::MrSeg`].
pub const MR_SEG_FILLER: &[u8] = b"rpcrdma_convert_iovs";

/// Struct names that tell the generations apart.
const MR_SEG: &[u8] = b"rpcrdma_mr_seg";
const XDR_CURSOR: &[u8] = b"rpcrdma_xdr_cursor";

/// A module's split BTF, summarised for the load prediction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleBtf {
    /// Size of `.BTF`.
    pub size: u32,
    /// Types the module's BTF defines itself.
    pub own_types: u32,
    /// Bytes of its own string section.
    pub own_str_len: u32,
    /// The largest type id its types refer to.
    pub max_type_ref: u32,
    /// The largest name offset its types use.
    pub max_name_off: u32,
    /// The string length of the base BTF it was built against, where its own strings tell.
    pub base_str_len: Option<u32>,
    /// It carries `.BTF.base` (pahole's distilled base: the kernel relocates it by name).
    pub distilled_base: bool,
    /// The `frwr_map()` generation its struct names tell (rpcrdma's only).
    pub frwr: FrwrGeneration,
}

/// The kernel's own BTF (`/sys/kernel/btf/vmlinux`), summarised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseBtf {
    /// Type records, not counting the implicit `void` (id 0).
    pub types: u32,
    pub str_len: u32,
}

/// One pass over a blob's type records.
struct Walk<'a> {
    types: u32,
    strings: &'a [u8],
    max_type_ref: u32,
    max_name_off: u32,
    struct_names: Vec<u32>,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn section<'a>(
    data: &'a [u8],
    hdr_len: usize,
    what: &'static str,
    off: u32,
    len: u32,
) -> Result<&'a [u8], BtfError> {
    let (off, len) = (hdr_len.saturating_add(off as usize), len as usize);
    data.get(off..off.saturating_add(len))
        .ok_or(BtfError::Section {
            what,
            off,
            len,
            size: data.len(),
        })
}

fn walk(data: &[u8]) -> Result<Walk<'_>, BtfError> {
    if data.len() < HEADER_LEN {
        return Err(BtfError::Short(data.len()));
    }
    let magic = u16::from_le_bytes([data[0], data[1]]);
    if magic != MAGIC {
        return Err(BtfError::Magic(magic));
    }
    let word = |at| u32_at(data, at).unwrap_or(0);
    let hdr_len = word(4);
    let header_bad = BtfError::Header {
        hdr_len,
        size: data.len(),
    };
    let extra = data
        .get(HEADER_LEN..hdr_len as usize)
        .ok_or_else(|| header_bad.clone())?;
    if extra.iter().any(|&b| b != 0) {
        return Err(header_bad);
    }
    let hdr_len = hdr_len as usize;
    let types = section(data, hdr_len, "type", word(8), word(12))?;
    let strings = section(data, hdr_len, "string", word(16), word(20))?;
    let mut w = Walk {
        types: 0,
        strings,
        max_type_ref: 0,
        max_name_off: 0,
        struct_names: Vec::new(),
    };
    let mut at = 0usize;
    while at < types.len() {
        let index = w.types + 1;
        let truncated = BtfError::Truncated { index };
        let rec = types.get(at..at + 12).ok_or(truncated.clone())?;
        let (name, info, size_or_type) = (word_of(rec, 0), word_of(rec, 4), word_of(rec, 8));
        let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
        w.name(name);
        // (bytes after the record, bytes per member, offset of a member's name, of its type)
        let (fixed, member, name_at, type_at): (usize, usize, Option<usize>, Option<usize>) =
            match kind {
                1 => (4, 0, None, None),               // INT
                2 | 8..=12 | 18 => (0, 0, None, None), // PTR, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, TYPE_TAG
                3 => (12, 0, None, None),              // ARRAY
                4 | 5 => (0, 12, Some(0), Some(4)),    // STRUCT, UNION
                6 => (0, 8, Some(0), None),            // ENUM
                7 | 16 => (0, 0, None, None),          // FWD, FLOAT
                13 => (0, 8, Some(0), Some(4)),        // FUNC_PROTO
                14 | 17 => (4, 0, None, None),         // VAR, DECL_TAG
                15 => (0, 12, None, Some(0)),          // DATASEC
                19 => (0, 12, Some(0), None),          // ENUM64
                _ => return Err(BtfError::UnknownKind { index, kind }),
            };
        if matches!(kind, 2 | 8..=14 | 17 | 18) {
            w.type_ref(size_or_type);
        }
        if matches!(kind, 4 | 5) {
            w.struct_names.push(name);
        }
        let body_len = fixed + member * vlen;
        let body = types.get(at + 12..at + 12 + body_len).ok_or(truncated)?;
        if kind == 3 {
            w.type_ref(word_of(body, 0));
            w.type_ref(word_of(body, 4));
        }
        for m in body
            .chunks_exact(member.max(1))
            .take(if member == 0 { 0 } else { vlen })
        {
            if let Some(n) = name_at {
                w.name(word_of(m, n));
            }
            if let Some(t) = type_at {
                w.type_ref(word_of(m, t));
            }
        }
        w.types += 1;
        at += 12 + body_len;
    }
    Ok(w)
}

fn word_of(b: &[u8], at: usize) -> u32 {
    u32_at(b, at).unwrap_or(0)
}

impl Walk<'_> {
    fn name(&mut self, off: u32) {
        self.max_name_off = self.max_name_off.max(off);
    }
    fn type_ref(&mut self, id: u32) {
        self.max_type_ref = self.max_type_ref.max(id);
    }
    /// The own-string offset of the last string in the section.
    fn last_string_start(&self) -> Option<u32> {
        let body = self.strings.strip_suffix(b"\0")?;
        let start = body.iter().rposition(|&b| b == 0).map_or(0, |p| p + 1);
        u32::try_from(start).ok()
    }
    /// Whether one of the structs is named `name` in the module's own strings, given the base's
    /// string length.
    fn defines_struct(&self, name: &[u8], base_str_len: u32) -> bool {
        self.struct_names.iter().any(|&off| {
            off.checked_sub(base_str_len)
                .and_then(|own| self.strings.get(own as usize..))
                .and_then(|rest| rest.split(|&b| b == 0).next())
                == Some(name)
        })
    }
}

/// Reads a module's `.BTF` (and whether it also has `.BTF.base`).
pub fn module_btf(data: &[u8], distilled_base: bool) -> Result<ModuleBtf, BtfError> {
    let w = walk(data)?;
    let base_str_len = w
        .last_string_start()
        .and_then(|last| w.max_name_off.checked_sub(last))
        .filter(|_| !distilled_base);
    let frwr = match base_str_len {
        Some(base) => match (
            w.defines_struct(MR_SEG, base),
            w.defines_struct(XDR_CURSOR, base),
        ) {
            (true, false) => FrwrGeneration::MrSeg,
            (false, true) => FrwrGeneration::XdrCursor,
            _ => FrwrGeneration::Unknown,
        },
        None => FrwrGeneration::Unknown,
    };
    Ok(ModuleBtf {
        size: data.len() as u32,
        own_types: w.types,
        own_str_len: w.strings.len() as u32,
        max_type_ref: w.max_type_ref,
        max_name_off: w.max_name_off,
        base_str_len,
        distilled_base,
        frwr,
    })
}

/// Reads the kernel's own BTF.
pub fn base_btf(data: &[u8]) -> Result<BaseBtf, BtfError> {
    let w = walk(data)?;
    Ok(BaseBtf {
        types: w.types,
        str_len: w.strings.len() as u32,
    })
}

/// What the module's BTF says against the kernel's, in the order the kernel finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BtfFit {
    /// A type id or name offset lies beyond the kernel's types and the module's own: the
    /// kernel's first pass over the types rejects it ("Invalid type_id" / "Invalid name").
    OutOfRange(String),
    /// Everything is in range but the module was built against a base of another string
    /// length: its names point into the wrong strings, which the kernel's validation almost
    /// always rejects.
    OtherBase { built: u32, running: u32 },
    /// In range and built against a base of this kernel's string length.
    Consistent { built: u32 },
    /// In range; the base it was built against is not told by its strings.
    InRange,
}

/// Compares a module's split BTF with the kernel's.
pub fn fit(module: &ModuleBtf, base: &BaseBtf) -> BtfFit {
    let last_id = base.types + module.own_types;
    if module.max_type_ref > last_id {
        return BtfFit::OutOfRange(format!(
            "it refers to type id {}, beyond this kernel's {} types and its own {}",
            module.max_type_ref, base.types, module.own_types
        ));
    }
    let strings = base.str_len as u64 + module.own_str_len as u64;
    if module.max_name_off as u64 >= strings {
        return BtfFit::OutOfRange(format!(
            "it uses name offset {}, beyond this kernel's {} bytes of names and its own {}",
            module.max_name_off, base.str_len, module.own_str_len
        ));
    }
    match module.base_str_len {
        Some(built) if built == base.str_len => BtfFit::Consistent { built },
        Some(built) => BtfFit::OtherBase {
            built,
            running: base.str_len,
        },
        None => BtfFit::InRange,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A blob of `types` (raw records) and `strings`.
    fn blob(types: &[u8], strings: &[u8]) -> Vec<u8> {
        let mut b = vec![0x9f, 0xeb, 1, 0];
        for w in [
            24u32,
            0,
            types.len() as u32,
            types.len() as u32,
            strings.len() as u32,
        ] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b.extend_from_slice(types);
        b.extend_from_slice(strings);
        b
    }

    fn rec(name: u32, kind: u32, vlen: u32, size_or_type: u32, body: &[u32]) -> Vec<u8> {
        let mut r = Vec::new();
        for w in [name, kind << 24 | vlen, size_or_type] {
            r.extend_from_slice(&w.to_le_bytes());
        }
        for w in body {
            r.extend_from_slice(&w.to_le_bytes());
        }
        r
    }

    /// A split blob built against a base of 1000 string bytes and 50 types: struct
    /// `rpcrdma_xdr_cursor` (own string 1) with one member of base type 7, and a pointer to it.
    fn cursor_module() -> Vec<u8> {
        let mut t = rec(1001, 4, 1, 16, &[1020, 7, 0]);
        t.extend(rec(0, 2, 0, 51, &[]));
        blob(&t, b"\0rpcrdma_xdr_cursor\0pos\0")
    }

    #[test]
    fn a_module_tells_its_base_and_generation() {
        let m = module_btf(&cursor_module(), false).unwrap();
        assert_eq!((m.own_types, m.max_type_ref, m.max_name_off), (2, 51, 1020));
        assert_eq!(m.base_str_len, Some(1000));
        assert_eq!(m.frwr, FrwrGeneration::XdrCursor);
        let distilled = module_btf(&cursor_module(), true).unwrap();
        assert_eq!(
            (distilled.base_str_len, distilled.frwr),
            (None, FrwrGeneration::Unknown)
        );
    }

    #[test]
    fn fit_follows_the_kernels_order() {
        let m = module_btf(&cursor_module(), false).unwrap();
        let this = BaseBtf {
            types: 50,
            str_len: 1000,
        };
        assert_eq!(fit(&m, &this), BtfFit::Consistent { built: 1000 });
        let other = BaseBtf {
            types: 60,
            str_len: 1200,
        };
        assert_eq!(
            fit(&m, &other),
            BtfFit::OtherBase {
                built: 1000,
                running: 1200
            }
        );
        let smaller = BaseBtf {
            types: 48,
            str_len: 1000,
        };
        let BtfFit::OutOfRange(why) = fit(&m, &smaller) else {
            panic!()
        };
        assert!(why.contains("type id 51"), "{why}");
        let fewer_names = BaseBtf {
            types: 50,
            str_len: 990,
        };
        assert!(matches!(fit(&m, &fewer_names), BtfFit::OutOfRange(_)));
    }

    /// The blob as libbpf's distilled-base writer lays it out: a 32-byte header, the 8 bytes
    /// after the known fields zero (Debian 7.3.4's `resolve_btfids --distill_base`).
    fn with_long_header(b: &[u8], extra: [u8; 8]) -> Vec<u8> {
        let mut long = b[..24].to_vec();
        long[4..8].copy_from_slice(&32u32.to_le_bytes());
        long.extend_from_slice(&extra);
        long.extend_from_slice(&b[24..]);
        long
    }

    #[test]
    fn a_longer_header_is_read_from_its_own_length() {
        let long = with_long_header(&cursor_module(), [0; 8]);
        assert_eq!(
            module_btf(&long, false),
            module_btf(&cursor_module(), false)
        );
        let nonzero = with_long_header(&cursor_module(), [0, 0, 0, 1, 0, 0, 0, 0]);
        assert!(matches!(
            module_btf(&nonzero, false),
            Err(BtfError::Header { hdr_len: 32, .. })
        ));
        let mut too_long = cursor_module();
        too_long[4..8].copy_from_slice(&4096u32.to_le_bytes());
        assert!(matches!(
            base_btf(&too_long),
            Err(BtfError::Header { hdr_len: 4096, .. })
        ));
        let mut too_short = cursor_module();
        too_short[4..8].copy_from_slice(&8u32.to_le_bytes());
        assert!(matches!(
            base_btf(&too_short),
            Err(BtfError::Header { hdr_len: 8, .. })
        ));
    }

    #[test]
    fn bad_blobs_are_errors_not_panics() {
        assert_eq!(module_btf(b"\x9f\xeb", false), Err(BtfError::Short(2)));
        assert!(matches!(base_btf(&[0u8; 24]), Err(BtfError::Magic(0))));
        let unknown = blob(&rec(0, 30, 0, 0, &[]), b"\0");
        assert_eq!(
            base_btf(&unknown),
            Err(BtfError::UnknownKind { index: 1, kind: 30 })
        );
        let cut = blob(&rec(0, 4, 3, 0, &[0, 0, 0]), b"\0");
        assert_eq!(base_btf(&cut), Err(BtfError::Truncated { index: 1 }));
        let mut lying = cursor_module();
        lying[20] = 0xff; // string length beyond the blob
        assert!(matches!(
            base_btf(&lying),
            Err(BtfError::Section { what: "string", .. })
        ));
    }
}
