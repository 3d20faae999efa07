//! Recording fakes of every side effect, for unit tests.
//!
//! The fakes here model no kernel behaviour: a test's `on_mount` decides what a mount call does.
//! The simulated kernels of the flow tests (`flow/tests/kernel_table.rs` and its users) model
//! what the VM suite showed the real kernel does to the mount table — lowest-free mount ids and
//! device minors, pins, and a shared NFS superblock's naming — and say which behaviours they
//! leave out.

use std::cell::{Cell, RefCell};
use std::path::Path;
use std::time::Duration;

use super::clock::Clock;
use super::identity::MountIdentity;
use super::modprobe::{LoadError, ModuleLoader};
use super::mounter::{MountCall, MountError, MountStatus, Mounter};
use super::privilege::Privileges;
use super::unmount::{Pin, UnmountError};

/// Virtual time: sleeping advances it and is recorded.
#[derive(Debug, Default)]
pub struct FakeClock {
    now: Cell<Duration>,
    sleeps: RefCell<Vec<Duration>>,
}

impl FakeClock {
    pub fn sleeps(&self) -> Vec<Duration> {
        self.sleeps.borrow().clone()
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Duration {
        self.now.get()
    }

    fn sleep(&self, d: Duration) {
        self.now.set(self.now.get() + d);
        self.sleeps.borrow_mut().push(d);
    }
}

#[derive(Debug, Clone)]
pub struct FakePrivileges {
    pub uids: (u32, u32),
    pub gids: (u32, u32),
    pub admin: Result<bool, String>,
}

impl FakePrivileges {
    pub fn root() -> Self {
        FakePrivileges {
            uids: (0, 0),
            gids: (0, 0),
            admin: Ok(true),
        }
    }
}

impl Privileges for FakePrivileges {
    fn uids(&self) -> (u32, u32) {
        self.uids
    }

    fn gids(&self) -> (u32, u32) {
        self.gids
    }

    fn has_sys_admin(&self) -> Result<bool, String> {
        self.admin.clone()
    }
}

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

    fn mount(&mut self, call: &MountCall) -> Result<MountStatus, MountError> {
        self.calls.push(self.plan(call));
        (self.on_mount)(call)
    }

    fn pin(&self, mount: &MountIdentity) -> Option<Pin> {
        self.on_pin.as_ref().and_then(|f| f(mount))
    }

    fn unmount(&mut self, mount: &MountIdentity) -> Result<(), UnmountError> {
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

type OnLoad = Box<dyn FnMut(&str) -> Result<(), LoadError>>;

pub struct RecordingLoader {
    pub calls: Vec<String>,
    pub on_load: OnLoad,
}

impl std::fmt::Debug for RecordingLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingLoader")
            .field("calls", &self.calls)
            .finish_non_exhaustive()
    }
}

impl RecordingLoader {
    pub fn new(on_load: impl FnMut(&str) -> Result<(), LoadError> + 'static) -> Self {
        RecordingLoader {
            calls: Vec::new(),
            on_load: Box::new(on_load),
        }
    }
}

impl ModuleLoader for RecordingLoader {
    fn plan(&self, module: &str) -> String {
        format!("fake-modprobe {module}")
    }

    fn load(&mut self, module: &str) -> Result<(), LoadError> {
        self.calls.push(module.to_string());
        (self.on_load)(module)
    }
}

/// A failed exit status, for fakes that fail.
pub fn failed_status(code: i32) -> std::process::ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    std::process::ExitStatus::from_raw(code << 8)
}
