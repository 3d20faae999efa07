//! Every side effect nfs-gds has on the machine, behind one trait, as youki keeps one `Syscall`
//! trait: running a program (for its output, or with the helper's own terminal, as `mount.nfs`,
//! `modprobe` and `umount` run), mount(2) and umount2(2), entering a mount namespace, the clock,
//! the process's credentials and capabilities, resolving a server's name, opening nvidia-fs's
//! device for its live registration probe, and reading the process's stdin.
//!
//! Each effect is a [`Call`] value and its outcome an [`Answer`]; [`System::effect`] is the one
//! method, and the typed methods on `dyn System` are how callers ask. The implementations:
//!
//! - [`Live`]: this machine;
//! - the tree below `--root` (`host::io::tree_system`): commands answered from a bundle, the
//!   tree's own capabilities and `etc/hosts`, and never mount(2);
//! - [`Fake`]: for tests, every call recorded as a line and answered by a script;
//! - [`Recording`]: any system, every exchange kept in a [`Transcript`] (`collect` keeps the
//!   commands' outputs this way);
//! - [`Replay`]: answers from a transcript, and notes every call that departs from it.
//!
//! Reading files is not an effect here: reads go through the root's hardened reader.

pub mod call;
pub mod device_probe;
pub mod fake;
pub mod held;
pub mod live;
pub mod record;
pub mod replay;
pub mod stdin;

use std::ffi::OsString;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use call::{Answer, Call, Credentials, Failure, Output, Probed, StdinRead};
pub use fake::Fake;
pub use live::Live;
pub use record::{Exchange, Recording, Transcript};
pub use replay::Replay;

/// Where programs are searched, in order (sbin first: that is where nfs-utils and kmod live).
/// mount(8) removes `PATH` from every helper's environment, so nfs-gds never relies on it.
pub const SEARCH_PATH: &str = "/usr/sbin:/sbin:/usr/bin:/bin";

/// The machine's side effects: one call in, one answer out.
pub trait System: std::fmt::Debug {
    fn effect(&self, call: &Call) -> Answer;
}

/// An answer of the wrong kind for its call: only a broken replay gives one.
fn wrong(call: &Call, answer: &Answer) -> String {
    format!("`{call}` was answered {answer:?}")
}

impl dyn System + '_ {
    /// Runs `program` (a name in [`SEARCH_PATH`], or a path) for its output.
    pub fn run(&self, program: &str, args: &[&str]) -> Output {
        self.output(program, args, None)
    }

    /// As [`run`](Self::run), for a program that may hang (`gdscheck -p` opens every GPU):
    /// stopped after `limit`, answering `code: None` and a stderr that says so.
    pub fn run_bounded(&self, program: &str, args: &[&str], limit: Duration) -> Output {
        self.output(program, args, Some(limit))
    }

    fn output(&self, program: &str, args: &[&str], limit: Option<Duration>) -> Output {
        self.output_of(Call::Output {
            program: program.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            limit,
        })
    }

    fn output_of(&self, call: Call) -> Output {
        match self.effect(&call) {
            Answer::Output(o) => o,
            other => Output::Ran {
                code: None,
                stdout: String::new(),
                stderr: wrong(&call, &other),
            },
        }
    }

    /// Runs the host's `program` (an absolute path) for its output, stopped after `limit` (see
    /// [`Call::Run`]).
    pub fn run_host(&self, program: &Path, args: &[&str], limit: Duration) -> Output {
        self.output_of(Call::Run {
            program: program.to_owned(),
            args: args.iter().map(|a| a.to_string()).collect(),
            limit,
        })
    }

    /// Runs `program` with nfs-gds's own stdin, stdout and stderr and waits for it.
    pub fn exec(
        &self,
        program: &Path,
        args: Vec<OsString>,
    ) -> std::io::Result<std::process::ExitStatus> {
        self.exec_with(program, args, false)
    }

    /// As [`exec`](Self::exec), passing on a held signal that arrives meanwhile: for
    /// `mount.nfs`, which must stop retrying when the helper is told to stop.
    pub fn exec_passing_signals(
        &self,
        program: &Path,
        args: Vec<OsString>,
    ) -> std::io::Result<std::process::ExitStatus> {
        self.exec_with(program, args, true)
    }

    /// As [`exec_passing_signals`](Self::exec_passing_signals), with each line the program
    /// prints passed on with `from` shown as `to`.
    pub fn exec_showing(
        &self,
        program: &Path,
        args: Vec<OsString>,
        from: &Path,
        to: &Path,
    ) -> std::io::Result<std::process::ExitStatus> {
        self.exec_call(Call::Exec {
            program: program.to_owned(),
            args,
            pass_signals: true,
            shown: Some((from.to_owned(), to.to_owned())),
        })
    }

    fn exec_with(
        &self,
        program: &Path,
        args: Vec<OsString>,
        pass_signals: bool,
    ) -> std::io::Result<std::process::ExitStatus> {
        self.exec_call(Call::Exec {
            program: program.to_owned(),
            args,
            pass_signals,
            shown: None,
        })
    }

    fn exec_call(&self, call: Call) -> std::io::Result<std::process::ExitStatus> {
        use std::os::unix::process::ExitStatusExt;
        match self.effect(&call) {
            Answer::Exited(Ok(raw)) => Ok(std::process::ExitStatus::from_raw(raw)),
            Answer::Exited(Err(f)) => Err(f.to_io()),
            other => Err(std::io::Error::other(wrong(&call, &other))),
        }
    }

    /// mount(2).
    pub fn mount(
        &self,
        source: &str,
        target: &Path,
        fstype: &str,
        flags: u64,
        data: &str,
    ) -> std::io::Result<()> {
        self.done(&Call::Mount {
            source: source.to_string(),
            target: target.to_owned(),
            fstype: fstype.to_string(),
            flags,
            data: data.to_string(),
        })
    }

    /// mount(2) with `MS_BIND`.
    pub fn bind(&self, source: &Path, target: &Path) -> std::io::Result<()> {
        self.done(&Call::Bind {
            source: source.to_owned(),
            target: target.to_owned(),
        })
    }

    /// mount(2) with `MS_PRIVATE`.
    pub fn make_private(&self, target: &Path) -> std::io::Result<()> {
        self.done(&Call::MakePrivate {
            target: target.to_owned(),
        })
    }

    /// move_mount(2) of the mount `from` resolves to onto `to` (see [`Call::MoveMount`]).
    pub fn move_mount(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        self.done(&Call::MoveMount {
            from: from.to_owned(),
            to: to.to_owned(),
        })
    }

    /// umount2(2).
    pub fn unmount(&self, target: &Path, detach: bool) -> std::io::Result<()> {
        self.done(&Call::Unmount {
            target: target.to_owned(),
            detach,
        })
    }

    /// setns(2) into the mount namespace of `path`.
    pub fn enter_namespace(&self, path: &Path) -> Result<(), Failure> {
        let call = Call::EnterNamespace {
            path: path.to_owned(),
        };
        match self.effect(&call) {
            Answer::Done(r) => r,
            other => Err(Failure::other(wrong(&call, &other))),
        }
    }

    fn done(&self, call: &Call) -> std::io::Result<()> {
        match self.effect(call) {
            Answer::Done(r) => r.map_err(|f| f.to_io()),
            other => Err(std::io::Error::other(wrong(call, &other))),
        }
    }

    /// Monotonic time since an arbitrary start.
    pub fn now(&self) -> Duration {
        match self.effect(&Call::Now) {
            Answer::Time(t) => t,
            _ => Duration::ZERO,
        }
    }

    /// The wall clock; an answer of the wrong kind is the epoch.
    pub fn wall_clock(&self) -> std::time::SystemTime {
        match self.effect(&Call::WallClock) {
            Answer::WallTime(t) => std::time::UNIX_EPOCH + t,
            _ => std::time::UNIX_EPOCH,
        }
    }

    pub fn sleep(&self, duration: Duration) {
        let _ = self.effect(&Call::Sleep { duration });
    }

    /// The real and effective ids; an answer of the wrong kind is nobody's.
    pub fn credentials(&self) -> Credentials {
        match self.effect(&Call::Credentials) {
            Answer::Credentials(c) => c,
            _ => Credentials {
                uids: (u32::MAX, u32::MAX),
                gids: (u32::MAX, u32::MAX),
            },
        }
    }

    /// Whether the effective set holds CAP_SYS_ADMIN; `Err` says why it cannot be told.
    pub fn has_sys_admin(&self) -> Result<bool, String> {
        match self.effect(&Call::HasSysAdmin) {
            Answer::HasSysAdmin(r) => r,
            other => Err(wrong(&Call::HasSysAdmin, &other)),
        }
    }

    /// The addresses `host` resolves to.
    pub fn resolve(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        let call = Call::Resolve {
            host: host.to_string(),
        };
        match self.effect(&call) {
            Answer::Addresses(Ok(a)) => Ok(a),
            Answer::Addresses(Err(e)) => Err(std::io::Error::new(std::io::ErrorKind::NotFound, e)),
            other => Err(std::io::Error::other(wrong(&call, &other))),
        }
    }

    /// Opens the device `device` (only the node the kernel names `name`), reads `list` while it
    /// is open, and closes it (see [`Call::ProbeDevice`]).
    pub fn probe_device(&self, device: &Path, name: &str, list: &Path) -> Probed {
        let call = Call::ProbeDevice {
            device: device.to_owned(),
            name: name.to_string(),
            list: list.to_owned(),
        };
        match self.effect(&call) {
            Answer::Probed(p) => p,
            other => Probed::CannotOpen(wrong(&call, &other)),
        }
    }

    /// Whether stdin is a terminal; an answer of the wrong kind says it is not.
    pub fn stdin_is_terminal(&self) -> bool {
        matches!(
            self.effect(&Call::StdinIsTerminal),
            Answer::IsTerminal(true)
        )
    }

    /// What stdin holds now, waiting at most `wait` for something to come (see
    /// [`Call::ReadStdin`]).
    pub fn read_stdin(&self, wait: Duration) -> Result<StdinRead, String> {
        let call = Call::ReadStdin { wait };
        match self.effect(&call) {
            Answer::Stdin(r) => r,
            other => Err(wrong(&call, &other)),
        }
    }
}

/// The absolute path of an executable `name` in [`SEARCH_PATH`] below `base` (`/` for this
/// machine, a tree's directory for its own recording fakes).
pub fn find_program(base: &Path, name: &str) -> Option<PathBuf> {
    let dirs: Vec<PathBuf> = SEARCH_PATH
        .split(':')
        .map(|d| base.join(d.trim_start_matches('/')))
        .collect();
    // A directory whose path contains ':' cannot be expressed as a search list.
    let list = std::env::join_paths(dirs).ok()?;
    which::which_in(name, Some(list), base).ok()
}
