//! The mount table a simulated kernel publishes: NFS mounts as mountinfo lines and mountstats
//! records, written below a tree each by rename, so a helper reading it mid-change sees the old
//! table or the new one, never half.

use std::path::Path;

/// One NFSv4 mount as the simulated kernel shows it.
pub(super) struct NfsLine<'a> {
    pub id: u32,
    pub parent: u32,
    /// The minor of the anonymous device `0:N`.
    pub dev: u32,
    pub point: &'a str,
    pub source: &'a str,
    pub proto: &'a str,
}

/// Writes `proc/self/mountinfo` and `mountstats` below `dir`: the `head` texts, then `mounts`.
/// `serial` names the temporary files (one per publication).
pub(super) fn publish(dir: &Path, serial: u64, head: (&str, &str), mounts: &[NfsLine]) {
    let (mut info, mut stats) = (head.0.to_string(), head.1.to_string());
    for m in mounts {
        let port = if m.proto == "tcp" { "" } else { ",port=20049" };
        info.push_str(&format!(
            "{} {} 0:{} / {} rw,relatime - nfs4 {} rw,vers=4.2,proto={}{port},addr=10.0.2.15\n",
            m.id, m.parent, m.dev, m.point, m.source, m.proto
        ));
        stats.push_str(&format!(
            "device {} mounted on {} with fstype nfs4 statvers=1.1\n\
\topts:\trw,vers=4.2,hard,proto={}{port}\n\
\txprt:\t{} 0 0 1 0 0 121 121 0 1096 0 131 1 11\n",
            m.source, m.point, m.proto, m.proto
        ));
    }
    for (name, text) in [("mountinfo", info), ("mountstats", stats)] {
        let dir = dir.join("proc/self");
        let tmp = dir.join(format!(".{name}.{serial}"));
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, dir.join(name)).unwrap();
    }
}
