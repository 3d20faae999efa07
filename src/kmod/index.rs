//! depmod's binary indexes (`modules.dep.bin`, `modules.alias.bin`, `modules.symbols.bin`,
//! `modules.builtin.bin`): the format libkmod — and so modprobe — reads, looked up in place.
//!
//! Format (kmod's `libkmod-index.c`): big-endian `u32` magic `0xB007F457`, version (major 2),
//! root node offset. A node offset carries flags in its top nibble (`0x8…` prefix, `0x4…`
//! values, `0x2…` children) and the file offset in the rest. A node is: the NUL-terminated
//! prefix (path compression), then `first`, `last` and `last - first + 1` child offsets indexed
//! by the next key byte, then a value count and `(priority, NUL-terminated value)` pairs. A
//! lookup walks one path from the root, so it touches a few hundred bytes of a file that holds
//! 26,000 aliases; nothing is parsed up front.
//!
//! Keys of `modules.alias.bin` are patterns: [`Index::lookup_wild`] follows libkmod's
//! `index_searchwild` (descend while the key matches literally; at `*`, `?` or `[` collect the
//! subtree and keep the values whose whole pattern [`fnmatch`]es the key).
//!
//! Hostile files: every offset is bounds-checked, and walks are bounded in depth and in nodes
//! visited, so a cyclic or truncated index is an error, never a hang or a panic.

use serde::Serialize;

use super::fnmatch::fnmatch;

pub const INDEX_MAGIC: u32 = 0xB007_F457;
pub const INDEX_VERSION_MAJOR: u32 = 2;

const NODE_PREFIX: u32 = 0x8000_0000;
const NODE_VALUES: u32 = 0x4000_0000;
const NODE_CHILDS: u32 = 0x2000_0000;
const NODE_MASK: u32 = 0x0FFF_FFFF;

/// Deepest path a lookup follows (a key byte or a prefix per level; real keys are < 200 bytes).
const MAX_DEPTH: usize = 4096;
/// Deepest subtree a wildcard search descends (recursively).
const MAX_WILD_DEPTH: usize = 512;
/// Most nodes one wildcard search visits (the whole Debian alias index has about 60,000).
const MAX_NODES: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    #[error("not a kmod index (magic {0:#010x}, expected 0xb007f457)")]
    BadMagic(u32),
    #[error("kmod index version {0:#x} is not supported (major version 2 expected)")]
    Version(u32),
    #[error("kmod index is truncated or corrupt: {what} at offset {offset}")]
    Corrupt { what: &'static str, offset: usize },
    #[error("kmod index cannot be read: {0}")]
    Io(String),
    #[error("kmod index is corrupt: a lookup went deeper than {MAX_DEPTH} levels or visited more than {MAX_NODES} nodes (a cycle?)")]
    TooDeep,
}

/// One value of a key, with its priority (lower first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IndexValue {
    pub priority: u32,
    pub value: String,
}

/// Where an index's bytes come from: a slice in memory, or an open file read piece by piece (a
/// lookup then reads a few hundred bytes with `pread`, not the whole 1.2 MB file).
pub trait IndexSource {
    /// Fills `buf` from offset `at`; returns fewer bytes only at the end of the index.
    fn read_at(&self, at: usize, buf: &mut [u8]) -> Result<usize, IndexError>;
}

impl IndexSource for [u8] {
    fn read_at(&self, at: usize, buf: &mut [u8]) -> Result<usize, IndexError> {
        let rest = self.get(at..).unwrap_or_default();
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        Ok(n)
    }
}

impl IndexSource for std::fs::File {
    fn read_at(&self, at: usize, buf: &mut [u8]) -> Result<usize, IndexError> {
        use std::os::unix::fs::FileExt;
        let mut done = 0;
        while done < buf.len() {
            match FileExt::read_at(self, &mut buf[done..], (at + done) as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(IndexError::Io(e.to_string())),
            }
        }
        Ok(done)
    }
}

/// The unit [`PagedFile`] reads in.
pub const PAGE: usize = 4096;

/// An index file read a page at a time, each page once: a lookup reads a node's prefix, child
/// offsets and values in several small pieces, and the symbol-version check looks up some
/// 200 symbols, which read `modules.symbols.bin` in some 3,000 `pread`s of a few bytes; kept
/// in pages they are about 60 reads of 4 KiB (a quarter of the file), where reading the file
/// whole would copy all of its 0.8 MB for the few lookups of a plain `resolve`.
#[derive(Debug)]
pub struct PagedFile {
    file: std::fs::File,
    /// By offset: a handful of pages, found by comparison, with no hashing of each offset.
    pages: std::sync::Mutex<std::collections::BTreeMap<usize, Box<[u8]>>>,
}

impl PagedFile {
    pub fn new(file: std::fs::File) -> Self {
        PagedFile {
            file,
            pages: Default::default(),
        }
    }
}

impl IndexSource for PagedFile {
    fn read_at(&self, at: usize, buf: &mut [u8]) -> Result<usize, IndexError> {
        let mut pages = self
            .pages
            .lock()
            .map_err(|_| IndexError::Io("index page cache poisoned".into()))?;
        let mut done = 0;
        while done < buf.len() {
            let pos = at + done;
            let start = pos - pos % PAGE;
            let page = match pages.entry(start) {
                std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::btree_map::Entry::Vacant(e) => {
                    // Read into the page's spare capacity: no zeroing of what the read
                    // writes over.
                    let mut page = Vec::with_capacity(PAGE);
                    while page.len() < PAGE {
                        let at = (start + page.len()) as u64;
                        let spare = rustix::buffer::spare_capacity(&mut page);
                        match rustix::io::pread(&self.file, spare, at) {
                            Ok(0) => break,
                            Ok(_) | Err(rustix::io::Errno::INTR) => {}
                            Err(e) => {
                                return Err(IndexError::Io(std::io::Error::from(e).to_string()))
                            }
                        }
                    }
                    e.insert(page.into_boxed_slice())
                }
            };
            let have = page.get(pos - start..).unwrap_or_default();
            let n = have.len().min(buf.len() - done);
            buf[done..done + n].copy_from_slice(&have[..n]);
            done += n;
            if have.len() < PAGE - (pos - start) && n == have.len() {
                // A short page is the end of the file.
                break;
            }
        }
        Ok(done)
    }
}

/// Longest prefix or value read (real ones are under 300 bytes).
const MAX_STRING: usize = 1 << 16;

/// A binary index over its source.
#[derive(Debug, Clone, Copy)]
pub struct Index<'a, S: IndexSource + ?Sized> {
    src: &'a S,
    root: u32,
}

struct Node {
    prefix: Vec<u8>,
    first: u8,
    children: Vec<u32>,
    values_at: Option<usize>,
}

impl Node {
    fn child(&self, ch: u8) -> Option<u32> {
        let i = usize::from(ch.checked_sub(self.first)?);
        let off = *self.children.get(i)?;
        (off & NODE_MASK != 0).then_some(off)
    }
}

fn corrupt(what: &'static str, offset: usize) -> IndexError {
    IndexError::Corrupt { what, offset }
}

impl<'a, S: IndexSource + ?Sized> Index<'a, S> {
    /// Checks the header of `src` and finds its root.
    pub fn open(src: &'a S) -> Result<Self, IndexError> {
        let mut header = [0u8; 12];
        if src.read_at(0, &mut header)? < 12 {
            return Err(corrupt("header", 0));
        }
        let word = |i: usize| u32::from_be_bytes(header[i..i + 4].try_into().expect("4 bytes"));
        let magic = word(0);
        if magic != INDEX_MAGIC {
            return Err(IndexError::BadMagic(magic));
        }
        let version = word(4);
        if version >> 16 != INDEX_VERSION_MAJOR {
            return Err(IndexError::Version(version));
        }
        Ok(Index { src, root: word(8) })
    }

    fn exact(&self, at: usize, len: usize, what: &'static str) -> Result<Vec<u8>, IndexError> {
        let mut buf = vec![0u8; len];
        if self.src.read_at(at, &mut buf)? < len {
            return Err(corrupt(what, at));
        }
        Ok(buf)
    }

    /// Fills `buf` from `at`, all of it or an error.
    fn fill(&self, at: usize, buf: &mut [u8], what: &'static str) -> Result<(), IndexError> {
        if self.src.read_at(at, buf)? < buf.len() {
            return Err(corrupt(what, at));
        }
        Ok(())
    }

    fn u32_at(&self, at: usize, what: &'static str) -> Result<u32, IndexError> {
        let mut b = [0u8; 4];
        self.fill(at, &mut b, what)?;
        Ok(u32::from_be_bytes(b))
    }

    /// The NUL-terminated string at `at` (without the NUL).
    fn cstr(&self, at: usize, what: &'static str) -> Result<Vec<u8>, IndexError> {
        let mut out = Vec::new();
        let mut chunk = [0u8; 128];
        loop {
            let n = self.src.read_at(at + out.len(), &mut chunk)?;
            if let Some(end) = chunk[..n].iter().position(|&b| b == 0) {
                out.extend_from_slice(&chunk[..end]);
                return Ok(out);
            }
            if n == 0 || out.len() + n > MAX_STRING {
                return Err(corrupt(what, at));
            }
            out.extend_from_slice(&chunk[..n]);
        }
    }

    fn node(&self, offset: u32) -> Result<Node, IndexError> {
        let mut at = (offset & NODE_MASK) as usize;
        let mut prefix = Vec::new();
        if offset & NODE_PREFIX != 0 {
            prefix = self.cstr(at, "prefix")?;
            at += prefix.len() + 1;
        }
        let (mut first, mut children) = (0, Vec::new());
        if offset & NODE_CHILDS != 0 {
            let mut range = [0u8; 2];
            self.fill(at, &mut range, "child range")?;
            let (f, l) = (range[0], range[1]);
            if f > l {
                return Err(corrupt("child range", at));
            }
            at += 2;
            let count = usize::from(l - f) + 1;
            let raw = self.exact(at, count * 4, "child offsets")?;
            children = raw
                .chunks_exact(4)
                .map(|c| u32::from_be_bytes(c.try_into().expect("4 bytes")))
                .collect();
            first = f;
            at += count * 4;
        }
        let values_at = (offset & NODE_VALUES != 0).then_some(at);
        Ok(Node {
            prefix,
            first,
            children,
            values_at,
        })
    }

    /// The values stored at `values_at` (a node's, when it has any).
    fn values(&self, values_at: Option<usize>) -> Result<Vec<IndexValue>, IndexError> {
        let Some(mut at) = values_at else {
            return Ok(Vec::new());
        };
        let count = self.u32_at(at, "value count")? as usize;
        at += 4;
        let mut out = Vec::with_capacity(count.min(64));
        for _ in 0..count {
            let priority = self.u32_at(at, "value priority")?;
            at += 4;
            let value = self.cstr(at, "value")?;
            at += value.len() + 1;
            out.push(IndexValue {
                priority,
                value: String::from_utf8_lossy(&value).into_owned(),
            });
        }
        // libkmod keeps values ordered by priority, first inserted first among equals.
        out.sort_by_key(|v| v.priority);
        Ok(out)
    }

    /// The values of exactly `key` (libkmod's `index_search` returns the first of them). The
    /// walk reads of each node only what the key needs: its prefix, compared in place, and the
    /// one child offset the next key byte picks.
    pub fn lookup_all(&self, key: &str) -> Result<Vec<IndexValue>, IndexError> {
        let key = key.as_bytes();
        let mut offset = self.root;
        let mut i = 0;
        for _ in 0..MAX_DEPTH {
            if offset & NODE_MASK == 0 {
                return Ok(Vec::new());
            }
            let mut at = (offset & NODE_MASK) as usize;
            if offset & NODE_PREFIX != 0 {
                let Some(len) = self.prefix_of(at, &key[i..])? else {
                    return Ok(Vec::new());
                };
                i += len;
                at += len + 1;
            }
            let range = if offset & NODE_CHILDS != 0 {
                let mut r = [0u8; 2];
                self.fill(at, &mut r, "child range")?;
                if r[0] > r[1] {
                    return Err(corrupt("child range", at));
                }
                Some((r[0], r[1]))
            } else {
                None
            };
            let Some(&ch) = key.get(i) else {
                let children = range.map_or(0, |(f, l)| 2 + (usize::from(l - f) + 1) * 4);
                return self.values((offset & NODE_VALUES != 0).then_some(at + children));
            };
            match range {
                Some((f, l)) if (f..=l).contains(&ch) => {
                    offset = self.u32_at(at + 2 + usize::from(ch - f) * 4, "child offsets")?;
                }
                _ => return Ok(Vec::new()),
            }
            i += 1;
        }
        Err(IndexError::TooDeep)
    }

    /// The length of the NUL-terminated prefix at `at` when `key` starts with it; `None` when
    /// it does not.
    fn prefix_of(&self, at: usize, key: &[u8]) -> Result<Option<usize>, IndexError> {
        let mut chunk = [0u8; 64];
        let mut done = 0;
        loop {
            let n = self.src.read_at(at + done, &mut chunk)?;
            for (j, &b) in chunk[..n].iter().enumerate() {
                if b == 0 {
                    return Ok(Some(done + j));
                }
                if key.get(done + j) != Some(&b) {
                    return Ok(None);
                }
            }
            done += n;
            if n == 0 || done > MAX_STRING {
                return Err(corrupt("prefix", at));
            }
        }
    }

    /// The first value of `key`, as modprobe takes it from `modules.dep.bin`.
    pub fn lookup(&self, key: &str) -> Result<Option<String>, IndexError> {
        Ok(self.lookup_all(key)?.into_iter().next().map(|v| v.value))
    }

    /// Every value whose key, read as an `fnmatch` pattern, matches `key` (libkmod's
    /// `index_searchwild`), ordered by priority.
    pub fn lookup_wild(&self, key: &str) -> Result<Vec<IndexValue>, IndexError> {
        let key = key.as_bytes();
        let mut out = Vec::new();
        let mut visited = 0usize;
        // The pattern from the first wildcard on, matched against the key from the same point:
        // the literal part before it has already matched byte for byte.
        let mut buf = Vec::new();
        let mut offset = self.root;
        let mut i = 0;
        let mut depth = 0;
        while offset & NODE_MASK != 0 {
            depth += 1;
            if depth > MAX_DEPTH {
                return Err(IndexError::TooDeep);
            }
            let node = self.node(offset)?;
            for (j, &ch) in node.prefix.iter().enumerate() {
                if matches!(ch, b'*' | b'?' | b'[') {
                    let subkey = key.get(i + j..).unwrap_or_default();
                    self.collect_wild(&node, j, &mut buf, subkey, &mut out, &mut visited, 0)?;
                    return Ok(sorted(out));
                }
                if key.get(i + j) != Some(&ch) {
                    return Ok(sorted(out));
                }
            }
            i += node.prefix.len();
            let rest = key.get(i..).unwrap_or_default();
            for wild in [b'*', b'?', b'['] {
                if let Some(child) = node.child(wild) {
                    let child = self.node(child)?;
                    buf.push(wild);
                    self.collect_wild(&child, 0, &mut buf, rest, &mut out, &mut visited, 0)?;
                    buf.pop();
                }
            }
            let Some(&ch) = key.get(i) else {
                out.extend(self.values(node.values_at)?);
                break;
            };
            match node.child(ch) {
                Some(next) => offset = next,
                None => break,
            }
            i += 1;
        }
        Ok(sorted(out))
    }

    /// libkmod's `index_searchwild__all`: every key under `node` (whose prefix from byte `j` on
    /// is still to be appended to `buf`), kept when the whole pattern matches `subkey`.
    #[allow(clippy::too_many_arguments)]
    fn collect_wild(
        &self,
        node: &Node,
        j: usize,
        buf: &mut Vec<u8>,
        subkey: &[u8],
        out: &mut Vec<IndexValue>,
        visited: &mut usize,
        depth: usize,
    ) -> Result<(), IndexError> {
        *visited += 1;
        if depth > MAX_WILD_DEPTH || *visited > MAX_NODES {
            return Err(IndexError::TooDeep);
        }
        let pushed = node.prefix.len() - j;
        buf.extend_from_slice(&node.prefix[j..]);
        for (i, _) in node.children.iter().enumerate() {
            let ch = node.first + i as u8;
            {
                if let Some(child) = node.child(ch) {
                    let child = self.node(child)?;
                    buf.push(ch);
                    self.collect_wild(&child, 0, buf, subkey, out, visited, depth + 1)?;
                    buf.pop();
                }
            }
        }
        if node.values_at.is_some() && fnmatch(buf, subkey) {
            out.extend(self.values(node.values_at)?);
        }
        buf.truncate(buf.len() - pushed);
        Ok(())
    }
}

fn sorted(mut values: Vec<IndexValue>) -> Vec<IndexValue> {
    values.sort_by_key(|v| v.priority);
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_an_error() {
        assert!(matches!(
            Index::open(&b""[..]),
            Err(IndexError::Corrupt { .. })
        ));
        assert!(matches!(
            Index::open(&b"\0\0\0\0\0\0\0\0\0\0\0\0"[..]),
            Err(IndexError::BadMagic(0))
        ));
        let mut v = INDEX_MAGIC.to_be_bytes().to_vec();
        v.extend_from_slice(&0x0001_0000u32.to_be_bytes());
        v.extend_from_slice(&0u32.to_be_bytes());
        assert!(matches!(
            Index::open(v.as_slice()),
            Err(IndexError::Version(_))
        ));
    }

    #[test]
    fn a_cycle_is_an_error_not_a_hang() {
        // Root at 12: prefix "" (no flag), children 'a'..'a' pointing back at itself.
        let mut v = INDEX_MAGIC.to_be_bytes().to_vec();
        v.extend_from_slice(&0x0002_0001u32.to_be_bytes());
        v.extend_from_slice(&(NODE_CHILDS | 12).to_be_bytes());
        v.extend_from_slice(b"aa");
        v.extend_from_slice(&(NODE_CHILDS | 12).to_be_bytes());
        let idx = Index::open(v.as_slice()).unwrap();
        let long = "a".repeat(MAX_DEPTH + 10);
        assert_eq!(idx.lookup(&long), Err(IndexError::TooDeep));
        assert_eq!(idx.lookup_wild(&long), Err(IndexError::TooDeep));
        // A wildcard child that loops is bounded too.
        let mut w = INDEX_MAGIC.to_be_bytes().to_vec();
        w.extend_from_slice(&0x0002_0001u32.to_be_bytes());
        w.extend_from_slice(&(NODE_CHILDS | 12).to_be_bytes());
        w.extend_from_slice(b"**");
        w.extend_from_slice(&(NODE_CHILDS | 12).to_be_bytes());
        let idx = Index::open(w.as_slice()).unwrap();
        assert_eq!(idx.lookup_wild("x"), Err(IndexError::TooDeep));
        assert_eq!(idx.lookup("b").unwrap(), None);
    }
}
