//! The module tree of one kernel release and what `modprobe NAME` would load from it: a name
//! or alias is resolved through depmod's indexes (binary where present, as modprobe reads them)
//! to the `modules.dep` entry, or to "built in".

use std::cell::OnceCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::depmod_files::{
    dep_lines_by_module, parse_dep_line, parse_modules_builtin, parse_modules_dep, DepEntry,
};
use super::module_name::{module_name_of_path, normalize_name};
use super::module_place::ModuleOrigin;
use crate::host::io::error::HostError;
use crate::host::io::reader::FileKind;
use crate::host::io::root::Root;
use crate::kmod::fnmatch::fnmatch;
use crate::kmod::index::{Index, IndexError, PagedFile};

/// What `modprobe NAME` would load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Resolution {
    File {
        /// The module name (after alias resolution).
        module: String,
        /// The path as written in `modules.dep`.
        rel_path: String,
        /// The path on this host (below the root).
        path: PathBuf,
        origin: ModuleOrigin,
        deps: Vec<String>,
        /// Whether the file exists; a dangling `modules.dep` entry means depmod is out of date.
        exists: bool,
    },
    BuiltIn {
        module: String,
    },
    /// Not in `modules.dep` nor `modules.builtin`.
    NotFound {
        module: String,
    },
    /// There is no `modules.dep` for this kernel release (no module tree installed).
    NoModuleTree {
        dir: PathBuf,
    },
}

/// One of depmod's indexes as the tree has it: the binary file modprobe reads when present, the
/// text file otherwise (fixture trees, trees copied without their `.bin` files).
/// A binary index is kept open and read a page at a time as lookups walk it.
#[derive(Debug, Clone)]
enum IndexData {
    Binary { path: PathBuf, file: Arc<PagedFile> },
    Text(String),
    Absent,
}

impl IndexData {
    /// Opens `<dir>/<name>.bin`, else reads `<dir>/<name>`.
    fn read(root: &Root, dir_rel: &str, name: &str) -> Result<Self, HostError> {
        let bin_rel = format!("{dir_rel}/{name}.bin");
        let bin = root.join(&bin_rel);
        if let Some(file) = root.open_file(&bin_rel, FileKind::ModuleIndex)? {
            return Ok(IndexData::Binary {
                path: bin,
                file: Arc::new(PagedFile::new(file)),
            });
        }
        // Read lossily, like /proc/modules: a non-UTF-8 byte spoils one line, not the tree.
        Ok(match root.read_text_lossy(format!("{dir_rel}/{name}"))? {
            Some(t) => IndexData::Text(t),
            None => IndexData::Absent,
        })
    }

    fn index(&self) -> Result<Option<(Index<'_, PagedFile>, &Path)>, HostError> {
        match self {
            IndexData::Binary { path, file } => Index::open(file.as_ref())
                .map(|i| Some((i, path.as_path())))
                .map_err(|e| corrupt(path, e)),
            _ => Ok(None),
        }
    }
}

fn corrupt(path: &Path, e: IndexError) -> HostError {
    HostError::Corrupt {
        path: path.to_owned(),
        reason: e.to_string(),
    }
}

/// An index read on first use, so a lookup that `modules.dep` answers never reads the 26,000
/// aliases.
#[derive(Debug, Clone, Default)]
struct LazyIndex(OnceCell<IndexData>);

impl LazyIndex {
    fn get(&self, root: &Root, dir_rel: &str, name: &str) -> Result<&IndexData, HostError> {
        if let Some(d) = self.0.get() {
            return Ok(d);
        }
        let data = IndexData::read(root, dir_rel, name)?;
        Ok(self.0.get_or_init(|| data))
    }
}

/// The module tree of one kernel release: `lib/modules/<release>/`, with depmod's indexes read
/// as lookups need them, binary (`modules.dep.bin`, …) where present, as modprobe does.
#[derive(Debug, Clone)]
pub struct ModuleTree {
    /// The tree directory below the root, as a host path (`/lib/modules/<release>`).
    pub dir_rel: String,
    root: Root,
    dep: LazyIndex,
    alias: LazyIndex,
    symbols: LazyIndex,
    builtin: LazyIndex,
    /// A text `modules.dep`'s lines by module name, indexed on the first lookup.
    dep_lines: OnceCell<HashMap<String, (usize, usize)>>,
}

impl ModuleTree {
    /// The tree of `release`: `/lib/modules/<release>`, else `/usr/lib/modules/<release>` when
    /// only that one has a `modules.dep` (text or binary). Reads nothing yet.
    pub fn read(root: &Root, release: &str) -> Result<Self, HostError> {
        let candidates = [
            format!("lib/modules/{release}"),
            format!("usr/lib/modules/{release}"),
        ];
        let dir_rel = candidates
            .iter()
            .find(|d| {
                root.exists(format!("{d}/modules.dep"))
                    || root.exists(format!("{d}/modules.dep.bin"))
            })
            .unwrap_or(&candidates[0])
            .clone();
        Ok(ModuleTree {
            dir_rel: format!("/{dir_rel}"),
            root: root.clone(),
            dep: LazyIndex::default(),
            alias: LazyIndex::default(),
            symbols: LazyIndex::default(),
            builtin: LazyIndex::default(),
            dep_lines: OnceCell::new(),
        })
    }

    /// A tree over the given text indexes (for tests of the resolution rules).
    pub fn from_text(
        root: &Root,
        dir_rel: &str,
        dep: Option<&str>,
        alias: &str,
        builtin: &str,
    ) -> Self {
        let text = |t: &str| LazyIndex(OnceCell::from(IndexData::Text(t.to_string())));
        ModuleTree {
            dir_rel: dir_rel.to_string(),
            root: root.clone(),
            dep: match dep {
                Some(d) => text(d),
                None => LazyIndex(OnceCell::from(IndexData::Absent)),
            },
            alias: text(alias),
            symbols: LazyIndex(OnceCell::from(IndexData::Absent)),
            builtin: text(builtin),
            dep_lines: OnceCell::new(),
        }
    }

    fn data(&self, which: &'static str) -> Result<&IndexData, HostError> {
        let lazy = match which {
            "modules.dep" => &self.dep,
            "modules.alias" => &self.alias,
            "modules.symbols" => &self.symbols,
            _ => &self.builtin,
        };
        lazy.get(&self.root, &self.dir_rel, which)
    }

    /// Whether the tree has a `modules.dep` (binary or text) at all.
    pub fn has_dep_index(&self) -> Result<bool, HostError> {
        Ok(!matches!(self.data("modules.dep")?, IndexData::Absent))
    }

    /// The `modules.dep` entry of a module name (normalized).
    pub fn dep_entry(&self, module: &str) -> Result<Option<DepEntry>, HostError> {
        let module = normalize_name(module);
        let data = self.data("modules.dep")?;
        if let Some((index, path)) = data.index()? {
            let line = index.lookup(&module).map_err(|e| corrupt(path, e))?;
            return Ok(line.and_then(|l| parse_modules_dep(&l).into_iter().next()));
        }
        let IndexData::Text(text) = data else {
            return Ok(None);
        };
        let lines = self.dep_lines.get_or_init(|| dep_lines_by_module(text));
        Ok(lines
            .get(&module)
            .and_then(|&(start, end)| parse_dep_line(&text[start..end])))
    }

    /// The modules an alias stands for, in modprobe's order (`modules.alias` patterns matched as
    /// `fnmatch` does).
    pub fn alias_targets(&self, alias: &str) -> Result<Vec<String>, HostError> {
        let wanted = normalize_name(alias);
        let data = self.data("modules.alias")?;
        if let Some((index, path)) = data.index()? {
            let values = index.lookup_wild(&wanted).map_err(|e| corrupt(path, e))?;
            return Ok(values
                .into_iter()
                .map(|v| normalize_name(&v.value))
                .collect());
        }
        let IndexData::Text(text) = data else {
            return Ok(Vec::new());
        };
        Ok(text
            .lines()
            .filter_map(|line| {
                let mut w = line.split_whitespace();
                if w.next()? != "alias" {
                    return None;
                }
                let (pattern, module) = (w.next()?, w.next()?);
                fnmatch(normalize_name(pattern).as_bytes(), wanted.as_bytes())
                    .then(|| normalize_name(module))
            })
            .collect())
    }

    /// The module that exports `symbol`, as `modules.symbols` says (`alias symbol:<sym> <mod>`);
    /// `None` when no module does (the kernel image itself, or nobody).
    pub fn symbol_provider(&self, symbol: &str) -> Result<Option<String>, HostError> {
        let key = format!("symbol:{symbol}");
        let data = self.data("modules.symbols")?;
        if let Some((index, path)) = data.index()? {
            return index.lookup(&key).map_err(|e| corrupt(path, e));
        }
        let IndexData::Text(text) = data else {
            return Ok(None);
        };
        Ok(text.lines().find_map(|line| {
            let mut w = line.split_whitespace();
            (w.next()? == "alias" && w.next()? == key).then(|| w.next().map(str::to_string))?
        }))
    }

    /// Whether `module` is built into the kernel (`modules.builtin`).
    pub fn is_builtin(&self, module: &str) -> Result<bool, HostError> {
        let module = normalize_name(module);
        let data = self.data("modules.builtin")?;
        if let Some((index, path)) = data.index()? {
            return Ok(!index
                .lookup_all(&module)
                .map_err(|e| corrupt(path, e))?
                .is_empty());
        }
        let IndexData::Text(text) = data else {
            return Ok(false);
        };
        Ok(parse_modules_builtin(text)
            .iter()
            .any(|l| module_name_of_path(l) == module))
    }

    /// The module a name or alias stands for, looked up as libkmod does: a module name in
    /// `modules.dep`, else the first module of a matching `modules.alias` pattern, else a
    /// built-in module, else the name itself.
    pub fn canonical_name(&self, name_or_alias: &str) -> Result<String, HostError> {
        let wanted = normalize_name(name_or_alias);
        if self.dep_entry(&wanted)?.is_some() {
            return Ok(wanted);
        }
        if let Some(m) = self.alias_targets(&wanted)?.into_iter().next() {
            return Ok(m);
        }
        Ok(wanted)
    }

    /// The root the tree is read below.
    pub fn root(&self) -> &Root {
        &self.root
    }

    /// The host path of a `modules.dep` file entry.
    pub fn path_of(&self, file: &str) -> PathBuf {
        if file.starts_with('/') {
            self.root.join(file)
        } else {
            self.root.join(format!("{}/{}", self.dir_rel, file))
        }
    }

    /// What `modprobe name_or_alias` would load.
    pub fn resolve(&self, root: &Root, name_or_alias: &str) -> Result<Resolution, HostError> {
        if !self.has_dep_index()? {
            return Ok(Resolution::NoModuleTree {
                dir: root.join(&self.dir_rel),
            });
        }
        // canonical_name, without looking the name up in modules.dep twice: the request and
        // each dependency of it is resolved, and every lookup walks the index.
        let wanted = normalize_name(name_or_alias);
        let (module, entry) = match self.dep_entry(&wanted)? {
            Some(e) => (wanted, Some(e)),
            None => match self.alias_targets(&wanted)?.into_iter().next() {
                Some(m) => {
                    let e = self.dep_entry(&m)?;
                    (m, e)
                }
                None => (wanted, None),
            },
        };
        if let Some(e) = entry {
            let rel = if e.file.starts_with('/') {
                e.file.clone()
            } else {
                format!("{}/{}", self.dir_rel, e.file)
            };
            let path = root.join(&rel);
            let rel_in_tree = e
                .file
                .strip_prefix(&format!("{}/", self.dir_rel))
                .unwrap_or(&e.file);
            return Ok(Resolution::File {
                module,
                rel_path: e.file.clone(),
                exists: root.is_file(&rel),
                path,
                origin: ModuleOrigin::of(rel_in_tree),
                deps: e.deps.clone(),
            });
        }
        if self.is_builtin(&module)? {
            return Ok(Resolution::BuiltIn { module });
        }
        Ok(Resolution::NotFound { module })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::modules::depmod_files::MAX_DEPS;
    use crate::host::modules::{modprobe_config, modprobe_effect};

    /// A tree whose `rpcrdma` line depends on `n` modules, each with its own line.
    fn wide_tree(n: usize) -> ModuleTree {
        let mut dep = String::from("kernel/net/sunrpc/xprtrdma/rpcrdma.ko:");
        let mut lines = String::new();
        for i in 0..n {
            dep.push_str(&format!(" kernel/dep/d{i}.ko"));
            lines.push_str(&format!("kernel/dep/d{i}.ko:\n"));
        }
        dep.push('\n');
        dep.push_str(&lines);
        ModuleTree::from_text(
            &Root::new("/nonexistent"),
            "/lib/modules/6.1.0",
            Some(&dep),
            "",
            "",
        )
    }

    #[test]
    fn a_line_of_many_dependencies_is_bounded() {
        let explain = |n: usize| {
            let tree = wide_tree(n);
            let root = Root::new("/nonexistent");
            let index = modprobe_effect::TreeIndex::new(&root, &tree);
            let config = modprobe_config::ModprobeConfig::default();
            modprobe_effect::explain_request(&config, &index, "rpcrdma")
                .steps
                .len()
        };
        assert_eq!(
            explain(MAX_DEPS / 4),
            MAX_DEPS / 4 + 1,
            "every dependency, then the target"
        );
        assert_eq!(
            explain(MAX_DEPS * 16),
            MAX_DEPS + 1,
            "the first MAX_DEPS dependencies, then the target"
        );
    }

    #[test]
    fn aliases_resolve_to_the_module() {
        let root = Root::new("/nonexistent");
        let tree = ModuleTree::from_text(
            &root,
            "/lib/modules/6.1.0",
            Some("kernel/net/sunrpc/xprtrdma/rpcrdma.ko: kernel/x.ko\n"),
            "alias rpcrdma6 rpcrdma\nalias xprtrdma rpcrdma\nalias pci:v000015B3d*sv*sd*bc*sc*i* mlx5_core\n",
            "kernel/fs/ext4/ext4.ko\n",
        );
        assert_eq!(tree.canonical_name("xprtrdma").unwrap(), "rpcrdma");
        assert_eq!(tree.canonical_name("rpcrdma6").unwrap(), "rpcrdma");
        assert_eq!(
            tree.alias_targets("pci:v000015B3d0000101Bsv000015B3sd00000008bc02sc00i00")
                .unwrap(),
            vec!["mlx5_core"]
        );
        match tree.resolve(&root, "xprtrdma").unwrap() {
            Resolution::File {
                module,
                origin,
                exists,
                ..
            } => {
                assert_eq!(module, "rpcrdma");
                assert_eq!(origin, ModuleOrigin::Inbox);
                assert!(!exists);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(
            tree.resolve(&root, "ext4").unwrap(),
            Resolution::BuiltIn {
                module: "ext4".into()
            }
        );
        assert_eq!(
            tree.resolve(&root, "nvidia-fs").unwrap(),
            Resolution::NotFound {
                module: "nvidia_fs".into()
            }
        );
    }
}
