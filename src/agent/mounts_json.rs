//! The `mounts` array of the status JSON, written in serde_json's pretty layout without going
//! through the serializer: with thousands of mounts it is nearly all of the file, and serde
//! writes it token by token, scanning every string and key for escapes one byte at a time.
//!
//! The layout is serde_json's `PrettyFormatter` (two spaces a level) at the depth the array has
//! in the document, and strings are escaped exactly as serde_json escapes them (a string that
//! needs it is handed to serde_json). Each field of [`MountVerdict`] is written in its declared
//! order with the same `skip_serializing_if` rules; a test holds the two equal byte for byte.

use std::io::{self, Write};

use super::mounts::MountVerdict;
use super::plain::is_plain;

fn string(out: &mut impl Write, s: &str) -> io::Result<()> {
    if !is_plain(s) {
        return serde_json::to_writer(out, s).map_err(io::Error::from);
    }
    out.write_all(b"\"")?;
    out.write_all(s.as_bytes())?;
    out.write_all(b"\"")
}

/// The indentation of a mount's fields: the array is a value of the top-level object, so its
/// elements are at depth 2 and their fields at depth 3.
const FIELD_INDENT: &[u8] = b"      ";
const ELEMENT_INDENT: &[u8] = b"    ";
const ARRAY_INDENT: &[u8] = b"  ";

/// One `"key": ` at the start of a field, after the field before it.
fn key(out: &mut impl Write, first: &mut bool, name: &str) -> io::Result<()> {
    out.write_all(if *first { b"\n" } else { b",\n" })?;
    *first = false;
    out.write_all(FIELD_INDENT)?;
    out.write_all(b"\"")?;
    out.write_all(name.as_bytes())?;
    out.write_all(b"\": ")
}

fn mount(out: &mut impl Write, m: &MountVerdict) -> io::Result<()> {
    let mut first = true;
    out.write_all(b"{")?;
    key(out, &mut first, "export")?;
    string(out, m.export)?;
    key(out, &mut first, "mountpoint")?;
    string(out, &m.mountpoint)?;
    key(out, &mut first, "mountaddr")?;
    match m.mountaddr {
        Some(a) => string(out, a)?,
        None => out.write_all(b"null")?,
    }
    key(out, &mut first, "protocol")?;
    string(out, m.protocol)?;
    key(out, &mut first, "meant_by")?;
    string(out, m.meant_by)?;
    if let Some(uid) = m.pod_uid {
        key(out, &mut first, "pod_uid")?;
        string(out, uid)?;
    }
    if let Some(volume) = m.volume {
        key(out, &mut first, "volume")?;
        string(out, volume)?;
    }
    key(out, &mut first, "verdict")?;
    serde_json::to_writer(&mut *out, &m.verdict)?;
    if !m.checks.is_empty() {
        key(out, &mut first, "checks")?;
        // Rare (a mount that is not plainly ready): serde's pretty output, moved to this depth.
        let text = serde_json::to_vec_pretty(&m.checks)?;
        for (i, line) in text.split(|b| *b == b'\n').enumerate() {
            if i > 0 {
                out.write_all(b"\n")?;
                out.write_all(FIELD_INDENT)?;
            }
            out.write_all(line)?;
        }
    }
    out.write_all(b"\n")?;
    out.write_all(ELEMENT_INDENT)?;
    out.write_all(b"}")
}

/// The array, from `[` to `]`, as the value of a key of the top-level object.
pub fn write_mounts(out: &mut impl Write, mounts: &[MountVerdict]) -> io::Result<()> {
    if mounts.is_empty() {
        return out.write_all(b"[]");
    }
    out.write_all(b"[")?;
    for (i, m) in mounts.iter().enumerate() {
        out.write_all(if i == 0 { b"\n" } else { b",\n" })?;
        out.write_all(ELEMENT_INDENT)?;
        mount(out, m)?;
    }
    out.write_all(b"\n")?;
    out.write_all(ARRAY_INDENT)?;
    out.write_all(b"]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::tests::mount;
    use crate::checks::{CheckResult, Level, Verdict};

    /// serde_json's own output for the array at the same depth.
    fn by_serde(mounts: &[MountVerdict]) -> String {
        #[derive(serde::Serialize)]
        struct Doc<'a, 'm> {
            before: u32,
            mounts: &'a [MountVerdict<'m>],
        }
        serde_json::to_string_pretty(&Doc { before: 1, mounts }).unwrap()
    }

    fn by_hand(mounts: &[MountVerdict]) -> String {
        let mut out = b"{\n  \"before\": 1,\n  \"mounts\": ".to_vec();
        write_mounts(&mut out, mounts).unwrap();
        out.extend_from_slice(b"\n}");
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_array_is_serde_jsons_byte_for_byte() {
        let ready = mount("rdma", Verdict::Ready);
        let mut bare = mount("unknown", Verdict::ReadyWithWarnings);
        (bare.mountaddr, bare.pod_uid, bare.volume) = (None, None, None);
        bare.mountpoint = "/mnt/a \"b\"\\c\td\u{1}e\u{7f}é\n".into();
        bare.export = "srv:/\u{1f}x";
        let mut tcp = mount("tcp", Verdict::NotReady);
        let mut failed = CheckResult::fail(
            crate::checks::catalogue::mount_transport::ID,
            "/mnt/x runs over tcp, not \"RDMA\"",
        )
        .with("mountstats", "xprt:\ttcp 0 0 2")
        .remedy("mount again");
        failed.level = Some(Level::Enforce);
        let warned = CheckResult::warn(crate::checks::catalogue::transport_trap::ID, "maybe");
        tcp.checks = vec![failed, warned];
        for mounts in [
            vec![],
            vec![ready.clone()],
            vec![ready.clone(), bare, tcp, ready],
        ] {
            assert_eq!(by_hand(&mounts), by_serde(&mounts));
        }
    }

    #[test]
    fn escapes_are_found_wherever_they_are() {
        for s in ["", "plain", "a\"", "\\", "\u{0}", "\u{1f} ", "é\u{7f}"] {
            let serde = serde_json::to_string(s).unwrap();
            assert_eq!(!is_plain(s), serde.len() != s.len() + 2, "{s:?}");
        }
    }
}
