//! The one way the helper mounts and unmounts: the [`Mounter`] trait.
//!
//! A backend says how a mount is made and undone; what it does to the machine it asks of the
//! [`System`]. Backends: [`super::mount_nfs::MountNfs`] (exec `mount.nfs`, the default) and
//! [`super::syscall::SyscallMount`] (mount(2) directly, for hosts without nfs-utils). Both are
//! [`Mounting`]: they unmount through an [`Unmounter`], which makes them a [`Mounter`]. The flow's
//! tests use the backend in `fake.rs`, which plays a simulated kernel's mount table.

use std::path::{Path, PathBuf};

use super::identity::MountIdentity;
use super::mover::{HeldTarget, MoveError, Mover};
use super::unmount::{UnmountError, Unmounter};
use crate::host::mounts::MountTable;
use crate::nfs::NfsSource;
use crate::nfs::NfsVersion;
use crate::system::System;

/// Everything a backend needs to mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountCall {
    /// The source exactly as mount(8) gave it.
    pub spec: String,
    pub source: NfsSource,
    pub target: PathBuf,
    /// The rebuilt option string.
    pub options: String,
    pub version: NfsVersion,
    pub sloppy: bool,
    pub no_mtab: bool,
    pub verbose: bool,
    /// When `target` is the helper's staging point: DIR, which what the mounter prints names
    /// instead (the admin asked for DIR; the staging point is nfs-gds's own business).
    pub shown_as: Option<PathBuf>,
}

/// How a mount attempt ended, when it could be made at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MountStatus {
    /// The program (or syscall) finished with this exit code.
    Exited(i32),
    /// The program was killed by this signal.
    Killed(i32),
}

impl MountStatus {
    pub fn success(self) -> bool {
        self == MountStatus::Exited(0)
    }

    /// The code to pass on to mount(8).
    pub fn exit_code(self) -> u8 {
        match self {
            MountStatus::Exited(c) => u8::try_from(c).unwrap_or(super::exit_code::FAIL),
            MountStatus::Killed(_) => super::exit_code::FAIL,
        }
    }

    pub fn from_exit_status(s: std::process::ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        match (s.code(), s.signal()) {
            (Some(c), _) => MountStatus::Exited(c),
            (None, Some(sig)) => MountStatus::Killed(sig),
            (None, None) => MountStatus::Exited(i32::from(super::exit_code::FAIL)),
        }
    }
}

impl std::fmt::Display for MountStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MountStatus::Exited(c) => write!(f, "exit status {c}"),
            MountStatus::Killed(s) => write!(f, "killed by signal {s}"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MountError {
    #[error("cannot run {}: {source}", program.display())]
    Spawn {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error("mount(2) of {spec} on {}: {source}", target.display())]
    Syscall {
        spec: String,
        target: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot resolve the server {host}: {reason}")]
    Resolve { host: String, reason: String },
    #[error("{0}")]
    Unsupported(String),
}

impl MountError {
    pub fn exit_code(&self) -> u8 {
        match self {
            MountError::Spawn { .. } | MountError::Unsupported(_) => super::exit_code::SYSERR,
            MountError::Syscall { .. } | MountError::Resolve { .. } => super::exit_code::FAIL,
        }
    }
}

pub trait Mounter {
    /// What [`Mounter::mount`] will do, as one line (a command line, or the syscall).
    fn plan(&self, call: &MountCall) -> String;
    /// Mounts through `system`; `Err` when the attempt could not be made (or mount(2) failed).
    fn mount(&mut self, system: &dyn System, call: &MountCall) -> Result<MountStatus, MountError>;
    /// Adds what the live kernel knows about a mount found in mountinfo (its unique id).
    fn identify(&self, mount: MountIdentity) -> MountIdentity {
        mount
    }
    /// Unmounts exactly `mount` through `system`, and nothing else that may be on its mount
    /// point.
    fn unmount(&mut self, system: &dyn System, mount: &MountIdentity) -> Result<(), UnmountError>;
    /// The command an admin should run when [`Mounter::unmount`] failed.
    fn unmount_command(&self, target: &Path) -> String;
    /// Holds DIR from before mounting until the move (see [`Mover::hold_target`]).
    fn hold_target(&self, target: &Path) -> Result<HeldTarget, MoveError>;
    /// Makes the staging area a private mount unless `table` shows it is one
    /// ([`Mover::isolate`]).
    fn isolate(
        &self,
        system: &dyn System,
        area: &Path,
        table: &MountTable,
    ) -> Result<bool, MoveError>;
    /// Moves the helper's verified mount from its staging point onto the held DIR.
    fn move_onto(
        &mut self,
        system: &dyn System,
        staged: &MountIdentity,
        target: &HeldTarget,
    ) -> Result<(), MoveError>;
}

/// A backend that mounts its own way and undoes its mounts through an [`Unmounter`]: it is a
/// [`Mounter`] whose `identify`, `unmount` and `unmount_command` are the unmounter's.
pub trait Mounting {
    /// As [`Mounter::plan`].
    fn plan(&self, call: &MountCall) -> String;
    /// As [`Mounter::mount`].
    fn mount(&mut self, system: &dyn System, call: &MountCall) -> Result<MountStatus, MountError>;
    /// What unmounts this backend's mounts.
    fn unmounter(&self) -> &Unmounter;
    /// What moves this backend's mounts from the staging point onto DIR.
    fn mover(&self) -> &Mover;
}

impl<B: Mounting> Mounter for B {
    fn plan(&self, call: &MountCall) -> String {
        Mounting::plan(self, call)
    }

    fn mount(&mut self, system: &dyn System, call: &MountCall) -> Result<MountStatus, MountError> {
        Mounting::mount(self, system, call)
    }

    fn identify(&self, mount: MountIdentity) -> MountIdentity {
        self.unmounter().identify(mount)
    }

    fn unmount(&mut self, system: &dyn System, mount: &MountIdentity) -> Result<(), UnmountError> {
        self.unmounter().unmount(system, mount)
    }

    fn unmount_command(&self, target: &Path) -> String {
        self.unmounter().command(target)
    }

    fn hold_target(&self, target: &Path) -> Result<HeldTarget, MoveError> {
        self.mover().hold_target(target)
    }

    fn isolate(
        &self,
        system: &dyn System,
        area: &Path,
        table: &MountTable,
    ) -> Result<bool, MoveError> {
        self.mover().isolate(system, area, table)
    }

    fn move_onto(
        &mut self,
        system: &dyn System,
        staged: &MountIdentity,
        target: &HeldTarget,
    ) -> Result<(), MoveError> {
        self.mover().move_onto(system, staged, target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_become_mount_exit_codes() {
        assert!(MountStatus::Exited(0).success());
        assert_eq!(MountStatus::Exited(32).exit_code(), 32);
        assert_eq!(MountStatus::Exited(1).exit_code(), 1);
        assert_eq!(MountStatus::Exited(-1).exit_code(), 32);
        assert_eq!(MountStatus::Killed(9).exit_code(), 32);
        assert!(!MountStatus::Killed(9).success());
        assert_eq!(MountStatus::Killed(9).to_string(), "killed by signal 9");
    }
}
