//! The running kernel's identity: its release string and, where the distribution reveals it, the
//! upstream version behind that string.
//!
//! Release strings hide the stable version (Debian's `6.1.0-50-amd64` is 6.1.176), so the upstream
//! version is taken from `/proc/version` (Debian prints `Debian 6.1.176-1`) or Ubuntu's
//! `/proc/version_signature` (`Ubuntu 5.15.0-91.101-generic 5.15.131`), and from the release string
//! only as a last resort, flagged as such.

use serde::Serialize;

use super::io::error::HostError;
use super::io::root::{read_first_line, Root};

/// An upstream kernel version, `major.minor.patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct KernelVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl std::fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl KernelVersion {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        KernelVersion {
            major,
            minor,
            patch,
        }
    }
}

/// Where an upstream version came from, from most to least trustworthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VersionSource {
    /// `/proc/version_signature` (Ubuntu).
    VersionSignature,
    /// The distribution's package version printed in `/proc/version` (Debian).
    ProcVersion,
    /// The leading digits of the release string: exact for mainline and stable builds, but a
    /// vendor kernel may carry backports the number does not show.
    Release,
}

/// What is known about the running kernel.
#[derive(Debug, Clone, Serialize)]
pub struct KernelInfo {
    /// `uname -r`, from `/proc/sys/kernel/osrelease`.
    pub release: Option<String>,
    /// The first line of `/proc/version`.
    pub proc_version: Option<String>,
    pub version_signature: Option<String>,
    pub upstream: Option<KernelVersion>,
    pub upstream_source: Option<VersionSource>,
}

impl KernelInfo {
    pub fn read(root: &Root) -> Result<Self, HostError> {
        let release = read_first_line(root, "proc/sys/kernel/osrelease")?.filter(|r| {
            // The release names directories (`lib/modules/<release>`, `boot/vmlinuz-<release>`):
            // one with `/` or `..` in it would name others.
            let plain = super::io::reader::is_plain_name(r);
            if !plain {
                tracing::warn!(
                    "{}: kernel release {r:?} is not a plain name (it has '/' or '..'): taking the release as unknown",
                    root.join("proc/sys/kernel/osrelease").display()
                );
            }
            plain
        });
        let proc_version = read_first_line(root, "proc/version")?;
        let version_signature = read_first_line(root, "proc/version_signature")?;
        Ok(Self::from_parts(release, proc_version, version_signature))
    }

    pub fn from_parts(
        release: Option<String>,
        proc_version: Option<String>,
        version_signature: Option<String>,
    ) -> Self {
        let (upstream, upstream_source) = if let Some(v) = version_signature
            .as_deref()
            .and_then(parse_version_signature)
        {
            (Some(v), Some(VersionSource::VersionSignature))
        } else if let Some(v) = proc_version.as_deref().and_then(parse_debian_proc_version) {
            (Some(v), Some(VersionSource::ProcVersion))
        } else if let Some(v) = release.as_deref().and_then(parse_leading_version) {
            (Some(v), Some(VersionSource::Release))
        } else {
            (None, None)
        };
        KernelInfo {
            release,
            proc_version,
            version_signature,
            upstream,
            upstream_source,
        }
    }
}

/// `1.2.3`, `1.2` (patch 0) at the start of `s`, ignoring what follows the last number.
pub fn parse_leading_version(s: &str) -> Option<KernelVersion> {
    let mut parts = s.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    // Only '.' may separate the numbers we take.
    let rest = &s[s.find('.')? + 1..];
    let minor_str: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let minor = minor_str.parse().ok()?;
    let after_minor = &rest[minor_str.len()..];
    let patch = after_minor
        .strip_prefix('.')
        .map(|p| {
            p.chars()
                .take_while(|c| c.is_ascii_digit())
                .collect::<String>()
        })
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    Some(KernelVersion::new(major, minor, patch))
}

/// Ubuntu: `Ubuntu 5.15.0-91.101-generic 5.15.131` — the last word is the upstream version.
pub fn parse_version_signature(s: &str) -> Option<KernelVersion> {
    s.split_whitespace().last().and_then(parse_leading_version)
}

/// Debian: `Linux version 6.1.0-50-amd64 (...) #1 SMP PREEMPT_DYNAMIC Debian 6.1.176-1 (2026-..)`.
pub fn parse_debian_proc_version(s: &str) -> Option<KernelVersion> {
    let mut words = s.split_whitespace();
    while let Some(w) = words.next() {
        if w == "Debian" {
            if let Some(v) = words.clone().next().and_then(parse_leading_version) {
                return Some(v);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_proc_version_reveals_the_stable_release() {
        let line = "Linux version 6.1.0-50-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.176-1 (2026-05-02)";
        assert_eq!(
            parse_debian_proc_version(line),
            Some(KernelVersion::new(6, 1, 176))
        );
    }

    #[test]
    fn ubuntu_signature_last_word_is_upstream() {
        assert_eq!(
            parse_version_signature("Ubuntu 5.15.0-91.101-generic 5.15.131"),
            Some(KernelVersion::new(5, 15, 131))
        );
    }

    #[test]
    fn release_string_is_the_weakest_source() {
        let k = KernelInfo::from_parts(Some("6.8.0-45-generic".into()), None, None);
        assert_eq!(k.upstream, Some(KernelVersion::new(6, 8, 0)));
        assert_eq!(k.upstream_source, Some(VersionSource::Release));
        let k = KernelInfo::from_parts(
            Some("6.1.0-50-amd64".into()),
            Some("Linux version 6.1.0-50-amd64 #1 SMP Debian 6.1.176-1 (2026)".into()),
            None,
        );
        assert_eq!(k.upstream, Some(KernelVersion::new(6, 1, 176)));
        assert_eq!(k.upstream_source, Some(VersionSource::ProcVersion));
    }

    #[test]
    fn odd_strings_give_no_version() {
        assert_eq!(parse_leading_version("abc"), None);
        assert_eq!(parse_leading_version("6"), None);
        assert_eq!(parse_leading_version("6.x"), None);
        assert_eq!(
            parse_leading_version("5.14"),
            Some(KernelVersion::new(5, 14, 0))
        );
        assert_eq!(
            parse_leading_version("5.14.0-427.13.1.el9_4.x86_64"),
            Some(KernelVersion::new(5, 14, 0))
        );
    }
}
