//! Which pod and volume a kubelet mount belongs to, read from its mount point.
//!
//! kubelet mounts an in-tree `nfs:` volume on `<kubelet dir>/pods/<pod UID>/volumes/kubernetes.io~nfs/<volume>`
//! and a CSI volume (csi-driver-nfs) on `…/volumes/kubernetes.io~csi/<volume>/mount`. The kubelet
//! directory differs between distributions (`/var/lib/kubelet`, k0s, microk8s under `/var/snap`),
//! so only the part from `pods/` on is matched.

use std::path::Path;

/// A volume of a pod, as kubelet laid out its mount point (borrowed from it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletVolume<'a> {
    pub pod_uid: &'a str,
    /// The volume's name in the pod spec (in-tree) or the PersistentVolume's name (CSI).
    pub volume: &'a str,
    /// `nfs` or `csi`.
    pub plugin: &'static str,
}

/// The pod volume `mount_point` is, if it is one.
pub fn volume_of(mount_point: &Path) -> Option<KubeletVolume<'_>> {
    // The last six components are enough: the volume part after `pods/<uid>/volumes` is two
    // or three of them, and a later `pods/…/volumes` would have to lie in them too.
    let path = mount_point.to_str()?;
    let mut last: [&str; 6] = [""; 6];
    let (mut n, mut end) = (0, path.len());
    while n < last.len() && end > 0 {
        let start = memchr::memrchr(b'/', &path.as_bytes()[..end]).map_or(0, |i| i + 1);
        if start < end {
            n += 1;
            last[last.len() - n] = &path[start..end];
        }
        end = start.saturating_sub(1);
    }
    let parts = &last[last.len() - n..];
    let at = parts
        .windows(3)
        .rposition(|w| w[0] == "pods" && w[2] == "volumes")?;
    let pod_uid = parts[at + 1];
    let rest = &parts[at + 3..];
    let (plugin, volume) = match rest {
        ["kubernetes.io~nfs", volume] => ("nfs", *volume),
        ["kubernetes.io~csi", volume, "mount"] => ("csi", *volume),
        _ => return None,
    };
    Some(KubeletVolume {
        pod_uid,
        volume,
        plugin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "8d5c7f4e-2b1a-4c3d-9e8f-0a1b2c3d4e5f";

    #[test]
    fn in_tree_and_csi_volumes_name_pod_and_volume() {
        let path = format!("/var/lib/kubelet/pods/{UID}/volumes/kubernetes.io~nfs/datasets");
        let v = volume_of(Path::new(&path)).unwrap();
        assert_eq!(
            v,
            KubeletVolume {
                pod_uid: UID,
                volume: "datasets",
                plugin: "nfs"
            }
        );
        let path = format!(
            "/var/snap/microk8s/common/var/lib/kubelet/pods/{UID}/volumes/kubernetes.io~csi/pvc-1234/mount"
        );
        let v = volume_of(Path::new(&path)).unwrap();
        assert_eq!((v.plugin, v.volume), ("csi", "pvc-1234"));
    }

    #[test]
    fn the_last_pods_volumes_of_a_path_names_it() {
        let path =
            format!("/a/pods/{UID}/volumes/kubernetes.io~csi/pods/u-2/volumes/kubernetes.io~nfs/v");
        let v = volume_of(Path::new(&path)).unwrap();
        assert_eq!((v.pod_uid, v.volume, v.plugin), ("u-2", "v", "nfs"));
        let v = volume_of(Path::new("pods/u-3/volumes/kubernetes.io~csi/pvc/mount")).unwrap();
        assert_eq!((v.pod_uid, v.volume, v.plugin), ("u-3", "pvc", "csi"));
        let deep = format!("/pods/{UID}/volumes/kubernetes.io~nfs/v/and/more/below/it");
        assert_eq!(volume_of(Path::new(&deep)), None);
    }

    #[test]
    fn other_paths_are_not_pod_volumes() {
        for p in [
            "/mnt/data",
            "/var/lib/kubelet/pods",
            &format!("/var/lib/kubelet/pods/{UID}/volumes/kubernetes.io~csi/pvc-1234"),
            &format!("/var/lib/kubelet/pods/{UID}/volumes/kubernetes.io~empty-dir/x"),
            "/var/lib/kubelet/plugins/kubernetes.io/csi/nfs.csi.k8s.io/abc/globalmount",
        ] {
            assert_eq!(volume_of(Path::new(p)), None, "{p}");
        }
    }
}
