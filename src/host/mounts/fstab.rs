//! The `nfs-gds` lines of `/etc/fstab`: which mount points the admin declared for GDS, with
//! their options. Read for every command that asks what a mount was meant for; doctor judges the
//! lines themselves (`crate::doctor::fstab`).

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FstabEntry {
    pub line: usize,
    pub source: String,
    pub target: String,
    pub options: Vec<String>,
}

/// The `nfs-gds` lines of `/etc/fstab` below `root` (none when it does not exist): the one
/// reader of that file, once per command.
pub fn read_fstab(
    root: &crate::host::io::root::Root,
) -> Result<Vec<FstabEntry>, crate::host::io::error::HostError> {
    Ok(parse_nfs_gds_entries(
        &root.read_text_lossy("etc/fstab")?.unwrap_or_default(),
    ))
}

/// The `nfs-gds` entries of an fstab text (`\040`-style escapes decoded in source and target).
pub fn parse_nfs_gds_entries(text: &str) -> Vec<FstabEntry> {
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let l = l.trim();
            if l.starts_with('#') {
                return None;
            }
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 3 || f[2] != "nfs-gds" {
                return None;
            }
            Some(FstabEntry {
                line: i + 1,
                source: unescape(f[0]),
                target: unescape(f[1]),
                options: f
                    .get(3)
                    .map(|o| o.split(',').map(str::to_string).collect())
                    .unwrap_or_default(),
            })
        })
        .collect()
}

fn unescape(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\134", "\\")
}
