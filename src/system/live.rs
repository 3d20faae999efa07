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
/// How long the lines a program printed last may take to be passed on after it exited.
const RELAY_GRACE: Duration = Duration::from_millis(500);

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
        shown: Option<&(std::path::PathBuf, std::path::PathBuf)>,
    ) -> Result<i32, Failure> {
        let mut cmd = self.command(program);
        cmd.args(args);
        if shown.is_some() {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        let mut child = cmd.spawn().map_err(|e| Failure::of(&e))?;
        // Relayed to nfs-gds's own descriptors, not through `std::io::stdout()`, whose lock the
        // caller may hold while it waits here.
        let own = |fd: std::os::fd::BorrowedFd<'_>| {
            fd.try_clone_to_owned()
                .map(|fd| Box::new(std::fs::File::from(fd)) as Box<dyn std::io::Write + Send>)
                .unwrap_or_else(|_| Box::new(std::io::sink()))
        };
        let relays = shown.map(|(from, to)| {
            use std::os::fd::AsFd;
            let (from, to) = (from.display().to_string(), to.display().to_string());
            [
                child.stdout.take().map(|p| {
                    relay(
                        Box::new(p),
                        own(std::io::stdout().as_fd()),
                        from.clone(),
                        to.clone(),
                    )
                }),
                child
                    .stderr
                    .take()
                    .map(|p| relay(Box::new(p), own(std::io::stderr().as_fd()), from, to)),
            ]
        });
        let status = self.wait_for(&mut child, pass_signals);
        // What the program printed last is passed on before nfs-gds speaks again, unless a
        // child it left keeps the pipe open: then at most RELAY_GRACE later.
        let deadline = Instant::now() + RELAY_GRACE;
        for r in relays.into_iter().flatten().flatten() {
            while !r.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if r.is_finished() {
                let _ = r.join();
            }
        }
        status
    }

    /// Waits for `child`; by polling when `pass_signals`, so that a held signal is passed on.
    fn wait_for(
        &self,
        child: &mut std::process::Child,
        pass_signals: bool,
    ) -> Result<i32, Failure> {
        use std::os::unix::process::ExitStatusExt;
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

/// Copies what a program prints, line by line, to `out` with `from` shown as `to`. The thread
/// ends when the program's side of the pipe closes; it is waited for [`RELAY_GRACE`] at most, so
/// a child the program left holding the pipe cannot hold nfs-gds.
fn relay(
    from_program: Box<dyn Read + Send>,
    mut out: Box<dyn std::io::Write + Send>,
    from: String,
    to: String,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(from_program);
        let mut line = Vec::new();
        while matches!(lines.read_until(b'\n', &mut line), Ok(n) if n > 0) {
            let text = String::from_utf8_lossy(&line).replace(&from, &to);
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            line.clear();
        }
    })
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
                shown,
            } => Answer::Exited(self.exec(program, args, *pass_signals, shown.as_ref())),
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
    use std::path::PathBuf;

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

    /// A writer into a buffer the test keeps.
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn relayed_lines_show_the_staging_point_as_dir_even_a_last_line_without_newline() {
        let out = Shared::default();
        let text = "mount.nfs: mount point /run/nfs-gds/stage/77/mnt is busy\nmount.nfs: timeout on /run/nfs-gds/stage/77/mnt";
        relay(
            Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
            Box::new(out.clone()),
            "/run/nfs-gds/stage/77/mnt".into(),
            "/mnt/gds".into(),
        )
        .join()
        .unwrap();
        assert_eq!(
            String::from_utf8(out.0.lock().unwrap().clone()).unwrap(),
            "mount.nfs: mount point /mnt/gds is busy\nmount.nfs: timeout on /mnt/gds"
        );
    }

    #[test]
    fn a_shown_exec_waits_for_its_output_but_not_for_a_child_holding_the_pipe() {
        let dir = tempfile::tempdir().unwrap();
        let prog = script(dir.path(), "holds", "echo done\n(exec sleep 30) &\nexit 7");
        let live = Live::new(true);
        let started = Instant::now();
        let shown = (PathBuf::from("/x"), PathBuf::from("/y"));
        assert_eq!(
            live.exec(&prog, &[], true, Some(&shown))
                .map(|raw| raw >> 8),
            Ok(7)
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
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
