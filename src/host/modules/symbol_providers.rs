//! Finds the provider of an imported symbol as modprobe and the loader would — `modules.symbols`
//! names the module, `modules.dep` its file, the file its export CRC — for
//! [`crate::kmod::abi::compare_import_crcs`].
//!
//! A provider that is already loaded is what the loader links against, not its file: when the
//! caller knows the loaded build's export CRCs (the loaded build-id matches a file it has read),
//! it registers them with [`TreeProviders::with_loaded`] and they win over the file. Each
//! provider file is read once, however many symbols it provides, and not at all while the
//! facts cache holds its export table ([`TreeProviders::with_cache`]); the identity of every
//! provider file answered is kept ([`TreeProviders::files`]) for a verdict cached on them.
//!
//! The kernel build's `Module.symvers` ([`super::build_symvers`]) lists the CRC of every export
//! of the image and of every in-tree module; [`TreeProviders::use_build_symvers`] takes them
//! from it instead of decompressing the in-tree provider files, where it is proven to be the
//! build those files come from:
//!
//! - the file is found by the tree's release (the `build` link of the tree, the headers or
//!   kernel source directory named for it, `/boot/symvers-<release>.gz`), never another's;
//! - a provider answered from it is an in-tree file (`kernel/…` in `modules.dep`; one under
//!   `updates/`, `extra/`, `weak-updates/` or anywhere else is always read), present now, and
//!   the symvers records every symbol asked of it as exported by that very build path;
//! - one of those providers, the smallest file, is read anyway, and its whole export table
//!   (every symbol and CRC) must be what the symvers records for it. A symvers of another build
//!   of the same release — a rebuilt kernel, headers left from another upload — differs there
//!   unless the two builds agree on that module's ABI; distributions bump the release (Debian's
//!   and Ubuntu's ABI name, RHEL's and SUSE's build number) whenever an export's CRC changes.
//!
//! Anything short of that — no symvers, a line that does not parse, a provider outside
//! `kernel/`, a symbol missing from it, one export differing in the file read — and every
//! provider file is read as without it: a doubt never becomes an "agree". The kernel image's
//! own exports are compared only when the symvers is proven.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use super::module_name::normalize_name;
use super::module_tree::ModuleTree;
use crate::host::io::facts_cache::{FactsCache, FileIdentity};
use crate::host::modules::build_symvers::BuildSymvers;
use crate::host::modules::module_files::load_facts_below;
use crate::kmod::abi::{CrcOrigin, Provider};
use crate::kmod::modversions::ExportCrcs;
use crate::kmod::symvers;

/// What one provider module answers: its file and export CRCs, or why it has none.
#[derive(Debug, Clone)]
enum ProviderFacts {
    Read {
        path: Option<PathBuf>,
        crcs: BTreeMap<String, u32>,
        origin: CrcOrigin,
    },
    Unreadable(String),
}

/// Providers of symbols in one module tree.
#[derive(Debug)]
pub struct TreeProviders<'t> {
    tree: &'t ModuleTree,
    modules: HashMap<String, ProviderFacts>,
    cache: Option<FactsCache>,
    files: Vec<FileIdentity>,
    /// The kernel image's export CRCs, from a proven symvers.
    image: HashMap<String, u32>,
    /// The proven symvers, when one answers.
    symvers: Option<PathBuf>,
    /// The module `modules.symbols` names for each symbol looked up (`None`: the image), or
    /// why it could not be read: each symbol is looked up once.
    named: HashMap<String, Result<Option<String>, String>>,
}

/// An in-tree provider the symvers may answer for.
struct Candidate {
    path: PathBuf,
    build_path: String,
    size: u64,
    identity: FileIdentity,
    crcs: BTreeMap<String, u32>,
}

impl<'t> TreeProviders<'t> {
    pub fn new(tree: &'t ModuleTree) -> Self {
        TreeProviders {
            tree,
            modules: HashMap::new(),
            cache: None,
            files: Vec::new(),
            image: HashMap::new(),
            symvers: None,
            named: HashMap::new(),
        }
    }

    /// Answers providers' export tables from `cache` while their files are unchanged.
    pub fn with_cache(mut self, cache: Option<FactsCache>) -> Self {
        self.cache = cache;
        self
    }

    /// The identity of every provider file answered so far, and of the symvers when it
    /// answered (with a cache only).
    pub fn files(&self) -> &[FileIdentity] {
        &self.files
    }

    /// The build's `Module.symvers` that answers, once [`Self::use_build_symvers`] proved it.
    pub fn build_symvers(&self) -> Option<&std::path::Path> {
        self.symvers.as_deref()
    }

    /// Answers for `module` from the export CRCs of its loaded build.
    pub fn with_loaded(mut self, module: &str, crcs: ExportCrcs) -> Self {
        self.modules.insert(
            normalize_name(module),
            ProviderFacts::Read {
                path: None,
                crcs: crcs.crcs,
                origin: CrcOrigin::LoadedBuild,
            },
        );
        self
    }

    /// Takes the CRCs of `symbols`' in-tree providers and of the kernel image from the tree's
    /// build symvers where it is proven to be their build (see the module's comment); otherwise
    /// changes nothing, and every provider is read from its file.
    pub fn use_build_symvers(&mut self, symbols: &[&str]) {
        // Which module modules.symbols names for each symbol (`None`: the image), and which of
        // them are in-tree files the symvers may answer for; without one, nothing is proven and
        // the symvers is not read.
        let mut named: Vec<(&str, Option<String>)> = Vec::new();
        let mut candidates: BTreeMap<String, Option<Candidate>> = BTreeMap::new();
        for symbol in symbols {
            let module = match self.named(symbol) {
                Ok(m) => m,
                Err(_) => continue,
            };
            if let Some(m) = &module {
                if self.modules.contains_key(m) {
                    continue; // a loaded build answers
                }
                if !candidates.contains_key(m) {
                    candidates.insert(m.clone(), self.candidate(m));
                }
            }
            named.push((symbol, module));
        }
        let mut in_tree: Vec<(String, Candidate)> = candidates
            .into_iter()
            .filter_map(|(m, c)| Some((m, c?)))
            .collect();
        // The proof: the smallest candidate's file, read, must export exactly what the symvers
        // records for its build path; chosen by size before the symvers is read, so one pass
        // over it gives both.
        let Some(at) = (0..in_tree.len()).min_by_key(|&i| in_tree[i].1.size) else {
            return;
        };
        let root = self.tree.root().clone();
        let wanted: HashSet<&str> = symbols.iter().copied().collect();
        let sv = match BuildSymvers::read(
            &root,
            &self.tree.dir_rel,
            &wanted,
            &in_tree[at].1.build_path,
        ) {
            Ok(Some(sv)) => sv,
            Ok(None) => return,
            Err(e) => {
                tracing::debug!("{e}: the provider files are read instead");
                return;
            }
        };
        let found = &sv.found;
        let mut image = HashMap::new();
        let mut refused: HashSet<String> = HashSet::new();
        for (symbol, module) in named {
            let entry = found.symbols.get(symbol);
            let Some(module) = module else {
                if let Some(e) = entry.filter(|e| e.module == symvers::VMLINUX) {
                    image.insert(symbol.to_string(), e.crc);
                }
                continue;
            };
            let Some((_, c)) = in_tree.iter_mut().find(|(m, _)| *m == module) else {
                continue;
            };
            match entry {
                Some(e) if e.module == c.build_path => {
                    c.crcs.insert(symbol.to_string(), e.crc);
                }
                // Not recorded for this build path: that provider is read from its file.
                _ => {
                    refused.insert(module);
                }
            }
        }
        let (module, proof) = in_tree.swap_remove(at);
        let (facts, identity) = load_facts_below(&root, &proof.path, self.cache.as_ref());
        self.files.extend(identity);
        let proven = !refused.contains(&module)
            && matches!(&facts, Ok(f) if f.exports.crcs == found.module_exports);
        self.modules.insert(
            module,
            match facts {
                Ok(f) => ProviderFacts::Read {
                    path: Some(proof.path),
                    crcs: f.exports.crcs,
                    origin: CrcOrigin::File,
                },
                Err(e) => ProviderFacts::Unreadable(e),
            },
        );
        if !proven {
            tracing::debug!(
                "{} is not proven to be the build of the provider files: they are read instead",
                sv.path.display()
            );
            return;
        }
        for (module, c) in in_tree.into_iter().filter(|(m, _)| !refused.contains(m)) {
            if self.cache.is_some() {
                self.files.push(c.identity);
            }
            self.modules.insert(
                module,
                ProviderFacts::Read {
                    path: Some(c.path),
                    crcs: c.crcs,
                    origin: CrcOrigin::BuildSymvers,
                },
            );
        }
        if self.cache.is_some() {
            self.files.push(sv.identity);
        }
        self.image = image;
        self.symvers = Some(sv.path);
    }

    /// The module `modules.symbols` names for `symbol`, normalized (`None`: the kernel image).
    fn named(&mut self, symbol: &str) -> Result<Option<String>, String> {
        if let Some(known) = self.named.get(symbol) {
            return known.clone();
        }
        let module = self
            .tree
            .symbol_provider(symbol)
            .map(|m| m.map(|m| normalize_name(&m)))
            .map_err(|e| e.to_string());
        self.named.insert(symbol.to_string(), module.clone());
        module
    }

    /// `module` as an in-tree provider the symvers may answer for: its `modules.dep` file under
    /// `kernel/`, a regular file now. `None` otherwise (its file is read).
    fn candidate(&self, module: &str) -> Option<Candidate> {
        let entry = self.tree.dep_entry(module).ok()??;
        let build_path = symvers::build_path_of(&entry.file)?.to_string();
        let path = self.tree.path_of(&entry.file);
        let root = self.tree.root();
        let identity = root.identity(&root.rel_of(&path)?)?;
        Some(Candidate {
            size: identity.size,
            path,
            build_path,
            identity,
            crcs: BTreeMap::new(),
        })
    }

    fn facts_of(&mut self, module: &str) -> &ProviderFacts {
        if !self.modules.contains_key(module) {
            let facts = match self.tree.dep_entry(module) {
                Err(e) => ProviderFacts::Unreadable(e.to_string()),
                Ok(None) => ProviderFacts::Unreadable(format!(
                    "modules.symbols names {module}, but modules.dep has no entry for it"
                )),
                Ok(Some(entry)) => {
                    let path = self.tree.path_of(&entry.file);
                    let (facts, identity) =
                        load_facts_below(self.tree.root(), &path, self.cache.as_ref());
                    self.files.extend(identity);
                    match facts {
                        Ok(f) => ProviderFacts::Read {
                            path: Some(path),
                            crcs: f.exports.crcs,
                            origin: CrcOrigin::File,
                        },
                        Err(e) => ProviderFacts::Unreadable(e),
                    }
                }
            };
            self.modules.insert(module.to_string(), facts);
        }
        &self.modules[module]
    }

    /// The provider of `symbol`.
    pub fn provider_of(&mut self, symbol: &str) -> Provider {
        let module = match self.named(symbol) {
            Ok(Some(m)) => m,
            Ok(None) => {
                return match (self.image.get(symbol), &self.symvers) {
                    (Some(&crc), Some(path)) => Provider::KernelImageCrc {
                        crc,
                        symvers: path.clone(),
                    },
                    _ => Provider::KernelImage,
                }
            }
            Err(reason) => {
                return Provider::Unreadable {
                    module: "modules.symbols".into(),
                    reason,
                }
            }
        };
        match self.facts_of(&module) {
            ProviderFacts::Read { path, crcs, origin } => Provider::Module {
                crc: crcs.get(symbol).copied(),
                path: path.clone(),
                origin: *origin,
                module,
            },
            ProviderFacts::Unreadable(reason) => Provider::Unreadable {
                reason: reason.clone(),
                module,
            },
        }
    }
}
