//! The default backend: exec nfs-utils' `mount.nfs` by absolute path.
//!
//! `mount.nfs` does what a mount of NFS needs beyond mount(2): DNS and every address of the
//! server, `clientaddr=`, retries for 2 minutes, `/etc/nfsmount.conf`, statd for v3, and the
//! well-known error messages. It is called as `mount.nfs SPEC DIR [-s] [-n] [-v] -o OPTIONS`:
//! never `-t` or `-N` (it accepts neither; the helper entered the namespace itself), and never
//! `-f` (the helper's own `-f` runs nothing, and `mount.nfs -f` still writes a utab line). Its
//! stdin, stdout and stderr are the helper's, so its messages reach the admin unchanged.

use std::ffi::OsString;
use std::path::PathBuf;

use super::mounter::{MountCall, MountError, MountStatus, Mounting};
use super::mover::Mover;
use super::unmount::Unmounter;
use crate::system::System;

#[derive(Debug, Clone)]
pub struct MountNfs {
    pub program: PathBuf,
    pub unmounter: Unmounter,
    pub mover: Mover,
}

/// The arguments after the program name.
pub fn arguments(call: &MountCall) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![call.spec.clone().into(), call.target.clone().into()];
    for (set, flag) in [
        (call.sloppy, "-s"),
        (call.no_mtab, "-n"),
        (call.verbose, "-v"),
    ] {
        if set {
            args.push(flag.into());
        }
    }
    args.push("-o".into());
    args.push(call.options.clone().into());
    args
}

impl Mounting for MountNfs {
    fn plan(&self, call: &MountCall) -> String {
        let mut line = self.program.display().to_string();
        for a in arguments(call) {
            line.push(' ');
            line.push_str(&a.to_string_lossy());
        }
        line
    }

    fn mount(&mut self, system: &dyn System, call: &MountCall) -> Result<MountStatus, MountError> {
        // The system waits by polling, passing on a signal the helper holds (see `signals`):
        // one sent to the helper alone must still stop a mount that is retrying.
        let ran = match &call.shown_as {
            // What mount.nfs prints names the staging point; the admin asked for DIR.
            Some(dir) => system.exec_showing(&self.program, arguments(call), &call.target, dir),
            None => system.exec_passing_signals(&self.program, arguments(call)),
        };
        ran.map(MountStatus::from_exit_status)
            .map_err(|source| MountError::Spawn {
                program: self.program.clone(),
                source,
            })
    }

    fn unmounter(&self) -> &Unmounter {
        &self.unmounter
    }

    fn mover(&self) -> &Mover {
        &self.mover
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nfs::NfsSource;

    fn call() -> MountCall {
        MountCall {
            spec: "10.0.2.15:/ex port".into(),
            source: NfsSource::parse("10.0.2.15:/ex port").unwrap(),
            target: "/mnt/data".into(),
            options: "rw,vers=4.2,proto=rdma,port=20049".into(),
            version: crate::nfs::NfsVersion::DEFAULT,
            sloppy: true,
            no_mtab: true,
            verbose: true,
            shown_as: None,
        }
    }

    #[test]
    fn mount_nfs_gets_spec_dir_flags_and_options_never_t_n_or_f() {
        let args = arguments(&call());
        assert_eq!(
            args,
            [
                "10.0.2.15:/ex port",
                "/mnt/data",
                "-s",
                "-n",
                "-v",
                "-o",
                "rw,vers=4.2,proto=rdma,port=20049"
            ]
        );
        let mut quiet = call();
        quiet.sloppy = false;
        quiet.no_mtab = false;
        quiet.verbose = false;
        assert_eq!(arguments(&quiet).len(), 4);
    }

    #[test]
    fn mount_nfs_runs_through_the_system_and_its_status_is_passed_on() {
        use crate::system::{Answer, Call, Fake};
        let fake = Fake::new().on(|call| match call {
            Call::Exec { .. } => Some(Answer::Exited(Ok(32 << 8))),
            _ => None,
        });
        let mut m = MountNfs {
            program: "/sbin/mount.nfs".into(),
            unmounter: Unmounter::Syscall { umount: None },
            mover: Mover::Syscall,
        };
        assert_eq!(m.mount(&fake, &call()).unwrap(), MountStatus::Exited(32));
        assert_eq!(
            fake.calls(),
            ["exec /sbin/mount.nfs 10.0.2.15:/ex port /mnt/data -s -n -v -o rw,vers=4.2,proto=rdma,port=20049"]
        );
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let mut m = MountNfs {
            program: "/nonexistent/mount.nfs".into(),
            unmounter: Unmounter::Syscall { umount: None },
            mover: Mover::Syscall,
        };
        let e = m
            .mount(&crate::system::Live::new(true), &call())
            .unwrap_err();
        assert!(matches!(e, MountError::Spawn { .. }));
        assert_eq!(e.exit_code(), 2);
        assert!(m
            .plan(&call())
            .starts_with("/nonexistent/mount.nfs 10.0.2.15:/ex port /mnt/data -s"));
    }
}
