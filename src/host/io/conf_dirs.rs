//! Which `*.conf` files kmod reads from its configuration directories, and in what order.
//!
//! modprobe (libkmod `kmod_config_new`) and depmod (`cfg_load`) read the same way: the `.conf`
//! files of a fixed list of directories, sorted by file name across all of them, where a name
//! seen in an earlier directory hides the same name in later ones (so `/etc/modprobe.d/x.conf`
//! overrides the distribution's `/usr/lib/modprobe.d/x.conf`). Names starting with `.` and
//! directories are skipped. The directory order is kmod's: `/etc`, `/run`, `/usr/local/lib`,
//! the distribution prefix (`/usr/lib`), then `/lib` (kmod 32 added `/usr/lib`).

use serde::Serialize;

use crate::host::io::error::HostError;
use crate::host::io::root::Root;

/// modprobe's directories, earliest wins.
pub const MODPROBE_DIRS: [&str; 5] = [
    "/etc/modprobe.d",
    "/run/modprobe.d",
    "/usr/local/lib/modprobe.d",
    "/usr/lib/modprobe.d",
    "/lib/modprobe.d",
];

/// A configuration file that is read, or one hidden by a file of the same name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfFile {
    /// The file name (`mlnx.conf`).
    pub name: String,
    /// The host path that is read (`/etc/modprobe.d/mlnx.conf`).
    pub path: String,
    /// Host paths of files with the same name in later directories, which are not read.
    pub hides: Vec<String>,
}

/// The files to read, in order, from each directory's listing (`(dir, names)`, directories in
/// priority order). Pure: a name is kept when it ends in `.conf` and does not start with `.`.
pub fn order_conf_files(listings: &[(&str, Vec<String>)]) -> Vec<ConfFile> {
    let mut files: Vec<ConfFile> = Vec::new();
    for (dir, names) in listings {
        for name in names {
            if name.starts_with('.') || name.len() < 6 || !name.ends_with(".conf") {
                continue;
            }
            let path = format!("{dir}/{name}");
            match files.iter_mut().find(|f| &f.name == name) {
                Some(f) => f.hides.push(path),
                None => files.push(ConfFile {
                    name: name.clone(),
                    path,
                    hides: Vec::new(),
                }),
            }
        }
    }
    files.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    files
}

/// Lists `dirs` below the root (absent directories are skipped) and orders their `.conf`
/// files. Only regular files (or links to them) are kept: kmod skips directories, and a FIFO or
/// device node would make a reader wait forever, so those are skipped too.
pub fn list_conf_files(root: &Root, dirs: &[&str]) -> Result<Vec<ConfFile>, HostError> {
    let mut listings = Vec::new();
    for dir in dirs {
        let names = root.list_dir(dir)?.unwrap_or_default();
        let names = names
            .into_iter()
            .filter(|n| root.is_file(format!("{dir}/{n}")))
            .collect();
        listings.push((*dir, names));
    }
    Ok(order_conf_files(&listings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn earlier_directory_hides_same_name_and_order_is_by_name() {
        let files = order_conf_files(&[
            (
                "/etc/modprobe.d",
                names(&["zz-local.conf", "mlnx.conf", ".hidden.conf", "notes.txt"]),
            ),
            ("/run/modprobe.d", names(&[])),
            (
                "/usr/lib/modprobe.d",
                names(&["mlnx.conf", "50-nfs.conf", ".conf"]),
            ),
            ("/lib/modprobe.d", names(&["aliases.conf"])),
        ]);
        let order: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            order,
            vec![
                "/usr/lib/modprobe.d/50-nfs.conf",
                "/lib/modprobe.d/aliases.conf",
                "/etc/modprobe.d/mlnx.conf",
                "/etc/modprobe.d/zz-local.conf",
            ]
        );
        assert_eq!(files[2].hides, vec!["/usr/lib/modprobe.d/mlnx.conf"]);
    }

    #[test]
    fn directories_and_fifos_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("etc/modprobe.d");
        std::fs::create_dir_all(d.join("sub.conf")).unwrap();
        std::fs::write(d.join("real.conf"), "blacklist x\n").unwrap();
        nix::unistd::mkfifo(&d.join("pipe.conf"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let files = list_conf_files(&Root::new(dir.path()), &MODPROBE_DIRS).unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, vec!["real.conf"]);
    }
}
