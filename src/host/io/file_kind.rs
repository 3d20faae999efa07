//! The kinds of file nfs-gds reads, and what each kind may be: its cap in bytes, its longest
//! line, whether `fstat`'s size can be trusted, the noun an error names it by, and the kind a
//! well-known host path is read as. The reader ([`super::reader`]) enforces what is declared here.

use std::ffi::OsStr;
use std::path::Path;

/// What a file is read as, which decides how large it may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A small text file: a sysfs attribute, `os-release`, a version file, a command output.
    Text,
    /// The nfs-gds policy.
    Policy,
    /// `mountinfo`, `mountstats`, `mounts`, `fstab`.
    MountTable,
    /// `/proc/kallsyms`.
    Kallsyms,
    /// `modules.dep`, `modules.alias`, `modules.builtin` and their kin.
    ModuleIndex,
    /// A kernel module, plain or compressed.
    ModuleFile,
    /// A `vmlinuz`/`vmlinux`/`Image`.
    KernelImage,
    /// A JSON configuration such as `cufile.json`.
    Config,
    /// Kubernetes manifests handed to `lint` (a file, or a pipe from `kustomize build`).
    Manifests,
}

impl FileKind {
    /// The most bytes a file of this kind may hold. Each is far above what real machines have
    /// (a policy is a few KB; kallsyms of a distribution kernel about 15 MB; mountstats about
    /// 3.3 KB per NFS mount, and a mount namespace holds at most 100,000 mounts by default
    /// (`fs.mount-max`), some 330 MB, so a mount table is allowed three times that; a
    /// compressed module a few MB, the largest plain ones about 100 MB; kernel images under
    /// 100 MB unless they carry debug information). The mount tables are streamed, never
    /// held whole by the commands that judge mounts: their cap bounds time, not memory.
    pub fn cap(self) -> u64 {
        const MIB: u64 = 1 << 20;
        match self {
            FileKind::Text => 16 * MIB,
            FileKind::Policy => MIB,
            FileKind::MountTable => 1024 * MIB,
            FileKind::Kallsyms => 256 * MIB,
            FileKind::ModuleIndex => 64 * MIB,
            FileKind::ModuleFile => 256 * MIB,
            FileKind::KernelImage => 1024 * MIB,
            FileKind::Config => 4 * MIB,
            FileKind::Manifests => 64 * MIB,
        }
    }

    /// The longest line a file of this kind read line by line may have ([`super::lines`](crate::host::io::lines)):
    /// what one line may make the reader hold. A mount table's line is a mount point (4,096
    /// bytes, four times that escaped) and its options, or one counter line of mountstats.
    /// `None`: a line may be as long as the file.
    pub fn line_cap(self) -> Option<u64> {
        match self {
            FileKind::MountTable => Some(1 << 20),
            _ => None,
        }
    }

    /// Whether a file of this kind lives on a disk, where `fstat`'s size is the size of what
    /// can be read (procfs and sysfs files, read as text, mount tables and kallsyms, say 0 or
    /// 4096 whatever they hold).
    pub(super) fn size_is_true(self) -> bool {
        matches!(
            self,
            FileKind::Policy
                | FileKind::ModuleIndex
                | FileKind::ModuleFile
                | FileKind::KernelImage
                | FileKind::Config
                | FileKind::Manifests
        )
    }

    /// How an error names a file of this kind.
    pub fn noun(self) -> &'static str {
        match self {
            FileKind::Text => "text file",
            FileKind::Policy => "policy file",
            FileKind::MountTable => "mount table",
            FileKind::Kallsyms => "kallsyms",
            FileKind::ModuleIndex => "module index",
            FileKind::ModuleFile => "module file",
            FileKind::KernelImage => "kernel image",
            FileKind::Config => "configuration file",
            FileKind::Manifests => "set of manifests",
        }
    }

    /// The kind a host path is read as when the caller does not say: by its well-known name.
    pub fn of(path: &Path) -> FileKind {
        let name = path.file_name().and_then(OsStr::to_str).unwrap_or("");
        let p = path.to_string_lossy();
        if p.ends_with("/mountinfo")
            || p.ends_with("/mountstats")
            || p.ends_with("/mounts")
            || p.ends_with("etc/fstab")
        {
            FileKind::MountTable
        } else if name == "kallsyms" {
            FileKind::Kallsyms
        } else if name.starts_with("modules.") {
            FileKind::ModuleIndex
        } else if name.ends_with(".ko")
            || [".ko.xz", ".ko.gz", ".ko.zst"]
                .iter()
                .any(|s| name.ends_with(s))
        {
            FileKind::ModuleFile
        } else if ["vmlinuz-", "vmlinux-", "Image-"]
            .iter()
            .any(|s| name.starts_with(s))
        {
            FileKind::KernelImage
        } else if name.ends_with(".toml") {
            FileKind::Policy
        } else if name.ends_with(".json") {
            FileKind::Config
        } else {
            FileKind::Text
        }
    }
}
