//! The gate's decision for one container: its NFS volumes, which of them are meant for GDS,
//! and the judge's verdict on each with the node checks; or, when it cannot tell, why.
//!
//! Cheap first: the state, `config.json`'s mounts and mountinfo alone, and the answer for a
//! container with no bind source on an NFS mount (nearly all of them) is made from those three
//! reads. Only a container with NFS volumes costs the policy, the whole mount table, what the
//! node declares and, when a volume is meant for GDS, the node facts (from the facts cache).

use std::path::{Path, PathBuf};

use crate::cli::check::judge_facts;
use crate::host::io::reader::FileKind;
use crate::host::mounts::resolve::resolve_beside_nfs;
use crate::host::mounts::{read_mount_points, read_nfs_mount_table, MountPoints, MountTable};
use crate::host::{HostFacts, Root};
use crate::judge::MountJudge;
use crate::nfs::ServerAddrs;
use crate::oci::{self, AnnotationProblem, Marks, State};
use crate::policy::intent::read_declared;
use crate::policy::{Policy, PolicyError};
use crate::system::System;
use crate::verdict::Judged;

/// What the gate says of a container.
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

/// What the gate reads beyond the state: the root, its system (which resolves server names),
/// and the policy (loaded only when needed).
pub struct Inputs<'a> {
    pub root: &'a Root,
    pub system: &'a dyn System,
    pub policy: &'a dyn Fn() -> Result<Policy, PolicyError>,
    /// What a long-lived caller keeps between containers; `None`: everything is read now.
    pub kept: Option<Kept<'a>>,
}

/// What a long-lived caller (the NRI plugin) keeps between containers: the mount tables, read
/// again after each mount event, and the node facts, at most a minute old. An error is why the
/// table could not be read.
pub struct Kept<'a> {
    pub points: &'a Result<MountPoints, String>,
    pub nfs: &'a Result<MountTable, String>,
    pub facts: &'a dyn Fn() -> Result<HostFacts, String>,
}

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

fn unsure(reason: impl Into<String>, meant: bool) -> Answer {
    Answer::Unsure {
        reason: reason.into(),
        meant,
    }
}

/// What the gate noticed besides its answer.
#[derive(Debug, Default)]
pub struct Noted {
    /// What is wrong with the container's `nfs-gds/` annotations.
    pub problems: Vec<AnnotationProblem>,
    /// Bind sources a symbolic link led into an NFS mount with a path left below its mount
    /// point: judged by the mount they lie on as written, since nfs-gds never reads below an
    /// NFS mount point to follow a link there.
    pub unresolved: Vec<String>,
}

/// The gate for the container of `state`, and what it noticed besides.
pub fn decide(state: &State, inputs: &Inputs) -> (Answer, Noted) {
    let mut noted = Noted::default();
    let answer = decide_noting(state, inputs, &mut noted);
    (answer, noted)
}

/// The annotations' problems: unknown keys, a `nfs-gds/gds` value neither yes nor no, and listed
/// paths the container has no volume at
/// (unless it has no volume at all: a pod's infra container gets the pod's annotations too).
fn annotation_problems(
    state: &State,
    config: &oci::Config,
    marks: &Marks,
) -> Vec<AnnotationProblem> {
    let keys = state.annotations.keys().chain(
        config
            .annotations
            .keys()
            .filter(|k| !state.annotations.contains_key(*k)),
    );
    let mut problems = oci::unknown_annotations(keys.map(String::as_str));
    problems.extend(oci::bad_values(&state.annotations));
    if !state.annotations.contains_key(oci::GDS_ANNOTATION) {
        problems.extend(oci::bad_values(&config.annotations));
    }
    let mounted: Vec<PathBuf> = config
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

fn decide_noting(state: &State, inputs: &Inputs, noted: &mut Noted) -> Answer {
    let marks = Marks::of(&state.annotations);
    let config_rel = match oci::config_path(state) {
        Ok(p) => p,
        Err(e) => return unsure(e.to_string(), marks.any()),
    };
    let shown = inputs.root.join(&config_rel).display().to_string();
    let bytes = match inputs.root.read_file(&config_rel, FileKind::Config) {
        Ok(Some(read)) => read.bytes,
        Ok(None) => return unsure(format!("{shown} does not exist"), marks.any()),
        Err(e) => return unsure(e.to_string(), marks.any()),
    };
    let config = match oci::parse_config(&shown, &bytes) {
        Ok(c) => c,
        Err(e) => return unsure(e.to_string(), marks.any()),
    };
    decide_config(state, &config, inputs, noted)
}

/// The container names the runtimes write into `config.json`'s annotations (containerd's CRI,
/// CRI-O's): what NVIDIA's per-container CDI annotation is keyed by.
pub const CONTAINER_NAME_KEYS: [&str; 2] = [
    "io.kubernetes.cri.container-name",
    "io.kubernetes.container.name",
];

/// The gate for a container whose configuration is known: the hook's `config.json`, or what
/// another runtime interface (NRI) says of the container in the same form. The state gives the
/// annotations the runtime passed and the bundle relative sources lie in.
pub fn decide_config(
    state: &State,
    config: &oci::Config,
    inputs: &Inputs,
    noted: &mut Noted,
) -> Answer {
    let mut marks = Marks::of(&state.annotations);
    let config_marks = Marks::of(&config.annotations);
    marks.all |= config_marks.all;
    marks.volumes.extend(config_marks.volumes);
    marks.volumes.dedup();
    let mut all_annotations = config.annotations.clone();
    all_annotations.extend(
        state
            .annotations
            .iter()
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    let name = CONTAINER_NAME_KEYS
        .iter()
        .find_map(|k| all_annotations.get(*k))
        .map(String::as_str);
    if let Some(request) = config.gds_request(&all_annotations, name) {
        tracing::debug!("meant for GDS: {request}");
        marks.all = true;
    }
    noted.problems = annotation_problems(state, config, &marks);
    let read_points;
    let points: &MountPoints = match &inputs.kept {
        Some(kept) => match kept.points {
            Ok(p) => p,
            Err(e) => return unsure(e.clone(), marks.any()),
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
    let bundle = state.bundle.as_deref().unwrap_or(Path::new("/"));
    let mut binds: Vec<(PathBuf, PathBuf)> = Vec::new();
    for m in config.mounts.iter().filter(|m| m.is_bind()) {
        let Some(source) = m.source.as_deref() else {
            continue;
        };
        let Some(source) = oci::clean_path(&bundle.join(source).to_string_lossy()) else {
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
        let source = resolved.path;
        binds.push((destination, source));
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
    let read_table;
    let table: &MountTable = match &inputs.kept {
        Some(kept) => match kept.nfs {
            Ok(t) => t,
            Err(e) => return unsure(e.clone(), marked),
        },
        None => match read_nfs_mount_table(root) {
            Ok(t) => {
                read_table = t;
                &read_table
            }
            Err(e) => return unsure(e.to_string(), marked),
        },
    };
    let declared = match read_declared(root) {
        Ok(d) => d,
        Err(e) => return unsure(e.to_string(), marked),
    };
    let addrs = ServerAddrs::new(inputs.system);
    let mut judge = MountJudge::new(table, &declared, policy, &addrs);
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
    let facts = match &inputs.kept {
        Some(kept) => (kept.facts)(),
        None => HostFacts::read(root).map_err(|e| e.to_string()),
    };
    let node = match facts {
        Ok(facts) => judge_facts(facts, policy, false).1,
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
