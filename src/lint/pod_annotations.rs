//! The `nfs-gds/` annotations of a pod template (a `Pod`, or the template of a workload that
//! makes pods), judged as the container hook reads them: a key nfs-gds does not read
//! (`nfs-gds/gds-volume` for `nfs-gds/gds-volumes`), or a `nfs-gds/gds-volumes` path no
//! container of the pod mounts a volume at, switches the gate off for the volume meant, so both
//! are errors here; so is a `nfs-gds/gds` value that is neither yes nor no
//! ([`oci::gds_marks`], the hook's own rule).

use std::path::PathBuf;

use super::volumes::ANNOTATION_VALUE;
use super::yaml::{node_at, scalar_text, str_at, At};
use super::{Finding, Severity};
use crate::oci::{self, AnnotationProblem};

/// Where a kind keeps its pod template (`[]` for a `Pod` itself).
fn template_path(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "Pod" => Some(&[]),
        "Deployment"
        | "StatefulSet"
        | "DaemonSet"
        | "ReplicaSet"
        | "Job"
        | "ReplicationController" => Some(&["spec", "template"]),
        "CronJob" => Some(&["spec", "jobTemplate", "spec", "template"]),
        _ => None,
    }
}

/// Judges the pod template of `at`, if it has one with `nfs-gds/` annotations; whether it did.
pub fn judge(at: &At, out: &mut Vec<Finding>) -> bool {
    let Some(path) = str_at(at.doc, &["kind"]).and_then(template_path) else {
        return false;
    };
    let annotations_path: Vec<&str> = path
        .iter()
        .copied()
        .chain(["metadata", "annotations"])
        .collect();
    let Some(annotations) = node_at(at.doc, &annotations_path).and_then(|n| n.data.as_mapping())
    else {
        return false;
    };
    let keys: Vec<&str> = annotations.keys().filter_map(|k| k.data.as_str()).collect();
    if !keys.iter().any(|k| k.starts_with(oci::ANNOTATION_PREFIX)) {
        return false;
    }
    let mut problems = oci::unknown_annotations(keys.iter().copied());
    let key_path = |key| -> Vec<&str> { annotations_path.iter().copied().chain([key]).collect() };
    let marked_path = key_path(oci::GDS_ANNOTATION);
    if let Some(value) = node_at(at.doc, &marked_path).and_then(scalar_text) {
        problems.extend(oci::gds_marks(&value).err());
    }
    let listed_path = key_path(oci::GDS_VOLUMES_ANNOTATION);
    if let Some(listed) = node_at(at.doc, &listed_path).and_then(scalar_text) {
        let listed =
            oci::Marks::of(&[(oci::GDS_VOLUMES_ANNOTATION.to_string(), listed)].into()).volumes;
        problems.extend(oci::missing_volumes(&listed, &mount_paths(at, path)));
    }
    for p in problems {
        let line_path = match &p {
            AnnotationProblem::UnknownKey { key, .. } => {
                let mut at_key = annotations_path.clone();
                at_key.push(key.as_str());
                at_key
            }
            AnnotationProblem::NoSuchVolume { .. } => listed_path.clone(),
            AnnotationProblem::BadValue { .. } => marked_path.clone(),
        };
        let rule = match p {
            AnnotationProblem::UnknownKey { .. } => "annotation-key",
            AnnotationProblem::NoSuchVolume { .. } => "annotation-volume",
            AnnotationProblem::BadValue { .. } => ANNOTATION_VALUE,
        };
        out.push(at.finding(
            &line_path,
            Severity::Fail,
            rule,
            format!(
                "{} {}: {p}",
                str_at(at.doc, &["kind"]).unwrap_or("Pod"),
                at.name()
            ),
        ));
    }
    true
}

/// The container paths the pod's containers (and init containers) mount volumes at.
fn mount_paths(at: &At, template: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for list in ["containers", "initContainers"] {
        let path: Vec<&str> = template.iter().copied().chain(["spec", list]).collect();
        let containers = node_at(at.doc, &path).and_then(|n| n.data.as_vec());
        for c in containers.into_iter().flatten() {
            let mounts = node_at(c, &["volumeMounts"]).and_then(|n| n.data.as_vec());
            for m in mounts.into_iter().flatten() {
                if let Some(p) = str_at(m, &["mountPath"]).and_then(oci::clean_path) {
                    out.push(p);
                }
            }
        }
    }
    out
}
