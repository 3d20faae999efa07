//! Running the external commands the host is asked about (`ofed_info -s`, `dkms status`, `dpkg -S`,
//! `dmesg`, …) and the ones `provision --apply` runs.
//!
//! Behind the [`Runner`] trait so that tests record what would run, and so that a collected
//! bundle can answer from the outputs it captured: below a root other than `/`, commands are
//! never run; their outputs are read from `<root>/`[`RECORDED_DIR`]`/<key>`, where the key is the
//! command line with spaces turned into `_` and `/` into `%` (see [`record_key`]).
//!
//! mount(8) and systemd strip `PATH`, so programs are found through [`programs`].

use super::programs;
use super::root::Root;

/// Where a bundle keeps captured command outputs, relative to its root.
pub const RECORDED_DIR: &str = "nfs-gds-commands";

/// What a command produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// The program is not installed (or, in a bundle, its output was not captured).
    Missing,
    /// It ran; `code` is `None` when it was killed by a signal.
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

pub trait Runner {
    fn run(&self, program: &str, args: &[&str]) -> Output;

    /// Like [`Runner::run`], for a program that may hang (`gdscheck -p` opens every GPU): killed
    /// after `limit`, answering `code: None` and a stderr that says so. Runners that run nothing
    /// answer as [`Runner::run`].
    fn run_bounded(&self, program: &str, args: &[&str], limit: std::time::Duration) -> Output {
        let _ = limit;
        self.run(program, args)
    }
}

/// The file name under which a command's output is recorded.
pub fn record_key(program: &str, args: &[&str]) -> String {
    std::iter::once(program)
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ")
        .replace(' ', "_")
        .replace('/', "%")
}

/// Runs real commands on this host.
#[derive(Debug, Default)]
pub struct SystemRunner;

impl Runner for SystemRunner {
    fn run(&self, program: &str, args: &[&str]) -> Output {
        let Some(path) = programs::find(&Root::host(), program) else {
            return Output::Missing;
        };
        tracing::debug!("running {} {}", path.display(), args.join(" "));
        match programs::command(&path)
            .args(args)
            .env("LC_ALL", "C")
            .stdin(std::process::Stdio::null())
            .output()
        {
            Ok(o) => Output::Ran {
                code: o.status.code(),
                stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            },
            Err(e) => Output::Ran {
                code: None,
                stdout: String::new(),
                stderr: format!("cannot run {}: {e}", path.display()),
            },
        }
    }

    fn run_bounded(&self, program: &str, args: &[&str], limit: std::time::Duration) -> Output {
        let Some(path) = programs::find(&Root::host(), program) else {
            return Output::Missing;
        };
        tracing::debug!(
            "running {} {} (at most {} s)",
            path.display(),
            args.join(" "),
            limit.as_secs()
        );
        Self::bounded(&path, args, limit)
    }
}

impl SystemRunner {
    /// Runs `path` with `args`, polling for its end until `limit`, then killing it. Its output
    /// is read by threads so a full pipe cannot stall it.
    fn bounded(path: &std::path::Path, args: &[&str], limit: std::time::Duration) -> Output {
        use std::io::Read;
        use std::process::Stdio;
        let spawned = programs::command(path)
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
        let started = std::time::Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if started.elapsed() < limit => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
            }
        };
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        match status {
            Some(s) => Output::Ran {
                code: s.code(),
                stdout,
                stderr,
            },
            None => Output::Ran {
                code: None,
                stdout,
                stderr: format!(
                    "{} did not finish within {} s and was stopped",
                    path.display(),
                    limit.as_secs()
                ),
            },
        }
    }
}

/// Answers from outputs captured in a bundle (below a root); runs nothing.
#[derive(Debug)]
pub struct RecordedRunner {
    root: Root,
}

impl RecordedRunner {
    pub fn new(root: Root) -> Self {
        RecordedRunner { root }
    }
}

impl Runner for RecordedRunner {
    fn run(&self, program: &str, args: &[&str]) -> Output {
        let key = record_key(program, args);
        match self.root.read_text_lossy(format!("{RECORDED_DIR}/{key}")) {
            Ok(Some(stdout)) => Output::Ran {
                code: Some(0),
                stdout,
                stderr: String::new(),
            },
            _ => Output::Missing,
        }
    }
}

/// A test double that records every command and answers from a script of canned outputs.
#[cfg(test)]
#[derive(Debug, Default)]
pub struct RecordingRunner {
    pub answers: Vec<(String, Output)>,
    pub calls: std::sync::Mutex<Vec<String>>,
}

#[cfg(test)]
impl RecordingRunner {
    pub fn answer(mut self, command_line: &str, stdout: &str) -> Self {
        self.answers.push((
            command_line.to_string(),
            Output::Ran {
                code: Some(0),
                stdout: stdout.to_string(),
                stderr: String::new(),
            },
        ));
        self
    }

    pub fn answer_with(mut self, command_line: &str, output: Output) -> Self {
        self.answers.push((command_line.to_string(), output));
        self
    }

    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
impl Runner for RecordingRunner {
    fn run(&self, program: &str, args: &[&str]) -> Output {
        let line = std::iter::once(program)
            .chain(args.iter().copied())
            .collect::<Vec<_>>()
            .join(" ");
        if let Ok(mut c) = self.calls.lock() {
            c.push(line.clone());
        }
        self.answers
            .iter()
            .find(|(l, _)| *l == line)
            .map(|(_, o)| o.clone())
            .unwrap_or(Output::Missing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bounded_run_stops_a_program_that_does_not_finish() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("hang");
        std::fs::write(&script, "#!/bin/sh\necho started\nexec sleep 30\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let started = std::time::Instant::now();
        let out = SystemRunner::bounded(&script, &[], std::time::Duration::from_millis(300));
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        match out {
            Output::Ran {
                code: None, stderr, ..
            } => {
                assert!(stderr.contains("did not finish within"), "{stderr}")
            }
            other => panic!("{other:?}"),
        }
        let done = dir.path().join("done");
        std::fs::write(&done, "#!/bin/sh\necho ' NFS : nvfs'\n").unwrap();
        std::fs::set_permissions(&done, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = SystemRunner::bounded(&done, &[], std::time::Duration::from_secs(10));
        assert_eq!(out.ok_stdout(), Some(" NFS : nvfs\n"));
    }

    #[test]
    fn keys_are_file_names() {
        assert_eq!(record_key("ofed_info", &["-s"]), "ofed_info_-s");
        assert_eq!(
            record_key("dpkg", &["-S", "/lib/modules/6.1/x.ko"]),
            "dpkg_-S_%lib%modules%6.1%x.ko"
        );
    }

    #[test]
    fn recorded_runner_reads_the_bundle() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(RECORDED_DIR)).unwrap();
        std::fs::write(
            dir.path().join(RECORDED_DIR).join("ofed_info_-s"),
            "OFED-internal-24.10-1.1.4.0.200:\n",
        )
        .unwrap();
        let r = RecordedRunner::new(Root::new(dir.path()));
        assert_eq!(
            r.run("ofed_info", &["-s"]).ok_stdout(),
            Some("OFED-internal-24.10-1.1.4.0.200:\n")
        );
        assert_eq!(r.run("dkms", &["status"]), Output::Missing);
    }
}
