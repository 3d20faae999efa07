//! Every effect as a value: a [`Call`] says what nfs-gds asks of the machine, an [`Answer`] what
//! came back. The [`System`](super::System) trait has one method from one to the other, so a
//! recording keeps exchanges and a replay hands them back without knowing any single effect.

use std::ffi::OsString;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What nfs-gds asks of the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// Run a program for what it prints: stdin empty, `LC_ALL=C`, stdout and stderr kept, and
    /// stopped after `limit` when one is given. `program` is a name found in
    /// [`SEARCH_PATH`](super::SEARCH_PATH), or an absolute path.
    Output {
        program: String,
        args: Vec<String>,
        limit: Option<Duration>,
    },
    /// Run `program`, an absolute path of the host's (below a tree's root: the tree's own
    /// recording fake, as for [`Call::Exec`]), for what it prints: stdin empty, `LC_ALL=C`,
    /// stdout and stderr kept, and stopped after `limit`. For a program whose answer decides
    /// what nfs-gds does next (`scontrol`), which a bundle's recorded outputs cannot stand in for.
    Run {
        program: PathBuf,
        args: Vec<String>,
        limit: Duration,
    },
    /// Run `program` (an absolute path) with nfs-gds's own stdin, stdout and stderr, and wait
    /// for it; when `pass_signals`, a held signal (see `mount::signals`) is passed on to it
    /// (`mount.nfs`, which may be retrying; never `umount` or `modprobe`).
    Exec {
        program: PathBuf,
        args: Vec<OsString>,
        pass_signals: bool,
        /// `(FROM, TO)`: each line the program prints is passed on with `FROM` shown as `TO`
        /// (mount.nfs names the helper's staging point; the admin asked for DIR).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shown: Option<(PathBuf, PathBuf)>,
    },
    /// mount(2).
    Mount {
        source: String,
        target: PathBuf,
        fstype: String,
        flags: u64,
        data: String,
    },
    /// mount(2) with `MS_BIND`: `source` bound onto `target` (the staging area onto itself).
    Bind {
        source: PathBuf,
        target: PathBuf,
    },
    /// mount(2) with `MS_PRIVATE`: mounts below `target` propagate nowhere, and none come in.
    MakePrivate {
        target: PathBuf,
    },
    /// move_mount(2): the mount `from` resolves to, onto `to`. Both are followed to the end, so
    /// the helper passes `/proc/self/fd/N` of descriptors it opened and checked beforehand;
    /// automount points are never triggered.
    MoveMount {
        from: PathBuf,
        to: PathBuf,
    },
    /// umount2(2), `MNT_DETACH` when `detach`.
    Unmount {
        target: PathBuf,
        detach: bool,
    },
    /// setns(2) into the mount namespace of this file.
    EnterNamespace {
        path: PathBuf,
    },
    /// Monotonic time since an arbitrary start.
    Now,
    /// The wall clock: time since the Unix epoch (a file's age, a bundle's date).
    WallClock,
    Sleep {
        duration: Duration,
    },
    /// The process's real and effective user and group ids.
    Credentials,
    /// Whether the effective capability set holds CAP_SYS_ADMIN.
    HasSysAdmin,
    /// The addresses a server's name resolves to.
    Resolve {
        host: String,
    },
    /// Open the character device `device`, only when it is the node the kernel names `name`
    /// (`DEVNAME=` in `/sys/dev/char/MAJ:MIN/uevent`) and never through a symlink, read `list`
    /// while it is open, then close it and time the close: nvidia-fs's live registration probe
    /// (nvidia-fs looks its hooks up when its device is opened).
    ProbeDevice {
        device: PathBuf,
        name: String,
        list: PathBuf,
    },
    /// Whether nfs-gds's stdin is a terminal.
    StdinIsTerminal,
    /// What nfs-gds's stdin holds now, waiting at most `wait` for something to come (a writer
    /// need not close it): one read of at most [`STDIN_CHUNK`] bytes.
    ReadStdin {
        wait: Duration,
    },
}

/// The most one [`Call::ReadStdin`] reads.
pub const STDIN_CHUNK: usize = 16 * 1024;

/// What came back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Output(Output),
    /// How an [`Call::Exec`] ended: the raw wait status.
    Exited(Result<i32, Failure>),
    /// A mount, an unmount, a namespace entered, a sleep.
    Done(Result<(), Failure>),
    Time(Duration),
    /// The wall clock, as time since the Unix epoch.
    WallTime(Duration),
    Credentials(Credentials),
    HasSysAdmin(Result<bool, String>),
    Addresses(Result<Vec<IpAddr>, String>),
    Probed(Probed),
    /// Whether stdin is a terminal.
    IsTerminal(bool),
    /// What a read of stdin gave, or why it failed.
    Stdin(Result<StdinRead, String>),
}

/// What one [`Call::ReadStdin`] gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StdinRead {
    /// Bytes that came.
    Bytes(Vec<u8>),
    /// The end: stdin was closed.
    End,
    /// The wait passed and nothing came.
    Waited,
}

/// What a [`Call::ProbeDevice`] saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Probed {
    /// The device was not opened: why.
    CannotOpen(String),
    /// The device was opened: the list's text while it was open (or why it could not be
    /// read), and how long the close took.
    Opened {
        list: Result<String, String>,
        close: Duration,
    },
}

/// What a program run for its output produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Output {
    /// The program is not installed (or, in a bundle, its output was not captured).
    Missing,
    /// It ran; `code` is `None` when it was killed by a signal (or stopped at its limit).
    Ran {
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
}

impl Output {
    /// Standard output of a successful run.
    pub fn ok_stdout(&self) -> Option<&str> {
        match self {
            Output::Ran {
                code: Some(0),
                stdout,
                ..
            } => Some(stdout),
            _ => None,
        }
    }
}

/// Why an effect failed: the errno where the kernel gave one, and what was being done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub errno: Option<i32>,
    pub message: String,
}

impl Failure {
    pub fn of(e: &std::io::Error) -> Self {
        Failure {
            errno: e.raw_os_error(),
            message: e.to_string(),
        }
    }

    pub fn other(message: impl Into<String>) -> Self {
        Failure {
            errno: None,
            message: message.into(),
        }
    }

    /// The failure as an I/O error (the errno's, where there is one).
    pub fn to_io(&self) -> std::io::Error {
        match self.errno {
            Some(n) => std::io::Error::from_raw_os_error(n),
            None => std::io::Error::other(self.message.clone()),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Real and effective user and group ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    pub uids: (u32, u32),
    pub gids: (u32, u32),
}

impl Credentials {
    pub const ROOT: Credentials = Credentials {
        uids: (0, 0),
        gids: (0, 0),
    };
}

impl Call {
    /// A program run for its output, as a command line (`ofed_info -s`).
    pub fn command_line(program: &str, args: &[&str]) -> String {
        std::iter::once(program)
            .chain(args.iter().copied())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// An answer of this call's kind saying it failed with `why`: what a replay answers to a call
    /// it did not expect, so that a departure is a failure the caller reports, never a guess.
    pub fn refused(&self, why: &str) -> Answer {
        match self {
            Call::Output { .. } | Call::Run { .. } => Answer::Output(Output::Ran {
                code: None,
                stdout: String::new(),
                stderr: why.to_string(),
            }),
            Call::Exec { .. } => Answer::Exited(Err(Failure::other(why))),
            Call::Mount { .. }
            | Call::Bind { .. }
            | Call::MakePrivate { .. }
            | Call::MoveMount { .. }
            | Call::Unmount { .. }
            | Call::EnterNamespace { .. } => Answer::Done(Err(Failure::other(why))),
            Call::Sleep { .. } => Answer::Done(Ok(())),
            Call::Now => Answer::Time(Duration::ZERO),
            Call::WallClock => Answer::WallTime(Duration::ZERO),
            Call::Credentials => Answer::Credentials(Credentials {
                uids: (u32::MAX, u32::MAX),
                gids: (u32::MAX, u32::MAX),
            }),
            Call::HasSysAdmin => Answer::HasSysAdmin(Err(why.to_string())),
            Call::Resolve { .. } => Answer::Addresses(Err(why.to_string())),
            Call::ProbeDevice { .. } => Answer::Probed(Probed::CannotOpen(why.to_string())),
            Call::StdinIsTerminal => Answer::IsTerminal(false),
            Call::ReadStdin { .. } => Answer::Stdin(Err(why.to_string())),
        }
    }
}

/// One line per call, as a log or a test reads it.
impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Call::Output {
                program,
                args,
                limit,
            } => {
                write!(f, "run {program}")?;
                for a in args {
                    write!(f, " {a}")?;
                }
                if let Some(l) = limit {
                    write!(f, " (at most {} s)", l.as_secs())?;
                }
                Ok(())
            }
            Call::Run {
                program,
                args,
                limit,
            } => {
                write!(f, "run {}", program.display())?;
                for a in args {
                    write!(f, " {a}")?;
                }
                write!(f, " (at most {} s)", limit.as_secs())
            }
            Call::Exec { program, args, .. } => {
                write!(f, "exec {}", program.display())?;
                for a in args {
                    write!(f, " {}", a.to_string_lossy())?;
                }
                Ok(())
            }
            Call::Mount {
                source,
                target,
                fstype,
                flags,
                data,
            } => write!(
                f,
                "mount {source} {} type {fstype} flags {flags:#x} data {data}",
                target.display()
            ),
            Call::Bind { source, target } => {
                write!(f, "mount --bind {} {}", source.display(), target.display())
            }
            Call::MakePrivate { target } => write!(f, "mount --make-private {}", target.display()),
            Call::MoveMount { from, to } => {
                write!(f, "move_mount {} {}", from.display(), to.display())
            }
            Call::Unmount { target, detach } => write!(
                f,
                "umount2 {}{}",
                target.display(),
                if *detach { " MNT_DETACH" } else { "" }
            ),
            Call::EnterNamespace { path } => write!(f, "setns {}", path.display()),
            Call::Now => f.write_str("now"),
            Call::WallClock => f.write_str("wall clock"),
            Call::Sleep { duration } => write!(f, "sleep {duration:?}"),
            Call::Credentials => f.write_str("credentials"),
            Call::HasSysAdmin => f.write_str("has CAP_SYS_ADMIN"),
            Call::Resolve { host } => write!(f, "resolve {host}"),
            Call::ProbeDevice { device, .. } => write!(f, "probe {}", device.display()),
            Call::StdinIsTerminal => f.write_str("is stdin a terminal"),
            Call::ReadStdin { wait } => write!(f, "read stdin (at most {} ms)", wait.as_millis()),
        }
    }
}
