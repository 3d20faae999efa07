//! A system for tests: every call recorded as a line, answered by a script.
//!
//! Models no kernel behaviour by itself. By default: time stands still until something sleeps
//! (a sleep advances it), the process is root with CAP_SYS_ADMIN, a program run for its output is
//! missing unless [`Fake::answer`] gave it one (by its name, or a host program by its path), a
//! program run with the terminal exits 0, a mount, an unmount and a namespace succeed, no name resolves, no device opens, and stdin is empty (not a terminal). [`Fake::on`] replaces any of that
//! for the calls it answers (`Some`); the simulated kernels of the mount flow's tests use it to
//! change a fixture's mount table as the VM suite showed the real kernel does.

use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use super::call::{Answer, Call, Credentials, Output, Probed, StdinRead};
use super::System;

/// Where the fake's wall clock starts: 2026-01-01T00:00:00Z.
const FAKE_EPOCH: Duration = Duration::from_secs(1_767_225_600);

type Script = Box<dyn FnMut(&Call) -> Option<Answer> + Send>;

pub struct Fake {
    calls: Mutex<Vec<String>>,
    now: Mutex<Duration>,
    sleeps: Mutex<Vec<Duration>>,
    pub credentials: Credentials,
    pub sys_admin: Result<bool, String>,
    outputs: Vec<(String, Output)>,
    hosts: Vec<(String, Vec<IpAddr>)>,
    script: Mutex<Option<Script>>,
}

impl std::fmt::Debug for Fake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fake")
            .field("calls", &self.calls())
            .finish_non_exhaustive()
    }
}

impl Default for Fake {
    fn default() -> Self {
        Fake {
            calls: Mutex::new(Vec::new()),
            now: Mutex::new(Duration::ZERO),
            sleeps: Mutex::new(Vec::new()),
            credentials: Credentials::ROOT,
            sys_admin: Ok(true),
            outputs: Vec::new(),
            hosts: Vec::new(),
            script: Mutex::new(None),
        }
    }
}

impl Fake {
    pub fn new() -> Self {
        Self::default()
    }

    /// `command_line` (`ofed_info -s`) succeeds and prints `stdout`.
    pub fn answer(self, command_line: &str, stdout: &str) -> Self {
        self.answer_with(
            command_line,
            Output::Ran {
                code: Some(0),
                stdout: stdout.to_string(),
                stderr: String::new(),
            },
        )
    }

    pub fn answer_with(mut self, command_line: &str, output: Output) -> Self {
        self.outputs.push((command_line.to_string(), output));
        self
    }

    /// `host` resolves to `addrs`.
    pub fn host(mut self, host: &str, addrs: &[IpAddr]) -> Self {
        self.hosts.push((host.to_string(), addrs.to_vec()));
        self
    }

    pub fn credentials(
        mut self,
        credentials: Credentials,
        sys_admin: Result<bool, String>,
    ) -> Self {
        self.credentials = credentials;
        self.sys_admin = sys_admin;
        self
    }

    /// Answers the calls `script` answers (`Some`); the rest as by default.
    pub fn on(self, script: impl FnMut(&Call) -> Option<Answer> + Send + 'static) -> Self {
        if let Ok(mut s) = self.script.lock() {
            *s = Some(Box::new(script));
        }
        self
    }

    /// Every call so far, one line each ([`Call`]'s display), time and credentials left out.
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// The sleeps so far.
    pub fn sleeps(&self) -> Vec<Duration> {
        self.sleeps.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// What [`Fake::answer`] gave `program args`, else missing.
    fn answered(&self, program: &str, args: &[String]) -> Answer {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let line = Call::command_line(program, &args);
        Answer::Output(
            self.outputs
                .iter()
                .find(|(l, _)| *l == line)
                .map(|(_, o)| o.clone())
                .unwrap_or(Output::Missing),
        )
    }

    fn default_answer(&self, call: &Call) -> Answer {
        match call {
            Call::Output { program, args, .. } => self.answered(program, args),
            Call::Run { program, args, .. } => self.answered(&program.to_string_lossy(), args),
            Call::Exec { .. } => Answer::Exited(Ok(0)),
            Call::Mount { .. }
            | Call::Bind { .. }
            | Call::MakePrivate { .. }
            | Call::MoveMount { .. }
            | Call::Unmount { .. }
            | Call::EnterNamespace { .. } => Answer::Done(Ok(())),
            Call::Now => Answer::Time(self.now.lock().map(|n| *n).unwrap_or_default()),
            // The fake's wall clock starts at 2026-01-01 and moves with its sleeps.
            Call::WallClock => {
                Answer::WallTime(FAKE_EPOCH + self.now.lock().map(|n| *n).unwrap_or_default())
            }
            Call::Sleep { .. } => Answer::Done(Ok(())),
            Call::Credentials => Answer::Credentials(self.credentials),
            Call::HasSysAdmin => Answer::HasSysAdmin(self.sys_admin.clone()),
            Call::Resolve { host } => Answer::Addresses(
                self.hosts
                    .iter()
                    .find(|(h, _)| h.eq_ignore_ascii_case(host))
                    .map(|(_, a)| a.clone())
                    .ok_or_else(|| format!("{host}: names are not resolved here")),
            ),
            Call::ProbeDevice { device, .. } => Answer::Probed(Probed::CannotOpen(format!(
                "{}: no device opens here",
                device.display()
            ))),
            Call::StdinIsTerminal => Answer::IsTerminal(false),
            Call::ReadStdin { .. } => Answer::Stdin(Ok(StdinRead::End)),
        }
    }
}

impl System for Fake {
    fn effect(&self, call: &Call) -> Answer {
        match call {
            Call::Now | Call::WallClock | Call::Credentials | Call::HasSysAdmin => {}
            Call::Sleep { duration } => {
                if let Ok(mut n) = self.now.lock() {
                    *n += *duration;
                }
                if let Ok(mut s) = self.sleeps.lock() {
                    s.push(*duration);
                }
            }
            _ => {
                if let Ok(mut c) = self.calls.lock() {
                    c.push(call.to_string());
                }
            }
        }
        let scripted = self
            .script
            .lock()
            .ok()
            .and_then(|mut s| s.as_mut().and_then(|f| f(call)));
        scripted.unwrap_or_else(|| self.default_answer(call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_records_calls_and_answers_by_its_script_then_by_default() {
        let fake = Fake::new()
            .answer("ofed_info -s", "OFED-internal-24.10:\n")
            .on(|call| match call {
                Call::Exec { .. } => Some(Answer::Exited(Ok(32 << 8))),
                _ => None,
            });
        let sys: &dyn System = &fake;
        assert_eq!(
            sys.run("ofed_info", &["-s"]).ok_stdout(),
            Some("OFED-internal-24.10:\n")
        );
        assert_eq!(sys.run("dkms", &["status"]), Output::Missing);
        let status = sys
            .exec("/sbin/mount.nfs".as_ref(), vec!["s:/e".into()])
            .unwrap();
        assert_eq!(status.code(), Some(32));
        sys.sleep(Duration::from_millis(250));
        assert_eq!(sys.now(), Duration::from_millis(250));
        assert_eq!(
            fake.calls(),
            [
                "run ofed_info -s",
                "run dkms status",
                "exec /sbin/mount.nfs s:/e"
            ]
        );
        assert_eq!(fake.sleeps(), [Duration::from_millis(250)]);
    }
}
