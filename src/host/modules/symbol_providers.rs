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

use std::collections::HashMap;
use std::path::PathBuf;

use crate::host::io::facts_cache::{FactsCache, FileIdentity};
use crate::host::modules::module_files::load_facts_below;
use crate::host::modules::ModuleTree;
use crate::kmod::abi::{CrcOrigin, Provider};
use crate::kmod::modversions::ExportCrcs;

/// What one provider module answers: its file and export CRCs, or why it has none.
#[derive(Debug, Clone)]
enum ProviderFacts {
    Read {
        path: Option<PathBuf>,
        crcs: ExportCrcs,
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
}

impl<'t> TreeProviders<'t> {
    pub fn new(tree: &'t ModuleTree) -> Self {
        TreeProviders {
            tree,
            modules: HashMap::new(),
            cache: None,
            files: Vec::new(),
        }
    }

    /// Answers providers' export tables from `cache` while their files are unchanged.
    pub fn with_cache(mut self, cache: Option<FactsCache>) -> Self {
        self.cache = cache;
        self
    }

    /// The identity of every provider file answered so far (with a cache only).
    pub fn files(&self) -> &[FileIdentity] {
        &self.files
    }

    /// Answers for `module` from the export CRCs of its loaded build.
    pub fn with_loaded(mut self, module: &str, crcs: ExportCrcs) -> Self {
        self.modules.insert(
            crate::host::modules::normalize_name(module),
            ProviderFacts::Read {
                path: None,
                crcs,
                origin: CrcOrigin::LoadedBuild,
            },
        );
        self
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
                            crcs: f.exports,
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
        let module = match self.tree.symbol_provider(symbol) {
            Ok(Some(m)) => crate::host::modules::normalize_name(&m),
            Ok(None) => return Provider::KernelImage,
            Err(e) => {
                return Provider::Unreadable {
                    module: "modules.symbols".into(),
                    reason: e.to_string(),
                }
            }
        };
        match self.facts_of(&module) {
            ProviderFacts::Read { path, crcs, origin } => Provider::Module {
                crc: crcs.crc_of(symbol),
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
