//! The NFS volumes of a set of manifests: `StorageClass`es of csi-driver-nfs and
//! `PersistentVolume`s, in-tree (`spec.nfs`) or csi-driver-nfs (`spec.csi`), with their server,
//! export and mount options (each option with its line), and whether each is meant for GDS.
//!
//! A volume is meant for GDS when its options ask for RDMA, or when it carries the annotation
//! [`GDS_ANNOTATION`]`: "true"` (the way to say it of a volume whose options forgot RDMA), read
//! by the container hook's rule ([`oci::gds_marks`]): a value that is neither yes nor no is an
//! error, and the volume is taken as meant for GDS, as the hook takes a container.
//! Every NFS volume counts for the transport trap, GDS or not.

use super::yaml::{node_at, scalar_text, str_at, At};
use super::{Finding, Severity};
use crate::oci::{self, GDS_ANNOTATION};

/// csi-driver-nfs's driver and provisioner name.
pub const CSI_NFS_DRIVER: &str = "nfs.csi.k8s.io";

/// The rule of a `nfs-gds/gds` value that is neither yes nor no ([`oci::gds_marks`]).
pub const ANNOTATION_VALUE: &str = "annotation-value";

/// One mount option and the line it is written on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountOption {
    pub text: String,
    pub line: usize,
}

impl MountOption {
    /// `(name, value)` of `name=value`, or `(name, None)`.
    pub fn split(&self) -> (&str, Option<&str>) {
        match self.text.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (self.text.trim(), None),
        }
    }
}

/// An NFS volume or class of volumes, as its manifest declares it.
#[derive(Debug, Clone)]
pub struct NfsVolume {
    pub file: String,
    /// The line of the object (its `kind`).
    pub line: usize,
    /// The line its options are written on (or would be).
    pub options_line: usize,
    /// `StorageClass foo`, `PersistentVolume bar`.
    pub what: String,
    pub server: Option<String>,
    pub export: Option<String>,
    pub options: Vec<MountOption>,
    pub meant_for_gds: bool,
}

impl NfsVolume {
    /// A finding about this volume at its options' line.
    pub fn finding(&self, severity: Severity, rule: &'static str, message: String) -> Finding {
        self.finding_at(self.options_line, severity, rule, message)
    }

    pub fn finding_at(
        &self,
        line: usize,
        severity: Severity,
        rule: &'static str,
        message: String,
    ) -> Finding {
        Finding {
            file: self.file.clone(),
            line,
            severity,
            rule,
            message,
        }
    }

    /// The last value of option `name` (mount.nfs takes the last of repeated options).
    pub fn option(&self, names: &[&str]) -> Option<(&str, &MountOption)> {
        self.options.iter().rev().find_map(|o| match o.split() {
            (k, Some(v)) if names.contains(&k) => Some((v, o)),
            _ => None,
        })
    }

    /// Whether the bare flag `name` is given.
    pub fn flag(&self, name: &str) -> Option<&MountOption> {
        self.options
            .iter()
            .rev()
            .find(|o| o.split() == (name, None))
    }

    /// Whether the options ask for RDMA (`proto=rdma|rdma6` or the bare `rdma`).
    pub fn asks_for_rdma(&self) -> bool {
        match self.option(&["proto"]) {
            Some((p, _)) => crate::nfs::is_rdma_netid(p),
            None => self.flag("rdma").is_some(),
        }
    }
}

/// The NFS volume `at` declares (a `StorageClass` or `PersistentVolume` of `kind`), or `None`
/// when it is not NFS.
pub fn nfs_volume(at: &At, kind: &str, out: &mut Vec<Finding>) -> Option<NfsVolume> {
    let doc = at.doc;
    let (server_path, export_path, options_path): (Vec<&str>, Vec<&str>, Vec<&str>) =
        if kind == "StorageClass" {
            if str_at(doc, &["provisioner"]) != Some(CSI_NFS_DRIVER) {
                return None;
            }
            (
                vec!["parameters", "server"],
                vec!["parameters", "share"],
                vec!["mountOptions"],
            )
        } else if node_at(doc, &["spec", "nfs"]).is_some() {
            (
                vec!["spec", "nfs", "server"],
                vec!["spec", "nfs", "path"],
                vec!["spec", "mountOptions"],
            )
        } else if node_at(doc, &["spec", "csi"]).is_some() {
            if str_at(doc, &["spec", "csi", "driver"]) != Some(CSI_NFS_DRIVER) {
                return None;
            }
            (
                vec!["spec", "csi", "volumeAttributes", "server"],
                vec!["spec", "csi", "volumeAttributes", "share"],
                vec!["spec", "mountOptions"],
            )
        } else {
            return None;
        };
    let mut options = list_options(at, &options_path);
    // csi-driver-nfs also takes options from the volume's attributes, one comma-separated string.
    let attrs = ["spec", "csi", "volumeAttributes", "mountOptions"];
    if let Some(n) = node_at(doc, &attrs) {
        push_split(
            &mut options,
            scalar_text(n).as_deref().unwrap_or(""),
            n.span.start.line(),
        );
    }
    let options_line = node_at(doc, &options_path)
        .or_else(|| node_at(doc, &attrs))
        .map_or_else(|| doc.span.start.line(), |n| n.span.start.line());
    let mut v = NfsVolume {
        file: at.file.to_string(),
        line: super::yaml::line_at(doc, &["kind"]),
        options_line,
        what: format!("{kind} {}", at.name()),
        server: str_at(doc, &server_path).map(str::to_string),
        export: str_at(doc, &export_path).map(str::to_string),
        options,
        meant_for_gds: false,
    };
    let annotation = ["metadata", "annotations", GDS_ANNOTATION];
    let annotated = match node_at(doc, &annotation).and_then(scalar_text) {
        None => false,
        Some(value) => oci::gds_marks(&value).unwrap_or_else(|problem| {
            out.push(v.finding_at(
                super::yaml::line_at(doc, &annotation),
                Severity::Fail,
                ANNOTATION_VALUE,
                format!("{}: {problem}", v.what),
            ));
            true
        }),
    };
    v.meant_for_gds = annotated || v.asks_for_rdma();
    if !v.meant_for_gds {
        out.push(v.finding_at(
            v.line,
            Severity::Note,
            "volume-not-gds",
            format!(
                "{}: NFS without RDMA in its mountOptions and without the annotation {GDS_ANNOTATION}: \"true\", so not judged as a GDS volume (it still counts for the transport trap)",
                v.what
            ),
        ));
    }
    Some(v)
}

/// The options of a `mountOptions` list, each entry possibly comma-separated.
fn list_options(at: &At, path: &[&str]) -> Vec<MountOption> {
    let mut options = Vec::new();
    let items = node_at(at.doc, path).and_then(|n| n.data.as_vec());
    for item in items.into_iter().flatten() {
        if let Some(text) = scalar_text(item) {
            push_split(&mut options, &text, item.span.start.line());
        }
    }
    options
}

fn push_split(options: &mut Vec<MountOption>, text: &str, line: usize) {
    for piece in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        options.push(MountOption {
            text: piece.to_string(),
            line,
        });
    }
}
