//! `nfs-gds` lines in `/etc/fstab` that will misbehave at boot.
//!
//! systemd only knows a fixed list of network filesystem types, and `nfs-gds` is not on it: without
//! `_netdev` the mount is ordered before the network is up and fails at boot. `bg` makes mount.nfs
//! fork before nfs-gds can verify the transport, so the helper refuses it.

pub use crate::host::mounts::fstab::{parse_nfs_gds_entries, FstabEntry};

/// Problems with one entry, in words.
pub fn problems(e: &FstabEntry) -> Vec<String> {
    let mut p = Vec::new();
    let has = |o: &str| e.options.iter().any(|x| x == o);
    if !has("_netdev") {
        p.push(format!(
            "/etc/fstab line {}: {} has no `_netdev`; systemd does not know nfs-gds is a network filesystem and will try it before the network is up",
            e.line, e.target
        ));
    }
    if has("bg") {
        p.push(format!(
            "/etc/fstab line {}: {} uses `bg`, which the helper refuses (mount.nfs would fork before the transport can be verified); use `nofail,x-systemd.automount` instead",
            e.line, e.target
        ));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_entries_and_their_problems() {
        let t = "# comment nfs-gds\n\
                 UUID=1 / ext4 defaults 0 1\n\
                 srv:/export /mnt/data nfs-gds _netdev,vers=4.2 0 0\n\
                 srv:/b /mnt/with\\040space nfs-gds vers=4.2,bg\n";
        let e = parse_nfs_gds_entries(t);
        assert_eq!(e.len(), 2);
        assert!(problems(&e[0]).is_empty());
        assert_eq!(e[1].target, "/mnt/with space");
        assert_eq!(e[1].line, 4);
        let p = problems(&e[1]);
        assert_eq!(p.len(), 2);
        assert!(p[0].contains("_netdev"));
        assert!(p[1].contains("`bg`"));
    }
}
