//! What a mount asked for, and who says so. The kernel's own option list in `/proc` keeps only
//! what the kernel took: Linux without b326df4a8ec6 makes one connection for an NFSv4.x mount
//! over RDMA whatever `nconnect=` said, and prints no `nconnect=` for it, so a check that reads
//! only `/proc` sees nothing asked. The layers that know better hand their sources to the mount
//! checks ([`MountSubject`](super::check::MountSubject)): the options `mount.nfs-gds` passed when
//! it made the mount, its record of the mount, the `nfs-gds` fstab line of the mount point.
//! [`asked_option`] is the one decider of which source speaks for an option: the strongest one
//! that names it, else `/proc`.

use std::fmt;

use crate::host::mounts::Mount;

/// Where an ask comes from, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AskedBy {
    /// The options `mount.nfs-gds` passed to mount.nfs for the mount it just made.
    Helper,
    /// The options in the helper's record of the mount.
    Record,
    /// The `nfs-gds` line of `/etc/fstab` (1-based line number) for the mount point.
    Fstab { line: usize },
    /// The kernel's option list of the mount (`/proc/self/mountstats`, `/proc/self/mountinfo`).
    Kernel,
}

impl fmt::Display for AskedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AskedBy::Helper => f.write_str("mount options"),
            AskedBy::Record => f.write_str("the helper's record of the mount"),
            AskedBy::Fstab { line } => write!(f, "fstab line {line}"),
            AskedBy::Kernel => f.write_str("the kernel's mount options"),
        }
    }
}

/// A mount's options as one source gives them (comma-separated, as written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    pub by: AskedBy,
    pub options: String,
}

impl Asked {
    pub fn new(by: AskedBy, options: impl Into<String>) -> Self {
        Asked {
            by,
            options: options.into(),
        }
    }

    /// The value of `key=` in these options: the rightmost, as mount.nfs and the kernel take it.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options
            .split(',')
            .rev()
            .find_map(|o| o.strip_prefix(key).and_then(|rest| rest.strip_prefix('=')))
    }
}

/// The value a mount asked for one option, where it came from, and what the kernel shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask<'a> {
    pub value: &'a str,
    pub by: AskedBy,
    /// The option's value in the kernel's list; `None` when the kernel keeps none.
    pub kernel: Option<&'a str>,
}

impl Ask<'_> {
    /// Whether a source above the kernel asked for it and the kernel keeps nothing of it.
    pub fn dropped_by_kernel(&self) -> bool {
        self.by != AskedBy::Kernel && self.kernel.is_none()
    }
}

/// What mount `m` asked for `key`: the strongest of `asks` that names it, else the kernel's own
/// list; `None` when no source names it.
pub fn asked_option<'a>(key: &str, asks: &'a [Asked], m: &'a Mount) -> Option<Ask<'a>> {
    let kernel = m.option(key);
    asks.iter()
        .filter(|a| a.by != AskedBy::Kernel)
        .filter_map(|a| a.option(key).map(|v| (a.by, v)))
        .min_by_key(|(by, _)| *by)
        .map(|(by, value)| Ask { value, by, kernel })
        .or_else(|| {
            kernel.map(|value| Ask {
                value,
                by: AskedBy::Kernel,
                kernel,
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::table;

    /// An NFSv4.2 mount over RDMA as Linux 6.1 shows it after `nconnect=4`: no `nconnect=`.
    fn dropped() -> crate::host::mounts::MountTable {
        table(
            "40 1 0:50 / /mnt/gds rw - nfs4 srv:/e rw,vers=4.2,proto=rdma,port=20049\n",
            "device srv:/e mounted on /mnt/gds with fstype nfs4 statvers=1.1\n\topts:\trw,vers=4.2,proto=rdma,port=20049\n",
        )
    }

    fn kept(n: u32) -> crate::host::mounts::MountTable {
        table(
            &format!("40 1 0:50 / /mnt/gds rw - nfs4 srv:/e rw,vers=4.2,nconnect={n},proto=rdma\n"),
            "",
        )
    }

    #[test]
    fn the_strongest_source_that_names_the_option_speaks() {
        let t = dropped();
        let m = t.by_id(40).unwrap();
        let asks = [
            Asked::new(AskedBy::Fstab { line: 7 }, "_netdev,nconnect=2"),
            Asked::new(AskedBy::Record, "rw,nconnect=4,vers=4.2,proto=rdma"),
        ];
        let a = asked_option("nconnect", &asks, m).unwrap();
        assert_eq!((a.value, a.by, a.kernel), ("4", AskedBy::Record, None));
        assert!(a.dropped_by_kernel());
        // The helper's own options beat its record.
        let asks = [
            asks[1].clone(),
            Asked::new(AskedBy::Helper, "nconnect=8,vers=4.2"),
        ];
        assert_eq!(
            asked_option("nconnect", &asks, m).unwrap().by,
            AskedBy::Helper
        );
    }

    #[test]
    fn a_source_that_does_not_name_the_option_gives_way_to_the_next() {
        let t = dropped();
        let m = t.by_id(40).unwrap();
        let asks = [
            Asked::new(AskedBy::Helper, "rw,vers=4.2,proto=rdma"),
            Asked::new(AskedBy::Fstab { line: 3 }, "_netdev,nconnect=4"),
        ];
        let a = asked_option("nconnect", &asks, m).unwrap();
        assert_eq!((a.value, a.by), ("4", AskedBy::Fstab { line: 3 }));
        assert_eq!(a.by.to_string(), "fstab line 3");
    }

    #[test]
    fn the_kernels_list_is_the_fallback_and_nothing_is_nothing() {
        let t = kept(4);
        let m = t.by_id(40).unwrap();
        let a = asked_option("nconnect", &[], m).unwrap();
        assert_eq!((a.value, a.by, a.kernel), ("4", AskedBy::Kernel, Some("4")));
        assert!(!a.dropped_by_kernel());
        // A source above it that agrees: not dropped.
        let asks = [Asked::new(AskedBy::Record, "nconnect=4")];
        assert!(!asked_option("nconnect", &asks, m)
            .unwrap()
            .dropped_by_kernel());
        let t = dropped();
        assert_eq!(asked_option("nconnect", &[], t.by_id(40).unwrap()), None);
    }

    #[test]
    fn the_rightmost_option_wins_as_in_the_kernel() {
        let a = Asked::new(AskedBy::Helper, "nconnect=2,rw,nconnect=8");
        assert_eq!(a.option("nconnect"), Some("8"));
        assert_eq!(a.option("nconnec"), None);
        assert_eq!(Asked::new(AskedBy::Helper, "").option("nconnect"), None);
    }
}
