//! The pNFS layout of an NFSv4.1+ mount, from its mountstats `nfsv4:` line
//! (`nfsv4:\tbm0=0x…,acl=0x3,sessions,pnfs=LAYOUT_NFSV4_1_FILES,lease_time=90,…`). `pnfs=not
//! configured` (and no `pnfs=` at all, NFSv4.0) is no layout. With a layout, the data servers
//! the layout names carry the reads and writes, over transports and connections of their own
//! that are not in the mount's `xprt:` lines.

/// The layout type named by an `nfsv4:` line (after `nfsv4:`), if any.
pub fn parse_pnfs_layout(nfsv4: &str) -> Option<&str> {
    let start = nfsv4.find("pnfs=")? + "pnfs=".len();
    let value = nfsv4[start..].split(',').next()?.trim();
    (!value.is_empty() && value != "not configured").then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layout_is_named_and_none_is_none() {
        let l = "bm0=0xfdffbfff,bm1=0x40fdbe3e,bm2=0x60803,acl=0x3,sessions,pnfs=LAYOUT_FLEX_FILES,lease_time=90,lease_expired=0";
        assert_eq!(parse_pnfs_layout(l), Some("LAYOUT_FLEX_FILES"));
        let l = "bm0=0xfdffbfff,acl=0x3,sessions,pnfs=not configured,lease_time=10,lease_expired=0";
        assert_eq!(parse_pnfs_layout(l), None);
        assert_eq!(
            parse_pnfs_layout("bm0=0xfdffbfff,acl=0x0,lease_time=90"),
            None
        );
        assert_eq!(parse_pnfs_layout("pnfs=LAYOUT_SCSI"), Some("LAYOUT_SCSI"));
    }
}
