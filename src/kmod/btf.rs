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

use super::btf_records::{Blob, BtfError, KIND_STRUCT, KIND_UNION};
use super::btf_relocate::DistilledBase;

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
    /// Its distilled base (`.BTF.base`, which the kernel relocates onto its own types by name),
    /// or why it could not be read; `None` without one.
    #[serde(default)]
    pub distilled: Option<Result<DistilledBase, String>>,
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

/// One pass over `data`'s records.
fn walk(data: &[u8]) -> Result<Walk<'_>, BtfError> {
    let blob = Blob::parse(data)?;
    let mut w = Walk {
        types: 0,
        strings: blob.strings,
        max_type_ref: 0,
        max_name_off: 0,
        struct_names: Vec::new(),
    };
    for rec in blob.records() {
        let rec = rec?;
        for off in rec.name_offs() {
            w.name(off);
        }
        for id in rec.type_refs() {
            w.type_ref(id);
        }
        if matches!(rec.kind, KIND_STRUCT | KIND_UNION) {
            w.struct_names.push(rec.name_off);
        }
        w.types += 1;
    }
    Ok(w)
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

/// Reads a module's `.BTF`, and the distilled base `.BTF.base` where it has one.
pub fn module_btf(data: &[u8], base: Option<&[u8]>) -> Result<ModuleBtf, BtfError> {
    let w = walk(data)?;
    let distilled_base = base.is_some();
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
        distilled: base
            .map(|b| DistilledBase::read(b, data).map_err(|e| format!(".BTF.base: {e}"))),
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

impl ModuleBtf {
    /// It carries `.BTF.base`, readable or not.
    pub fn has_distilled_base(&self) -> bool {
        self.distilled.is_some()
    }
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
    use crate::kmod::btf_records::testing::{blob, rec};

    /// A split blob built against a base of 1000 string bytes and 50 types: struct
    /// `rpcrdma_xdr_cursor` (own string 1) with one member of base type 7, and a pointer to it.
    fn cursor_module() -> Vec<u8> {
        let mut t = rec(1001, 4, 1, 16, &[1020, 7, 0]);
        t.extend(rec(0, 2, 0, 51, &[]));
        blob(&t, b"\0rpcrdma_xdr_cursor\0pos\0")
    }

    #[test]
    fn a_module_tells_its_base_and_generation() {
        let m = module_btf(&cursor_module(), None).unwrap();
        assert_eq!((m.own_types, m.max_type_ref, m.max_name_off), (2, 51, 1020));
        assert_eq!(m.base_str_len, Some(1000));
        assert_eq!(m.frwr, FrwrGeneration::XdrCursor);
        let distilled = module_btf(&cursor_module(), Some(&blob(b"", b"\0"))).unwrap();
        assert_eq!(
            (distilled.base_str_len, distilled.frwr),
            (None, FrwrGeneration::Unknown)
        );
    }

    #[test]
    fn fit_follows_the_kernels_order() {
        let m = module_btf(&cursor_module(), None).unwrap();
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
        let (long, short) = (
            module_btf(&long, None).unwrap(),
            module_btf(&cursor_module(), None).unwrap(),
        );
        assert_eq!(long.size, short.size + 8);
        assert_eq!(
            ModuleBtf {
                size: short.size,
                ..long
            },
            short
        );
        let nonzero = with_long_header(&cursor_module(), [0, 0, 0, 1, 0, 0, 0, 0]);
        assert!(matches!(
            module_btf(&nonzero, None),
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
        assert_eq!(module_btf(b"\x9f\xeb", None), Err(BtfError::Short(2)));
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
