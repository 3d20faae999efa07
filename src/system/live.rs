//! This machine: every [`Call`] done for real.
//!
//! Programs get a fixed `PATH` ([`SEARCH_PATH`]) when nfs-gds itself was started without one
//! (mount(8) strips it; `modprobe` install commands and nfs-utils scripts expect one).

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::call::{Answer, Call, Credentials, Failure, Output};
use super::{find_program, System, SEARCH_PATH};

/// How often a running child is looked at.
const POLL: Duration = Duration::from_millis(20);

#[derive(Debug, Clone, Copy)]
pub struct Live {
    start: Instant,
    /// Whether nfs-gds was started with a `PATH` (children inherit it then).
    path_set: bool,
    /// The held signal that arrived, if one did: passed on to a program run by [`Call::Exec`].
    held_signal: fn() -> Option<i32>,
}

fn no_signal() -> Option<i32> {
    None
}

impl Live {
    pub fn new(path_set: bool) -> Self {
        Live {
            start: Instant::now(),
            path_set,
            held_signal: no_signal,
        }
    }

    /// The same machine, passing `held_signal`'s answer on to a program being waited for.
    pub fn forwarding(mut self, held_signal: fn() -> Option<i32>) -> Self {
        self.held_signal = held_signal;
        self
    }

    /// A command for an absolute program path, with `PATH` set when nfs-gds has none.
    pub fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        if !self.path_set {
            cmd.env("PATH", SEARCH_PATH);
        }
        cmd
    }

    fn output(&self, program: &str, args: &[String], limit: Option<Duration>) -> Output {
        // A name is searched; a path must be an executable file. Either way, a program that is
        // not there is missing, not a failed run.
        let Some(path) = find_program(Path::new("/"), program) else {
            return Output::Missing;
        };
        tracing::debug!("running {} {}", path.display(), args.join(" "));
        let spawned = self
            .command(&path)
            .args(args)
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                return Output::Ran {
                    code: None,
                    stdout: String::new(),
                    stderr: format!("cannot run {}: {e}", path.display()),
                }
            }
        };
        // Read by threads, so that a full pipe cannot stall the program.
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                if let Some(mut p) = pipe {
                    let _ = p.read_to_end(&mut bytes);
                }
                String::from_utf8_lossy(&bytes).into_owned()
            })
        };
        let out = drain(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let err = drain(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let status = match limit {
            None => child.wait().ok(),
            Some(limit) => {
                let started = Instant::now();
                loop {
                    match child.try_wait() {
                        Ok(Some(status)) => break Some(status),
                        Ok(None) if started.elapsed() < limit => std::thread::sleep(POLL),
                        _ => {
                            let _ = child.kill();
                            let _ = child.wait();
                            break None;
                        }
                    }
                }
            }
        };
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        match (status, limit) {
            (Some(s), _) => Output::Ran {
                code: s.code(),
                stdout,
                stderr,
            },
            (None, Some(limit)) => Output::Ran {
                code: None,
                stdout,
                stderr: format!(
                    "{} did not finish within {} s and was stopped",
                    path.display(),
                    limit.as_secs()
                ),
            },
            (None, None) => Output::Ran {
                code: None,
                stdout,
                stderr: format!("cannot wait for {}", path.display()),
            },
        }
    }

    /// Runs `program` with the process's own stdin, stdout and stderr. Waits by polling, so that
    /// a held signal (see `mount::signals`) is passed on when `pass_signals`: one sent to
    /// nfs-gds alone must still stop a `mount.nfs` that is retrying.
    fn exec(
        &self,
        program: &Path,
        args: &[std::ffi::OsString],
        pass_signals: bool,
    ) -> Result<i32, Failure> {
        use std::os::unix::process::ExitStatusExt;
        let mut child = self
            .command(program)
            .args(args)
            .spawn()
            .map_err(|e| Failure::of(&e))?;
        if !pass_signals {
            return child
                .wait()
                .map(|s| s.into_raw())
                .map_err(|e| Failure::of(&e));
        }
        let mut forwarded = false;
        loop {
            if let Some(status) = child.try_wait().map_err(|e| Failure::of(&e))? {
                return Ok(status.into_raw());
            }
            if let (false, Some(sig)) = (forwarded, (self.held_signal)()) {
                let pid = i32::try_from(child.id()).map(nix::unistd::Pid::from_raw);
                if let (Ok(pid), Ok(sig)) = (pid, nix::sys::signal::Signal::try_from(sig)) {
                    let _ = nix::sys::signal::kill(pid, sig);
                }
                forwarded = true;
            }
            std::thread::sleep(POLL);
        }
    }
}

fn enter_namespace(path: &Path) -> Result<(), Failure> {
    let file = std::fs::File::open(path).map_err(|e| Failure {
        errno: e.raw_os_error(),
        message: format!("cannot open mount namespace {}: {e}", path.display()),
    })?;
    nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNS).map_err(|e| Failure {
        errno: Some(e as i32),
        message: format!("cannot enter mount namespace {}: {e}", path.display()),
    })
}

impl System for Live {
    fn effect(&self, call: &Call) -> Answer {
        match call {
            Call::Output {
                program,
                args,
                limit,
            } => Answer::Output(self.output(program, args, *limit)),
            Call::Exec {
                program,
                args,
                pass_signals,
            } => Answer::Exited(self.exec(program, args, *pass_signals)),
            Call::Mount {
                source,
                target,
                fstype,
                flags,
                data,
            } => Answer::Done(
                sys_mount::Mount::builder()
                    .fstype(fstype.as_str())
                    .flags(sys_mount::MountFlags::from_bits_retain(*flags))
                    .data(data)
                    .mount(source, target)
                    .map(|_| ())
                    .map_err(|e| Failure::of(&e)),
            ),
            Call::Bind { source, target } => Answer::Done(
                rustix::mount::mount_bind(source.as_path(), target.as_path())
                    .map_err(|e| Failure::of(&e.into())),
            ),
            Call::MakePrivate { target } => Answer::Done(
                rustix::mount::mount_change(
                    target.as_path(),
                    rustix::mount::MountPropagationFlags::PRIVATE,
                )
                .map_err(|e| Failure::of(&e.into())),
            ),
            Call::MoveMount { from, to } => {
                use rustix::mount::MoveMountFlags as F;
                Answer::Done(
                    rustix::mount::move_mount(
                        rustix::fs::CWD,
                        from.as_path(),
                        rustix::fs::CWD,
                        to.as_path(),
                        F::MOVE_MOUNT_F_SYMLINKS | F::MOVE_MOUNT_T_SYMLINKS,
                    )
                    .map_err(|e| Failure::of(&e.into())),
                )
            }
            Call::Unmount { target, detach } => {
                let flags = if *detach {
                    nix::mount::MntFlags::MNT_DETACH
                } else {
                    nix::mount::MntFlags::empty()
                };
                Answer::Done(
                    nix::mount::umount2(target.as_path(), flags).map_err(|e| Failure {
                        errno: Some(e as i32),
                        message: e.desc().to_string(),
                    }),
                )
            }
            Call::EnterNamespace { path } => Answer::Done(enter_namespace(path)),
            Call::Now => Answer::Time(self.start.elapsed()),
            Call::Sleep { duration } => {
                std::thread::sleep(*duration);
                Answer::Done(Ok(()))
            }
            Call::Credentials => Answer::Credentials(Credentials {
                uids: (
                    nix::unistd::getuid().as_raw(),
                    nix::unistd::geteuid().as_raw(),
                ),
                gids: (
                    nix::unistd::getgid().as_raw(),
                    nix::unistd::getegid().as_raw(),
                ),
            }),
            Call::HasSysAdmin => Answer::HasSysAdmin(
                caps::has_cap(
                    None,
                    caps::CapSet::Effective,
                    caps::Capability::CAP_SYS_ADMIN,
                )
                .map_err(|e| format!("cannot read the process capabilities: {e}")),
            ),
            Call::Resolve { host } => {
                use std::net::ToSocketAddrs;
                Answer::Addresses(
                    (host.as_str(), 0u16)
                        .to_socket_addrs()
                        .map(|a| a.map(|a| a.ip()).collect())
                        .map_err(|e| e.to_string()),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn a_bounded_run_stops_a_program_that_does_not_finish() {
        let dir = tempfile::tempdir().unwrap();
        let hang = script(dir.path(), "hang", "echo started\nexec sleep 30");
        let live = Live::new(true);
        let sys: &dyn System = &live;
        let started = Instant::now();
        let out = sys.run_bounded(hang.to_str().unwrap(), &[], Duration::from_millis(300));
        assert!(started.elapsed() < Duration::from_secs(10));
        match out {
            Output::Ran {
                code: None, stderr, ..
            } => assert!(stderr.contains("did not finish within"), "{stderr}"),
            other => panic!("{other:?}"),
        }
        let done = script(dir.path(), "done", "echo ' NFS : nvfs'");
        let out = sys.run_bounded(done.to_str().unwrap(), &[], Duration::from_secs(10));
        assert_eq!(out.ok_stdout(), Some(" NFS : nvfs\n"));
    }

    #[test]
    fn a_program_that_is_not_installed_is_missing() {
        let sys: &dyn System = &Live::new(true);
        assert_eq!(sys.run("nfs-gds-no-such-program", &[]), Output::Missing);
        assert_eq!(sys.run("/nonexistent/gdscheck", &["-p"]), Output::Missing);
    }

    #[test]
    fn exec_passes_the_exit_status_and_a_missing_program_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let fails = script(dir.path(), "fails", "exit 3");
        let sys: &dyn System = &Live::new(true);
        assert_eq!(sys.exec(&fails, vec![]).unwrap().code(), Some(3));
        let e = sys.exec(&dir.path().join("absent"), vec![]).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn setns_on_a_missing_file_fails_before_any_syscall() {
        let sys: &dyn System = &Live::new(true);
        let e = sys
            .enter_namespace(Path::new("/nonexistent/ns/mnt"))
            .unwrap_err();
        assert!(e.message.starts_with("cannot open mount namespace"), "{e}");
    }
}
