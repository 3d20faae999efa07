//! What the node declares about its mounts, read for the one decider of which mounts are meant
//! for RDMA and on which port ([`crate::policy::intent`]): the helper's records
//! ([`crate::mount::record`]) and the `nfs-gds` lines of `/etc/fstab`. The agent, `doctor` and
//! `verify` all read them here.

use crate::doctor::fstab::parse_nfs_gds_entries;
use crate::host::{HostError, Root};
use crate::mount::record::{read_records, MountRecord};
pub use crate::policy::intent::{intent_of, Declared, Intent, RecordedMount};

/// The records as declarations.
pub fn of_records(records: &[MountRecord]) -> Declared {
    let mut d = Declared::default();
    for r in records {
        d.record(RecordedMount {
            device: &r.device,
            source: &r.source,
            target: &r.target,
            port: r.port,
            spec: &r.spec,
            options: &r.options,
        });
    }
    d
}

/// The records and fstab lines below the root. A record that cannot be used is logged and
/// left out (it never stops a command); so is an fstab that cannot be read.
pub fn read_declared(root: &Root) -> Result<Declared, HostError> {
    let (records, bad) = read_records(root)?;
    for b in &bad {
        tracing::warn!("ignoring mount record {}: {}", b.path.display(), b.reason);
    }
    let mut d = of_records(&records);
    match root.read_text_lossy("etc/fstab") {
        Ok(text) => {
            for e in parse_nfs_gds_entries(&text.unwrap_or_default()) {
                d.fstab_line(e.target, e.line, &e.options.join(","));
            }
        }
        Err(e) => tracing::warn!("{e}"),
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::asked::{Asked, AskedBy};
    use crate::host::mounts::{parse_mountinfo, MountTable};

    #[test]
    fn records_and_fstab_lines_below_the_root_declare_their_mounts() {
        let t = MountTable::join(
            parse_mountinfo(
                b"30 1 0:40 / /mnt/home rw - nfs4 home:/users rw,vers=4.2,proto=tcp\n\
31 1 0:41 / /mnt/fast rw - nfs4 filer:/f rw,vers=4.2,proto=tcp\n",
            )
            .unwrap(),
            Vec::new(),
        );
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::fs::create_dir_all(dir.path().join("etc")).unwrap();
        std::fs::write(
            dir.path().join("etc/fstab"),
            "# data\nfiler:/f /mnt/fast nfs-gds _netdev,nconnect=8 0 0\n",
        )
        .unwrap();
        crate::mount::record::write_record(
            &root,
            t.by_id(30).unwrap(),
            "",
            20050,
            "rw,nconnect=4",
            &t,
        )
        .unwrap();
        let d = read_declared(&root).unwrap();
        assert_eq!(
            intent_of(
                t.by_id(30).unwrap(),
                &d,
                &[],
                &crate::nfs::ServerAddrs::new(&crate::nfs::NoResolver)
            ),
            Some(Intent::Recorded { port: 20050 })
        );
        assert_eq!(
            intent_of(
                t.by_id(31).unwrap(),
                &d,
                &[],
                &crate::nfs::ServerAddrs::new(&crate::nfs::NoResolver)
            ),
            Some(Intent::Fstab)
        );
        // What each asked, from the record's options and the fstab line's.
        let asked = d.asked(t.by_id(30).unwrap());
        assert_eq!(asked, [Asked::new(AskedBy::Record, "rw,nconnect=4")]);
        let asked = d.asked(t.by_id(31).unwrap());
        assert_eq!(
            asked,
            [Asked::new(AskedBy::Fstab { line: 2 }, "_netdev,nconnect=8")]
        );
    }
}
