//! BTF blobs read record by record: the header (`struct btf_header`, with the longer one some
//! writers use), the type and string sections, and each type's record with the kind's trailing
//! records (`include/uapi/linux/btf.h`). What a module's or the kernel's BTF says is read from
//! these by [`super::btf`] and [`super::btf_relocate`].

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

/// A blob's two sections, found through its header.
pub(crate) struct Blob<'a> {
    pub types: &'a [u8],
    pub strings: &'a [u8],
}

impl<'a> Blob<'a> {
    pub fn parse(data: &'a [u8]) -> Result<Self, BtfError> {
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
        Ok(Blob {
            types: section(data, hdr_len, "type", word(8), word(12))?,
            strings: section(data, hdr_len, "string", word(16), word(20))?,
        })
    }

    /// The type records in id order (the first is id 1 of a blob that is its own base).
    pub fn records(&self) -> Records<'a> {
        Records {
            types: self.types,
            at: 0,
            index: 0,
        }
    }

    /// The string at `off` of this blob's own string section, where there is one.
    pub fn string(&self, off: u32) -> Option<&'a [u8]> {
        self.strings.get(off as usize..)?.split(|&b| b == 0).next()
    }
}

/// One type record: `struct btf_type` and the kind's trailing records.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record<'a> {
    pub name_off: u32,
    pub kind: u32,
    pub vlen: usize,
    pub kflag: bool,
    /// `size` or `type`, by kind.
    pub size_or_type: u32,
    pub body: &'a [u8],
    /// Bytes per member record in `body` (0: none).
    pub member_len: usize,
}

pub(crate) const KIND_INT: u32 = 1;
pub(crate) const KIND_ARRAY: u32 = 3;
pub(crate) const KIND_STRUCT: u32 = 4;
pub(crate) const KIND_UNION: u32 = 5;
pub(crate) const KIND_ENUM: u32 = 6;
pub(crate) const KIND_FWD: u32 = 7;
pub(crate) const KIND_FLOAT: u32 = 16;
pub(crate) const KIND_ENUM64: u32 = 19;

impl<'a> Record<'a> {
    /// The member records (struct and union members, enum values, parameters, ...).
    pub fn members(self) -> impl Iterator<Item = &'a [u8]> {
        let len = self.member_len;
        self.body
            .get(self.body.len() - len * self.vlen..)
            .unwrap_or_default()
            .chunks_exact(len.max(1))
            .take(if len == 0 { 0 } else { self.vlen })
    }

    /// The type ids the record refers to (`btf_field_iter`'s ids).
    pub fn type_refs(self) -> impl Iterator<Item = u32> + 'a {
        let own = matches!(self.kind, 2 | 8..=14 | 17 | 18).then_some(self.size_or_type);
        let array = (self.kind == KIND_ARRAY)
            .then(|| [word_of(self.body, 0), word_of(self.body, 4)])
            .into_iter()
            .flatten();
        let at = match self.kind {
            KIND_STRUCT | KIND_UNION | 13 => Some(4),
            15 => Some(0),
            _ => None,
        };
        let members = at
            .into_iter()
            .flat_map(move |at| self.members().map(move |m| word_of(m, at)));
        own.into_iter().chain(array).chain(members)
    }

    /// The name offsets the record uses (its own and its members').
    pub fn name_offs(self) -> impl Iterator<Item = u32> + 'a {
        let members = matches!(
            self.kind,
            KIND_STRUCT | KIND_UNION | KIND_ENUM | 13 | KIND_ENUM64
        )
        .then(|| self.members().map(|m| word_of(m, 0)))
        .into_iter()
        .flatten();
        std::iter::once(self.name_off).chain(members)
    }

    /// `BTF_INT_ENCODING`: signed, char, bool.
    pub fn int_encoding(&self) -> u8 {
        ((word_of(self.body, 0) >> 24) & 0x0f) as u8
    }
}

/// The records of a type section, in order.
pub(crate) struct Records<'a> {
    types: &'a [u8],
    at: usize,
    index: u32,
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, BtfError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.types.len() {
            return None;
        }
        self.index += 1;
        let index = self.index;
        let read = || {
            let truncated = BtfError::Truncated { index };
            let rec = self
                .types
                .get(self.at..self.at + 12)
                .ok_or(truncated.clone())?;
            let (name_off, info, size_or_type) =
                (word_of(rec, 0), word_of(rec, 4), word_of(rec, 8));
            let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
            // (bytes after the record, bytes per member)
            let (fixed, member_len) = match kind {
                1 => (4, 0),               // INT
                2 | 8..=12 | 18 => (0, 0), // PTR, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, TYPE_TAG
                3 => (12, 0),              // ARRAY
                4 | 5 => (0, 12),          // STRUCT, UNION
                6 => (0, 8),               // ENUM
                7 | 16 => (0, 0),          // FWD, FLOAT
                13 => (0, 8),              // FUNC_PROTO
                14 | 17 => (4, 0),         // VAR, DECL_TAG
                15 => (0, 12),             // DATASEC
                19 => (0, 12),             // ENUM64
                _ => return Err(BtfError::UnknownKind { index, kind }),
            };
            let body_len = fixed + member_len * vlen;
            let body = self
                .types
                .get(self.at + 12..self.at + 12 + body_len)
                .ok_or(truncated)?;
            Ok(Record {
                name_off,
                kind,
                vlen,
                kflag: info >> 31 == 1,
                size_or_type,
                body,
                member_len,
            })
        };
        let r = read();
        match &r {
            Ok(rec) => self.at += 12 + rec.body.len(),
            Err(_) => self.at = self.types.len(),
        }
        Some(r)
    }
}

fn word_of(b: &[u8], at: usize) -> u32 {
    u32_at(b, at).unwrap_or(0)
}

/// Blobs written by hand, for the tests of this reader and of the relocation.
#[cfg(test)]
pub(crate) mod testing {
    /// A blob of `types` (raw records) and `strings`.
    pub fn blob(types: &[u8], strings: &[u8]) -> Vec<u8> {
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

    pub fn rec(name: u32, kind: u32, vlen: u32, size_or_type: u32, body: &[u32]) -> Vec<u8> {
        let mut r = Vec::new();
        for w in [name, kind << 24 | vlen, size_or_type] {
            r.extend_from_slice(&w.to_le_bytes());
        }
        for w in body {
            r.extend_from_slice(&w.to_le_bytes());
        }
        r
    }
}
