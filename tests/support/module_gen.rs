//! Builds relocatable x86_64 ELF kernel modules with the sections kbuild output has, so tests and
//! benchmarks can exercise the module reader without shipping real `.ko` files.
//!
//! A generated module has `.note.gnu.build-id` (an `NT_GNU_BUILD_ID` note), `.text` with the
//! nvfs hook functions, `.modinfo` (`version`, `license`, `srcversion`, `depends`, `retpoline`,
//! `intree`, `name`, `vermagic`, in kbuild's order), the export tables in either layout —
//! `__ksymtab` / `__ksymtab_gpl` with `__ksymtab_<sym>` labels, or one `__ksymtab` plus
//! `__kflagstab` with `__flags_<sym>` bytes — with their `.rela` sections, `__ksymtab_strings`
//! (`__kstrtab_<sym>`, `__kstrtabns_<sym>`), `.gnu.linkonce.this_module` and a symbol table.
//! [`ModuleSpec::padded_to`] adds code-like filler and local function symbols until the image
//! reaches a given size, for benchmarks that need a realistically sized (≈800 KB) module.
//!
//! Symbol versions, as CONFIG_MODVERSIONS builds write them: `__versions` (64-byte
//! `modversion_info` entries) and/or `__version_ext_crcs` + `__version_ext_names` for the
//! imports, with the imported symbols undefined in the symbol table; export CRCs either as
//! absolute `__crc_<sym>` symbols with relocated `__kcrctab[_gpl]` slots (kernels before 5.19)
//! or as `__crc_<sym>` labels on the CRC words in `__kcrctab[_gpl]` (5.19 and later). A
//! signature trailer ([`signature_trailer`], [`pkcs7_signed_data`]) can be appended after the
//! ELF image, as `sign-file` does.

use object::write::{Object, Relocation, StandardSegment, Symbol, SymbolSection};
use object::{
    elf, Architecture, BinaryFormat, Endianness, RelocationEncoding, RelocationFlags,
    RelocationKind, SectionFlags, SectionKind, SymbolFlags, SymbolKind, SymbolScope,
};

/// The two hooks nvidia-fs takes from rpcrdma.
pub const HOOKS: [&str; 2] = [
    "rpcrdma_register_nvfs_dma_ops",
    "rpcrdma_unregister_nvfs_dma_ops",
];

/// How a module exports its hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookExport {
    Gpl,
    Plain,
    /// Defined but not exported.
    NotExported,
}

/// How export CRCs are stored (see the modversions reader's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrcLayout {
    /// Absolute `__crc_<sym>` symbols; `__kcrctab[_gpl]` slots are relocations against them.
    AbsoluteSymbols,
    /// `__crc_<sym>` labels on the CRC words in `__kcrctab[_gpl]`.
    TableLabels,
}

/// Which import version tables the module carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportTables {
    /// `__versions` only (every kernel before 6.14; CONFIG_BASIC_MODVERSIONS alone). Names of 56
    /// bytes or more are left out (modpost refuses them there).
    Basic,
    /// `__version_ext_crcs` + `__version_ext_names` only.
    Extended,
    /// Both, `__versions` keeping only names shorter than 56 bytes (as modpost writes them).
    Both,
}

/// The CRC generated modules give `symbol` under `seed` (stand-in for genksyms' CRC of its
/// prototype: a different seed is a changed ABI).
pub fn symbol_crc(seed: &str, symbol: &str) -> u32 {
    let h = seed
        .bytes()
        .chain([0])
        .chain(symbol.bytes())
        .fold(0x811c_9dc5u32, |h, b| {
            (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
        });
    h | 1
}

/// Where GPL-ness is kept (see the module reader's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `__ksymtab` + `__ksymtab_gpl`, as every released kernel builds.
    SplitTables,
    /// One `__ksymtab` + `__kflagstab` (the 2026 "scalable symbol flags" series).
    FlagsTable,
}

#[derive(Debug, Clone)]
pub struct ModuleSpec {
    pub name: String,
    pub vermagic: String,
    pub version: Option<String>,
    pub srcversion: Option<String>,
    pub license: String,
    pub depends: Vec<String>,
    /// `None`: the hooks are not in the module at all (built without GDS support).
    pub hooks: Option<HookExport>,
    pub layout: Layout,
    pub build_id: Option<Vec<u8>>,
    /// Other exports, `(name, gpl)`, as real modules have.
    pub other_exports: Vec<(String, bool)>,
    /// Grow the image to about this many bytes with filler code and symbols.
    pub pad_to: Option<usize>,
    /// In the flags-table layout, label each flag byte `__flags_<sym>` (modpost does); without
    /// labels a reader must find the flag by the entry's index.
    pub flag_labels: bool,
    /// Imported symbols with the CRC the module was built against; empty: no version table
    /// (built without CONFIG_MODVERSIONS).
    pub imports: Vec<(String, u32)>,
    pub import_tables: ImportTables,
    /// How export CRCs are stored; `None`: exports carry no CRCs.
    pub export_crcs: Option<CrcLayout>,
    /// Seed of the export CRCs ([`symbol_crc`]).
    pub crc_seed: String,
    /// Bytes appended after the ELF image (a signature trailer).
    pub trailer: Option<Vec<u8>>,
}

impl ModuleSpec {
    /// An rpcrdma for kernel `release` with GPL-exported hooks, a build-id and a srcversion.
    pub fn rpcrdma(release: &str) -> Self {
        ModuleSpec {
            name: "rpcrdma".into(),
            vermagic: format!("{release} SMP preempt mod_unload modversions "),
            version: Some("24.07-0.6.1".into()),
            srcversion: Some("0A1B2C3D4E5F60718293A4B".into()),
            license: "Dual BSD/GPL".into(),
            depends: vec!["sunrpc".into(), "ib_core".into(), "rdma_cm".into()],
            hooks: Some(HookExport::Gpl),
            layout: Layout::SplitTables,
            build_id: Some(build_id_of("rpcrdma-default")),
            other_exports: vec![("rpcrdma_reply_handler".into(), true)],
            pad_to: None,
            flag_labels: true,
            imports: RPCRDMA_IMPORTS
                .iter()
                .map(|s| (s.to_string(), symbol_crc("6.1-inbox", s)))
                .collect(),
            import_tables: ImportTables::Basic,
            export_crcs: Some(CrcLayout::TableLabels),
            crc_seed: "6.1-inbox".into(),
            trailer: None,
        }
    }

    /// A module `name` that only exports `exports` (`(symbol, gpl)`), e.g. an `ib_core`.
    pub fn provider(name: &str, release: &str, exports: &[(&str, bool)]) -> Self {
        ModuleSpec {
            name: name.into(),
            version: None,
            srcversion: None,
            depends: Vec::new(),
            hooks: None,
            build_id: Some(build_id_of(name)),
            other_exports: exports.iter().map(|(s, g)| (s.to_string(), *g)).collect(),
            imports: vec![(
                "module_layout".into(),
                symbol_crc("6.1-inbox", "module_layout"),
            )],
            ..ModuleSpec::rpcrdma(release)
        }
    }

    /// Imports with their CRCs (replacing the default list).
    pub fn imports(mut self, imports: &[(&str, u32)]) -> Self {
        self.imports = imports.iter().map(|(s, c)| (s.to_string(), *c)).collect();
        self
    }

    pub fn import_tables(mut self, t: ImportTables) -> Self {
        self.import_tables = t;
        self
    }

    pub fn export_crcs(mut self, layout: Option<CrcLayout>) -> Self {
        self.export_crcs = layout;
        self
    }

    pub fn crc_seed(mut self, seed: &str) -> Self {
        self.crc_seed = seed.into();
        self
    }

    /// Appends `trailer` (e.g. [`signature_trailer`]) after the image.
    pub fn signed_with(mut self, trailer: Vec<u8>) -> Self {
        self.trailer = Some(trailer);
        self
    }

    /// The export CRC this module gives `symbol`.
    pub fn export_crc(&self, symbol: &str) -> u32 {
        symbol_crc(&self.crc_seed, symbol)
    }

    pub fn hooks(mut self, hooks: Option<HookExport>) -> Self {
        self.hooks = hooks;
        self
    }

    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }

    pub fn build_id(mut self, id: Option<Vec<u8>>) -> Self {
        self.build_id = id;
        self
    }

    pub fn srcversion(mut self, s: Option<&str>) -> Self {
        self.srcversion = s.map(str::to_string);
        self
    }

    pub fn version(mut self, s: Option<&str>) -> Self {
        self.version = s.map(str::to_string);
        self
    }

    pub fn without_flag_labels(mut self) -> Self {
        self.flag_labels = false;
        self
    }

    pub fn padded_to(mut self, bytes: usize) -> Self {
        self.pad_to = Some(bytes);
        self
    }

    /// The build-id as the kernel prints it (lower-case hex), if any.
    pub fn build_id_hex(&self) -> Option<String> {
        self.build_id.as_deref().map(hex)
    }
}

/// A 20-byte build-id derived from a seed (what `ld --build-id=sha1` would give, in shape).
pub fn build_id_of(seed: &str) -> Vec<u8> {
    let mut x = seed.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    (0..20)
        .map(|_| {
            x = lcg(x);
            (x >> 56) as u8
        })
        .collect()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of an `NT_GNU_BUILD_ID` note carrying `id` (as in `.note.gnu.build-id` and
/// `/sys/module/<m>/notes/.note.gnu.build-id`).
pub fn build_id_note(id: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&4u32.to_le_bytes());
    v.extend_from_slice(&(id.len() as u32).to_le_bytes());
    v.extend_from_slice(&3u32.to_le_bytes()); // NT_GNU_BUILD_ID
    v.extend_from_slice(b"GNU\0");
    v.extend_from_slice(id);
    while !v.len().is_multiple_of(4) {
        v.push(0);
    }
    v
}

/// Symbols the generated rpcrdma imports, as the Debian 12 build does (a sample of its 190).
pub const RPCRDMA_IMPORTS: [&str; 10] = [
    "module_layout",
    "ib_dma_virt_map_sg",
    "ib_alloc_pd_user",
    "rdma_create_id",
    "rdma_resolve_addr",
    "ib_drain_qp",
    "xprt_alloc",
    "svc_xprt_init",
    "__fentry__",
    "_printk",
];

/// The `~Module signature appended~` trailer `sign-file` writes for PKCS#7 `data`.
pub fn signature_trailer(data: &[u8]) -> Vec<u8> {
    let mut v = data.to_vec();
    // algo, hash, id_type = PKEY_ID_PKCS7, signer_len, key_id_len, 3 bytes pad, be32 sig_len
    v.extend_from_slice(&[0, 0, 2, 0, 0, 0, 0, 0]);
    v.extend_from_slice(&(data.len() as u32).to_be_bytes());
    v.extend_from_slice(b"~Module signature appended~\n");
    v
}

/// A DER CMS `ContentInfo` holding a detached `SignedData` without certificates, as `sign-file`
/// makes one: one SignerInfo naming its key by issuer `CN=<issuer_cn>` and `serial`, digest
/// `digest_oid` (e.g. SHA-256 `2.16.840.1.101.3.4.2.1`), RSA, and `signature` as its value (not a
/// real signature: nothing verifies it).
pub fn pkcs7_signed_data(
    issuer_cn: &str,
    serial: &[u8],
    digest_oid: &str,
    signature: &[u8],
) -> Vec<u8> {
    use cms::cert::x509::attr::AttributeTypeAndValue;
    use cms::cert::x509::der::asn1::{OctetString, SetOfVec, Utf8StringRef};
    use cms::cert::x509::der::{oid::ObjectIdentifier, Any, Encode};
    use cms::cert::x509::name::{Name, RdnSequence, RelativeDistinguishedName};
    use cms::cert::x509::serial_number::SerialNumber;
    use cms::cert::x509::spki::AlgorithmIdentifierOwned;
    use cms::cert::IssuerAndSerialNumber;
    use cms::content_info::{CmsVersion, ContentInfo};
    use cms::signed_data::{
        EncapsulatedContentInfo, SignedData, SignerIdentifier, SignerInfo, SignerInfos,
    };

    let oid = ObjectIdentifier::new_unwrap;
    let cn = AttributeTypeAndValue {
        oid: oid("2.5.4.3"),
        value: Any::from(Utf8StringRef::new(issuer_cn).expect("UTF-8 name")),
    };
    let issuer: Name = RdnSequence(vec![RelativeDistinguishedName(
        SetOfVec::try_from(vec![cn]).expect("one attribute"),
    )]);
    let digest = AlgorithmIdentifierOwned {
        oid: oid(digest_oid),
        parameters: None,
    };
    let signer = SignerInfo {
        version: CmsVersion::V1,
        sid: SignerIdentifier::IssuerAndSerialNumber(IssuerAndSerialNumber {
            issuer,
            serial_number: SerialNumber::new(serial).expect("serial"),
        }),
        digest_alg: digest.clone(),
        signed_attrs: None,
        signature_algorithm: AlgorithmIdentifierOwned {
            oid: oid("1.2.840.113549.1.1.1"),
            parameters: None,
        },
        signature: OctetString::new(signature).expect("signature"),
        unsigned_attrs: None,
    };
    let signed = SignedData {
        version: CmsVersion::V1,
        digest_algorithms: SetOfVec::try_from(vec![digest]).expect("one digest"),
        encap_content_info: EncapsulatedContentInfo {
            econtent_type: oid("1.2.840.113549.1.7.1"),
            econtent: None,
        },
        certificates: None,
        crls: None,
        signer_infos: SignerInfos(SetOfVec::try_from(vec![signer]).expect("one signer")),
    };
    ContentInfo {
        content_type: oid("1.2.840.113549.1.7.2"),
        content: Any::encode_from(&signed).expect("SignedData encodes"),
    }
    .to_der()
    .expect("ContentInfo encodes")
}

fn lcg(x: u64) -> u64 {
    x.wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
}

/// Function-body shapes for filler code: real x86_64 prologues/epilogues with varying
/// immediates, so the filler compresses about as well as real module text.
fn filler_function(out: &mut Vec<u8>, seed: &mut u64) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0xf3, 0x0f, 0x1e, 0xfa]); // endbr64
    out.extend_from_slice(&[0x0f, 0x1f, 0x44, 0x00, 0x00]); // nop (mcount site)
    out.extend_from_slice(&[0x55, 0x48, 0x89, 0xe5, 0x41, 0x54, 0x53]); // push rbp; mov rbp,rsp; push r12; push rbx
    *seed = lcg(*seed);
    let body = 8 + (*seed >> 58) as usize;
    for _ in 0..body {
        *seed = lcg(*seed);
        let r = *seed >> 32;
        match r % 6 {
            0 => out.extend_from_slice(&[0x48, 0x8b, 0x47, (r >> 8) as u8 & 0x38]), // mov rax,[rdi+imm8]
            1 => {
                out.extend_from_slice(&[0xe8]); // call rel32 (relocated in a real module)
                out.extend_from_slice(&[0, 0, 0, 0]);
            }
            2 => out.extend_from_slice(&[0x48, 0x85, 0xc0, 0x74, (r >> 16) as u8 & 0x3f]), // test rax,rax; je
            3 => {
                out.extend_from_slice(&[0xbe]); // mov esi, imm32
                out.extend_from_slice(&((r >> 4) as u32 & 0xc0).to_le_bytes());
            }
            4 => out.extend_from_slice(&[0x4c, 0x89, 0xe7]), // mov rdi,r12
            _ => out.extend_from_slice(&[0x89, 0x43, (r >> 12) as u8 & 0x7c]), // mov [rbx+imm8],eax
        }
    }
    out.extend_from_slice(&[0x5b, 0x41, 0x5c, 0x5d, 0xe9, 0, 0, 0, 0]); // pop; pop; pop; jmp __x86_return_thunk
    while !out.len().is_multiple_of(16) {
        out.push(0xcc);
    }
    out.len() - start
}

struct Export {
    name: String,
    gpl: bool,
    func: object::write::SymbolId,
}

/// Builds the module image.
pub fn build(spec: &ModuleSpec) -> Vec<u8> {
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    let seg = obj.segment_name(StandardSegment::Text).to_vec();

    if let Some(id) = &spec.build_id {
        let note = obj.add_section(
            Vec::new(),
            b".note.gnu.build-id".to_vec(),
            SectionKind::Note,
        );
        obj.section_mut(note).flags = SectionFlags::Elf {
            sh_type: elf::SHT_NOTE,
            sh_flags: elf::SHF_ALLOC,
        };
        obj.append_section_data(note, &build_id_note(id), 4);
    }

    let text = obj.add_section(seg.clone(), b".text".to_vec(), SectionKind::Text);
    let mut code = Vec::new();
    let mut seed = 0x5eed_u64;
    let mut functions: Vec<(String, u64, u64, bool)> = Vec::new(); // name, offset, size, global

    let mut exported: Vec<(String, bool)> = spec.other_exports.clone();
    if let Some(h) = spec.hooks {
        for hook in HOOKS {
            let off = code.len() as u64;
            let size = filler_function(&mut code, &mut seed) as u64;
            functions.push((hook.to_string(), off, size, true));
            match h {
                HookExport::Gpl => exported.push((hook.to_string(), true)),
                HookExport::Plain => exported.push((hook.to_string(), false)),
                HookExport::NotExported => {}
            }
        }
    }
    for (name, _) in &spec.other_exports {
        let off = code.len() as u64;
        let size = filler_function(&mut code, &mut seed) as u64;
        functions.push((name.clone(), off, size, true));
    }
    // A few always-present internals, as in the real module.
    for name in ["xprt_rdma_init", "xprt_rdma_cleanup", "rpcrdma_ep_create"] {
        let off = code.len() as u64;
        let size = filler_function(&mut code, &mut seed) as u64;
        functions.push((name.to_string(), off, size, false));
    }
    // Filler functions up to the wanted size (roughly: text is about half a real module).
    if let Some(target) = spec.pad_to {
        let mut n = 0;
        while code.len() < target * 2 / 5 {
            let off = code.len() as u64;
            let size = filler_function(&mut code, &mut seed) as u64;
            functions.push((format!("rpcrdma_internal_{n:05}"), off, size, false));
            n += 1;
        }
    }
    obj.append_section_data(text, &code, 16);
    let mut func_ids = Vec::new();
    for (name, off, size, global) in &functions {
        let id = obj.add_symbol(Symbol {
            name: name.as_bytes().to_vec(),
            value: *off,
            size: *size,
            kind: SymbolKind::Text,
            scope: if *global {
                SymbolScope::Dynamic
            } else {
                SymbolScope::Compilation
            },
            weak: false,
            section: SymbolSection::Section(text),
            flags: SymbolFlags::None,
        });
        func_ids.push((name.clone(), id));
    }
    let func_of = |name: &str| {
        func_ids
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, id)| *id)
            .expect("exported symbol is a generated function")
    };

    // Filler read-only data, like .rodata / .orc_unwind in a real module.
    if let Some(target) = spec.pad_to {
        let rodata = obj.add_section(seg.clone(), b".rodata".to_vec(), SectionKind::ReadOnlyData);
        let mut data = Vec::new();
        let want = target
            .saturating_sub(code.len())
            .saturating_sub(target / 10);
        while data.len() < want {
            seed = lcg(seed);
            let r = seed >> 33;
            // Mostly small structured records with some entropy, like unwind tables.
            data.extend_from_slice(&((r & 0x3f) as u32 * 8).to_le_bytes());
            data.extend_from_slice(&[(r >> 16) as u8 & 0x03, 0, 0x10, 0]);
        }
        obj.append_section_data(rodata, &data, 32);
    }

    let mut exports: Vec<Export> = exported
        .iter()
        .map(|(name, gpl)| Export {
            name: name.clone(),
            gpl: *gpl,
            func: func_of(name),
        })
        .collect();
    exports.sort_by(|a, b| a.name.cmp(&b.name));
    if !exports.is_empty() {
        add_export_tables(&mut obj, &seg, spec, &exports);
    }

    if !spec.imports.is_empty() {
        add_import_versions(&mut obj, &seg, spec);
    }

    let modinfo = obj.add_section(seg.clone(), b".modinfo".to_vec(), SectionKind::ReadOnlyData);
    let mut info = Vec::new();
    let mut field = |k: &str, v: &str| {
        info.extend_from_slice(k.as_bytes());
        info.push(b'=');
        info.extend_from_slice(v.as_bytes());
        info.push(0);
    };
    if let Some(v) = &spec.version {
        field("version", v);
    }
    field("license", &spec.license);
    field("description", "RPC/RDMA Transport");
    if let Some(s) = &spec.srcversion {
        field("srcversion", s);
    }
    if spec.name == "rpcrdma" {
        field("alias", "rpcrdma6");
        field("alias", "xprtrdma");
    }
    field("depends", &spec.depends.join(","));
    field("retpoline", "Y");
    field("name", &spec.name);
    field("vermagic", &spec.vermagic);
    obj.append_section_data(modinfo, &info, 1);

    let this = obj.add_section(
        seg,
        b".gnu.linkonce.this_module".to_vec(),
        SectionKind::Data,
    );
    let mut this_module = vec![0u8; 0x380];
    this_module[0x18..0x18 + spec.name.len()].copy_from_slice(spec.name.as_bytes());
    obj.append_section_data(this, &this_module, 64);
    obj.add_symbol(Symbol {
        name: b"__this_module".to_vec(),
        value: 0,
        size: 0x380,
        kind: SymbolKind::Data,
        scope: SymbolScope::Dynamic,
        weak: false,
        section: SymbolSection::Section(this),
        flags: SymbolFlags::None,
    });

    let mut image = obj
        .write()
        .expect("the ELF writer accepts the generated module");
    if let Some(t) = &spec.trailer {
        image.extend_from_slice(t);
    }
    image
}

/// `__versions` and/or the extended tables, and the imports as undefined symbols.
fn add_import_versions(obj: &mut Object<'_>, seg: &[u8], spec: &ModuleSpec) {
    for (name, _) in &spec.imports {
        obj.add_symbol(Symbol {
            name: name.as_bytes().to_vec(),
            value: 0,
            size: 0,
            kind: SymbolKind::Unknown,
            scope: SymbolScope::Unknown,
            weak: false,
            section: SymbolSection::Undefined,
            flags: SymbolFlags::None,
        });
    }
    if matches!(spec.import_tables, ImportTables::Basic | ImportTables::Both) {
        let versions = obj.add_section(
            seg.to_vec(),
            b"__versions".to_vec(),
            SectionKind::ReadOnlyData,
        );
        let mut data = Vec::new();
        for (name, crc) in &spec.imports {
            // modpost leaves names that do not fit `char name[56]` to the extended table.
            if name.len() >= 56 {
                continue;
            }
            let mut entry = u64::from(*crc).to_le_bytes().to_vec();
            entry.extend_from_slice(name.as_bytes());
            entry.resize(64, 0);
            data.extend_from_slice(&entry);
        }
        obj.append_section_data(versions, &data, 32);
    }
    if matches!(
        spec.import_tables,
        ImportTables::Extended | ImportTables::Both
    ) {
        let crcs = obj.add_section(
            seg.to_vec(),
            b"__version_ext_crcs".to_vec(),
            SectionKind::ReadOnlyData,
        );
        let data: Vec<u8> = spec
            .imports
            .iter()
            .flat_map(|(_, c)| c.to_le_bytes())
            .collect();
        obj.append_section_data(crcs, &data, 4);
        let names = obj.add_section(
            seg.to_vec(),
            b"__version_ext_names".to_vec(),
            SectionKind::ReadOnlyData,
        );
        let mut data = Vec::new();
        for (name, _) in &spec.imports {
            data.extend_from_slice(name.as_bytes());
            data.push(0);
        }
        obj.append_section_data(names, &data, 1);
    }
}

fn local_label(obj: &mut Object<'_>, name: String, section: object::write::SectionId, value: u64) {
    obj.add_symbol(Symbol {
        name: name.into_bytes(),
        value,
        size: 0,
        kind: SymbolKind::Unknown,
        scope: SymbolScope::Compilation,
        weak: false,
        section: SymbolSection::Section(section),
        // STB_LOCAL, STT_NOTYPE: what the assembler makes of a `label:` in inline asm.
        flags: SymbolFlags::Elf {
            st_info: elf::SymbolInfo::new(elf::STB_LOCAL, elf::STT_NOTYPE),
            st_other: elf::SymbolOther::default(),
        },
    });
}

/// `struct kernel_symbol` entries (PREL32: value, name, namespace offsets) with their labels and
/// relocations, the name strings, and the flags table when the layout has one.
fn add_export_tables(obj: &mut Object<'_>, seg: &[u8], spec: &ModuleSpec, exports: &[Export]) {
    let layout = spec.layout;
    let strings = obj.add_section(
        seg.to_vec(),
        b"__ksymtab_strings".to_vec(),
        SectionKind::ReadOnlyString,
    );
    let mut str_data = Vec::new();
    let mut name_offsets = Vec::new();
    for e in exports {
        let off = str_data.len() as u64;
        str_data.extend_from_slice(e.name.as_bytes());
        str_data.push(0);
        let ns = str_data.len() as u64;
        str_data.push(0); // empty namespace
        name_offsets.push((off, ns));
    }
    obj.append_section_data(strings, &str_data, 1);
    let strings_sym = obj.section_symbol(strings);
    for (e, (off, ns)) in exports.iter().zip(&name_offsets) {
        local_label(obj, format!("__kstrtab_{}", e.name), strings, *off);
        local_label(obj, format!("__kstrtabns_{}", e.name), strings, *ns);
    }

    let tables: Vec<(&[u8], Vec<usize>)> = match layout {
        Layout::SplitTables => vec![
            (
                b"__ksymtab".as_slice(),
                (0..exports.len()).filter(|&i| !exports[i].gpl).collect(),
            ),
            (
                b"__ksymtab_gpl".as_slice(),
                (0..exports.len()).filter(|&i| exports[i].gpl).collect(),
            ),
        ],
        Layout::FlagsTable => vec![(b"__ksymtab".as_slice(), (0..exports.len()).collect())],
    };
    for (name, members) in tables {
        if members.is_empty() {
            continue;
        }
        let table = obj.add_section(seg.to_vec(), name.to_vec(), SectionKind::ReadOnlyData);
        let data = vec![0u8; 12 * members.len()];
        let base = obj.append_section_data(table, &data, 4);
        for (slot, &i) in members.iter().enumerate() {
            let at = base + 12 * slot as u64;
            local_label(obj, format!("__ksymtab_{}", exports[i].name), table, at);
            let rel = |offset: u64, symbol, addend: i64| Relocation {
                offset,
                symbol,
                addend,
                flags: RelocationFlags::Generic {
                    kind: RelocationKind::Relative,
                    encoding: RelocationEncoding::Generic,
                    size: 32,
                },
            };
            let (name_off, ns_off) = name_offsets[i];
            obj.add_relocation(table, rel(at, exports[i].func, 0))
                .expect("relocation");
            obj.add_relocation(table, rel(at + 4, strings_sym, name_off as i64))
                .expect("relocation");
            obj.add_relocation(table, rel(at + 8, strings_sym, ns_off as i64))
                .expect("relocation");
        }
    }
    if let Some(crc_layout) = spec.export_crcs {
        add_crc_tables(obj, seg, spec, exports, crc_layout);
    }
    if layout == Layout::FlagsTable {
        let flags = obj.add_section(
            seg.to_vec(),
            b"__kflagstab".to_vec(),
            SectionKind::ReadOnlyData,
        );
        let bytes: Vec<u8> = exports.iter().map(|e| u8::from(e.gpl)).collect();
        obj.append_section_data(flags, &bytes, 1);
        if spec.flag_labels {
            for (i, e) in exports.iter().enumerate() {
                local_label(obj, format!("__flags_{}", e.name), flags, i as u64);
            }
        }
    }
}

/// `__kcrctab[_gpl]`, in the same slot order as `__ksymtab[_gpl]`, with the CRCs stored as
/// `layout` says.
fn add_crc_tables(
    obj: &mut Object<'_>,
    seg: &[u8],
    spec: &ModuleSpec,
    exports: &[Export],
    layout: CrcLayout,
) {
    let tables: Vec<(&[u8], Vec<&Export>)> = match spec.layout {
        Layout::SplitTables => vec![
            (
                b"__kcrctab".as_slice(),
                exports.iter().filter(|e| !e.gpl).collect(),
            ),
            (
                b"__kcrctab_gpl".as_slice(),
                exports.iter().filter(|e| e.gpl).collect(),
            ),
        ],
        Layout::FlagsTable => vec![(b"__kcrctab".as_slice(), exports.iter().collect())],
    };
    for (name, members) in tables {
        if members.is_empty() {
            continue;
        }
        let table = obj.add_section(seg.to_vec(), name.to_vec(), SectionKind::ReadOnlyData);
        match layout {
            CrcLayout::TableLabels => {
                let data: Vec<u8> = members
                    .iter()
                    .flat_map(|e| spec.export_crc(&e.name).to_le_bytes())
                    .collect();
                let base = obj.append_section_data(table, &data, 4);
                for (slot, e) in members.iter().enumerate() {
                    local_label(
                        obj,
                        format!("__crc_{}", e.name),
                        table,
                        base + 4 * slot as u64,
                    );
                }
            }
            CrcLayout::AbsoluteSymbols => {
                let base = obj.append_section_data(table, &vec![0u8; 4 * members.len()], 4);
                for (slot, e) in members.iter().enumerate() {
                    let crc = obj.add_symbol(Symbol {
                        name: format!("__crc_{}", e.name).into_bytes(),
                        value: u64::from(spec.export_crc(&e.name)),
                        size: 0,
                        kind: SymbolKind::Data,
                        scope: SymbolScope::Dynamic,
                        weak: false,
                        section: SymbolSection::Absolute,
                        // What genksyms' `__crc_<sym> = 0x…;` linker-script line makes.
                        flags: SymbolFlags::Elf {
                            st_info: elf::SymbolInfo::new(elf::STB_GLOBAL, elf::STT_NOTYPE),
                            st_other: elf::SymbolOther::default(),
                        },
                    });
                    obj.add_relocation(
                        table,
                        Relocation {
                            offset: base + 4 * slot as u64,
                            symbol: crc,
                            addend: 0,
                            flags: RelocationFlags::Generic {
                                kind: RelocationKind::Absolute,
                                encoding: RelocationEncoding::Generic,
                                size: 32,
                            },
                        },
                    )
                    .expect("relocation");
                }
            }
        }
    }
}
