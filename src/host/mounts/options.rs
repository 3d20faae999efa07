//! The options nfs-gds keeps of a mount (the few the checks read, of the dozens the kernel
//! lists) and how one is looked up in a comma-separated list.

use super::escape::lossy;

/// The superblock options of a mountinfo line that are kept: the ones nfs-gds reads (the
/// options the checks read, and `addr=`, the server address the kernel uses). A node with
/// thousands of NFS mounts would otherwise hold some 200 bytes more per mount; a reader of
/// another option adds it here.
pub const KEPT_SUPER_OPTIONS: [&str; 5] = ["vers", "proto", "port", "addr", "nconnect"];

/// The options of an `opts:` line that a mount keeps: the ones the checks read. The rest of
/// the line (a dozen more options) is dropped, for a node with thousands of NFS mounts.
pub const KEPT_OPTIONS: [&str; 4] = ["vers", "proto", "port", "nconnect"];

/// The last list of options [`kept`] filtered, and what it kept.
#[derive(Debug, Default)]
pub(super) struct KeptMemo {
    input: Vec<u8>,
    output: String,
}

impl KeptMemo {
    /// [`kept`], reusing the last answer for the same list.
    pub(super) fn kept(&mut self, options: &[u8], keys: &[&str]) -> String {
        self.kept_str(options, keys).to_string()
    }

    /// [`KeptMemo::kept`], borrowed.
    pub(super) fn kept_str(&mut self, options: &[u8], keys: &[&str]) -> &str {
        if self.input != options {
            self.input.clear();
            self.input.extend_from_slice(options);
            self.output = kept(options, keys);
        }
        &self.output
    }
}

/// The options of a comma-separated list whose key is one of `keys`, in order, in one walk
/// over the bytes (the lists are long, their options short, and the kept ones few).
fn kept(options: &[u8], keys: &[&str]) -> String {
    let mut out = String::new();
    let mut start = 0;
    loop {
        let rest = &options[start..];
        let len = rest.iter().position(|&b| b == b',').unwrap_or(rest.len());
        let o = &rest[..len];
        let key = o.iter().position(|&b| b == b'=').map_or(o, |i| &o[..i]);
        if keys
            .iter()
            .any(|k| k.len() == key.len() && k.as_bytes() == key)
        {
            if !out.is_empty() {
                out.push(',');
            }
            out.push_str(&lossy(o));
        }
        if len == rest.len() {
            return out;
        }
        start += len + 1;
    }
}

/// The value of `key=` in a list of `key=value` / `flag` options.
pub fn option_value<'a>(mut options: impl Iterator<Item = &'a str>, key: &str) -> Option<&'a str> {
    options.find_map(|o| o.strip_prefix(key).and_then(|rest| rest.strip_prefix('=')))
}

/// [`option_value`] of a comma-separated list, walked on its bytes (asked for every option of
/// every mount, several times a check): each option's start is compared with `key=` in place,
/// and `memchr` jumps to the next comma, so no byte is looked at twice.
pub(super) fn option_in<'a>(list: &'a str, key: &str) -> Option<&'a str> {
    let (bytes, k) = (list.as_bytes(), key.as_bytes());
    let mut start = 0;
    loop {
        let option = &bytes[start..];
        let end = memchr::memchr(b',', option).unwrap_or(option.len());
        if end > k.len() && option[k.len()] == b'=' && option.starts_with(k) {
            // `=` and `,` are ASCII: both ends are on character boundaries.
            return Some(&list[start + k.len() + 1..start + end]);
        }
        if end == option.len() {
            return None;
        }
        start += end + 1;
    }
}
