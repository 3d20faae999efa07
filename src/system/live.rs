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
    /// This process's effective uid, as [`Call::Credentials`] answers it: for the default
    /// context of a root made without a command line (the unit tests), which has no system.
    pub fn effective_uid() -> u32 {
        nix::unistd::geteuid().as_raw()
    }

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

    /// Runs `program` for its output, in a process group of its own. Reading stops at `limit`,
    /// [`GRACE`] after the program itself exits (a child it left behind may hold the pipes), or
    /// when a stream passes [`STREAM_CAP`]; then the whole group is killed, so nothing the
    /// program started outlives the run or grows nfs-gds's memory.
    fn output(&self, program: &str, args: &[String], limit: Option<Duration>) -> Output {
        use std::os::unix::process::CommandExt;
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
            .process_group(0)
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
        let out = Capture::start(child.stdout.take().map(|p| Box::new(p) as _));
        let err = Capture::start(child.stderr.take().map(|p| Box::new(p) as _));
        let started = Instant::now();
        let mut exited: Option<(std::process::ExitStatus, Instant)> = None;
        let stop = loop {
            if exited.is_none() {
                match child.try_wait() {
                    Ok(Some(status)) => exited = Some((status, Instant::now())),
                    Ok(None) => {}
                    Err(_) => break Stop::CannotWait,
                }
            }
            match exited {
                Some(_) if out.finished() && err.finished() => break Stop::Finished,
                Some((_, at)) if at.elapsed() >= GRACE => break Stop::Finished,
                _ => {}
            }
            if out.truncated() || err.truncated() {
                break Stop::Capped;
            }
            if limit.is_some_and(|l| started.elapsed() >= l) {
                break Stop::Deadline;
            }
            std::thread::sleep(POLL);
        };
        // Whatever is left of the group (the program, or what it started in the background).
        if let Ok(pgid) = i32::try_from(child.id()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let status = match exited {
            Some((status, _)) => Some(status),
            None => child.wait().ok(),
        };
        let (stdout, stdout_cut) = out.take();
        let (mut stderr, stderr_cut) = err.take();
        let name = path.display();
        for (stream, cut) in [("stdout", stdout_cut), ("stderr", stderr_cut)] {
            if cut {
                stderr.push_str(&format!(
                    "\n{name} printed more than {} MiB on {stream}: kept the first {} MiB \
                     (truncated) and stopped it",
                    STREAM_CAP >> 20,
                    STREAM_CAP >> 20
                ));
            }
        }
        let code = match stop {
            Stop::Finished => status.and_then(|s| s.code()),
            Stop::Capped => None,
            Stop::Deadline => {
                stderr = format!(
                    "{name} did not finish within {} s and was stopped",
                    limit.unwrap_or_default().as_secs()
                );
                None
            }
            Stop::CannotWait => {
                stderr = format!("cannot wait for {name}");
                None
            }
        };
        Output::Ran {
            code,
            stdout,
            stderr,
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

/// How long the pipes are read after the program itself has exited: a child it started in the
/// background may hold them open for good.
const GRACE: Duration = Duration::from_millis(500);

/// The most kept of one output stream: a program that prints more is stopped.
const STREAM_CAP: usize = 1 << 20;

/// Why [`Live::output`] stopped reading.
enum Stop {
    /// The program exited, and its pipes closed or [`GRACE`] passed.
    Finished,
    /// A stream passed [`STREAM_CAP`].
    Capped,
    /// The run's limit passed.
    Deadline,
    CannotWait,
}

/// One output stream, read by a thread of its own (so a full pipe cannot stall the program) into
/// a buffer the caller can take at any time: a reader blocked on a pipe that a stray process
/// holds is left behind, not waited for.
struct Capture {
    shared: std::sync::Arc<std::sync::Mutex<Captured>>,
}

#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    truncated: bool,
    finished: bool,
}

impl Capture {
    fn start(pipe: Option<Box<dyn Read + Send>>) -> Self {
        let shared = std::sync::Arc::new(std::sync::Mutex::new(Captured::default()));
        let filling = std::sync::Arc::clone(&shared);
        std::thread::spawn(move || {
            let mut buf = [0u8; 64 * 1024];
            if let Some(mut pipe) = pipe {
                loop {
                    let n = match pipe.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(_) => break,
                    };
                    let Ok(mut c) = filling.lock() else { return };
                    let room = STREAM_CAP.saturating_sub(c.bytes.len());
                    c.bytes.extend_from_slice(&buf[..n.min(room)]);
                    if n > room {
                        c.truncated = true;
                        break;
                    }
                }
            }
            if let Ok(mut c) = filling.lock() {
                c.finished = true;
            }
        });
        Capture { shared }
    }

    fn finished(&self) -> bool {
        self.shared.lock().map(|c| c.finished).unwrap_or(true)
    }

    fn truncated(&self) -> bool {
        self.shared.lock().map(|c| c.truncated).unwrap_or(false)
    }

    /// What was read so far, as text, and whether it was cut at [`STREAM_CAP`].
    fn take(self) -> (String, bool) {
        let Ok(mut c) = self.shared.lock() else {
            return (String::new(), false);
        };
        let bytes = std::mem::take(&mut c.bytes);
        (String::from_utf8_lossy(&bytes).into_owned(), c.truncated)
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
            Call::Run {
                program,
                args,
                limit,
            } => Answer::Output(match program.to_str() {
                Some(path) if program.is_absolute() => self.output(path, args, Some(*limit)),
                _ => Output::Ran {
                    code: None,
                    stdout: String::new(),
                    stderr: format!(
                        "{}: a program run here is named by its absolute path",
                        program.display()
                    ),
                },
            }),
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
            Call::WallClock => Answer::WallTime(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default(),
            ),
            Call::Sleep { duration } => {
                std::thread::sleep(*duration);
                Answer::Done(Ok(()))
            }
            Call::Credentials => Answer::Credentials(Credentials {
                uids: (nix::unistd::getuid().as_raw(), Live::effective_uid()),
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
            Call::ProbeDevice { device, name, list } => {
                Answer::Probed(super::device_probe::probe(device, name, list))
            }
            Call::StdinIsTerminal => Answer::IsTerminal(super::stdin::is_terminal()),
            Call::ReadStdin { wait } => Answer::Stdin(super::stdin::read(*wait)),
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

    /// The pid a script wrote to `file`, once it is there.
    fn pid_in(file: &Path) -> i32 {
        for _ in 0..100 {
            if let Some(pid) = std::fs::read_to_string(file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                return pid;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("{} was never written", file.display());
    }

    /// Whether `pid` is still a running (not dead, not zombie) process.
    fn running(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
            .unwrap_or(false)
    }

    #[test]
    fn a_child_left_holding_stdout_neither_hangs_the_run_nor_outlives_it() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let leaves = script(
            dir.path(),
            "leaves",
            &format!(
                "echo ' NFS : nvfs'\nsleep 30 &\necho $! > {}",
                pid_file.display()
            ),
        );
        let sys: &dyn System = &Live::new(true);
        let started = Instant::now();
        let out = sys.run(leaves.to_str().unwrap(), &[]);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(out.ok_stdout(), Some(" NFS : nvfs\n"));
        let pid = pid_in(&pid_file);
        for _ in 0..50 {
            if !running(pid) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the background child {pid} outlived the run");
    }

    #[test]
    fn a_child_that_leaves_the_group_is_not_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let escapes = script(dir.path(), "escapes", "echo started\nsetsid sleep 30 &");
        let sys: &dyn System = &Live::new(true);
        let started = Instant::now();
        let out = sys.run_bounded(escapes.to_str().unwrap(), &[], Duration::from_secs(60));
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(out.ok_stdout(), Some("started\n"));
    }

    #[test]
    fn endless_output_is_cut_at_the_cap_and_said_to_be() {
        let dir = tempfile::tempdir().unwrap();
        let endless = script(dir.path(), "endless", "exec yes 'NFS : nvfs'");
        let sys: &dyn System = &Live::new(true);
        let started = Instant::now();
        let out = sys.run(endless.to_str().unwrap(), &[]);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        match out {
            Output::Ran {
                code: None,
                stdout,
                stderr,
            } => {
                assert_eq!(stdout.len(), STREAM_CAP);
                assert!(stderr.contains("more than 1 MiB on stdout"), "{stderr}");
                assert!(stderr.contains("truncated"), "{stderr}");
            }
            other => panic!("{other:?}"),
        }
    }
}
