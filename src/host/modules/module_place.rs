//! Which stack a module file comes from, read from where it sits: the one decider that the
//! directory class ([`ModuleOrigin`]), the package family ([`PackageFamily`]) and doctor's stack
//! catalogue all ask, so they cannot disagree on a path.
//!
//! A path is taken apart once ([`ModulePlace::of`]): below its module tree (`updates/dkms/…`, as
//! `modules.dep` writes it), or absolute — an old `modules.dep`'s `/lib/modules/<release>/…`, a
//! link's target, a driver container's tree (`/run/mellanox/drivers/lib/modules/<release>/…`,
//! read below that tree as its own modprobe reads it), or a build tree outside any module tree
//! (`/usr/src/ofa_kernel/…`, `/var/lib/dkms/…`). The families follow each one's layout: the
//! kernel package's `kernel/`, Ubuntu's archive DOCA-OFED under `kernel/doca-ofed-<ver>/`,
//! vastnfs's bundle (`updates/bundle/` from its DEB, `extra/vastnfs/bundle/` from its RPM),
//! NVIDIA's DOCA-OFED / MLNX_OFED (DKMS `updates/dkms/`, kmod packages `extra/mlnx-*/`,
//! `updates/mlnx-*/`, DKMS's own `extra/` on RHEL and `updates/` on SLES, and its build trees;
//! never for sunrpc, which NVIDIA does not ship).

use serde::Serialize;

use super::loaded_build::DRIVER_CONTAINER_MARKERS;
use super::module_name::module_name_of_path;

/// Where a module file sits in the tree, which tells who shipped it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModuleOrigin {
    /// `kernel/…`: shipped with the kernel package (inbox).
    Inbox,
    /// `updates/dkms/…`: built by DKMS (Debian/Ubuntu layout).
    UpdatesDkms,
    /// `updates/…`: an out-of-tree package overriding the kernel's module.
    Updates,
    /// `extra/…`: out-of-tree (DKMS on RHEL, or RPM packages such as `extra/mlnx-nfsrdma/`).
    Extra,
    /// `weak-updates/…`: RHEL's and SLES's `weak-modules` links to another kernel's build,
    /// accepted when its symbol CRCs (kABI) match this kernel's.
    WeakUpdates,
    /// Any other directory (vendor layouts); the first path component is kept.
    Other(String),
}

impl ModuleOrigin {
    /// The directory class of a module file's path ([`ModulePlace::of`] reads it).
    pub fn of(path: &str) -> Self {
        ModulePlace::of(path).origin()
    }

    pub fn describe(&self) -> String {
        match self {
            ModuleOrigin::Inbox => "the kernel's own module (kernel/)".into(),
            ModuleOrigin::UpdatesDkms => "a DKMS build (updates/dkms/)".into(),
            ModuleOrigin::Updates => "an out-of-tree package (updates/)".into(),
            ModuleOrigin::Extra => "an out-of-tree package (extra/)".into(),
            ModuleOrigin::WeakUpdates => {
                "another kernel's build linked by weak-modules (weak-updates/)".into()
            }
            ModuleOrigin::Other(d) => format!("an out-of-tree package ({d}/)"),
        }
    }
}

/// Who ships a module file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PackageFamily {
    /// The distribution's kernel package (`kernel/`).
    Distribution,
    /// Ubuntu's archive DOCA-OFED (`linux-modules-doca-ofed-<ver>-<flavour>`, signed by
    /// Canonical), with its version.
    UbuntuDoca(String),
    /// NVIDIA's DOCA-OFED or MLNX_OFED (DKMS or kmod packages).
    NvidiaOfed,
    /// VAST's NFS client bundle.
    Vastnfs,
    /// An out-of-tree file no known layout explains.
    Other(String),
}

impl PackageFamily {
    /// The family of a module file from its path ([`ModulePlace::of`] reads it).
    pub fn of_path(path: &str) -> Self {
        ModulePlace::of(path).family()
    }

    /// In words, for summaries and plans.
    pub fn describe(&self) -> String {
        match self {
            PackageFamily::Distribution => "the distribution's kernel".into(),
            PackageFamily::UbuntuDoca(v) => format!("Ubuntu's archive DOCA-OFED {v}"),
            PackageFamily::NvidiaOfed => "NVIDIA's DOCA-OFED / MLNX_OFED".into(),
            PackageFamily::Vastnfs => "vastnfs".into(),
            PackageFamily::Other(d) => format!("an unrecognised package ({d}/)"),
        }
    }
}

/// A module file's path, taken apart once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModulePlace<'a> {
    /// Its components below its module tree; outside any tree, all of them.
    parts: Vec<&'a str>,
    /// It lies in no module tree: a build or source tree (`/usr/src/…`, `/var/lib/dkms/…`).
    outside_tree: bool,
    /// The driver container whose module tree holds it (one of [`DRIVER_CONTAINER_MARKERS`]).
    pub container: Option<&'static str>,
}

impl<'a> ModulePlace<'a> {
    /// A path below a module tree (`updates/dkms/rpcrdma.ko`), or an absolute one: below the
    /// `modules/<release>/` in it when there is one, else outside any tree.
    pub fn of(path: &'a str) -> Self {
        let absolute = path.starts_with('/');
        let all: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        if !absolute {
            return ModulePlace {
                parts: all,
                outside_tree: false,
                container: None,
            };
        }
        let container = DRIVER_CONTAINER_MARKERS
            .iter()
            .copied()
            .find(|m| path.starts_with(&format!("{m}/")));
        match all.iter().position(|p| *p == "modules") {
            Some(at) if all.len() > at + 2 => ModulePlace {
                parts: all[at + 2..].to_vec(),
                outside_tree: false,
                container,
            },
            _ => ModulePlace {
                parts: all,
                outside_tree: true,
                container,
            },
        }
    }

    /// Whether it lies in a module tree (a host's, another kernel's, a driver container's).
    pub fn in_tree(&self) -> bool {
        !self.outside_tree
    }

    /// The path below its module tree (outside any, the path without its leading `/`).
    pub fn rel(&self) -> String {
        self.parts.join("/")
    }

    fn first(&self) -> &'a str {
        self.parts.first().copied().unwrap_or("")
    }

    /// The directories the file sits in, its name left out.
    fn dirs(&self) -> &[&'a str] {
        &self.parts[..self.parts.len().saturating_sub(1)]
    }

    /// The directory class below the tree; a path outside any tree is named by its first
    /// component.
    pub fn origin(&self) -> ModuleOrigin {
        match (self.outside_tree, self.first()) {
            (false, "kernel") => ModuleOrigin::Inbox,
            (false, "updates") if self.parts.get(1) == Some(&"dkms") => ModuleOrigin::UpdatesDkms,
            (false, "updates") => ModuleOrigin::Updates,
            (false, "extra") => ModuleOrigin::Extra,
            (false, "weak-updates") => ModuleOrigin::WeakUpdates,
            (_, other) => ModuleOrigin::Other(other.to_string()),
        }
    }

    /// Who ships the file, from its layout.
    pub fn family(&self) -> PackageFamily {
        let dirs = self.dirs();
        if dirs
            .iter()
            .any(|d| *d == "bundle" || d.starts_with("vastnfs"))
        {
            return PackageFamily::Vastnfs;
        }
        let first = self.first();
        if !self.outside_tree && first == "kernel" {
            return match self.parts.get(1).and_then(|d| d.strip_prefix("doca-ofed-")) {
                Some(ver) if dirs.len() > 1 => PackageFamily::UbuntuDoca(ver.to_string()),
                _ => PackageFamily::Distribution,
            };
        }
        // NVIDIA's stacks never ship sunrpc: an out-of-tree one is someone else's.
        let sunrpc = module_name_of_path(&self.rel()) == "sunrpc";
        let nvidia =
            |d: &&str| d.starts_with("mlnx") || d.contains("ofa_kernel") || d.contains("ofed");
        if self.outside_tree {
            // A build tree: NVIDIA's when a directory names its packages (`/usr/src/ofa_kernel/`,
            // `/var/lib/dkms/mlnx-ofed-kernel/`), not merely DKMS's.
            return match !sunrpc && dirs.iter().any(nvidia) {
                true => PackageFamily::NvidiaOfed,
                false => PackageFamily::Other(first.to_string()),
            };
        }
        let out_of_tree = matches!(first, "updates" | "extra") && !sunrpc;
        let inner = dirs.get(1..).unwrap_or_default();
        if out_of_tree && inner.iter().any(|d| nvidia(d) || *d == "dkms") {
            return PackageFamily::NvidiaOfed;
        }
        // DKMS's own directory on RHEL (`extra/`) and SLES (`updates/`): mlnx-ofa_kernel's
        // ib_core and mlnx-nfsrdma's rpcrdma are the DKMS builds of these modules there.
        if out_of_tree && inner.is_empty() {
            return PackageFamily::NvidiaOfed;
        }
        PackageFamily::Other(first.to_string())
    }

    /// Whether the file sits where DKMS installs its builds: `updates/dkms/`, or directly in
    /// `extra/` (RHEL) or `updates/` (SLES).
    pub fn dkms_layout(&self) -> bool {
        match self.origin() {
            ModuleOrigin::UpdatesDkms => true,
            ModuleOrigin::Extra | ModuleOrigin::Updates => self.dirs().len() == 1,
            _ => false,
        }
    }

    /// Whether a directory is named for `package` (`extra/mlnx-nfsrdma/`,
    /// `/usr/src/mlnx-nfsrdma-24.10/`).
    pub fn in_directory_of(&self, package: &str) -> bool {
        self.dirs().iter().any(|d| {
            d.strip_prefix(package)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
        })
    }
}

/// Every layout the stacks know, for the tables that show each decided once.
#[cfg(test)]
pub(crate) const LAYOUTS: &[&str] = &[
    "kernel/net/sunrpc/xprtrdma/rpcrdma.ko.zst",
    "kernel/doca-ofed-26.01/rpcrdma.ko.zst",
    "updates/dkms/rpcrdma.ko.zst",
    "updates/rpcrdma.ko",
    "extra/rpcrdma.ko.xz",
    "extra/mlnx-nfsrdma/rpcrdma.ko.xz",
    "updates/mlnx-nfsrdma/rpcrdma.ko",
    "weak-updates/mlnx-nfsrdma/rpcrdma.ko",
    "updates/bundle/net/sunrpc/xprtrdma/rpcrdma.ko",
    "extra/vastnfs/bundle/net/sunrpc/xprtrdma/rpcrdma.ko.xz",
    "extra/vastnfs-4.0.35/rpcrdma.ko",
    "updates/acme/rpcrdma.ko",
    "extra/acme-bundle-tools/rpcrdma.ko",
    "/lib/modules/6.8.0-45-generic/kernel/doca-ofed-26.01/rpcrdma.ko.zst",
    "/lib/modules/6.8.0-45-generic/updates/dkms/rpcrdma.ko",
    "/run/mellanox/drivers/lib/modules/6.8.0-45-generic/updates/dkms/rpcrdma.ko",
    "/usr/src/ofa_kernel/x86_64/6.8.0-45-generic/net/sunrpc/xprtrdma/rpcrdma.ko",
    "/usr/src/mlnx-nfsrdma-24.10/rpcrdma.ko",
    "/var/lib/dkms/rpcrdma-nvfs/1.0/6.8.0-45-generic/x86_64/module/rpcrdma.ko",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_follow_the_first_component() {
        assert_eq!(
            ModuleOrigin::of("kernel/net/sunrpc/xprtrdma/rpcrdma.ko"),
            ModuleOrigin::Inbox
        );
        assert_eq!(
            ModuleOrigin::of("updates/dkms/rpcrdma.ko.zst"),
            ModuleOrigin::UpdatesDkms
        );
        assert_eq!(
            ModuleOrigin::of("extra/mlnx-nfsrdma/rpcrdma.ko.xz"),
            ModuleOrigin::Extra
        );
        assert_eq!(
            ModuleOrigin::of("vastnfs/rpcrdma.ko"),
            ModuleOrigin::Other("vastnfs".into())
        );
    }
    use ModuleOrigin::*;
    use PackageFamily::*;

    #[test]
    fn each_layout_has_one_class_and_one_family() {
        let cases: Vec<(ModuleOrigin, PackageFamily)> = vec![
            (Inbox, Distribution),
            (Inbox, UbuntuDoca("26.01".into())),
            (UpdatesDkms, NvidiaOfed),
            (Updates, NvidiaOfed),
            (Extra, NvidiaOfed),
            (Extra, NvidiaOfed),
            (Updates, NvidiaOfed),
            (WeakUpdates, PackageFamily::Other("weak-updates".into())),
            (Updates, Vastnfs),
            (Extra, Vastnfs),
            (Extra, Vastnfs),
            (Updates, PackageFamily::Other("updates".into())),
            (Extra, PackageFamily::Other("extra".into())),
            (Inbox, UbuntuDoca("26.01".into())),
            (UpdatesDkms, NvidiaOfed),
            (UpdatesDkms, NvidiaOfed),
            (ModuleOrigin::Other("usr".into()), NvidiaOfed),
            (ModuleOrigin::Other("usr".into()), NvidiaOfed),
            (
                ModuleOrigin::Other("var".into()),
                PackageFamily::Other("var".into()),
            ),
        ];
        assert_eq!(cases.len(), LAYOUTS.len());
        for (path, (origin, family)) in LAYOUTS.iter().zip(cases) {
            let place = ModulePlace::of(path);
            assert_eq!((place.origin(), place.family()), (origin, family), "{path}");
            assert_eq!(ModuleOrigin::of(path), place.origin(), "{path}");
            assert_eq!(PackageFamily::of_path(path), place.family(), "{path}");
        }
    }

    #[test]
    fn the_modules_each_family_ships() {
        let cases = [
            ("updates/bundle/net/sunrpc/sunrpc.ko", Vastnfs),
            (
                "extra/mlnx-ofa_kernel/drivers/infiniband/core/ib_core.ko",
                NvidiaOfed,
            ),
            ("extra/ib_core.ko.xz", NvidiaOfed),
            ("extra/sunrpc.ko.xz", PackageFamily::Other("extra".into())),
            (
                "updates/dkms/sunrpc.ko",
                PackageFamily::Other("updates".into()),
            ),
        ];
        for (rel, family) in cases {
            assert_eq!(PackageFamily::of_path(rel), family, "{rel}");
        }
    }

    #[test]
    fn an_absolute_path_is_read_below_its_tree_and_a_container_is_named() {
        let p = ModulePlace::of(
            "/run/mellanox/drivers/lib/modules/6.8.0-45-generic/updates/dkms/rpcrdma.ko",
        );
        assert_eq!(p.rel(), "updates/dkms/rpcrdma.ko");
        assert_eq!(p.container, Some("/run/mellanox/drivers"));
        assert!(p.dkms_layout());
        let host = ModulePlace::of("/lib/modules/6.8.0-45-generic/extra/mlnx-nfsrdma/rpcrdma.ko");
        assert_eq!(
            (host.rel().as_str(), host.container),
            ("extra/mlnx-nfsrdma/rpcrdma.ko", None)
        );
        assert!(host.in_directory_of("mlnx-nfsrdma") && !host.dkms_layout());
        assert!(ModulePlace::of("/usr/src/mlnx-nfsrdma-24.10/rpcrdma.ko")
            .in_directory_of("mlnx-nfsrdma"));
        assert!(!ModulePlace::of("extra/mlnx-nfsrdmax/rpcrdma.ko").in_directory_of("mlnx-nfsrdma"));
    }
}
