//! Which Debian package owns which part of a kernel release. From 6.19 (linux 6.19~rc4-1~exp1:
//! "Split kernel modules into own package", "Move kernel binary into own package") Debian's
//! `linux-image-<release>` is a metapackage that depends on `linux-binary-<release>` (the image,
//! `/usr/lib/modules/<release>/vmlinuz`), `linux-modules-<release>` (`kernel/…`,
//! `modules.*` from depmod) and `linux-base-<release>` (`config`, `System.map`,
//! `modules.builtin`, `modules.order`); before, `linux-image-<release>` held them all. Read
//! from the packages' own control files and file lists (7.3.4-1~bpo13+1, 7.2.13-1,
//! 6.12.117-1).

use serde::Serialize;

/// The packages of one kernel release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelPackages {
    /// What `apt-get install` names to get the kernel (the metapackage after the split).
    pub image: String,
    /// The package that owns the module tree's modules.
    pub modules: String,
    /// The package that owns the kernel image.
    pub binary: String,
    /// The package that owns `config` and `System.map`.
    pub base: String,
    /// How the split was told: from the package database, or from the release (no record).
    pub evidence: String,
}

impl KernelPackages {
    /// Whether the release is packaged in the split layout.
    pub fn split(&self) -> bool {
        self.modules != self.image
    }
}

/// The packages of `release`, from the installed packages `debs` (dpkg's status) where they
/// name it, else from the release's version (6.19 and later are split) where the release is
/// Debian's (`<version>+debNN-<flavour>`, trixie on). `None` where neither tells (another
/// distribution's layout, such as Ubuntu's `linux-modules-<release>` beside an image package).
pub fn debian_kernel_packages(
    release: &str,
    debs: Option<&[(String, String)]>,
) -> Option<KernelPackages> {
    let name = |prefix: &str| format!("{prefix}-{release}");
    let installed = |p: &str| debs.is_some_and(|d| d.iter().any(|(n, _)| n == p));
    let split_by_db = installed(&name("linux-binary"));
    let classic_by_db =
        !split_by_db && installed(&name("linux-image")) && !installed(&name("linux-modules"));
    let (split, evidence) = if split_by_db {
        (
            true,
            format!("{} is installed (dpkg status)", name("linux-binary")),
        )
    } else if classic_by_db {
        (
            false,
            format!(
                "{} is installed and no {} (dpkg status)",
                name("linux-image"),
                name("linux-modules")
            ),
        )
    } else {
        let (major, minor) = debian_version(release)?;
        (
            (major, minor) >= (6, 19),
            format!("no package of {release} in dpkg status; Debian splits kernels from 6.19"),
        )
    };
    let image = name("linux-image");
    Some(if split {
        KernelPackages {
            modules: name("linux-modules"),
            binary: name("linux-binary"),
            base: name("linux-base"),
            image,
            evidence,
        }
    } else {
        KernelPackages {
            modules: image.clone(),
            binary: image.clone(),
            base: image.clone(),
            image,
            evidence,
        }
    })
}

/// `(major, minor)` of a Debian kernel release (`7.3.4+deb13-amd64`).
fn debian_version(release: &str) -> Option<(u32, u32)> {
    if !release.contains("+deb") {
        return None;
    }
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn debs(names: &[&str]) -> Vec<(String, String)> {
        names.iter().map(|n| (n.to_string(), "1".into())).collect()
    }

    #[test]
    fn seven_x_is_split_and_six_twelve_is_not() {
        let installed = debs(&[
            "linux-image-7.3.4+deb13-amd64",
            "linux-modules-7.3.4+deb13-amd64",
            "linux-binary-7.3.4+deb13-amd64",
            "linux-base-7.3.4+deb13-amd64",
            "linux-image-6.12.117+deb13-amd64",
        ]);
        let p = debian_kernel_packages("7.3.4+deb13-amd64", Some(&installed)).unwrap();
        assert!(p.split());
        assert_eq!(p.modules, "linux-modules-7.3.4+deb13-amd64");
        assert_eq!(p.binary, "linux-binary-7.3.4+deb13-amd64");
        assert_eq!(p.base, "linux-base-7.3.4+deb13-amd64");
        assert!(p.evidence.contains("dpkg status"), "{}", p.evidence);
        let p = debian_kernel_packages("6.12.117+deb13-amd64", Some(&installed)).unwrap();
        assert!(!p.split());
        assert_eq!(p.modules, "linux-image-6.12.117+deb13-amd64");
    }

    #[test]
    fn without_a_record_the_version_tells() {
        let p = debian_kernel_packages("7.2.13+deb14-amd64", None).unwrap();
        assert_eq!(p.modules, "linux-modules-7.2.13+deb14-amd64");
        assert!(p.evidence.contains("from 6.19"), "{}", p.evidence);
        let p = debian_kernel_packages("6.12.117+deb13-amd64", Some(&[])).unwrap();
        assert!(!p.split());
        // Ubuntu's own split (linux-modules beside linux-image) is not Debian's.
        let ubuntu = debs(&[
            "linux-image-6.8.0-45-generic",
            "linux-modules-6.8.0-45-generic",
        ]);
        assert_eq!(
            debian_kernel_packages("6.8.0-45-generic", Some(&ubuntu)),
            None
        );
        assert_eq!(debian_kernel_packages("6.1.0-50-amd64", None), None);
        assert_eq!(debian_kernel_packages("5.14.0-427.el9.x86_64", None), None);
        assert_eq!(debian_kernel_packages("7.3.0", None), None);
    }
}
