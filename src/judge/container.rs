//! The one container judge: a container's volumes, which of them are meant for GDS, and the
//! mount judge's verdict on each with the node checks; or, when it cannot tell, why. It takes a
//! runtime-neutral [`Container`] (annotations, mounts as {source, destination, type, options},
//! device paths): `nfs-gds oci-hook` builds one from the OCI state and `config.json`, the NRI
//! plugin from the runtime's request, and both say the [`Answer`] in the words of [`lines`].
//!
//! Cheap first: mountinfo alone, and the answer for a container with no bind source on an NFS
//! mount (nearly all of them) is made from that one read. Only a container with NFS volumes
//! costs the policy, the NFS mounts its volumes lie on with those that may share their servers
//! (the rest of the table only scanned), what the node declares and, when a volume is meant for
//! GDS, the node facts (from the facts cache).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;

use super::mount::MountJudge;
use super::node::{self, Ask};
use crate::escape::escape_control;
use crate::host::mount_localio::MountLocalio;
use crate::host::mounts::resolve::resolve_beside_nfs;
use crate::host::mounts::{
    read_mount_points, read_nfs_mounts_of, MountPoints, MountTable, MOUNTINFO, MOUNTSTATS,
};
use crate::host::syslog::Severity;
use crate::host::{HostFacts, Root};
use crate::nfs::ServerAddrs;
use crate::oci::{self, AnnotationProblem, Marks, OciMount};
use crate::policy::intent::read_declared;
use crate::policy::{Policy, PolicyError, WhenUnsure};
use crate::system::System;
use crate::verdict::Judged;

/// A container as every runtime describes it to its gate.
#[derive(Debug, Clone, Default)]
pub struct Container {
    /// Its annotation sets, the runtime's own first (OCI: the state's, then `config.json`'s;
    /// NRI: the pod's, then the container's). A volume marked in any of them is marked.
    pub annotations: Vec<BTreeMap<String, String>>,
    /// Its mounts, bind sources as absolute paths of the runtime's mount namespace.
    pub mounts: Vec<OciMount>,
    /// The device nodes it is given (container paths).
    pub devices: Vec<PathBuf>,
    /// It runs privileged: it gets every host device, so a device says nothing of what it is
    /// meant for.
    pub privileged: bool,
    /// Its name in its pod, which NVIDIA's per-container CDI annotation is keyed by.
    pub name: Option<String>,
}

/// The separator between a line's reason and its fix.
pub const FIX: &str = " | fix: ";

/// What the judge says of a container.
#[derive(Debug)]
pub enum Answer {
    /// No NFS volume meant for GDS has a problem: nothing to say.
    Quiet,
    /// The gate could not judge the container: why, and whether it is meant for GDS (marked by
    /// its annotations, or a volume found meant for GDS), for the failure policy to decide.
    Unsure { reason: String, meant: bool },
    /// The volumes meant for GDS with a failed or unproven check.
    Judged(Vec<VolumeVerdict>),
}

/// One volume meant for GDS whose checks (its mount's and the node's) did not all pass.
#[derive(Debug)]
pub struct VolumeVerdict {
    /// Where the container sees it.
    pub destination: PathBuf,
    /// The NFS export (`server:/export`), or the bind source when it is on no NFS mount.
    pub source: String,
    /// The NFS mount point its source lies on.
    pub mount_point: Option<String>,
    /// Failed at `enforce`: the container must not start.
    pub refusals: Vec<Judged>,
    /// Failed at `warn`, or not proven.
    pub warnings: Vec<Judged>,
}

/// A bind mount of the container whose source lies on an NFS mount, or that its annotations
/// mark for GDS.
#[derive(Debug)]
struct Volume {
    destination: PathBuf,
    source: PathBuf,
    /// The mount its source lies on, when that is NFS.
    nfs_mount: Option<u32>,
    /// `nfs-gds/gds-volumes` names it.
    listed: bool,
    /// Its annotations mark it for GDS (listed, or `nfs-gds/gds` on an NFS volume).
    marked: bool,
}

/// What the judge reads beyond the container: the root, its system (which resolves server
/// names), and the policy (loaded only when needed).
pub struct Inputs<'a> {
    pub root: &'a Root,
    pub system: &'a dyn System,
    pub policy: &'a dyn Fn() -> Result<Policy, PolicyError>,
    /// What a long-lived caller keeps between containers; `None`: everything is read now.
    pub kept: Option<Kept<'a>>,
}

/// What a long-lived caller (the NRI plugin) keeps between containers: the mount points, read
/// again after each mount event; the NFS mounts of the given mount ids and those that may share
/// a server with them ([`read_nfs_mounts_of`]), from the table as it stands after the last
/// mount event; and the node facts, at most a minute old. An error is why the table could not
/// be read.
pub struct Kept<'a> {
    pub points: Result<&'a MountPoints, &'a str>,
    pub nfs: &'a NfsMountsOf<'a>,
    pub facts: &'a dyn Fn() -> Result<HostFacts, String>,
}

/// The NFS mounts of the given mount ids and those that may share a server with them, or why
/// they could not be read.
pub type NfsMountsOf<'a> = dyn Fn(&[u32]) -> Result<Rc<MountTable>, String> + 'a;

impl std::fmt::Debug for Kept<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kept").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Inputs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inputs").field("root", self.root).finish()
    }
}

pub fn unsure(reason: impl Into<String>, meant: bool) -> Answer {
    Answer::Unsure {
        reason: reason.into(),
        meant,
    }
}

/// What the judge noticed besides its answer.
#[derive(Debug, Default)]
pub struct Noted {
    /// What is wrong with the container's `nfs-gds/` annotations.
    pub problems: Vec<AnnotationProblem>,
    /// Bind sources a symbolic link led into an NFS mount with a path left below its mount
    /// point: judged by the mount they lie on as written, since nfs-gds never reads below an
    /// NFS mount point to follow a link there.
    pub unresolved: Vec<String>,
}

/// The judge's answer for `container`, and what it noticed besides.
pub fn decide(container: &Container, inputs: &Inputs) -> (Answer, Noted) {
    let mut noted = Noted::default();
    let answer = decide_noting(container, inputs, &mut noted);
    (answer, noted)
}

/// What the container's annotation sets mark, all of them together; and every NFS volume when
/// it asked for the GDS CDI device ([`oci::gds_requested`]).
pub fn marks_of(container: &Container) -> Marks {
    let mut marks = Marks::default();
    let mut all_sets = BTreeMap::new();
    for set in &container.annotations {
        let m = Marks::of(set);
        marks.all |= m.all;
        marks.volumes.extend(m.volumes);
        all_sets.extend(set.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    marks.volumes.dedup();
    let devices: Vec<String> = container
        .devices
        .iter()
        .map(|d| d.to_string_lossy().into_owned())
        .collect();
    if let Some(request) = oci::gds_requested(
        &all_sets,
        container.name.as_deref(),
        devices.iter().map(String::as_str),
        container.privileged,
    ) {
        tracing::debug!("meant for GDS: {request}");
        marks.all = true;
    }
    marks
}

/// The annotations' problems: unknown keys, a `nfs-gds/gds` value neither yes nor no (of the
/// first set that has one), and listed paths the container has no volume at (unless it has no
/// volume at all: a pod's infra container gets the pod's annotations too).
fn annotation_problems(container: &Container, marks: &Marks) -> Vec<AnnotationProblem> {
    let mut keys: Vec<&str> = container
        .annotations
        .iter()
        .flat_map(|set| set.keys().map(String::as_str))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let mut problems = oci::unknown_annotations(keys);
    if let Some(set) = container
        .annotations
        .iter()
        .find(|set| set.contains_key(oci::GDS_ANNOTATION))
    {
        problems.extend(oci::bad_values(set));
    }
    let mounted: Vec<PathBuf> = container
        .mounts
        .iter()
        .filter(|m| m.is_bind())
        .filter_map(|m| oci::clean_path(&m.destination))
        .filter(|d| !oci::is_runtime_path(d))
        .collect();
    if !mounted.is_empty() {
        problems.extend(oci::missing_volumes(&marks.volumes, &mounted));
    }
    problems
}

fn decide_noting(container: &Container, inputs: &Inputs, noted: &mut Noted) -> Answer {
    let marks = marks_of(container);
    noted.problems = annotation_problems(container, &marks);
    let read_points;
    let points: &MountPoints = match &inputs.kept {
        Some(kept) => match kept.points {
            Ok(p) => p,
            Err(e) => return unsure(e, marks.any()),
        },
        None => match read_mount_points(inputs.root) {
            Ok(p) => {
                read_points = p;
                &read_points
            }
            Err(e) => return unsure(e.to_string(), marks.any()),
        },
    };
    if !points.any_nfs() && marks.volumes.is_empty() {
        return Answer::Quiet;
    }
    let mut binds: Vec<(PathBuf, PathBuf)> = Vec::new();
    for m in container.mounts.iter().filter(|m| m.is_bind()) {
        let Some(source) = m.source.as_deref().and_then(oci::clean_path) else {
            continue;
        };
        // The runtime binds what the source's links lead to: a link on the local disk may
        // lead into an NFS mount.
        let resolved = match resolve_beside_nfs(inputs.root, points, &source) {
            Ok(r) => r,
            Err(e) => return unsure(e.to_string(), marks.any()),
        };
        let destination =
            oci::clean_path(&m.destination).unwrap_or_else(|| PathBuf::from(&m.destination));
        if resolved.stopped_inside_nfs_after_a_link() {
            noted.unresolved.push(format!(
                "the bind source {} of {} leads through a symbolic link into an NFS mount; {} below its mount point is taken as written (nfs-gds never reads below an NFS mount point, where a link could lead elsewhere)",
                source.display(),
                destination.display(),
                resolved.unresolved.display()
            ));
        }
        binds.push((destination, resolved.path));
    }
    let volumes = volumes_of(&binds, points, &marks);
    if volumes.is_empty() {
        return Answer::Quiet;
    }
    let policy = match (inputs.policy)() {
        Ok(p) => p,
        Err(e) => return unsure(e.to_string(), marks.any()),
    };
    judge_volumes(inputs, &policy, &volumes, marks.any())
}

/// The container's volumes on NFS mounts (by mountinfo alone) and the ones its annotations
/// mark, whatever they lie on; not the runtime's own binds ([`oci::RUNTIME_PATHS`]) unless
/// listed.
fn volumes_of(binds: &[(PathBuf, PathBuf)], points: &MountPoints, marks: &Marks) -> Vec<Volume> {
    binds
        .iter()
        .filter_map(|(destination, source)| {
            let nfs_mount = points.under(source).filter(|u| u.nfs).map(|u| u.mount_id);
            let listed = marks.volumes.iter().any(|v| v == destination);
            // The runtime's own plumbing is not a volume, unless the user says it is.
            if oci::is_runtime_path(destination) && !listed {
                return None;
            }
            (nfs_mount.is_some() || listed).then(|| Volume {
                destination: destination.clone(),
                source: source.clone(),
                nfs_mount,
                listed,
                marked: listed || marks.all,
            })
        })
        .collect()
}

/// Judges the volumes with the whole mount table, what the node declares, and the node checks.
fn judge_volumes(inputs: &Inputs, policy: &Policy, volumes: &[Volume], marked: bool) -> Answer {
    let root = inputs.root;
    let mut ids: Vec<u32> = volumes.iter().filter_map(|v| v.nfs_mount).collect();
    ids.sort_unstable();
    ids.dedup();
    let table = match &inputs.kept {
        Some(kept) => (kept.nfs)(&ids),
        None => read_nfs_mounts_of(root, MOUNTINFO, MOUNTSTATS, &ids)
            .map(Rc::new)
            .map_err(|e| e.to_string()),
    };
    let table: &MountTable = match &table {
        Ok(t) => t,
        Err(e) => return unsure(e.clone(), marked),
    };
    let declared = match read_declared(root) {
        Ok(d) => d,
        Err(e) => return unsure(e.to_string(), marked),
    };
    let addrs = ServerAddrs::new(inputs.system);
    // The plugin keeps the node facts (at most a minute old): their LOCALIO facts serve, and the
    // kernel configuration is not parsed again for every container. A one-shot hook reads the
    // facts only once a volume is meant for GDS, so it reads LOCALIO's alone here.
    let kept_facts = inputs.kept.as_ref().map(|kept| (kept.facts)());
    // The kernel's LOCALIO state of the volumes' mounts alone: the table's other mounts are
    // there for the transport trap, which asks no LOCALIO state of them.
    let judged = ids.iter().filter_map(|id| table.by_id(*id));
    let localio = match &kept_facts {
        Some(Ok(facts)) => MountLocalio::with_node_of(root, facts.localio.clone(), judged),
        _ => match MountLocalio::read_of(root, judged) {
            Ok(l) => l,
            Err(e) => return unsure(e.to_string(), marked),
        },
    };
    let mut judge = MountJudge::new(table, &declared, policy, &addrs, &localio);
    let mut found = Vec::new();
    let mut not_nfs = Vec::new();
    for v in volumes {
        // The mount the scan found, in the whole table read just after (mount ids are unique
        // in a namespace); one unmounted in between is not there.
        let mount = v.nfs_mount.and_then(|id| table.by_id(id));
        match mount.filter(|m| m.is_nfs()) {
            Some(m) if judge.meant(m, v.marked).is_some() => found.push((v, m)),
            Some(_) => {}
            None if v.listed => not_nfs.push(v),
            None => {}
        }
    }
    if found.is_empty() && not_nfs.is_empty() {
        return Answer::Quiet;
    }
    let facts = match kept_facts {
        Some(facts) => facts,
        None => HostFacts::read(root).map_err(|e| e.to_string()),
    };
    let node = match facts {
        Ok(facts) => node::judge(facts, policy, Ask::new(inputs.system, false), None).1,
        Err(e) => return unsure(format!("the node: {e}"), true),
    };
    let levels = policy.for_node();
    let mut out = Vec::new();
    for (v, m) in found {
        let mount = judge.judge(m);
        let refusals: Vec<Judged> = node
            .refusals
            .iter()
            .chain(&mount.refusals)
            .cloned()
            .collect();
        let warnings: Vec<Judged> = node
            .warnings
            .iter()
            .chain(&mount.warnings)
            .cloned()
            .collect();
        if refusals.is_empty() && warnings.is_empty() {
            continue;
        }
        out.push(VolumeVerdict {
            destination: v.destination.clone(),
            source: m.info.source().to_string(),
            mount_point: Some(m.info.mount_point_shown().to_string()),
            refusals,
            warnings,
        });
    }
    // Marked for GDS, but not on NFS at all: no GPU-direct path can exist.
    for v in not_nfs {
        let (destination, source) = (v.destination.clone(), v.source.display().to_string());
        let result = crate::checks::CheckResult::fail(
            crate::checks::catalogue::mount_transport::ID,
            format!(
                "{} is marked for GDS ({}) but is not an NFS volume",
                destination.display(),
                oci::GDS_VOLUMES_ANNOTATION
            ),
        )
        .remedy(format!(
            "mount an NFS/RDMA volume at {}, or take it out of the {} annotation",
            destination.display(),
            oci::GDS_VOLUMES_ANNOTATION
        ));
        let judged = crate::verdict::judge(vec![result], &levels);
        out.push(VolumeVerdict {
            destination,
            source,
            mount_point: None,
            refusals: judged.refusals,
            warnings: judged.warnings,
        });
    }
    if out.is_empty() {
        Answer::Quiet
    } else {
        Answer::Judged(out)
    }
}

/// What a gate says of its answer: the lines (each with its system log severity) and whether
/// the container is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub lines: Vec<(Severity, String)>,
    pub refused: bool,
}

/// The answer in the gate's words, for the container `who` names (already escaped: "container
/// ID", "pod NS/NAME container NAME"); `None` for [`Answer::Quiet`]. The failure policy
/// `when_unsure` decides an [`Answer::Unsure`].
pub fn lines(answer: &Answer, who: &str, when_unsure: WhenUnsure) -> Option<Said> {
    match answer {
        Answer::Quiet => None,
        Answer::Unsure { reason, meant } => {
            let refuse = match when_unsure {
                WhenUnsure::Refuse => true,
                WhenUnsure::Start => false,
                WhenUnsure::StartUnlessMarked => *meant,
            };
            let reason = escape_control(reason);
            let line = if refuse {
                format!(
                    "refusing {who}: cannot judge its volumes meant for GDS: {reason}{FIX}make the container's bundle and the node readable, or set [oci-hook] when-unsure in the policy"
                )
            } else {
                format!(
                    "warning: starting {who} unjudged: {reason} (the policy's [oci-hook] when-unsure = \"{}\")",
                    match when_unsure {
                        WhenUnsure::Start => "start",
                        _ => "start-unless-marked",
                    }
                )
            };
            let severity = if refuse {
                Severity::Err
            } else {
                Severity::Notice
            };
            Some(Said {
                lines: vec![(severity, line)],
                refused: refuse,
            })
        }
        Answer::Judged(volumes) => {
            let refused = volumes.iter().any(|v| !v.refusals.is_empty());
            let lines = volumes
                .iter()
                .map(|v| {
                    if refused && !v.refusals.is_empty() {
                        (
                            Severity::Err,
                            format!("refusing {who}: {}", volume_line(v, true)),
                        )
                    } else {
                        (
                            Severity::Warning,
                            format!("warning: {who}: {}", volume_line(v, false)),
                        )
                    }
                })
                .collect();
            Some(Said { lines, refused })
        }
    }
}

/// One line for a volume: container path, NFS source and mount point, each failing check's
/// reason, and the fixes.
pub fn volume_line(v: &VolumeVerdict, refused: bool) -> String {
    let judged = if refused { &v.refusals } else { &v.warnings };
    let reasons: Vec<String> = judged
        .iter()
        .map(|j| format!("{}: {}", j.result.id, j.result.summary))
        .collect();
    let mut fixes: Vec<&str> = Vec::new();
    for j in judged {
        if let Some(fix) = j.result.remedy.as_deref() {
            if !fixes.contains(&fix) {
                fixes.push(fix);
            }
        }
    }
    let on = match &v.mount_point {
        Some(mp) => format!("{} (NFS mount {mp})", v.source),
        None => v.source.clone(),
    };
    let mut line = format!("{}: {on}: {}", v.destination.display(), reasons.join("; "));
    if !fixes.is_empty() {
        line.push_str(FIX);
        line.push_str(&fixes.join("; "));
    }
    escape_control(&line).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::fake::Fake;
    use crate::testkit::Tree;

    /// A node whose table holds an RDMA mount of 10.0.2.15:/export on /mnt/gds, on a kernel
    /// built with NFS LOCALIO switched to `enabled`, 10.0.2.15 being this host.
    fn node(enabled: &str) -> Tree {
        let t = Tree::new();
        t.table(
            "1 0 254:0 / / rw - ext4 /dev/vda rw\n70 1 0:50 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15\n",
            "device 10.0.2.15:/export mounted on /mnt/gds with fstype nfs4 statvers=1.1\n\topts:\trw,vers=4.2,proto=rdma,port=20049\n\txprt:\trdma 0 0 1 0 0 1 1 0 1 0 1 1 1 1 1 0 0 1 5 0 0 0 0 1 1 0 0\n",
        );
        t.write("proc/sys/kernel/osrelease", "6.12.30\n");
        t.write("boot/config-6.12.30", "CONFIG_NFS_LOCALIO=y\n");
        t.write(
            "sys/module/nfs/parameters/localio_enabled",
            format!("{enabled}\n"),
        );
        t.write(
            "proc/net/fib_trie",
            "Local:\n  +-- 10.0.2.0/24 2 0 2\n     |-- 10.0.2.15\n        /32 host LOCAL\n",
        );
        t.write("proc/1/comm", "systemd\n");
        t
    }

    fn decided(t: &Tree) -> Answer {
        decided_in(&Root::new(t.root()))
    }

    fn decided_in(root: &Root) -> Answer {
        let system = Fake::new();
        // Only the mount checks are looked at here: the node checks are off.
        let policy = || {
            Ok(crate::policy::file::parse(
                "default = \"off\"\n[checks]\nmount-localio = \"enforce\"\nmount-transport = \"enforce\"\n",
            )
            .unwrap())
        };
        let container = Container {
            mounts: vec![OciMount {
                destination: "/data".into(),
                kind: Some("bind".into()),
                source: Some("/mnt/gds/train".into()),
                options: vec!["rbind".into()],
            }],
            annotations: vec![BTreeMap::from([(
                oci::GDS_VOLUMES_ANNOTATION.to_string(),
                "/data".to_string(),
            )])],
            ..Container::default()
        };
        let inputs = Inputs {
            root,
            system: &system,
            policy: &policy,
            kept: None,
        };
        decide(&container, &inputs).0
    }

    /// The kernel's LOCALIO state is read for the volume's mount alone, not for the mounts of
    /// the same server the table holds for the transport trap: on a node whose volumes all come
    /// from one filer, those are thousands of files per container.
    #[test]
    fn the_localio_state_is_read_for_the_volumes_mount_alone() {
        let t = node("N");
        t.table(
            "1 0 254:0 / / rw - ext4 /dev/vda rw\n70 1 0:50 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15\n71 1 0:51 / /mnt/other rw - nfs4 10.0.2.15:/other rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15\n",
            "",
        );
        t.write("sys/fs/nfs/0:50/localio", "0\n");
        t.write("sys/fs/nfs/0:51/localio", "0\n");
        let root = Root::new(t.root()).watching();
        assert!(matches!(decided_in(&root), Answer::Judged(_)));
        let read = root.record().files;
        assert!(
            read.contains(std::path::Path::new("sys/fs/nfs/0:50/localio")),
            "{read:?}"
        );
        assert!(
            !read.contains(std::path::Path::new("sys/fs/nfs/0:51/localio")),
            "{read:?}"
        );
    }

    #[test]
    fn a_volume_on_a_mount_localio_carries_is_refused_naming_localio_and_the_fix() {
        let Answer::Judged(volumes) = decided(&node("Y")) else {
            panic!("judged")
        };
        let ids: Vec<_> = volumes[0].refusals.iter().map(|j| j.result.id).collect();
        assert_eq!(ids, [crate::checks::catalogue::mount_localio::ID]);
        let line = volume_line(&volumes[0], true);
        assert!(
            line.contains("NFS LOCALIO is on and the server 10.0.2.15 is this host"),
            "{line}"
        );
        assert!(line.contains("localio_enabled"), "{line}");
        // LOCALIO turned off: nothing to say of the volume.
        assert!(
            matches!(decided(&node("N")), Answer::Quiet),
            "{:?}",
            decided(&node("N"))
        );
    }
}
