//! What an OCI runtime hook is given, parsed: the container state a runtime writes on the
//! hook's stdin (`ociVersion`, `id`, `pid`, `bundle`, `annotations`) and, of the bundle's
//! `config.json`, only the mounts and annotations (everything else is skipped unread into
//! memory). Both are parsed into these few fields rather than a whole typed runtime spec: a hook
//! that runs on every container start reads what it needs and nothing more.
//!
//! Also the annotations that mark a container's volumes for GDS ([`Marks`]; the values of
//! `nfs-gds/gds`, for the hook and `lint` alike: [`gds_marks`]) and the lexical
//! path rule the hook compares paths with ([`clean_path`]): a hook never resolves a path that
//! may lie below an NFS mount point, since a hard mount of a dead server would hang it.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

mod gds_request;
pub use gds_request::{
    allows_every_device, gds_requested, DeviceRule, GdsRequest, CDI_ANNOTATION_PREFIX,
    GDS_CDI_KIND, GDS_DEVICE_PREFIX, NVIDIA_CDI_CONTAINER_PREFIX,
};

/// The most bytes of container state read from stdin: a state is a few hundred bytes plus the
/// annotations (Kubernetes caps a pod's at 256 KiB).
pub const MAX_STATE_BYTES: u64 = 1 << 20;

/// `"true"`: every NFS volume of the container is meant for GDS (the values it takes:
/// [`gds_marks`]).
pub const GDS_ANNOTATION: &str = "nfs-gds/gds";

/// The values of [`GDS_ANNOTATION`] that mark (ASCII case-insensitive).
pub const MARKING_VALUES: [&str; 5] = ["true", "yes", "y", "1", "on"];
/// The values of [`GDS_ANNOTATION`] that do not mark (ASCII case-insensitive), besides the
/// empty string.
pub const NOT_MARKING_VALUES: [&str; 5] = ["false", "no", "n", "0", "off"];

/// Whether `value` of [`GDS_ANNOTATION`] marks every NFS volume for GDS: the one rule the
/// container hook and `lint` read the annotation by. [`MARKING_VALUES`] mark;
/// [`NOT_MARKING_VALUES`] and the empty string do not (spaces around it are ignored, case too);
/// any other value is a [`AnnotationProblem::BadValue`], which `lint` reports as an error and
/// the hook says and takes as marking (a visible refusal beats a silent pass).
pub fn gds_marks(value: &str) -> Result<bool, AnnotationProblem> {
    let v = value.trim();
    let is = |values: &[&str]| values.iter().any(|x| v.eq_ignore_ascii_case(x));
    if is(&MARKING_VALUES) {
        Ok(true)
    } else if v.is_empty() || is(&NOT_MARKING_VALUES) {
        Ok(false)
    } else {
        Err(AnnotationProblem::BadValue {
            key: GDS_ANNOTATION,
            value: value.to_string(),
        })
    }
}

/// The value of [`GDS_ANNOTATION`] in `annotations` that [`gds_marks`] does not know, if any.
pub fn bad_values(annotations: &BTreeMap<String, String>) -> Vec<AnnotationProblem> {
    annotations
        .get(GDS_ANNOTATION)
        .and_then(|v| gds_marks(v).err())
        .into_iter()
        .collect()
}
/// `"/data,/ckpt"`: the volumes mounted at these container paths are meant for GDS.
pub const GDS_VOLUMES_ANNOTATION: &str = "nfs-gds/gds-volumes";

/// The container paths a runtime binds for itself (the pod's name service files, shared memory,
/// the termination log, podman's marker and secrets), not the workload's volumes: a bind to one
/// of these (or below `/run/secrets/`) is judged only when `nfs-gds/gds-volumes` names it. On
/// a node whose root filesystem is NFS they lie on NFS, and would otherwise refuse every pod
/// marked for GDS.
pub const RUNTIME_PATHS: [&str; 7] = [
    "/etc/hosts",
    "/etc/hostname",
    "/etc/resolv.conf",
    "/dev/shm",
    "/dev/termination-log",
    "/run/.containerenv",
    "/run/secrets",
];

/// Whether container path `destination` (clean) is one of [`RUNTIME_PATHS`] or below
/// `/run/secrets`.
pub fn is_runtime_path(destination: &Path) -> bool {
    RUNTIME_PATHS.iter().any(|p| destination == Path::new(p))
        || destination.starts_with("/run/secrets")
}

/// Every annotation key nfs-gds reads; any other key under [`ANNOTATION_PREFIX`] is a mistake.
pub const KNOWN_ANNOTATIONS: [&str; 2] = [GDS_ANNOTATION, GDS_VOLUMES_ANNOTATION];

/// The prefix of nfs-gds's annotation keys.
pub const ANNOTATION_PREFIX: &str = "nfs-gds/";

/// [`AnnotationProblem::kind`] of an unknown key.
pub const UNKNOWN_KEY: &str = "unknown-key";
/// [`AnnotationProblem::kind`] of a listed volume the container does not mount.
pub const NO_SUCH_VOLUME: &str = "no-such-volume";
/// [`AnnotationProblem::kind`] of a value that is neither yes nor no.
pub const BAD_VALUE: &str = "bad-value";

/// An annotation that switches the gate off where the user meant it on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnnotationProblem {
    /// A key under `nfs-gds/` that nfs-gds does not read, and the known key nearest to it.
    UnknownKey {
        key: String,
        near: Option<&'static str>,
    },
    /// `nfs-gds/gds-volumes` names a container path with no volume mounted there.
    NoSuchVolume {
        path: PathBuf,
        mounted: Vec<PathBuf>,
    },
    /// A known key whose value is neither one that marks nor one that does not.
    BadValue { key: &'static str, value: String },
}

impl AnnotationProblem {
    /// The counter's `kind` label.
    pub fn kind(&self) -> &'static str {
        match self {
            AnnotationProblem::UnknownKey { .. } => UNKNOWN_KEY,
            AnnotationProblem::NoSuchVolume { .. } => NO_SUCH_VOLUME,
            AnnotationProblem::BadValue { .. } => BAD_VALUE,
        }
    }
}

impl std::fmt::Display for AnnotationProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnnotationProblem::UnknownKey { key, near } => {
                write!(f, "unknown annotation {key:?}, not read")?;
                if let Some(near) = near {
                    write!(f, " (did you mean {near}?)")?;
                }
                write!(f, "; the known keys are {}", KNOWN_ANNOTATIONS.join(", "))
            }
            AnnotationProblem::NoSuchVolume { path, mounted } => {
                write!(
                    f,
                    "{GDS_VOLUMES_ANNOTATION} names {}, where no volume is mounted, so nothing there is judged",
                    path.display()
                )?;
                if !mounted.is_empty() {
                    let shown: Vec<String> =
                        mounted.iter().map(|p| p.display().to_string()).collect();
                    write!(f, " (volumes at: {})", shown.join(", "))?;
                }
                Ok(())
            }
            AnnotationProblem::BadValue { key, value } => write!(
                f,
                "{key} is {value:?}, which is neither yes nor no: {} mark every NFS volume for GDS; {} or empty do not (case aside)",
                MARKING_VALUES.join(", "),
                NOT_MARKING_VALUES.join(", ")
            ),
        }
    }
}

/// The keys under `nfs-gds/` of `keys` that nfs-gds does not read, each with the known key
/// nearest to it (by edit distance, when close enough to be a typo).
pub fn unknown_annotations<'a>(keys: impl IntoIterator<Item = &'a str>) -> Vec<AnnotationProblem> {
    keys.into_iter()
        .filter(|k| k.starts_with(ANNOTATION_PREFIX) && !KNOWN_ANNOTATIONS.contains(k))
        .map(|key| {
            let near = KNOWN_ANNOTATIONS
                .iter()
                .map(|known| (strsim::damerau_levenshtein(key, known), *known))
                .filter(|(d, _)| *d <= 3)
                .min()
                .map(|(_, known)| known);
            AnnotationProblem::UnknownKey {
                key: key.to_string(),
                near,
            }
        })
        .collect()
}

/// The paths `listed` (from `nfs-gds/gds-volumes`) that are not among `mounted`, the container
/// paths the container has volumes at.
pub fn missing_volumes(listed: &[PathBuf], mounted: &[PathBuf]) -> Vec<AnnotationProblem> {
    listed
        .iter()
        .filter(|p| !mounted.contains(p))
        .map(|p| AnnotationProblem::NoSuchVolume {
            path: p.clone(),
            mounted: mounted.to_vec(),
        })
        .collect()
}

/// The container state (runtime-spec `state`). Fields the hook does not use are skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct State {
    #[serde(rename = "ociVersion", default)]
    pub oci_version: String,
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub pid: Option<i64>,
    /// The bundle directory, which holds `config.json`; absolute.
    #[serde(default)]
    pub bundle: Option<PathBuf>,
    #[serde(default, deserialize_with = "annotations")]
    pub annotations: BTreeMap<String, String>,
}

/// What the hook reads of `config.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Config {
    #[serde(default, deserialize_with = "null_is_empty")]
    pub mounts: Vec<OciMount>,
    #[serde(default, deserialize_with = "annotations")]
    pub annotations: BTreeMap<String, String>,
    /// The devices and device rules, for [`gds_requested`].
    #[serde(default)]
    pub linux: Option<Linux>,
}

/// What the hook reads of `config.json`'s `linux`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Linux {
    #[serde(default, deserialize_with = "null_is_empty")]
    pub devices: Vec<Device>,
    #[serde(default)]
    pub resources: Option<Resources>,
}

/// One entry of `linux.devices`: only its path is read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Device {
    #[serde(default)]
    pub path: String,
}

/// What the hook reads of `linux.resources`: the device cgroup rules.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Resources {
    #[serde(default, deserialize_with = "null_is_empty")]
    pub devices: Vec<DeviceRule>,
}

/// The annotations the runtimes write the container's name in (containerd's CRI, CRI-O's): what
/// NVIDIA's per-container CDI annotation is keyed by.
pub const CONTAINER_NAME_ANNOTATIONS: [&str; 2] = [
    "io.kubernetes.cri.container-name",
    "io.kubernetes.container.name",
];

/// One entry of `config.json`'s `mounts`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct OciMount {
    pub destination: String,
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default, deserialize_with = "null_is_empty")]
    pub options: Vec<String>,
}

impl OciMount {
    /// A bind mount: type `bind`, or the `bind`/`rbind` option (runc and crun take either).
    /// Its source is a path of the runtime's mount namespace.
    pub fn is_bind(&self) -> bool {
        self.kind.as_deref() == Some("bind")
            || self.options.iter().any(|o| o == "bind" || o == "rbind")
    }
}

fn null_is_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

fn annotations<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    Ok(Option::<BTreeMap<String, String>>::deserialize(d)?.unwrap_or_default())
}

/// Why a state or `config.json` could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OciError {
    #[error("the container state on stdin is not an OCI state: {0}")]
    State(String),
    #[error("the container state has no bundle")]
    NoBundle,
    #[error("the bundle path {0:?} is not absolute")]
    RelativeBundle(PathBuf),
    #[error("{path}: not an OCI runtime configuration: {reason}")]
    Config { path: String, reason: String },
}

/// Parses the state a runtime writes on a hook's stdin.
pub fn parse_state(bytes: &[u8]) -> Result<State, OciError> {
    serde_json::from_slice(bytes).map_err(|e| OciError::State(e.to_string()))
}

/// How far `bytes` are from one whole JSON value: the reader of a stdin that is never closed
/// judges as soon as this says [`Whole::Value`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whole {
    /// One complete value ends at this byte (what follows is never read).
    Value(usize),
    /// A value has begun (or nothing but whitespace was read): more bytes may complete it.
    Incomplete,
    /// Not JSON, whatever follows: no need to wait for more.
    Broken,
}

/// Whether `bytes` begin with one complete JSON value.
pub fn whole_value(bytes: &[u8]) -> Whole {
    let mut values =
        serde_json::Deserializer::from_slice(bytes).into_iter::<serde::de::IgnoredAny>();
    match values.next() {
        Some(Ok(_)) => Whole::Value(values.byte_offset()),
        Some(Err(e)) if e.is_eof() => Whole::Incomplete,
        Some(Err(_)) => Whole::Broken,
        None => Whole::Incomplete,
    }
}

/// The bundle's `config.json` path, relative to `/` (to be read below the root).
pub fn config_path(state: &State) -> Result<PathBuf, OciError> {
    let bundle = state.bundle.as_ref().ok_or(OciError::NoBundle)?;
    if !bundle.is_absolute() {
        return Err(OciError::RelativeBundle(bundle.clone()));
    }
    Ok(bundle.join("config.json"))
}

/// Parses `config.json` (named `path` in errors).
pub fn parse_config(path: &str, bytes: &[u8]) -> Result<Config, OciError> {
    serde_json::from_slice(bytes).map_err(|e| OciError::Config {
        path: path.to_string(),
        reason: e.to_string(),
    })
}

/// Which volumes a container's annotations mark for GDS.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marks {
    /// `nfs-gds/gds` marks ([`gds_marks`], a value it does not know included): every NFS
    /// volume.
    pub all: bool,
    /// The container paths `nfs-gds/gds-volumes` lists, cleaned.
    pub volumes: Vec<PathBuf>,
}

impl Marks {
    /// The marks in `annotations`.
    pub fn of(annotations: &BTreeMap<String, String>) -> Marks {
        let all = annotations
            .get(GDS_ANNOTATION)
            .is_some_and(|v| gds_marks(v).unwrap_or(true));
        let volumes = annotations
            .get(GDS_VOLUMES_ANNOTATION)
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(|p| clean_path(p).unwrap_or_else(|| PathBuf::from(p)))
                    .collect()
            })
            .unwrap_or_default();
        Marks { all, volumes }
    }

    /// Whether anything is marked.
    pub fn any(&self) -> bool {
        self.all || !self.volumes.is_empty()
    }

    /// Whether the volume at container path `destination` is marked.
    pub fn marks(&self, destination: &Path) -> bool {
        self.all || self.volumes.iter().any(|v| v == destination)
    }
}

/// `path` with `.`, `..` and repeated or trailing slashes taken out, lexically (nothing is
/// looked up on disk); `None` when it is not absolute.
pub fn clean_path(path: &str) -> Option<PathBuf> {
    let path = Path::new(path);
    if !path.is_absolute() {
        return None;
    }
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtimes_own_binds_are_told_from_volumes() {
        for p in RUNTIME_PATHS {
            assert!(is_runtime_path(Path::new(p)), "{p}");
        }
        assert!(is_runtime_path(Path::new(
            "/run/secrets/kubernetes.io/serviceaccount"
        )));
        for p in ["/data", "/etc", "/run/secretsx", "/etc/hosts.d", "/dev"] {
            assert!(!is_runtime_path(Path::new(p)), "{p}");
        }
    }

    #[test]
    fn a_misspelt_key_and_a_missing_volume_are_problems() {
        let p = unknown_annotations([
            "nfs-gds/gds-volume",
            "nfs-gds/gds",
            "other/x",
            "nfs-gds/zzzzzzzzzz",
        ]);
        assert_eq!(p.len(), 2);
        assert_eq!(
            p[0].to_string(),
            "unknown annotation \"nfs-gds/gds-volume\", not read (did you mean nfs-gds/gds-volumes?); the known keys are nfs-gds/gds, nfs-gds/gds-volumes"
        );
        assert_eq!(p[0].kind(), UNKNOWN_KEY);
        assert!(!p[1].to_string().contains("did you mean"), "{}", p[1]);
        let m = missing_volumes(
            &[PathBuf::from("/dat"), PathBuf::from("/data")],
            &[PathBuf::from("/data")],
        );
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].kind(), NO_SUCH_VOLUME);
        assert_eq!(
            m[0].to_string(),
            "nfs-gds/gds-volumes names /dat, where no volume is mounted, so nothing there is judged (volumes at: /data)"
        );
    }

    #[test]
    fn a_whole_value_is_told_from_a_part_and_from_garbage() {
        let state = br#"{"ociVersion":"1.0.2","bundle":"/run/b"}"#;
        assert_eq!(whole_value(state), Whole::Value(state.len()));
        let mut held = state.to_vec();
        held.extend_from_slice(b"\n{\"next\"");
        assert_eq!(whole_value(&held), Whole::Value(state.len()));
        assert_eq!(whole_value(&state[..10]), Whole::Incomplete);
        assert_eq!(whole_value(b"  \n"), Whole::Incomplete);
        assert_eq!(whole_value(b""), Whole::Incomplete);
        assert_eq!(whole_value(b"not json"), Whole::Broken);
    }

    #[test]
    fn a_state_with_annotations_and_a_bundle_parses() {
        let s = parse_state(
            br#"{"ociVersion":"1.0.2","id":"abc","status":"created","pid":42,"bundle":"/run/b",
                 "annotations":{"nfs-gds/gds":"true","io.kubernetes.pod.name":"x"}}"#,
        )
        .unwrap();
        assert_eq!(s.id, "abc");
        assert_eq!(s.pid, Some(42));
        assert_eq!(config_path(&s).unwrap(), Path::new("/run/b/config.json"));
        assert!(Marks::of(&s.annotations).all);
    }

    #[test]
    fn a_state_that_is_not_json_or_lacks_a_bundle_is_an_error() {
        assert!(matches!(parse_state(b"hello"), Err(OciError::State(_))));
        assert!(matches!(parse_state(b"[1,2]"), Err(OciError::State(_))));
        let s = parse_state(br#"{"id":"x","annotations":null}"#).unwrap();
        assert_eq!(config_path(&s), Err(OciError::NoBundle));
        let s = parse_state(br#"{"bundle":"rel/dir"}"#).unwrap();
        assert!(matches!(config_path(&s), Err(OciError::RelativeBundle(_))));
    }

    #[test]
    fn config_mounts_say_which_are_binds() {
        let c = parse_config(
            "config.json",
            br#"{"ociVersion":"1.0.2","process":{"args":["sh"]},"mounts":[
                {"destination":"/proc","type":"proc","source":"proc"},
                {"destination":"/data","type":"bind","source":"/mnt/gds","options":["rbind","ro"]},
                {"destination":"/ckpt","source":"/mnt/c","options":["rbind"]},
                {"destination":"/dev/shm","type":"tmpfs","source":"shm","options":null}]}"#,
        )
        .unwrap();
        let binds: Vec<_> = c
            .mounts
            .iter()
            .filter(|m| m.is_bind())
            .map(|m| m.destination.as_str())
            .collect();
        assert_eq!(binds, ["/data", "/ckpt"]);
        let e = parse_config("/b/config.json", br#"{"mounts":{"x":1}}"#).unwrap_err();
        assert!(e.to_string().starts_with("/b/config.json: "), "{e}");
    }

    #[test]
    fn marks_name_every_volume_or_the_listed_ones() {
        let a = |k: &str, v: &str| BTreeMap::from([(k.to_string(), v.to_string())]);
        let m = Marks::of(&a(GDS_VOLUMES_ANNOTATION, " /data/ , /ckpt,,"));
        assert!(!m.all);
        assert!(m.marks(Path::new("/data")));
        assert!(m.marks(Path::new("/ckpt")));
        assert!(!m.marks(Path::new("/other")));
        assert!(!Marks::of(&BTreeMap::new()).any());
    }

    /// One table for the hook ([`Marks::of`], [`bad_values`]) and `lint` (which calls
    /// [`gds_marks`]): each spelling marks, does not, or is a problem that marks in the hook.
    #[test]
    fn the_gds_value_is_read_by_one_rule() {
        let table: &[(&str, Option<bool>)] = &[
            ("true", Some(true)),
            ("True", Some(true)),
            ("YES", Some(true)),
            ("y", Some(true)),
            ("1", Some(true)),
            (" on ", Some(true)),
            ("false", Some(false)),
            ("FALSE", Some(false)),
            ("no", Some(false)),
            ("N", Some(false)),
            ("0", Some(false)),
            ("Off", Some(false)),
            ("", Some(false)),
            ("  ", Some(false)),
            ("maybe", None),
            ("2", None),
            ("enable", None),
        ];
        for (value, want) in table {
            let annotations = BTreeMap::from([(GDS_ANNOTATION.to_string(), value.to_string())]);
            let hook = Marks::of(&annotations).all;
            let problems = bad_values(&annotations);
            match want {
                Some(marks) => {
                    assert_eq!(gds_marks(value), Ok(*marks), "{value:?}");
                    assert_eq!(hook, *marks, "{value:?}");
                    assert!(problems.is_empty(), "{value:?}");
                }
                None => {
                    let e = gds_marks(value).unwrap_err();
                    assert_eq!(e.kind(), BAD_VALUE);
                    assert!(hook, "{value:?}: an unknown value is taken as marking");
                    assert_eq!(problems, std::slice::from_ref(&e), "{value:?}");
                    assert_eq!(
                        e.to_string(),
                        format!("nfs-gds/gds is {value:?}, which is neither yes nor no: true, yes, y, 1, on mark every NFS volume for GDS; false, no, n, 0, off or empty do not (case aside)")
                    );
                }
            }
        }
    }

    #[test]
    fn paths_are_cleaned_without_looking_at_the_disk() {
        assert_eq!(clean_path("/a//b/./c/"), Some(PathBuf::from("/a/b/c")));
        assert_eq!(clean_path("/a/../../b"), Some(PathBuf::from("/b")));
        assert_eq!(clean_path("a/b"), None);
    }
}
