//! The pNFS layout of an NFSv4.1+ mount, from its mountstats `nfsv4:` line
//! (`nfsv4:\tbm0=0x…,acl=0x3,sessions,pnfs=LAYOUT_NFSV4_1_FILES,lease_time=90,…`). `pnfs=not
//! configured` (and no `pnfs=` at all, NFSv4.0) is no layout. With a layout, the data servers
//! the layout names carry the reads and writes, over transports and connections of their own
//! that are not in the mount's `xprt:` lines.

/// The layout type named by an `nfsv4:` line (after `nfsv4:`), if any. Looked for in the raw
/// bytes (every NFSv4 record has the line): only the value is made text, and since `pnfs=` and
/// `,` are ASCII, it reads as the same slice of the whole line made text would.
pub fn parse_pnfs_layout(nfsv4: &[u8]) -> Option<Box<str>> {
    // The searcher built once: building it is most of what one search of a short line costs.
    static PNFS: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"pnfs="));
    let start = PNFS.find(nfsv4)? + "pnfs=".len();
    let rest = &nfsv4[start..];
    let value = &rest[..memchr::memchr(b',', rest).unwrap_or(rest.len())];
    let value = String::from_utf8_lossy(value);
    let value = value.trim();
    (!value.is_empty() && value != "not configured").then(|| Box::from(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layout_is_named_and_none_is_none() {
        let l = "bm0=0xfdffbfff,bm1=0x40fdbe3e,bm2=0x60803,acl=0x3,sessions,pnfs=LAYOUT_FLEX_FILES,lease_time=90,lease_expired=0";
        assert_eq!(
            parse_pnfs_layout(l.as_bytes()).as_deref(),
            Some("LAYOUT_FLEX_FILES")
        );
        let l = "bm0=0xfdffbfff,acl=0x3,sessions,pnfs=not configured,lease_time=10,lease_expired=0";
        assert_eq!(parse_pnfs_layout(l.as_bytes()), None);
        assert_eq!(
            parse_pnfs_layout(b"bm0=0xfdffbfff,acl=0x0,lease_time=90"),
            None
        );
        assert_eq!(
            parse_pnfs_layout(b"pnfs=LAYOUT_SCSI").as_deref(),
            Some("LAYOUT_SCSI")
        );
    }
}
