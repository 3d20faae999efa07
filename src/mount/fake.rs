//! A recording backend for the mount flow's unit tests; every other effect is the one fake
//! system's ([`crate::system::Fake`]).
//!
//! The backend models no kernel behaviour: a test's `on_mount` decides what a mount call does to
//! the tree's mount table, `on_unmount` what an unmount does to the exact mount it is given, and
//! `on_pin` whether a mount can be pinned. The simulated kernels of the flow tests
//! (`flow/tests/kernel_table.rs` and its users) model what the VM suite showed the real kernel
//! does to the mount table — lowest-free mount ids and device minors, pins, and a shared NFS
//! superblock's naming — and say which behaviours they leave out. It is a backend rather than a
//! script of the fake system because unmounting is by identity (the mount a descriptor holds),
//! which a simulated kernel needs whole.

use std::path::Path;

use super::identity::MountIdentity;
use super::mounter::{MountCall, MountError, MountStatus, Mounter};
use super::unmount::{Pin, UnmountError};
use crate::system::System;

type OnMount = Box<dyn FnMut(&MountCall) -> Result<MountStatus, MountError>>;
type OnUnmount = Box<dyn FnMut(&MountIdentity) -> Result<(), UnmountError>>;
type OnPin = Box<dyn Fn(&MountIdentity) -> Option<Pin>>;

/// Records every call as a line; what a call does is up to the test.
pub struct RecordingMounter {
    pub calls: Vec<String>,
    pub on_mount: OnMount,
    pub on_unmount: OnUnmount,
    /// What pinning does; by default nothing can be pinned (as below a fixture root).
    pub on_pin: Option<OnPin>,
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
            on_pin: None,
        }
    }

    /// The same mounter, pinning mounts with `on_pin`.
    pub fn pinning(mut self, on_pin: impl Fn(&MountIdentity) -> Option<Pin> + 'static) -> Self {
        self.on_pin = Some(Box::new(on_pin));
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

    fn pin(&self, mount: &MountIdentity) -> Option<Pin> {
        self.on_pin.as_ref().and_then(|f| f(mount))
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
}

/// A failed exit status, for fakes that fail.
pub fn failed_status(code: i32) -> std::process::ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    std::process::ExitStatus::from_raw(code << 8)
}
