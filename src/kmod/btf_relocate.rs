//! The kernel's relocation of a module's *distilled base* onto its own BTF, repeated to predict
//! whether it succeeds.
//!
//! A module built out of tree against a `vmlinux` (Debian 13's headers ship a BTF-only one, and
//! its kbuild runs pahole or `resolve_btfids --distill_base`) carries, beside its split BTF in
//! `.BTF`, a small base of its own in `.BTF.base`: the named ints, floats, enums, structs,
//! unions and forward declarations its types refer to, instead of ids into one kernel's BTF.
//! On load (`btf_parse_module()`) the kernel maps each of them to one of its own types by name
//! (`btf_relocate()`, `tools/lib/bpf/btf_relocate.c`, shared by libbpf and the kernel) and, with
//! CONFIG_MODULE_ALLOW_BTF_MISMATCH off, refuses the module when one does not map.
//!
//! The rules repeated here, as that file has them: a distilled base holds only named INT,
//! FLOAT, ENUM, STRUCT, UNION and FWD types; the kernel's candidates for one are its types of
//! that name (compared as strings) among those kinds, in id order, where an int, float or enum
//! must also have the distilled type's size, and a struct or union too when the kernel has
//! several structs or unions of that name; a candidate must be of a compatible kind (an INT of
//! the same encoding; a FLOAT; an ENUM or ENUM64; for a FWD, a FWD of the same kind flag, or a
//! struct or union by the kind flag; for a struct or union, any, but of the same size while it
//! is unmapped when a split struct or union embeds it through members, modifiers, typedefs or
//! arrays); a second compatible candidate is an error ("has multiple candidates of the same
//! size"), and so is a type left without one ("is not mapped to base BTF id"). Then every name
//! the split types take from the distilled base's strings must be the name of a mapped type.
//!
//! Two details of the merged code are not relied on, so a prediction holds whichever way they
//! are read: which types count as embedded (its marking loop stops at the number of split
//! types, not at the last split id, and so may mark fewer than it means to), and whose kind
//! flag decides between a struct and a union for a FWD (the code reads the kernel type's, the
//! rule means the FWD's). A type is judged under every reading that applies to it; the module
//! is refused only when a type fails under all of them, and said to load only when every type
//! maps under all of them.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::btf_records::{
    Blob, BtfError, Record, KIND_ARRAY, KIND_ENUM, KIND_ENUM64, KIND_FLOAT, KIND_FWD, KIND_INT,
    KIND_STRUCT, KIND_UNION,
};

/// One type of a distilled base, with what relocation compares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DistilledType {
    /// Its id in the distilled base.
    pub id: u32,
    /// `BTF_KIND_*`.
    pub kind: u32,
    pub name: String,
    /// `size` (0 for a FWD).
    pub size: u32,
    pub kflag: bool,
    /// `BTF_INT_ENCODING` of an INT.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub int_encoding: u8,
    /// A split struct or union embeds it (through members, modifiers, typedefs and arrays, not
    /// pointers): the kernel may then ask the same size of its candidate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub embedded: bool,
}

fn is_zero(v: &u8) -> bool {
    *v == 0
}

/// A module's distilled base (`.BTF.base`), read with its split BTF.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DistilledBase {
    pub types: Vec<DistilledType>,
    /// The kernel's complaint when the base holds a type it does not relocate (an anonymous
    /// one, or another kind); the relocation stops there.
    pub invalid: Option<String>,
    /// Strings of the distilled base that split types use but no distilled type is named: the
    /// kernel cannot map them (`(offset, string)`).
    pub stray_strings: Vec<(u32, String)>,
}

impl DistilledBase {
    /// Reads the distilled base `base` (a blob of its own) and the split BTF `split` built on it.
    pub fn read(base: &[u8], split: &[u8]) -> Result<Self, BtfError> {
        let base_blob = Blob::parse(base)?;
        let dist: Vec<Record> = base_blob.records().collect::<Result<_, _>>()?;
        let split_recs: Vec<Record> = Blob::parse(split)?.records().collect::<Result<_, _>>()?;
        let first_split = dist.len() as u32 + 1;
        let invalid = dist.iter().zip(1u32..).find_map(|(t, id)| match t.kind {
            KIND_INT | KIND_FLOAT | KIND_ENUM | KIND_STRUCT | KIND_UNION | KIND_FWD => {
                (t.name_off == 0).then(|| {
                    format!(
                        "type [{id}], kind [{}] is invalid for distilled base BTF; it is anonymous",
                        t.kind
                    )
                })
            }
            kind => Some(format!(
                "type [{id}] in distilled based BTF has unexpected kind [{kind}]"
            )),
        });
        let by_id = |id: u32| -> Option<&Record> {
            match id.checked_sub(first_split) {
                Some(i) => split_recs.get(i as usize),
                None => dist.get(id.checked_sub(1)? as usize),
            }
        };
        let mut embedded = HashSet::new();
        for t in split_recs
            .iter()
            .filter(|t| matches!(t.kind, KIND_STRUCT | KIND_UNION))
        {
            for member in t.type_refs() {
                let mut next = member;
                // A chain longer than the types is a loop in a damaged blob.
                for _ in 0..=dist.len() + split_recs.len() {
                    let Some(r) = by_id(next).filter(|_| next != 0) else {
                        break;
                    };
                    next = match r.kind {
                        8..=11 | 18 => r.size_or_type, // TYPEDEF, VOLATILE, CONST, RESTRICT, TYPE_TAG
                        KIND_ARRAY => r.type_refs().next().unwrap_or(0),
                        KIND_STRUCT | KIND_UNION => {
                            if next < first_split {
                                embedded.insert(next);
                            }
                            0
                        }
                        _ => 0,
                    };
                }
            }
        }
        let name = |off| String::from_utf8_lossy(base_blob.string(off).unwrap_or_default());
        let types: Vec<DistilledType> = dist
            .iter()
            .zip(1u32..)
            .map(|(t, id)| DistilledType {
                id,
                kind: t.kind,
                name: name(t.name_off).into_owned(),
                size: t.size_or_type,
                kflag: t.kflag,
                int_encoding: if t.kind == KIND_INT {
                    t.int_encoding()
                } else {
                    0
                },
                embedded: embedded.contains(&id),
            })
            .collect();
        let named: HashSet<u32> = dist.iter().map(|t| t.name_off).collect();
        let dist_str_len = base_blob.strings.len() as u32;
        let mut stray: Vec<(u32, String)> = split_recs
            .iter()
            .flat_map(|t| t.name_offs())
            .filter(|&off| off != 0 && off < dist_str_len && !named.contains(&off))
            .map(|off| (off, name(off).into_owned()))
            .collect();
        stray.sort();
        stray.dedup();
        Ok(DistilledBase {
            types,
            invalid,
            stray_strings: stray,
        })
    }
}

/// A kernel type that can be a relocation candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Candidate {
    id: u32,
    kind: u32,
    size: u32,
    kflag: bool,
    int_encoding: u8,
}

/// The kernel's candidates for the names of one distilled base: its INT, FLOAT, ENUM, ENUM64,
/// FWD, STRUCT and UNION types of those names, in id order. Only the names asked for are
/// kept: of Debian 7.3.4's 127,424 types some 11,800 are of those kinds and named, and a
/// distilled base names some 700.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct KernelNames<'a> {
    by_name: HashMap<&'a [u8], Vec<Candidate>>,
}

impl<'a> KernelNames<'a> {
    /// One pass over the kernel's BTF `kernel`, for the names of `base`'s types.
    fn read(kernel: &[u8], base: &'a DistilledBase) -> Result<Self, BtfError> {
        let mut by_name: HashMap<&[u8], Vec<Candidate>> = base
            .types
            .iter()
            .map(|t| (t.name.as_bytes(), Vec::new()))
            .collect();
        let blob = Blob::parse(kernel)?;
        for (rec, id) in blob.records().zip(1u32..) {
            let rec = rec?;
            if rec.name_off == 0
                || !matches!(
                    rec.kind,
                    KIND_INT
                        | KIND_FLOAT
                        | KIND_ENUM
                        | KIND_ENUM64
                        | KIND_FWD
                        | KIND_STRUCT
                        | KIND_UNION
                )
            {
                continue;
            }
            let Some(list) = blob.string(rec.name_off).and_then(|n| by_name.get_mut(n)) else {
                continue;
            };
            list.push(Candidate {
                id,
                kind: rec.kind,
                size: rec.size_or_type,
                kflag: rec.kflag,
                int_encoding: if rec.kind == KIND_INT {
                    rec.int_encoding()
                } else {
                    0
                },
            });
        }
        Ok(KernelNames { by_name })
    }
}

/// Whose kind flag tells a FWD's struct from its union candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FwdFlag {
    /// The kernel type's, as the merged code reads it.
    Candidates,
    /// The FWD's own, as the rule means.
    Own,
}

/// What became of one distilled type under one reading.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Mapped,
    /// A second compatible candidate: (the second's id and size, the first's id).
    Multiple {
        second: u32,
        size: u32,
        first: u32,
    },
    Unmapped,
}

/// The kernel's search for one distilled type's candidate.
fn map_one(t: &DistilledType, kernel: &KernelNames<'_>, marked: bool, fwd: FwdFlag) -> Outcome {
    let Some(candidates) = kernel.by_name.get(t.name.as_bytes()) else {
        return Outcome::Unmapped;
    };
    let composites = candidates
        .iter()
        .filter(|c| matches!(c.kind, KIND_STRUCT | KIND_UNION))
        .count();
    let mut mapped: Option<u32> = None;
    for c in candidates {
        let size_matches = c.size == t.size;
        let found = match c.kind {
            KIND_INT | KIND_FLOAT | KIND_ENUM | KIND_ENUM64 => size_matches,
            KIND_STRUCT | KIND_UNION => composites < 2 || size_matches,
            _ => true, // FWD
        };
        let union_flag = match fwd {
            FwdFlag::Candidates => c.kflag,
            FwdFlag::Own => t.kflag,
        };
        let compatible = found
            && match t.kind {
                KIND_FWD => match c.kind {
                    KIND_FWD => t.kflag == c.kflag,
                    KIND_STRUCT => !union_flag,
                    KIND_UNION => union_flag,
                    _ => false,
                },
                KIND_INT => c.kind == KIND_INT && c.int_encoding == t.int_encoding,
                KIND_FLOAT => c.kind == KIND_FLOAT,
                KIND_ENUM => matches!(c.kind, KIND_ENUM | KIND_ENUM64),
                KIND_STRUCT | KIND_UNION => !(marked && mapped.is_none() && !size_matches),
                _ => false,
            };
        if !compatible {
            continue;
        }
        if let Some(first) = mapped {
            return Outcome::Multiple {
                second: c.id,
                size: c.size,
                first,
            };
        }
        mapped = Some(c.id);
    }
    if mapped.is_some() {
        Outcome::Mapped
    } else {
        Outcome::Unmapped
    }
}

/// The prediction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relocation {
    /// Every distilled type maps to exactly one kernel type, however the details are read.
    Maps { types: usize },
    /// The relocation fails however they are read; `message` is the kernel's for the first
    /// failure it meets, `errno` the error it gives (`-22`, EINVAL; `-2`, ENOENT, for a name).
    Fails { message: String, errno: i32 },
    /// It fails under one reading and not another.
    Depends { reason: String },
}

/// Relocates `base` onto the types of the kernel's BTF `kernel`; an error where that BTF
/// cannot be read.
pub fn relocate(base: &DistilledBase, kernel: &[u8]) -> Result<Relocation, BtfError> {
    if let Some(invalid) = &base.invalid {
        return Ok(Relocation::Fails {
            message: invalid.clone(),
            errno: -22,
        });
    }
    let kernel = KernelNames::read(kernel, base)?;
    Ok(relocate_onto(base, &kernel))
}

fn relocate_onto(base: &DistilledBase, kernel: &KernelNames<'_>) -> Relocation {
    // The first certain failure in the kernel's order: a second candidate as the kernel's
    // types are walked, then the lowest unmapped distilled id.
    let mut certain: Option<((u8, u32), String)> = None;
    let mut disputed: Vec<String> = Vec::new();
    for t in &base.types {
        let marks: &[bool] = if t.embedded { &[true, false] } else { &[false] };
        let flags: &[FwdFlag] = if t.kind == KIND_FWD {
            &[FwdFlag::Candidates, FwdFlag::Own]
        } else {
            &[FwdFlag::Candidates]
        };
        let outcomes: Vec<Outcome> = marks
            .iter()
            .flat_map(|&m| flags.iter().map(move |&f| (m, f)))
            .map(|(m, f)| map_one(t, kernel, m, f))
            .collect();
        let failing = outcomes.iter().filter(|o| **o != Outcome::Mapped).count();
        if failing == 0 {
            continue;
        }
        if failing < outcomes.len() {
            disputed.push(format!("'{}' [{}]", t.name, t.id));
            continue;
        }
        let (order, message) = match outcomes[0] {
            Outcome::Multiple { second, size, first } => ((0, second), format!(
                "distilled base BTF type '{}' [{}], size {size} has multiple candidates of the same size (ids [{second}, {first}]) in base BTF",
                t.name, t.id
            )),
            _ => ((1, t.id), format!(
                "distilled base BTF type '{}' [{}] is not mapped to base BTF id",
                t.name, t.id
            )),
        };
        if certain.as_ref().is_none_or(|(o, _)| order < *o) {
            certain = Some((order, message));
        }
    }
    if let Some((_, message)) = certain {
        return Relocation::Fails {
            message,
            errno: -22,
        };
    }
    // Where the mapping succeeds, the names come next: a stray one fails every reading.
    if let Some((off, s)) = base.stray_strings.first() {
        return Relocation::Fails {
            message: format!("string '{s}' [offset {off}] is not mapped to base BTF"),
            errno: -2,
        };
    }
    if let Some(first) = disputed.first() {
        let more = match disputed.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        return Relocation::Depends {
            reason: format!(
                "its type {first}{more} maps to exactly one of this kernel's types under one reading of the kernel's rules and not under another (whether a split struct embeds it, or whose kind flag a forward declaration is matched by)"
            ),
        };
    }
    Relocation::Maps {
        types: base.types.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmod::btf_records::testing::{blob, rec};

    /// Type records and their names, written as a blob whose own strings start at `str_base`
    /// (a split blob's come after its base's).
    struct Writer {
        types: Vec<u8>,
        strings: Vec<u8>,
        str_base: u32,
    }

    const KFLAG: u32 = 0x80;
    const PTR: u32 = 2;
    const TYPEDEF: u32 = 8;
    const CONST: u32 = 10;
    /// `BTF_INT_SIGNED`, 32 bits.
    const SIGNED_32: u32 = 1 << 24 | 32;

    impl Writer {
        fn new(str_base: u32) -> Self {
            Writer {
                types: Vec::new(),
                strings: if str_base == 0 { vec![0] } else { Vec::new() },
                str_base,
            }
        }
        fn name(&mut self, s: &str) -> u32 {
            if s.is_empty() {
                return 0;
            }
            let off = self.str_base + self.strings.len() as u32;
            self.strings.extend_from_slice(s.as_bytes());
            self.strings.push(0);
            off
        }
        /// Adds a type; `body` is its trailing words (members: name, type, offset).
        fn add(mut self, name: &str, kind: u32, size_or_type: u32, body: &[u32]) -> Self {
            let off = self.name(name);
            let vlen = match kind & 0x1f {
                KIND_STRUCT | KIND_UNION => body.len() / 3,
                KIND_ENUM => body.len() / 2,
                _ => 0,
            };
            self.types
                .extend(rec(off, kind, vlen as u32, size_or_type, body));
            self
        }
        fn blob(&self) -> Vec<u8> {
            blob(&self.types, &self.strings)
        }
    }

    /// A distilled base — [1] struct foo (16 bytes), [2] int, [3] fwd bar, [4] enum e — and
    /// its split BTF: [5] typedef foo_t of foo, [6] a pointer to bar, [7] struct wrap with a
    /// foo_t and a pointer to bar; `member_name` names wrap's first member (an offset into the
    /// distilled base's strings, or 0). foo is embedded (through the typedef), bar is not.
    fn module_with(member_name: u32, embeds: bool) -> DistilledBase {
        let base = Writer::new(0)
            .add("foo", KIND_STRUCT, 16, &[])
            .add("int", KIND_INT, 4, &[SIGNED_32])
            .add("bar", KIND_FWD, 0, &[])
            .add("e", KIND_ENUM, 4, &[]);
        let first = if embeds { 5 } else { 6 };
        let split = Writer::new(base.strings.len() as u32)
            .add("foo_t", TYPEDEF, 1, &[])
            .add("", PTR, 3, &[])
            .add("wrap", KIND_STRUCT, 24, &[member_name, first, 0, 0, 6, 128]);
        DistilledBase::read(&base.blob(), &split.blob()).unwrap()
    }

    fn module() -> DistilledBase {
        module_with(0, true)
    }

    fn kernel(w: Writer) -> Vec<u8> {
        w.blob()
    }

    /// A kernel with one type for each of the module's, and unrelated others between them.
    fn matching_kernel() -> Writer {
        Writer::new(0)
            .add("long", KIND_INT, 8, &[SIGNED_32])
            .add("foo", KIND_STRUCT, 16, &[])
            .add("int", KIND_INT, 4, &[SIGNED_32])
            .add("foo", PTR, 1, &[])
            .add("bar", KIND_STRUCT, 40, &[])
            .add("e", KIND_ENUM64, 4, &[])
    }

    /// The same, but with a struct foo of 24 bytes.
    fn foo_of_24_bytes() -> Writer {
        Writer::new(0)
            .add("foo", KIND_STRUCT, 24, &[])
            .add("int", KIND_INT, 4, &[SIGNED_32])
            .add("bar", KIND_STRUCT, 40, &[])
            .add("e", KIND_ENUM, 4, &[])
    }

    #[test]
    fn embedded_types_are_those_a_split_struct_holds_without_a_pointer() {
        let m = module();
        let embedded: Vec<&str> = m
            .types
            .iter()
            .filter(|t| t.embedded)
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(embedded, ["foo"]);
        assert_eq!((m.types[1].int_encoding, m.types[1].size), (1, 4), "{m:?}");
        assert!(module_with(0, false).types.iter().all(|t| !t.embedded));
    }

    #[test]
    fn each_type_mapping_to_one_kernel_type_relocates() {
        assert_eq!(
            relocate(&module(), &kernel(matching_kernel())).unwrap(),
            Relocation::Maps { types: 4 }
        );
    }

    #[test]
    fn a_type_the_kernel_lacks_is_refused_with_the_kernels_message() {
        let without_bar = Writer::new(0)
            .add("foo", KIND_STRUCT, 16, &[])
            .add("int", KIND_INT, 4, &[SIGNED_32])
            .add("e", KIND_ENUM, 4, &[]);
        assert_eq!(
            relocate(&module(), &kernel(without_bar)).unwrap(),
            Relocation::Fails {
                message: "distilled base BTF type 'bar' [3] is not mapped to base BTF id".into(),
                errno: -22
            }
        );
        // An int of another encoding, or of another size, is no candidate.
        for (size, encoding) in [(4, 32), (8, SIGNED_32)] {
            let other_int = Writer::new(0)
                .add("foo", KIND_STRUCT, 16, &[])
                .add("int", KIND_INT, size, &[encoding])
                .add("bar", KIND_FWD, 0, &[])
                .add("e", KIND_ENUM, 4, &[]);
            assert_eq!(
                relocate(&module(), &kernel(other_int)).unwrap(),
                Relocation::Fails {
                    message: "distilled base BTF type 'int' [2] is not mapped to base BTF id"
                        .into(),
                    errno: -22
                }
            );
        }
    }

    #[test]
    fn two_candidates_of_the_same_name_and_size_are_refused() {
        let twice = matching_kernel().add("foo", KIND_STRUCT, 16, &[]);
        assert_eq!(
            relocate(&module(), &kernel(twice)).unwrap(),
            Relocation::Fails {
                message: "distilled base BTF type 'foo' [1], size 16 has multiple candidates of the same size (ids [7, 2]) in base BTF".into(),
                errno: -22
            }
        );
        // Two of that name but of different sizes: the size picks one.
        let sizes = matching_kernel().add("foo", KIND_STRUCT, 32, &[]);
        assert_eq!(
            relocate(&module(), &kernel(sizes)).unwrap(),
            Relocation::Maps { types: 4 }
        );
    }

    #[test]
    fn an_embedded_struct_of_another_size_is_never_said_to_load() {
        let bigger = foo_of_24_bytes();
        let v = relocate(&module(), &kernel(bigger)).unwrap();
        let Relocation::Depends { reason } = &v else {
            panic!("{v:?}")
        };
        assert!(reason.contains("'foo' [1]"), "{reason}");
        // Held only through a pointer, its size is not compared.
        let bigger = foo_of_24_bytes();
        assert_eq!(
            relocate(&module_with(0, false), &kernel(bigger)).unwrap(),
            Relocation::Maps { types: 4 }
        );
    }

    #[test]
    fn a_forward_declaration_matched_only_by_one_reading_is_undecided() {
        // A struct with bitfields has the kind flag set: the merged code then takes it for a
        // union's, the rule means the FWD's own flag.
        let bitfields = Writer::new(0)
            .add("foo", KIND_STRUCT, 16, &[])
            .add("int", KIND_INT, 4, &[SIGNED_32])
            .add("bar", KIND_STRUCT | KFLAG, 40, &[])
            .add("e", KIND_ENUM, 4, &[]);
        assert!(matches!(
            relocate(&module(), &kernel(bitfields)).unwrap(),
            Relocation::Depends { .. }
        ));
    }

    #[test]
    fn a_split_name_from_the_distilled_strings_must_be_a_types_name() {
        // Offset 2: the "oo" of "foo", no type's name.
        assert_eq!(
            relocate(&module_with(2, true), &kernel(matching_kernel())).unwrap(),
            Relocation::Fails {
                message: "string 'oo' [offset 2] is not mapped to base BTF".into(),
                errno: -2
            }
        );
        assert_eq!(
            relocate(&module_with(1, true), &kernel(matching_kernel())).unwrap(),
            Relocation::Maps { types: 4 },
            "offset 1 is foo's name"
        );
        // Whether foo maps or not, the relocation fails: on the mapping or on the name.
        let bigger_foo = foo_of_24_bytes();
        assert!(matches!(
            relocate(&module_with(2, true), &kernel(bigger_foo)).unwrap(),
            Relocation::Fails { errno: -2, .. }
        ));
    }

    #[test]
    fn a_distilled_base_of_other_kinds_is_refused() {
        let base = Writer::new(0).add("p", PTR, 0, &[]);
        let anonymous = Writer::new(0).add("", KIND_STRUCT, 4, &[]);
        let split = Writer::new(4).add("", CONST, 1, &[]);
        for (b, message) in [
            (
                base,
                "type [1] in distilled based BTF has unexpected kind [2]",
            ),
            (
                anonymous,
                "type [1], kind [4] is invalid for distilled base BTF; it is anonymous",
            ),
        ] {
            let d = DistilledBase::read(&b.blob(), &split.blob()).unwrap();
            assert_eq!(
                relocate(&d, &kernel(matching_kernel())).unwrap(),
                Relocation::Fails {
                    message: message.into(),
                    errno: -22
                }
            );
        }
    }

    /// A file of `tests/fixtures/kernels`, decompressed where it is xz.
    fn fixture(name: &str) -> (std::path::PathBuf, Vec<u8>) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/kernels")
            .join(name);
        let bytes = std::fs::read(&path).unwrap();
        (path, bytes)
    }

    /// The distilled base of a shrunk real module.
    fn real_module(name: &str) -> DistilledBase {
        let (path, bytes) = fixture(name);
        let facts = crate::kmod::load_facts::load_facts_of_bytes(&path, &bytes).unwrap();
        facts.btf.unwrap().unwrap().distilled.unwrap().unwrap()
    }

    /// The types of a real kernel's BTF that the fixture modules' distilled bases name.
    fn real_kernel(release: &str) -> Vec<u8> {
        let (_, xz) = fixture(&format!("vmlinux-{release}-reloc.btf.xz"));
        crate::kmod::decompress::decompress(crate::kmod::Compression::Xz, &xz, 1 << 20).unwrap()
    }

    const DKMS: &str = "rpcrdma-7.3.4+deb13-amd64-dkms.ko.xz";
    const DKMS_612: &str = "rpcrdma-7.3.4+deb13-amd64-dkms-612btf.ko.xz";

    #[test]
    fn both_real_out_of_tree_builds_relocate_onto_734_as_the_kernel_did() {
        let k = real_kernel("7.3.4+deb13-amd64");
        for (name, types) in [(DKMS, 689), (DKMS_612, 623)] {
            let m = real_module(name);
            assert!(m.types.iter().any(|t| t.embedded), "{name}");
            assert_eq!(
                relocate(&m, &k).unwrap(),
                Relocation::Maps { types },
                "{name}"
            );
        }
    }

    #[test]
    fn a_real_distilled_base_fails_where_the_kernel_lacks_one_of_its_types() {
        // 7.3.4's distilled base names a struct 6.12.117 does not have.
        let k = real_kernel("6.12.117+deb13-amd64");
        assert_eq!(
            relocate(&real_module(DKMS), &k).unwrap(),
            Relocation::Fails {
                message:
                    "distilled base BTF type 'bio_crypt_ctx' [13] is not mapped to base BTF id"
                        .into(),
                errno: -22
            }
        );
        // 6.12.117's relocates onto 6.12.117 as well.
        assert!(matches!(
            relocate(&real_module(DKMS_612), &k).unwrap(),
            Relocation::Maps { .. }
        ));
        // 7.3.4's own types with one renamed: that type is the one the kernel names.
        let mut renamed = real_kernel("7.3.4+deb13-amd64");
        let at = renamed
            .windows(b"\0list_head\0".len())
            .position(|w| w == b"\0list_head\0")
            .unwrap();
        renamed[at + 1] = b'L';
        let v = relocate(&real_module(DKMS), &renamed).unwrap();
        let Relocation::Fails { message, .. } = &v else {
            panic!("{v:?}")
        };
        assert!(
            message.starts_with("distilled base BTF type 'list_head' ["),
            "{message}"
        );
    }
}
