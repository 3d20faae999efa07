//! The cache in one directory: where it is for a root, and each kind of entry looked up and
//! stored (see the module above for what is kept, and why a file's identity is enough).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::entries::{AbiAnswer, AbiKey, Entry, ModuleEntry, ScanEntry, FORMAT};
use super::opened;
use super::trust::{CacheDir, Refusal};
use crate::host::io::file_identity::FileIdentity;
use crate::host::io::fill_lock::{self, FillTurn};
use crate::host::io::out_dir::OutDir;
use crate::host::io::root::Root;
use crate::kmod::image_scan::ScanOutcome;
use crate::kmod::load_facts::LoadFacts;
use crate::kmod::ModuleFile;

/// The cache directory below the root.
pub const DEFAULT_DIR: &str = "var/cache/nfs-gds";

/// The cache in one directory, trusted only when owned by its owner.
#[derive(Debug, Clone)]
pub struct FactsCache {
    place: CacheDir,
}

impl FactsCache {
    /// The cache the run decided on for `root` ([`NodeContext`](crate::host::io::context::NodeContext),
    /// made once by the command line); none for a root recording a bundle, where every file the
    /// facts come from must really be read.
    pub fn of(root: &Root) -> Option<Self> {
        use crate::host::io::context::CachePlace;
        if root.is_bundling() {
            return None;
        }
        match root.context().cache() {
            CachePlace::Off => None,
            CachePlace::Dir(dir) => Some(FactsCache::with_owner(dir.clone(), 0)),
            CachePlace::BelowRoot => Some(FactsCache::below(root, DEFAULT_DIR, 0)),
        }
    }

    /// A cache in the host directory `dir` whose directory and entries must belong to `owner`
    /// (root in production; the test user in unit tests).
    pub fn with_owner(dir: PathBuf, owner: u32) -> Self {
        FactsCache::below(&Root::host(), dir, owner)
    }

    /// A cache in `rel` below `root`, resolved inside it.
    fn below(root: &Root, rel: impl Into<PathBuf>, owner: u32) -> Self {
        FactsCache {
            place: CacheDir::new(root, rel, owner),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.place.dir
    }

    /// One entry per kind and `name` (a file's path, and what was asked of it).
    fn entry_name(&self, kind: &str, name: impl Hash) -> String {
        let mut h = DefaultHasher::new();
        name.hash(&mut h);
        format!("{kind}-{:016x}.json", h.finish())
    }

    /// Reads a trusted entry; `None` on any miss, refusal or damage (refusals are logged).
    fn load<T: for<'de> Deserialize<'de>>(&self, name: &str) -> Option<T> {
        let dir = match self.opened_dir() {
            Ok(Some(dir)) => dir,
            Ok(None) => return None,
            Err(r) => {
                tracing::warn!("not using the module facts cache: {r}");
                return None;
            }
        };
        // A FIFO or a device in the cache directory is refused unopened, like any host file.
        let file = match dir.read_file(name, crate::host::io::reader::FileKind::Config) {
            Ok(Some(f)) => f,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!("cannot read cache entry: {e}");
                return None;
            }
        };
        if let Err(r) = self.place.trusted(&file.path, &file.meta, "regular file") {
            tracing::warn!("ignoring cache entry: {r}");
            return None;
        }
        match serde_json::from_slice(&file.bytes) {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::debug!(
                    "ignoring unreadable cache entry {}: {e}",
                    file.path.display()
                );
                None
            }
        }
    }

    /// The directory, opened and judged on the first ask of this process ([`opened`]); the
    /// handle kept is judged again by its own `fstat` at every ask (a directory made writable
    /// by others since is refused as before), its parent not: nothing can swap an open handle.
    fn opened_dir(&self) -> Result<Option<std::sync::Arc<OutDir>>, Refusal> {
        if let Some(dir) = opened::kept(&self.place.dir, self.place.owner) {
            let m = dir.metadata().map_err(|source| Refusal::Io {
                path: self.place.dir.clone(),
                source,
            })?;
            self.place.trusted(&self.place.dir, &m, "directory")?;
            return Ok(Some(dir));
        }
        Ok(self
            .place
            .ready_dir(false)?
            .map(|dir| opened::keep(&self.place.dir, self.place.owner, dir)))
    }

    /// Writes an entry atomically (temporary file in the directory, then rename).
    fn save<T: Serialize>(&self, name: &str, value: &T) {
        let dir = match self.place.ready_dir(true) {
            Ok(Some(dir)) => opened::keep(&self.place.dir, self.place.owner, dir),
            Ok(None) => return,
            Err(r) => {
                match r {
                    Refusal::Io { .. } => tracing::debug!("not caching: {r}"),
                    _ => tracing::warn!("not using the module facts cache: {r}"),
                }
                return;
            }
        };
        // Serialized whole, then written at once: serde writes token by token, and a file
        // written unbuffered took a system call each (22,000 for a warm-up's entries).
        let written =
            dir.write_atomic_unsynced(name, 0o600, |w| w.write_all(&serde_json::to_vec(value)?));
        let path = dir.path().join(name);
        match written {
            Ok(()) => tracing::debug!(
                "cache entry stored (new or refreshed): {}",
                crate::escape::escape_control(&path.display().to_string())
            ),
            Err(e) => tracing::debug!("cannot write cache entry {}: {e}", path.display()),
        }
    }

    /// What to do on a miss: wait for this process's turn to fill the cache ([`fill_lock`]),
    /// look again with `look` if another process had the turn (it was most likely deriving
    /// this very entry at boot, and has stored it), and derive the entry with `derive` (which
    /// stores it) only when it is still missing.
    pub fn after_miss<T>(&self, look: impl FnOnce() -> Option<T>, derive: impl FnOnce() -> T) -> T {
        // An untrusted directory is refused (and said so) when the entry is stored.
        let turn = match self.place.ready_dir(true) {
            Ok(Some(dir)) => Some(fill_lock::take(&opened::keep(
                &self.place.dir,
                self.place.owner,
                dir,
            ))),
            _ => None,
        };
        if turn.as_ref().is_some_and(FillTurn::waited) {
            if let Some(hit) = look() {
                return hit;
            }
        }
        derive()
    }

    /// The cached facts of the module file with identity `key`, inspected for `wanted`.
    pub fn module(&self, key: &FileIdentity, wanted: &[&str]) -> Option<ModuleFile> {
        let entry: ModuleEntry = self.load(&self.entry_name("module", (&key.path, wanted)))?;
        let fresh = entry.format == FORMAT
            && entry.tool == env!("CARGO_PKG_VERSION")
            && &entry.key == key
            && entry
                .wanted
                .iter()
                .map(String::as_str)
                .eq(wanted.iter().copied());
        if !fresh {
            return None;
        }
        let mut facts = entry.facts;
        facts.modinfo.all = entry.modinfo_all;
        tracing::debug!("module facts cache hit for {}", key.path.display());
        Some(facts)
    }

    pub fn store_module(&self, key: &FileIdentity, wanted: &[&str], facts: &ModuleFile) {
        let entry = ModuleEntry {
            format: FORMAT,
            tool: env!("CARGO_PKG_VERSION").to_string(),
            key: key.clone(),
            wanted: wanted.iter().map(|s| s.to_string()).collect(),
            facts: facts.clone(),
            modinfo_all: facts.modinfo.all.clone(),
        };
        self.save(&self.entry_name("module", (&key.path, wanted)), &entry);
    }

    /// The cached load facts of the module file with identity `key`.
    pub fn load_facts(&self, key: &FileIdentity) -> Option<LoadFacts> {
        let entry: Entry<FileIdentity, LoadFacts> =
            self.load(&self.entry_name("load", &key.path))?;
        entry.fresh(key).then(|| {
            tracing::debug!("load facts cache hit for {}", key.path.display());
            entry.value
        })
    }

    pub fn store_load_facts(&self, key: &FileIdentity, facts: &LoadFacts) {
        self.save(&self.entry_name("load", &key.path), &Entry::new(key, facts));
    }

    /// The cached symbol-version verdict for `key`, when every provider file it was drawn from
    /// is still the file it was (`now` gives a file's identity today, `None` when it is gone).
    pub fn abi(
        &self,
        key: &AbiKey,
        now: impl Fn(&FileIdentity) -> Option<FileIdentity>,
    ) -> Option<AbiAnswer> {
        let entry: Entry<AbiKey, AbiAnswer> = self.load(&self.entry_name("abi", key.name()))?;
        let unchanged = |p: &FileIdentity| now(p).as_ref() == Some(p);
        (entry.fresh(key) && entry.value.providers.iter().all(unchanged)).then(|| {
            tracing::debug!("symbol-version verdict cache hit for {}", key.module);
            entry.value
        })
    }

    pub fn store_abi(&self, key: &AbiKey, answer: &AbiAnswer) {
        self.save(
            &self.entry_name("abi", key.name()),
            &Entry::new(key, answer),
        );
    }

    /// The cached values the kernel configuration file with identity `key` gives for the options
    /// `asked` (the reader's own type: this layer does not know it).
    pub fn config_options<V: for<'de> Deserialize<'de>>(
        &self,
        key: &FileIdentity,
        asked: &[&str],
    ) -> Option<V> {
        let entry: Entry<(FileIdentity, Vec<String>), V> =
            self.load(&self.entry_name("config", &key.path))?;
        let fresh = entry.format == FORMAT
            && entry.tool == env!("CARGO_PKG_VERSION")
            && entry.key.0 == *key
            && entry
                .key
                .1
                .iter()
                .map(String::as_str)
                .eq(asked.iter().copied());
        fresh.then(|| {
            tracing::debug!("kernel configuration cache hit for {}", key.path.display());
            entry.value
        })
    }

    pub fn store_config_options<V: Serialize>(
        &self,
        key: &FileIdentity,
        asked: &[&str],
        value: &V,
    ) {
        let entry = Entry {
            format: FORMAT,
            tool: env!("CARGO_PKG_VERSION").to_string(),
            key: (key, asked),
            value,
        };
        self.save(&self.entry_name("config", &key.path), &entry);
    }

    /// The cached scan of the kernel image with identity `key` for `needle`.
    pub fn image_scan(&self, key: &FileIdentity, needle: &[u8]) -> Option<ScanOutcome> {
        let entry: ScanEntry = self.load(&self.entry_name("image", &key.path))?;
        let fresh = entry.format == FORMAT
            && entry.tool == env!("CARGO_PKG_VERSION")
            && &entry.key == key
            && entry.needle.as_bytes() == needle;
        if !fresh {
            return None;
        }
        let format = payload_name(&entry.payload)?;
        tracing::debug!("kernel image scan cache hit for {}", key.path.display());
        Some(if entry.found {
            ScanOutcome::Found { format }
        } else {
            ScanOutcome::NotFound { format }
        })
    }

    /// Stores a definite scan answer; errors and "no payload" are not cached.
    pub fn store_image_scan(&self, key: &FileIdentity, needle: &[u8], outcome: &ScanOutcome) {
        let (found, format) = match outcome {
            ScanOutcome::Found { format } => (true, *format),
            ScanOutcome::NotFound { format } => (false, *format),
            _ => return,
        };
        let Ok(needle) = std::str::from_utf8(needle) else {
            return;
        };
        let entry = ScanEntry {
            format: FORMAT,
            tool: env!("CARGO_PKG_VERSION").to_string(),
            key: key.clone(),
            needle: needle.to_string(),
            found,
            payload: format.to_string(),
        };
        self.save(&self.entry_name("image", &key.path), &entry);
    }
}

/// The static name of a payload format, as the scanner reports it.
fn payload_name(s: &str) -> Option<&'static str> {
    ["elf", "gzip", "xz", "zstd"].into_iter().find(|n| *n == s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::io::facts_cache::SymversKey;
    use crate::kmod::{Compression, ExportLayout, Modinfo};
    use std::fs;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn me() -> u32 {
        nix::unistd::geteuid().as_raw()
    }

    fn facts(path: &Path) -> ModuleFile {
        ModuleFile {
            path: path.to_owned(),
            compression: Compression::Zstd,
            file_size: 3,
            elf_size: 9,
            modinfo: Modinfo {
                name: Some("rpcrdma".into()),
                all: vec![("name".into(), "rpcrdma".into())],
                ..Modinfo::default()
            },
            build_id: Some("abcd".into()),
            has_symtab: true,
            versioned_variants: Vec::new(),
            export_layout: ExportLayout::SplitTables,
            symbols: Vec::new(),
        }
    }

    fn setup() -> (tempfile::TempDir, PathBuf, FactsCache) {
        let tmp = tempfile::tempdir().unwrap();
        let module = tmp.path().join("rpcrdma.ko.zst");
        fs::write(&module, b"one").unwrap();
        let cache = FactsCache::with_owner(tmp.path().join("cache/nfs-gds"), me());
        (tmp, module, cache)
    }

    #[test]
    fn hit_after_store_with_every_field() {
        let (_tmp, module, cache) = setup();
        let key = FileIdentity::read(&module).unwrap().0;
        assert_eq!(cache.module(&key, &["a"]), None, "empty cache misses");
        cache.store_module(&key, &["a"], &facts(&module));
        let dir = fs::metadata(cache.dir()).unwrap();
        assert_eq!(dir.mode() & 0o777, 0o700);
        assert_eq!(cache.module(&key, &["a"]), Some(facts(&module)));
        assert_eq!(cache.module(&key, &["b"]), None, "asked for other symbols");
        let entry = fs::read_dir(cache.dir()).unwrap().next().unwrap().unwrap();
        assert_eq!(entry.metadata().unwrap().mode() & 0o777, 0o600);
    }

    #[test]
    fn a_miss_waits_for_the_filler_and_reads_what_it_stored() {
        use std::cell::Cell;
        use std::sync::mpsc;
        use std::time::Duration;
        let (_tmp, module, cache) = setup();
        let key = FileIdentity::read(&module).unwrap().0;
        let (has_turn, told) = mpsc::channel();
        // Another filler (a thread waits for another thread's turn as for another process's)
        // is deriving the entry when this one misses it.
        let filler = {
            let (cache, key, module) = (cache.clone(), key.clone(), module.clone());
            std::thread::spawn(move || {
                cache.after_miss(
                    || None::<()>,
                    || {
                        has_turn.send(()).unwrap();
                        std::thread::sleep(Duration::from_millis(300));
                        cache.store_module(&key, &["a"], &facts(&module));
                    },
                )
            })
        };
        told.recv().unwrap();
        let derived = Cell::new(false);
        let got = cache.after_miss(
            || cache.module(&key, &["a"]).map(Some),
            || {
                derived.set(true);
                None
            },
        );
        assert_eq!(got, Some(facts(&module)), "read what the filler stored");
        assert!(!derived.get(), "derived it again");
        filler.join().unwrap();
        // With nobody filling, a miss derives at once, without looking again.
        let looked = Cell::new(false);
        let got = cache.after_miss(
            || {
                looked.set(true);
                None
            },
            || 7,
        );
        assert_eq!((got, looked.get()), (7, false));
    }

    #[test]
    fn a_replaced_or_touched_file_misses() {
        let (tmp, module, cache) = setup();
        let key = FileIdentity::read(&module).unwrap().0;
        cache.store_module(&key, &["a"], &facts(&module));
        // Same size, same content, new file: a new inode (and change time).
        let other = tmp.path().join("new.ko.zst");
        fs::write(&other, b"one").unwrap();
        fs::rename(&other, &module).unwrap();
        let new_key = FileIdentity::read(&module).unwrap().0;
        assert_ne!(new_key, key);
        assert_eq!(cache.module(&new_key, &["a"]), None);
        // Rewritten in place, to another size: the same inode, another identity.
        cache.store_module(&new_key, &["a"], &facts(&module));
        fs::write(&module, b"three").unwrap();
        let longer = FileIdentity::read(&module).unwrap().0;
        assert_eq!(longer.ino, new_key.ino);
        assert_eq!(cache.module(&longer, &["a"]), None);
        // Rewritten in place to the same size once the clock has ticked: the change time moves.
        cache.store_module(&longer, &["a"], &facts(&module));
        let rewritten = (0..2000)
            .find_map(|_| {
                std::thread::sleep(std::time::Duration::from_millis(1));
                fs::write(&module, b"THREE").unwrap();
                let k = FileIdentity::read(&module).unwrap().0;
                (k.ctime != longer.ctime).then_some(k)
            })
            .expect("the change time moves within two seconds");
        assert_eq!((rewritten.ino, rewritten.size), (longer.ino, longer.size));
        assert_eq!(cache.module(&rewritten, &["a"]), None);
        // Its modification time set back, as `touch -d` can: the change time still moved.
        let mtime = std::time::UNIX_EPOCH + std::time::Duration::new(longer.mtime.0 as u64, 0);
        fs::File::options()
            .write(true)
            .open(&module)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        let touched = FileIdentity::read(&module).unwrap().0;
        assert_ne!(touched.ctime, longer.ctime);
        assert_eq!(cache.module(&touched, &["a"]), None);
    }

    #[test]
    fn entries_are_kept_apart_by_what_was_asked_and_hold_load_facts_and_verdicts() {
        use crate::kmod::abi::{AbiReport, AbiVerdict, KernelModversions};
        use crate::kmod::load_facts::{LoadFacts, SignatureFacts};
        use crate::kmod::modversions::{ExportCrcSource, ExportCrcs, ImportTable, ImportVersions};
        let (tmp, module, cache) = setup();
        let key = FileIdentity::read(&module).unwrap().0;
        cache.store_module(&key, &["a"], &facts(&module));
        cache.store_module(&key, &[], &facts(&module));
        assert!(
            cache.module(&key, &["a"]).is_some(),
            "not overwritten by []"
        );
        let load = LoadFacts {
            path: module,
            compression: Compression::Zstd,
            imports: ImportVersions::Unversioned,
            exports: ExportCrcs {
                source: ExportCrcSource::CrcTableLabels,
                crcs: [("ib_event_msg".to_string(), 0x1234_u32)].into(),
            },
            signature: SignatureFacts::Unsigned,
            vermagic: None,
            btf: None,
            frwr_map: None,
        };
        assert_eq!(cache.load_facts(&key), None);
        cache.store_load_facts(&key, &load);
        assert_eq!(cache.load_facts(&key), Some(load));

        let provider = tmp.path().join("ib_core.ko");
        fs::write(&provider, b"ib").unwrap();
        let provider_key = FileIdentity::read(&provider).unwrap().0;
        let abi_key = AbiKey {
            module: "rpcrdma".into(),
            imports: 7,
            modversions: KernelModversions::Unknown,
            indexes: vec![Some(key), None],
            symvers: SymversKey {
                build_link: None,
                file: None,
            },
        };
        let answer = AbiAnswer {
            verdict: AbiVerdict::Compared(AbiReport {
                table: ImportTable::Basic,
                matched: 3,
                image_matched: 0,
                build_symvers: None,
                mismatches: Vec::new(),
                uncompared: Vec::new(),
            }),
            used: vec!["ib_core".into()],
            providers: vec![provider_key],
        };
        cache.store_abi(&abi_key, &answer);
        let now = |p: &FileIdentity| FileIdentity::read(&p.path).ok().map(|r| r.0);
        assert_eq!(cache.abi(&abi_key, now), Some(answer));
        let other_imports = AbiKey {
            imports: 8,
            ..abi_key.clone()
        };
        assert_eq!(cache.abi(&other_imports, now), None, "other imports");
        // A provider replaced: the verdict is drawn again.
        fs::remove_file(&provider).unwrap();
        fs::write(&provider, b"ib2").unwrap();
        assert_eq!(cache.abi(&abi_key, now), None, "a provider changed");
    }

    #[test]
    fn nothing_is_created_inside_a_world_writable_parent() {
        let (tmp, module, cache) = setup();
        let parent = tmp.path().join("cache");
        fs::create_dir(&parent).unwrap();
        fs::set_permissions(&parent, fs::Permissions::from_mode(0o777)).unwrap();
        let key = FileIdentity::read(&module).unwrap().0;
        cache.store_module(&key, &["a"], &facts(&module));
        assert!(
            !cache.dir().exists(),
            "the cache directory was created in an open parent"
        );
        assert!(matches!(
            cache.place.ready_dir(true),
            Err(Refusal::Writable { path, .. }) if path == parent
        ));
        // Sticky, as /tmp: others cannot rename what is ours, so it is used.
        fs::set_permissions(&parent, fs::Permissions::from_mode(0o1777)).unwrap();
        cache.store_module(&key, &["a"], &facts(&module));
        assert!(cache.module(&key, &["a"]).is_some());
    }

    #[test]
    fn a_world_writable_directory_or_entry_is_refused() {
        let (_tmp, module, cache) = setup();
        let key = FileIdentity::read(&module).unwrap().0;
        cache.store_module(&key, &["a"], &facts(&module));
        assert!(cache.module(&key, &["a"]).is_some());

        fs::set_permissions(cache.dir(), fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(
            cache.module(&key, &["a"]),
            None,
            "directory writable by others"
        );
        assert!(matches!(
            cache.place.ready_dir(false),
            Err(Refusal::Writable { .. })
        ));
        fs::set_permissions(cache.dir(), fs::Permissions::from_mode(0o700)).unwrap();

        let entry = fs::read_dir(cache.dir())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        fs::set_permissions(&entry, fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(cache.module(&key, &["a"]), None, "entry writable by others");
    }

    #[test]
    fn someone_elses_directory_is_refused() {
        let (_tmp, module, cache) = setup();
        let key = FileIdentity::read(&module).unwrap().0;
        cache.store_module(&key, &["a"], &facts(&module));
        let stranger = FactsCache::with_owner(cache.dir().to_owned(), me().wrapping_add(1));
        assert!(matches!(
            stranger.place.ready_dir(false),
            Err(Refusal::Owner { .. })
        ));
        assert_eq!(stranger.module(&key, &["a"]), None);
    }

    #[test]
    fn a_symlinked_directory_is_refused() {
        let (tmp, module, cache) = setup();
        let real = tmp.path().join("elsewhere");
        fs::create_dir(&real).unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o700)).unwrap();
        fs::create_dir_all(cache.dir().parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&real, cache.dir()).unwrap();
        let key = FileIdentity::read(&module).unwrap().0;
        cache.store_module(&key, &["a"], &facts(&module));
        assert_eq!(fs::read_dir(&real).unwrap().count(), 0, "nothing written");
        assert!(matches!(
            cache.place.ready_dir(false),
            Err(Refusal::Kind { .. })
        ));
    }

    #[test]
    fn image_scans_cache_definite_answers_only() {
        let (_tmp, module, cache) = setup();
        let key = FileIdentity::read(&module).unwrap().0;
        cache.store_image_scan(&key, b"needle", &ScanOutcome::NoPayload);
        assert_eq!(cache.image_scan(&key, b"needle"), None);
        cache.store_image_scan(&key, b"needle", &ScanOutcome::Found { format: "zstd" });
        assert_eq!(
            cache.image_scan(&key, b"needle"),
            Some(ScanOutcome::Found { format: "zstd" })
        );
        assert_eq!(cache.image_scan(&key, b"other"), None);
    }

    #[test]
    fn damaged_entries_are_misses() {
        let (_tmp, module, cache) = setup();
        let key = FileIdentity::read(&module).unwrap().0;
        cache.store_module(&key, &["a"], &facts(&module));
        let entry = fs::read_dir(cache.dir())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        fs::write(&entry, b"{not json").unwrap();
        assert_eq!(cache.module(&key, &["a"]), None);
    }
}
