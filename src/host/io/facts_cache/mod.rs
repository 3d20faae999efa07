//! A root-only cache of module facts and kernel-image scans, so a node that checks every minute
//! (the agent) or mounts several entries at boot does not decompress the same files each time.
//!
//! Three kinds of entry, JSON files written atomically:
//!
//! - `module`: what inspecting a module file found (for the symbols asked about);
//! - `load`: its load facts — the CRCs it expects of its imports, the CRCs of its exports (the
//!   export table a provider answers with), its signature trailer;
//! - `abi`: a module's symbol-version verdict, with the identities of everything it was drawn
//!   from: `modules.symbols` and `modules.dep` (binary and text), the tree's `build` link and
//!   the build `Module.symvers` found through it, and every provider file answered (read, or
//!   taken from that symvers: then the symvers too).
//!   It is keyed by a hash of the imports it judged, so it holds for any file with those imports.
//!
//! plus `image`, a kernel image's scan for the GPL-only rule's text, and `config`, the options a
//! kernel configuration file gives for the ones asked about (a `.config` is some 260 KB).
//!
//! One process at a time derives a missing entry ([`fill_lock`](crate::host::io::fill_lock)): the helpers of a boot's
//! fstab lines, started together on an empty cache, wait for the first to store what they all
//! need, and read it.
//!
//! A file is known by its identity alone — canonical path, device, inode, size, and
//! modification and status-change times to the nanosecond — taken with one `stat`, so a warm
//! run answers from the cache without opening a module file or an index. No hash of the
//! content is taken: hashing means reading, which is most of what the cache saves. That is
//! safe because nothing replaces or rewrites a file without moving its identity: a new file
//! (`depmod`, `dkms install`, a package upgrade, `cp`, `mv`) has a new inode, and every write
//! sets the change time to the current time, which user space cannot set back (`touch` and
//! `utimensat` set the modification time only; the change time moves with them). What is left is
//! a new version of the same size that keeps the inode number — rewritten in place, or deleted
//! and created again with the freed inode — within one tick of the clock the kernel stamps
//! times with (the coarse clock, a jiffy of 1–10 ms, before Linux 6.13; finer on 6.13 and
//! later, with multigrain timestamps on ext4, xfs, btrfs and tmpfs) of the run that wrote the
//! entry. Package tools and DKMS write a new file beside the old one and rename it (a new inode,
//! whatever the clock), and a writer racing a check within milliseconds could as well have
//! raced the read itself. A file's GNU build-id, where it has one, is kept
//! with its facts (it matches the loaded module to its file), not in the key: it is inside
//! the file. Entries are also tied to what was asked (the symbols looked for, the text
//! searched) and to the nfs-gds version and entry format that wrote them.
//!
//! Nobody but root may feed facts to a root process: the cache is used only when running as
//! root, and a cache directory (or its parent) or entry that is not owned by root, or is writable
//! by group or others, is refused with a warning and the facts are read from the file instead.
//! The directory is `<root>/var/cache/nfs-gds` (so `--root` fixtures get their own), resolved
//! inside the root as every output is ([`OutDir`](crate::host::io::out_dir::OutDir): a symlinked `var` leads inside the tree, never
//! out of it), created with mode 0700 and refused when group or others may enter it;
//! `NFS_GDS_CACHE_DIR` overrides it and `NFS_GDS_NO_CACHE=1` turns the cache off. A
//! root that records what is read (`collect`) never uses it: the bundle must hold the files
//! themselves. A cache that cannot be created or written (a read-only root) is silently
//! skipped: it is an optimisation, never a reason to fail.

mod cache;
mod entries;
mod opened;
mod trust;

pub use crate::host::io::file_identity::{FileIdentity, ReadFile};
pub use cache::{FactsCache, DEFAULT_DIR};
pub use entries::{AbiAnswer, AbiKey, SymversKey};
pub use trust::Refusal;
