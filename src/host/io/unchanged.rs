//! Whether what a derivation read below a root still looks as it did: each path of its
//! [`Inputs`] asked again, the way it was first looked at ([`Seen`]) — a file on a real file
//! system by its identity once it has settled, a file without blocks by its bytes, generated
//! kallsyms by `/proc/modules`, a listing by its names, a link by its target.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::file_identity::FileIdentity;
use super::inputs::{Inputs, Seen, LOADED_MODULES};
use super::root::Root;

impl Inputs {
    /// The first path below `root` that is not as it was, or `None` when every one is. `root`
    /// must not be recording (a look would land in its record).
    pub fn changed(&self, root: &Root) -> Option<&Path> {
        self.iter()
            .find(|(rel, seen)| !self.same(root, rel, seen))
            .map(|(rel, _)| rel.as_path())
    }

    fn same(&self, root: &Root, rel: &Path, seen: &Seen) -> bool {
        match seen {
            Seen::File(id, read_at) => {
                id.settled_at(*read_at) && identity_below(root, rel).is_some_and(|now| now == *id)
            }
            Seen::Bytes { kind, bytes } => matches!(
                root.read_file(rel, *kind),
                Ok(Some(now)) if now.meta.blocks() == 0 && now.bytes == *bytes
            ),
            Seen::ByLoadedModules => self.get(Path::new(LOADED_MODULES)).is_some(),
            Seen::Absent => matches!(root.metadata(rel), Ok(None)),
            Seen::Exists(was) => root.exists(rel) == *was,
            Seen::IsFile(was) => root.is_file(rel) == *was,
            Seen::IsDir(was) => root.is_dir(rel) == *was,
            Seen::Listing(names) => matches!(root.list_dir(rel), Ok(now) if now == *names),
            Seen::Link(target) => matches!(root.read_link(rel), Ok(now) if now == *target),
            Seen::Failed => false,
        }
    }
}

/// The identity of the file `rel` names below the root now (symlinks followed inside it), by
/// `fstat` of a descriptor that opens nothing; `None` when it cannot be had, or its `stat` says
/// nothing (no blocks).
fn identity_below(root: &Root, rel: &Path) -> Option<FileIdentity> {
    let meta = root.metadata(rel).ok()??;
    (meta.blocks() > 0).then(|| FileIdentity::of_meta(&root.join(rel), &meta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::io::file_identity::SETTLE;
    use crate::host::io::reader::FileKind;
    use std::fs;
    use std::path::PathBuf;
    use std::time::Duration;

    fn tree() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        (dir, root)
    }

    fn write(root: &Root, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// What a recording root saw of one read of `rel`, then `change`, then whether it is seen.
    fn seen_after(setup: &str, read: impl Fn(&Root), change: impl Fn(&Root)) -> Option<PathBuf> {
        let (_dir, root) = tree();
        write(&root, "etc/a.conf", setup);
        let recording = root.recording();
        read(&recording);
        let fresh = recording.record().inputs;
        assert!(!fresh.is_empty());
        if fresh.iter().any(|(_, s)| matches!(s, Seen::File(..))) {
            // Just written: not yet to be told by its times.
            assert!(fresh.changed(&root).is_some(), "{fresh:?}");
        }
        let inputs = fresh.read_later(SETTLE);
        assert_eq!(inputs.changed(&root), None, "{inputs:?}");
        // Past the file system's clock tick, as a change after a settled read is.
        std::thread::sleep(Duration::from_millis(30));
        change(&root);
        inputs.changed(&root).map(Path::to_path_buf)
    }

    #[test]
    fn a_rewritten_or_replaced_file_is_a_change_an_untouched_one_is_not() {
        let read = |r: &Root| {
            r.read_text("etc/a.conf").unwrap();
        };
        let rewritten = seen_after("x=1\n", read, |r| write(r, "etc/a.conf", "x=2\n"));
        assert_eq!(rewritten.as_deref(), Some(Path::new("etc/a.conf")));
        let replaced = seen_after("x=1\n", read, |r| {
            write(r, "etc/b.conf", "x=1\n");
            fs::rename(r.join("etc/b.conf"), r.join("etc/a.conf")).unwrap();
        });
        assert!(replaced.is_some());
        let untouched = seen_after("x=1\n", read, |r| write(r, "etc/other", "y"));
        assert_eq!(untouched, None);
    }

    #[test]
    fn a_file_that_appears_a_new_name_and_a_moved_link_are_changes() {
        let missing = |r: &Root| {
            assert!(r.read_text("etc/cufile.json").unwrap().is_none());
        };
        let appeared = seen_after("", missing, |r| write(r, "etc/cufile.json", "{}"));
        assert_eq!(appeared.as_deref(), Some(Path::new("etc/cufile.json")));
        let listed = |r: &Root| {
            r.list_dir("etc").unwrap();
        };
        assert!(seen_after("", listed, |r| write(r, "etc/new", "")).is_some());
        let looked = |r: &Root| {
            assert!(!r.exists("etc/gone"));
        };
        assert!(seen_after("", looked, |r| write(r, "etc/gone", "")).is_some());
        let linked = |r: &Root| {
            r.read_link("etc/link").unwrap();
        };
        let moved = seen_after("", linked, |r| {
            std::os::unix::fs::symlink("a.conf", r.join("etc/link")).unwrap()
        });
        assert!(moved.is_some());
    }

    #[test]
    fn what_a_read_saw_is_the_identity_the_facts_cache_keys_by_and_settles() {
        let (_dir, root) = tree();
        write(&root, "lib/modules/6.8.0/modules.dep", "kernel/a.ko:\n");
        let watching = root.watching();
        watching.read_text("lib/modules/6.8.0/modules.dep").unwrap();
        let rel = Path::new("lib/modules/6.8.0/modules.dep");
        let Some(Seen::File(seen, read_at)) = watching.inputs().get(rel).cloned() else {
            panic!("not told by its identity: {:?}", watching.inputs());
        };
        // One type: the identity a read keeps is the one a `stat` of the path gives the cache.
        assert_eq!(Some(seen.clone()), root.identity(rel));
        assert!(!seen.settled_at(read_at), "just written");
        assert!(seen.settled_at(read_at + SETTLE));
    }

    #[test]
    fn a_file_without_blocks_is_told_by_its_bytes() {
        // An empty file has no blocks, like every procfs and sysfs file.
        let read = |r: &Root| {
            r.read_text("etc/a.conf").unwrap();
        };
        let (_dir, root) = tree();
        write(&root, "sys/module/rpcrdma/srcversion", "");
        let recording = root.recording();
        recording
            .read_text("sys/module/rpcrdma/srcversion")
            .unwrap();
        let inputs = recording.record().inputs;
        let rel = Path::new("sys/module/rpcrdma/srcversion");
        assert!(
            matches!(inputs.get(rel).unwrap(), Seen::Bytes { .. }),
            "{inputs:?}"
        );
        // Written again with the same (no) bytes: the same; with others: a change.
        write(&root, "sys/module/rpcrdma/srcversion", "");
        assert_eq!(inputs.changed(&root), None);
        write(&root, "sys/module/rpcrdma/srcversion", "A1B2\n");
        assert_eq!(inputs.changed(&root), Some(rel));
        assert!(seen_after("", read, |_| ()).is_none());
    }

    #[test]
    fn generated_kallsyms_stands_on_proc_modules_and_a_failed_read_is_always_a_change() {
        let mut inputs = Inputs::default();
        let (_dir, root) = tree();
        inputs.note(Path::new("proc/kallsyms"), Seen::ByLoadedModules);
        assert_eq!(inputs.changed(&root), Some(Path::new("proc/kallsyms")));
        write(&root, LOADED_MODULES, "");
        inputs.note(
            Path::new(LOADED_MODULES),
            Seen::Bytes {
                kind: FileKind::Text,
                bytes: Vec::new(),
            },
        );
        assert_eq!(inputs.changed(&root), None);
        inputs.note(Path::new("etc/locked"), Seen::Failed);
        assert_eq!(inputs.changed(&root), Some(Path::new("etc/locked")));
    }
}
