//! `nfs-gds lint`: judges Kubernetes manifests before they are applied, for what GDS over
//! NFS/RDMA needs from them.
//!
//! On Kubernetes the mount helper is never called: kubelet's in-tree NFS volume and
//! csi-driver-nfs both mount with type `nfs` hard-coded, so what a GDS volume gets is what its
//! `mountOptions` say, and the agent can only verify it after the fact. This layer reads the
//! manifests an operator writes — the GPU Operator's `ClusterPolicy`, the Network Operator's
//! `NicClusterPolicy`, `StorageClass`es and `PersistentVolume`s — and says, with the file and
//! line, what would leave GDS silently on CPU bounce buffers. It is pure: the caller reads the
//! files and hands over their text.

mod cluster_policy;
mod nic_cluster_policy;
mod options;
mod pod_annotations;
mod trap;
mod volumes;
mod yaml;

use serde::Serialize;

pub use yaml::YamlError;

/// How much a finding matters; a `Fail` makes `lint` exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Said so the operator knows what was and was not judged.
    Note,
    /// Works, but not as the source documents prescribe, or risky.
    Warn,
    /// GDS over NFS/RDMA will not be used (or not on this volume).
    Fail,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warn => "warn",
            Severity::Fail => "fail",
        }
    }
}

/// One thing `lint` says about a manifest, at the line it is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub file: String,
    /// 1-based.
    pub line: usize,
    pub severity: Severity,
    /// A stable name for the rule (`cluster-policy-gds`, `volume-proto`, …).
    pub rule: &'static str,
    pub message: String,
}

/// The text of one manifest file and the name it is shown by.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    pub name: &'a str,
    pub text: &'a str,
}

/// What a set of files holds that lint judges, and what it found.
#[derive(Debug, Default, Serialize)]
pub struct LintReport {
    pub findings: Vec<Finding>,
    /// How many YAML documents the sources held.
    pub documents: usize,
    /// How many objects of each judged kind were seen.
    pub judged: usize,
}

impl LintReport {
    pub fn failed(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Fail)
    }
}

/// What lint judges, for a run that found none of it.
pub const JUDGED_KINDS: &str =
    "no ClusterPolicy, NicClusterPolicy, or NFS StorageClass or PersistentVolume";

/// The note every run that saw an NFS volume ends with: the helper is bypassed.
pub const BYPASS_NOTE: &str = "these volumes are mounted by kubelet or csi-driver-nfs with type nfs, never through mount.nfs-gds: run nfs-gds agent on the nodes (deploy/kustomize) to verify each mount after the fact";

/// Judges every document of every source. A file that is not YAML is an error naming it and
/// the line; nothing is judged then.
pub fn lint(sources: &[Source]) -> Result<LintReport, YamlError> {
    let mut docs = Vec::new();
    for s in sources {
        docs.push((s.name, yaml::load(s.name, s.text)?));
    }
    let mut report = LintReport {
        documents: docs.iter().map(|(_, d)| d.len()).sum(),
        ..LintReport::default()
    };
    let mut found_volumes = Vec::new();
    for (name, file_docs) in &docs {
        for doc in file_docs.iter().flat_map(yaml::objects) {
            let at = yaml::At { file: name, doc };
            match (
                yaml::str_at(doc, &["apiVersion"]),
                yaml::str_at(doc, &["kind"]),
            ) {
                (Some(api), Some("ClusterPolicy")) if api.starts_with("nvidia.com/") => {
                    report.judged += 1;
                    cluster_policy::judge(&at, &mut report.findings);
                }
                (Some(api), Some("NicClusterPolicy")) if api.starts_with("mellanox.com/") => {
                    report.judged += 1;
                    nic_cluster_policy::judge(&at, &mut report.findings);
                }
                (_, Some(kind @ ("StorageClass" | "PersistentVolume"))) => {
                    if let Some(v) = volumes::nfs_volume(&at, kind, &mut report.findings) {
                        report.judged += 1;
                        found_volumes.push(v);
                    }
                }
                // Any other kind may hold a pod template.
                _ => {
                    report.judged += usize::from(pod_annotations::judge(&at, &mut report.findings))
                }
            }
        }
    }
    for v in &found_volumes {
        options::judge(v, &mut report.findings);
    }
    trap::judge(&found_volumes, &mut report.findings);
    if let Some(first) = found_volumes.first() {
        report
            .findings
            .push(first.finding(Severity::Note, "bypass", BYPASS_NOTE.into()));
    }
    // In the order the files were given, then by line.
    let order = |f: &Finding| sources.iter().position(|s| s.name == f.file);
    report
        .findings
        .sort_by_key(|f| (order(f), f.line, std::cmp::Reverse(f.severity)));
    Ok(report)
}
