//! A recording backend for the mount flow's unit tests; every other effect is the one fake
//! system's ([`crate::system::Fake`]).
//!
//! The backend models no kernel behaviour: a test's `on_mount` decides what a mount call does to
//! the tree's mount table, `on_unmount` what an unmount does to the exact mount it is given, and
//! `on_move` what moving the staged mount onto DIR does. The simulated kernels of the flow tests
//! (`flow/tests/kernel_table.rs` and its users) model what the VM suite showed the real kernel
//! does to the mount table — lowest-free mount ids and device minors, a shared NFS superblock's
//! naming, a mount moved from the staging point keeping its id — and say which behaviours they
//! leave out. It is a backend rather than a
//! script of the fake system because unmounting is by identity (the mount a descriptor holds),
//! which a simulated kernel needs whole.

use std::path::Path;

use super::identity::MountIdentity;
use super::mounter::{MountCall, MountError, MountStatus, Mounter};
use super::mover::{HeldTarget, MoveError};
use super::unmount::UnmountError;
use crate::host::mounts::MountTable;
use crate::system::System;

type OnMount = Box<dyn FnMut(&MountCall) -> Result<MountStatus, MountError>>;
type OnUnmount = Box<dyn FnMut(&MountIdentity) -> Result<(), UnmountError>>;
type OnMove = Box<dyn FnMut(&MountIdentity, &Path) -> Result<(), MoveError>>;

/// Records every call as a line; what a call does is up to the test.
pub struct RecordingMounter {
    pub calls: Vec<String>,
    pub on_mount: OnMount,
    pub on_unmount: OnUnmount,
    /// What moving a staged mount onto DIR does to the table; by default nothing.
    pub on_move: Option<OnMove>,
}

impl std::fmt::Debug for RecordingMounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingMounter")
            .field("calls", &self.calls)
            .finish_non_exhaustive()
    }
}

impl RecordingMounter {
    pub fn new(
        on_mount: impl FnMut(&MountCall) -> Result<MountStatus, MountError> + 'static,
        on_unmount: impl FnMut(&MountIdentity) -> Result<(), UnmountError> + 'static,
    ) -> Self {
        RecordingMounter {
            calls: Vec::new(),
            on_mount: Box::new(on_mount),
            on_unmount: Box::new(on_unmount),
            on_move: None,
        }
    }

    /// The same mounter, moving staged mounts with `on_move` (the staged mount, DIR).
    pub fn moving(
        mut self,
        on_move: impl FnMut(&MountIdentity, &Path) -> Result<(), MoveError> + 'static,
    ) -> Self {
        self.on_move = Some(Box::new(on_move));
        self
    }
}

impl Mounter for RecordingMounter {
    fn plan(&self, call: &MountCall) -> String {
        format!(
            "fake-mount {} {} -o {}",
            call.spec,
            call.target.display(),
            call.options
        )
    }

    fn mount(&mut self, _: &dyn System, call: &MountCall) -> Result<MountStatus, MountError> {
        self.calls.push(self.plan(call));
        (self.on_mount)(call)
    }

    fn unmount(&mut self, _: &dyn System, mount: &MountIdentity) -> Result<(), UnmountError> {
        self.calls.push(format!(
            "unmount {} (id {}, device {})",
            mount.mount_point.display(),
            mount.mount_id,
            mount.device
        ));
        (self.on_unmount)(mount)
    }

    fn unmount_command(&self, target: &Path) -> String {
        format!("umount {}", target.display())
    }

    fn hold_target(&self, target: &Path) -> Result<HeldTarget, MoveError> {
        Ok(HeldTarget::by_path(target))
    }

    fn isolate(&self, _: &dyn System, _: &Path, _: &MountTable) -> Result<bool, MoveError> {
        Ok(false)
    }

    fn move_onto(
        &mut self,
        _: &dyn System,
        staged: &MountIdentity,
        target: &HeldTarget,
    ) -> Result<(), MoveError> {
        self.calls.push(format!(
            "move {} (id {}) onto {}",
            staged.mount_point.display(),
            staged.mount_id,
            target.path.display()
        ));
        match self.on_move.as_mut() {
            Some(f) => f(staged, &target.path),
            None => Ok(()),
        }
    }
}

/// A failed exit status, for fakes that fail.
pub fn failed_status(code: i32) -> std::process::ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    std::process::ExitStatus::from_raw(code << 8)
}
