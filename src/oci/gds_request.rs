//! Whether a container asked for NVIDIA's GDS CDI device (`nvidia.com/gds=all`, which gives it
//! the `/dev/nvidia-fs*` device nodes): such a container is meant for GDS on all its NFS
//! volumes, as if `nfs-gds/gds` marked it. The one rule for the OCI hook (from `config.json`)
//! and the NRI plugin (from the runtime's request) alike:
//!
//! - a `/dev/nvidia-fs*` device in the container's Linux devices marks it — unless the container
//!   is **privileged**, which gets every host device: neither OCI nor NRI 0.8 carries a
//!   privileged flag, so a device cgroup rule that allows every device (`allow`, no type or `a`,
//!   no major or minor: what the runtime writes for a privileged container) says so;
//! - the CDI annotations that request the device mark it, since a device another NRI plugin
//!   injects (NVIDIA's GPU Operator with `cdi.nriPluginEnabled`) is not in the request the
//!   plugin sees: `cdi.k8s.io/<anything>` and NVIDIA's `nvidia.cdi.k8s.io/container.<name>` for
//!   this container's name, whose value is a comma-separated list of fully qualified CDI device
//!   names; one of kind `nvidia.com/gds` requests it. These mark a privileged container too:
//!   they are a request, not a side effect.

use std::collections::BTreeMap;

/// The CDI device kind of NVIDIA's GDS devices (`nvidia.com/gds=all`).
pub const GDS_CDI_KIND: &str = "nvidia.com/gds";
/// The prefix of CDI's own annotation keys (`cdi.k8s.io/<plugin>_<device>`).
pub const CDI_ANNOTATION_PREFIX: &str = "cdi.k8s.io/";
/// The prefix of NVIDIA's per-container CDI annotation keys, followed by the container's name.
pub const NVIDIA_CDI_CONTAINER_PREFIX: &str = "nvidia.cdi.k8s.io/container.";
/// The device nodes the GDS CDI device gives a container (`/dev/nvidia-fs0`, ...).
pub const GDS_DEVICE_PREFIX: &str = "/dev/nvidia-fs";

/// Why a container counts as asking for GDS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GdsRequest {
    /// An annotation (its key) requests the GDS CDI device.
    Annotation(String),
    /// It has the device node (its path) and is not privileged.
    Device(String),
}

/// One device cgroup rule (`linux.resources.devices`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct DeviceRule {
    #[serde(default)]
    pub allow: bool,
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub major: Option<i64>,
    #[serde(default)]
    pub minor: Option<i64>,
    #[serde(default)]
    pub access: Option<String>,
}

/// Whether `rules` let the container use every device: the mark of a privileged container.
pub fn allows_every_device(rules: &[DeviceRule]) -> bool {
    rules.iter().any(|r| {
        r.allow
            && matches!(r.kind.as_deref(), None | Some("") | Some("a"))
            && r.major.is_none_or(|m| m < 0)
            && r.minor.is_none_or(|m| m < 0)
    })
}

/// Whether `value` (a CDI annotation's) names a device of kind [`GDS_CDI_KIND`].
fn names_gds(value: &str) -> bool {
    value.split(',').map(str::trim).any(|d| {
        d.split_once('=')
            .is_some_and(|(kind, _)| kind == GDS_CDI_KIND)
    })
}

/// Whether the container asked for the GDS CDI device: by `annotations` (the pod's and the
/// container's), for container `name`, or by a device path in `devices` unless `privileged`.
pub fn gds_requested<'a>(
    annotations: &BTreeMap<String, String>,
    name: Option<&str>,
    devices: impl IntoIterator<Item = &'a str>,
    privileged: bool,
) -> Option<GdsRequest> {
    for (key, value) in annotations {
        let applies = key.starts_with(CDI_ANNOTATION_PREFIX)
            || key
                .strip_prefix(NVIDIA_CDI_CONTAINER_PREFIX)
                .is_some_and(|n| Some(n) == name);
        if applies && names_gds(value) {
            return Some(GdsRequest::Annotation(key.clone()));
        }
    }
    if privileged {
        return None;
    }
    devices
        .into_iter()
        .find(|d| d.starts_with(GDS_DEVICE_PREFIX))
        .map(|d| GdsRequest::Device(d.to_string()))
}

impl std::fmt::Display for GdsRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GdsRequest::Annotation(key) => {
                write!(
                    f,
                    "the annotation {key} requests the {GDS_CDI_KIND} CDI device"
                )
            }
            GdsRequest::Device(path) => write!(f, "it has the GDS device {path}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The rule's table: annotations, devices, privileged → marked or not.
    #[test]
    fn the_marking_table() {
        let fs0 = ["/dev/nvidia-fs0", "/dev/null"];
        let none: [&str; 0] = [];
        let gpu_only = ["/dev/nvidia0", "/dev/nvidiactl"];
        // (what, annotations, devices, privileged, marked)
        type Case<'a> = (&'a str, BTreeMap<String, String>, Vec<&'a str>, bool, bool);
        let cases: Vec<Case> = vec![
            ("nothing", map(&[]), none.to_vec(), false, false),
            ("the GDS device node", map(&[]), fs0.to_vec(), false, true),
            ("a GPU alone", map(&[]), gpu_only.to_vec(), false, false),
            (
                "privileged: every host device",
                map(&[]),
                fs0.to_vec(),
                true,
                false,
            ),
            (
                "cdi.k8s.io requests gds",
                map(&[(
                    "cdi.k8s.io/nvidia-device-plugin_uuid",
                    "nvidia.com/gpu=0, nvidia.com/gds=all",
                )]),
                none.to_vec(),
                false,
                true,
            ),
            (
                "cdi.k8s.io requests a GPU only",
                map(&[("cdi.k8s.io/x", "nvidia.com/gpu=all")]),
                none.to_vec(),
                false,
                false,
            ),
            (
                "a kind that only starts like gds",
                map(&[("cdi.k8s.io/x", "nvidia.com/gdsx=all")]),
                none.to_vec(),
                false,
                false,
            ),
            (
                "NVIDIA's annotation for this container",
                map(&[("nvidia.cdi.k8s.io/container.train", "nvidia.com/gds=all")]),
                none.to_vec(),
                false,
                true,
            ),
            (
                "NVIDIA's annotation for another container",
                map(&[("nvidia.cdi.k8s.io/container.sidecar", "nvidia.com/gds=all")]),
                none.to_vec(),
                false,
                false,
            ),
            (
                "a request marks a privileged container too",
                map(&[("nvidia.cdi.k8s.io/container.train", "nvidia.com/gds=all")]),
                fs0.to_vec(),
                true,
                true,
            ),
            (
                "gds named outside a CDI key",
                map(&[("example.com/devices", "nvidia.com/gds=all")]),
                none.to_vec(),
                false,
                false,
            ),
        ];
        for (what, annotations, devices, privileged, want) in cases {
            let got = gds_requested(&annotations, Some("train"), devices, privileged);
            assert_eq!(got.is_some(), want, "{what}: {got:?}");
        }
    }

    #[test]
    fn an_allow_all_device_rule_is_privileged_a_narrow_one_is_not() {
        let all = DeviceRule {
            allow: true,
            access: Some("rwm".into()),
            ..Default::default()
        };
        let deny_all = DeviceRule {
            allow: false,
            ..all.clone()
        };
        let one = DeviceRule {
            allow: true,
            kind: Some("c".into()),
            major: Some(195),
            minor: Some(0),
            access: Some("rw".into()),
        };
        let all_chars = DeviceRule {
            kind: Some("c".into()),
            ..all.clone()
        };
        assert!(allows_every_device(&[deny_all.clone(), all]));
        assert!(!allows_every_device(&[deny_all, one]));
        assert!(!allows_every_device(&[all_chars]));
        assert!(!allows_every_device(&[]));
    }
}
