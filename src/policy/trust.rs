//! Whether a policy file may be believed, and its bytes read from the one descriptor checked.
//!
//! The policy can turn enforcement off, so a file that anyone but a trusted owner (root) can
//! change is refused, as sshd's StrictModes refuses a writable `authorized_keys`. The rule:
//!
//! - the path is resolved once (symlinks followed) and then walked from `/` — or, below a
//!   fixture root, from that root — one `openat(O_NOFOLLOW)` per component, each descriptor
//!   `fstat`ed before the next step, so what is checked is what is opened;
//! - every directory on the way is owned by a trusted owner and writable by nobody else — except
//!   a root-owned directory with the sticky bit (`/tmp`): there only an entry's owner may rename
//!   or delete it, so a root-owned entry below it cannot be swapped;
//! - the file is a regular file (not a FIFO, device or directory), owned by a trusted owner,
//!   not writable by group or others, and at most [`MAX_POLICY_BYTES`] long;
//! - the bytes parsed are the bytes read from that descriptor.
//!
//! Tests, and fixture trees under `--root`, name the owners they trust instead of root alone
//! ([`Trust::for_tree`]).

use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{fstat, openat, FileType, Mode, OFlags, CWD};

use crate::host::Root;

/// A policy file is a few hundred bytes; anything past this is not one.
pub const MAX_POLICY_BYTES: u64 = 1 << 20;

/// The owners whose files are believed, and where the directory walk starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trust {
    owners: Vec<u32>,
    /// The walk starts here instead of `/` for paths below it (a fixture root).
    top: Option<PathBuf>,
}

impl Trust {
    /// Only root (uid 0).
    pub fn root_only() -> Self {
        Trust {
            owners: vec![0],
            top: None,
        }
    }

    /// These owners and root (who owns `/` and can change anything anyway).
    pub fn owners(owners: Vec<u32>) -> Self {
        let mut owners = owners;
        owners.push(0);
        owners.sort_unstable();
        owners.dedup();
        Trust { owners, top: None }
    }

    /// On a real host, root only. Below a fixture root, also the owner of the root directory
    /// (a tree someone built for themselves is theirs to configure; it controls nothing else),
    /// and the directory walk stops at the root.
    pub fn for_tree(root: &Root) -> Self {
        let mut owners = Vec::new();
        if let Ok(m) = std::fs::metadata(root.dir()) {
            owners.push(std::os::unix::fs::MetadataExt::uid(&m));
        }
        Trust {
            top: std::fs::canonicalize(root.dir()).ok(),
            ..Trust::owners(owners)
        }
    }

    fn describe(&self) -> String {
        let names: Vec<String> = self
            .owners
            .iter()
            .map(|u| {
                if *u == 0 {
                    "root".to_string()
                } else {
                    format!("uid {u}")
                }
            })
            .collect();
        names.join(" or ")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("{}: {source}", path.display())]
    Stat {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is owned by uid {uid}, not {expected}: refusing it, because whoever can write it can turn enforcement off (chown root: {})", path.display(), path.display())]
    Owner {
        path: PathBuf,
        uid: u32,
        expected: String,
    },
    #[error("{} is writable by {who} (mode {mode:04o}): refusing it, because whoever can write it can turn enforcement off (chmod go-w {})", path.display(), path.display())]
    Writable {
        path: PathBuf,
        mode: u32,
        who: &'static str,
    },
    #[error("{} is {kind}, not a regular file: refusing to read it as the policy", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{} is larger than {max} bytes: not a policy file", path.display())]
    TooLarge { path: PathBuf, max: u64 },
    #[error("{} resolves to {}, outside the root {}: refusing to read it as the tree's policy", path.display(), real.display(), top.display())]
    OutsideRoot {
        path: PathBuf,
        real: PathBuf,
        top: PathBuf,
    },
}

impl TrustError {
    /// Whether the file (or a directory on its path) does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, TrustError::Stat { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }

    /// Whether the finding is about where the file lies (who owns it or a directory above it,
    /// who may write them), not about the file itself: a draft may break these rules until it
    /// is installed.
    pub fn is_about_location(&self) -> bool {
        matches!(self, TrustError::Owner { .. } | TrustError::Writable { .. })
    }
}

fn kind_of(mode: u32) -> &'static str {
    match FileType::from_raw_mode(mode) {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symlink",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "of an unknown type",
    }
}

/// Owner and mode of one step of the walk. `dir` allows the root-owned sticky exception.
fn check_entry(
    path: &Path,
    uid: u32,
    mode: u32,
    dir: bool,
    trust: &Trust,
) -> Result<(), TrustError> {
    if !trust.owners.contains(&uid) {
        return Err(TrustError::Owner {
            path: path.to_owned(),
            uid,
            expected: trust.describe(),
        });
    }
    let mode = mode & 0o7777;
    let sticky_root = dir && uid == 0 && mode & 0o1000 != 0;
    let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
        _ if sticky_root => return Ok(()),
        (true, true) => "its group and everyone",
        (true, false) => "its group",
        (false, true) => "everyone",
        (false, false) => return Ok(()),
    };
    Err(TrustError::Writable {
        path: path.to_owned(),
        mode,
        who,
    })
}

fn stat_err(path: &Path) -> impl Fn(rustix::io::Errno) -> TrustError + '_ {
    move |e| TrustError::Stat {
        path: path.to_owned(),
        source: e.into(),
    }
}

/// Whether `name` is one of kubelet's timestamped data directories of a ConfigMap or Secret
/// volume (`..2026_12_01_20_00_00.123456789`, the target of `..data`).
fn is_kubelet_data_dir(name: &std::ffi::OsStr) -> bool {
    let Some(stamp) = name.to_str().and_then(|n| n.strip_prefix("..")) else {
        return false;
    };
    let Some((time, suffix)) = stamp.split_once('.') else {
        return false;
    };
    let fields: Vec<&str> = time.split('_').collect();
    fields.len() == 6
        && fields
            .iter()
            .all(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
        && !suffix.is_empty()
        && suffix.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// A directory refused only for being writable is accepted in exactly kubelet's layout of a
/// ConfigMap volume (kubelet makes the volume's directory mode 0777): owned by a trusted owner
/// (root), which the caller has checked, the rest of the path is one timestamped data directory and
/// the file in it, and the directory's `..data` symlink points at that data directory (the file
/// is what kubelet published last). The data directory and the file are then held to the usual
/// rules: owned by root and writable by nobody else.
fn kubelet_volume_ok(dir: &OwnedFd, rest: &[std::ffi::OsString]) -> bool {
    let [data, _file] = rest else {
        return false;
    };
    is_kubelet_data_dir(data)
        && rustix::fs::readlinkat(dir, "..data", Vec::new())
            .is_ok_and(|target| target.as_bytes() == data.as_encoded_bytes())
}

/// The owner and mode check of a directory on the walk, with the ConfigMap exception.
fn check_dir(
    dir: &OwnedFd,
    at: &Path,
    rest: &[std::ffi::OsString],
    trust: &Trust,
) -> Result<(), TrustError> {
    let st = fstat(dir).map_err(stat_err(at))?;
    match check_entry(at, st.st_uid, st.st_mode, true, trust) {
        Err(TrustError::Writable { .. }) if kubelet_volume_ok(dir, rest) => Ok(()),
        other => other,
    }
}

/// Opens `path` component by component from `start` (already open), checking every directory.
fn walk(start: (OwnedFd, PathBuf), rest: &Path, trust: &Trust) -> Result<OwnedFd, TrustError> {
    let (mut dir, mut at) = start;
    let names: Vec<_> = rest
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_owned()),
            _ => None,
        })
        .collect();
    check_dir(&dir, &at, &names, trust)?;
    let Some((file, dirs)) = names.split_last() else {
        return Err(TrustError::NotRegular {
            path: at,
            kind: "a directory",
        });
    };
    for (i, name) in dirs.iter().enumerate() {
        at.push(name);
        let next = openat(
            &dir,
            name.as_os_str(),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(stat_err(&at))?;
        check_dir(&next, &at, &names[i + 1..], trust)?;
        dir = next;
    }
    at.push(file);
    let fd = openat(
        &dir,
        file.as_os_str(),
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(stat_err(&at))?;
    let st = fstat(&fd).map_err(stat_err(&at))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(TrustError::NotRegular {
            path: at,
            kind: kind_of(st.st_mode),
        });
    }
    check_entry(&at, st.st_uid, st.st_mode, false, trust)?;
    Ok(fd)
}

/// Checks the policy file at `path` and every directory above it, and returns its bytes, read
/// from the descriptor that was checked.
pub fn read(path: &Path, trust: &Trust) -> Result<Vec<u8>, TrustError> {
    read_checked(path, trust, false)
}

/// Like [`read`], for the default policy path of a tree: a path that resolves outside the
/// tree's top is refused rather than read.
pub fn read_confined(path: &Path, trust: &Trust) -> Result<Vec<u8>, TrustError> {
    read_checked(path, trust, true)
}

fn read_checked(path: &Path, trust: &Trust, confined: bool) -> Result<Vec<u8>, TrustError> {
    let real = std::fs::canonicalize(path).map_err(|source| TrustError::Stat {
        path: path.to_owned(),
        source,
    })?;
    if let (true, Some(top)) = (confined, trust.top.as_deref()) {
        if !real.starts_with(top) {
            return Err(TrustError::OutsideRoot {
                path: path.to_owned(),
                real,
                top: top.to_owned(),
            });
        }
    }
    let top = trust
        .top
        .as_deref()
        .filter(|t| real.starts_with(t))
        .unwrap_or(Path::new("/"));
    let start = openat(
        CWD,
        top,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(stat_err(top))?;
    let rest = real.strip_prefix(top).unwrap_or(&real);
    let fd = walk((start, top.to_owned()), rest, trust)?;
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(MAX_POLICY_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| TrustError::Stat {
            path: real.clone(),
            source,
        })?;
    if bytes.len() as u64 > MAX_POLICY_BYTES {
        return Err(TrustError::TooLarge {
            path: real,
            max: MAX_POLICY_BYTES,
        });
    }
    Ok(bytes)
}

/// Checks the file, every directory above it, and that it is a regular file.
pub fn check(path: &Path, trust: &Trust) -> Result<(), TrustError> {
    read(path, trust).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn me() -> Trust {
        Trust::owners(vec![nix::unistd::getuid().as_raw()])
    }

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// kubelet's ConfigMap volume: a 0777 directory, a timestamped data directory, `..data`
    /// pointing at it, and the key as a symlink through `..data`. Returns the key's path.
    fn configmap_volume(top: &Path) -> PathBuf {
        let vol = top.join("nfs-gds");
        let data = "..2026_12_01_20_00_00.1234567890";
        std::fs::create_dir_all(vol.join(data)).unwrap();
        chmod(top, 0o755);
        chmod(&vol, 0o777);
        chmod(&vol.join(data), 0o755);
        std::fs::write(vol.join(data).join("nfs-gds.toml"), "").unwrap();
        chmod(&vol.join(data).join("nfs-gds.toml"), 0o644);
        std::os::unix::fs::symlink(data, vol.join("..data")).unwrap();
        std::os::unix::fs::symlink("..data/nfs-gds.toml", vol.join("nfs-gds.toml")).unwrap();
        vol.join("nfs-gds.toml")
    }

    #[test]
    fn kubelets_configmap_layout_is_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let key = configmap_volume(dir.path());
        check(&key, &me()).unwrap();
        // Named through `..data` or the data directory too: the same file.
        check(&key.with_file_name("..data/nfs-gds.toml"), &me()).unwrap();
    }

    #[test]
    fn nothing_looser_than_kubelets_layout_is_trusted() {
        const DATA: &str = "..2026_12_01_20_00_00.1234567890";
        // Each loosens the layout and says which path to read then.
        type Loosen = fn(&Path) -> PathBuf;
        let cases: [(&str, Loosen); 6] = [
            ("no ..data link", |vol| {
                std::fs::remove_file(vol.join("..data")).unwrap();
                vol.join(DATA).join("nfs-gds.toml")
            }),
            ("..data elsewhere", |vol| {
                std::fs::remove_file(vol.join("..data")).unwrap();
                std::os::unix::fs::symlink("..2026_12_01_20_00_01.1", vol.join("..data")).unwrap();
                vol.join(DATA).join("nfs-gds.toml")
            }),
            ("a writable data directory", |vol| {
                chmod(&vol.join(DATA), 0o777);
                vol.join("nfs-gds.toml")
            }),
            ("a writable file", |vol| {
                chmod(&vol.join(DATA).join("nfs-gds.toml"), 0o666);
                vol.join("nfs-gds.toml")
            }),
            ("the file right in the volume", |vol| {
                std::fs::remove_file(vol.join("nfs-gds.toml")).unwrap();
                std::fs::write(vol.join("nfs-gds.toml"), "").unwrap();
                chmod(&vol.join("nfs-gds.toml"), 0o644);
                vol.join("nfs-gds.toml")
            }),
            ("a data directory that is not kubelet's", |vol| {
                std::fs::rename(vol.join(DATA), vol.join("data")).unwrap();
                std::fs::remove_file(vol.join("..data")).unwrap();
                std::os::unix::fs::symlink("data", vol.join("..data")).unwrap();
                vol.join("nfs-gds.toml")
            }),
        ];
        for (what, loosen) in cases {
            let dir = tempfile::tempdir().unwrap();
            let key = configmap_volume(dir.path());
            let path = loosen(key.parent().unwrap());
            let e = check(&path, &me());
            assert!(
                matches!(e, Err(TrustError::Writable { .. })),
                "{what}: {e:?}"
            );
        }
        // A subdirectory below the data directory is not kubelet's layout either.
        let dir = tempfile::tempdir().unwrap();
        let key = configmap_volume(dir.path());
        let deeper = key.with_file_name("..data/sub/nfs-gds.toml");
        std::fs::create_dir(deeper.parent().unwrap()).unwrap();
        std::fs::write(&deeper, "").unwrap();
        chmod(&deeper, 0o644);
        assert!(matches!(
            check(&deeper, &me()),
            Err(TrustError::Writable { .. })
        ));
    }

    #[test]
    fn kubelet_data_directory_names() {
        for ok in [
            "..2026_12_01_20_00_00.1234567890",
            "..2019_01_02_03_04_05.298115723",
        ] {
            assert!(is_kubelet_data_dir(std::ffi::OsStr::new(ok)), "{ok}");
        }
        for bad in [
            "..data",
            "data",
            "..2026_12_01.1",
            "..2026_12_01_20_00_00.",
            "..2026_12_01_20_00_00.a/b",
            ".2026_12_01_20_00_00.1",
        ] {
            assert!(!is_kubelet_data_dir(std::ffi::OsStr::new(bad)), "{bad}");
        }
    }

    #[test]
    fn a_private_file_in_a_private_dir_is_trusted() {
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o755);
        let f = dir.path().join("nfs-gds.toml");
        std::fs::write(&f, "").unwrap();
        chmod(&f, 0o644);
        check(&f, &me()).unwrap();
    }

    #[test]
    fn group_or_world_writable_files_and_dirs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o755);
        let f = dir.path().join("nfs-gds.toml");
        std::fs::write(&f, "").unwrap();
        for (mode, who) in [
            (0o664, "its group"),
            (0o646, "everyone"),
            (0o666, "its group and everyone"),
        ] {
            chmod(&f, mode);
            let e = check(&f, &me()).unwrap_err();
            assert!(
                matches!(&e, TrustError::Writable { who: w, .. } if *w == who),
                "{e}"
            );
            assert!(e.to_string().contains("chmod go-w"), "{e}");
        }
        chmod(&f, 0o644);
        chmod(dir.path(), 0o777);
        let e = check(&f, &me()).unwrap_err();
        assert!(
            matches!(&e, TrustError::Writable { path, .. } if path == &std::fs::canonicalize(dir.path()).unwrap()),
            "{e}"
        );
    }

    #[test]
    fn a_file_owned_by_someone_else_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("nfs-gds.toml");
        std::fs::write(&f, "").unwrap();
        let stranger = Trust {
            owners: vec![nix::unistd::getuid().as_raw().wrapping_add(4242)],
            top: None,
        };
        let e = check(&f, &stranger).unwrap_err();
        assert!(matches!(e, TrustError::Owner { .. }), "{e}");
        assert!(e.to_string().contains("chown root:"), "{e}");
    }

    #[test]
    fn symlinks_are_judged_by_their_target() {
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o755);
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        let real = open.join("real.toml");
        std::fs::write(&real, "").unwrap();
        chmod(&real, 0o644);
        let link = dir.path().join("nfs-gds.toml");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(
            check(&link, &me()).is_err(),
            "the real directory is world-writable"
        );
    }

    #[test]
    fn every_directory_up_to_the_top_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o755);
        let etc = dir.path().join("etc");
        let conf = etc.join("nfs-gds");
        std::fs::create_dir_all(&conf).unwrap();
        let f = conf.join("nfs-gds.toml");
        std::fs::write(&f, "default = \"off\"\n").unwrap();
        chmod(&f, 0o644);
        chmod(&conf, 0o755);
        chmod(&etc, 0o777);
        let e = check(&f, &me()).unwrap_err();
        assert!(
            matches!(&e, TrustError::Writable { path, .. } if path.ends_with("etc")),
            "{e}"
        );
        // A root-owned sticky directory lets nobody else rename root's entries.
        chmod(&etc, 0o1777);
        let sticky = check(&f, &me());
        if nix::unistd::getuid().is_root() {
            sticky.unwrap();
        } else {
            assert!(matches!(sticky, Err(TrustError::Writable { .. })));
        }
        chmod(&etc, 0o755);
        assert_eq!(read(&f, &me()).unwrap(), b"default = \"off\"\n");
    }

    #[test]
    fn below_a_fixture_root_the_walk_stops_at_the_root() {
        let outer = tempfile::tempdir().unwrap();
        chmod(outer.path(), 0o777);
        let root = outer.path().join("root");
        std::fs::create_dir_all(root.join("etc")).unwrap();
        let f = root.join("etc/p.toml");
        std::fs::write(&f, "").unwrap();
        chmod(&f, 0o644);
        chmod(&root, 0o755);
        chmod(&root.join("etc"), 0o755);
        let t = Trust::for_tree(&Root::new(&root));
        check(&f, &t).unwrap();
        assert!(check(&f, &me()).is_err(), "from / the open parent counts");
    }

    #[test]
    fn fifos_and_devices_are_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o755);
        let fifo = dir.path().join("fifo.toml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        let e = check(&fifo, &me()).unwrap_err();
        assert!(
            e.to_string().contains("is a FIFO, not a regular file"),
            "{e}"
        );
        let zero = dir.path().join("zero.toml");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = check(&zero, &me()).unwrap_err();
        assert!(
            matches!(&e, TrustError::NotRegular { kind, .. } if *kind == "a character device"),
            "{e}"
        );
        let big = dir.path().join("big.toml");
        std::fs::write(&big, vec![b'#'; MAX_POLICY_BYTES as usize + 1]).unwrap();
        chmod(&big, 0o644);
        assert!(matches!(
            read(&big, &me()),
            Err(TrustError::TooLarge { .. })
        ));
    }

    #[test]
    fn the_owner_message_names_each_owner_once() {
        let t = Trust::owners(vec![0, 0]);
        assert_eq!(t.describe(), "root");
        assert_eq!(Trust::owners(vec![1000]).describe(), "root or uid 1000");
    }

    #[test]
    fn fixture_roots_trust_their_owner() {
        let dir = tempfile::tempdir().unwrap();
        let t = Trust::for_tree(&Root::new(dir.path()));
        assert!(t.owners.contains(&nix::unistd::getuid().as_raw()));
        assert_eq!(t.top, Some(std::fs::canonicalize(dir.path()).unwrap()));
    }
}
