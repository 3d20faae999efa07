//! `provision --apply`: runs the safe, idempotent subset of the plan (steps that carry an
//! [`Action`]), logging each command and stopping at the first failure. It never reboots, and it
//! refuses to reload rpcrdma while mounts or listeners use it — the plan would not propose that,
//! but the state is checked again right before acting, since it may have changed.

use std::io::Write;

use serde::Serialize;

use super::step::{Action, Step};
use super::usage::RpcrdmaUsage;
use crate::system::{Output, System};

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("refusing to reload rpcrdma: {0}; reboot instead, or stop those users first")]
    InUse(String),
    #[error("`{command}` failed ({status}); stopping here, later steps were not run{detail}")]
    CommandFailed {
        command: String,
        status: String,
        detail: String,
    },
    #[error("`{0}` is not installed (looked in /usr/sbin, /sbin, /usr/bin, /bin, /usr/local/sbin, /usr/local/bin)")]
    Missing(String),
}

/// What was run.
#[derive(Debug, Default, Serialize)]
pub struct Applied {
    pub commands: Vec<String>,
}

/// Runs every automatable step in order. `usage` is re-read by the caller just before applying.
pub fn apply(
    plan: &[Step],
    system: &dyn System,
    usage: &RpcrdmaUsage,
    log: &mut dyn Write,
) -> Result<Applied, ApplyError> {
    let mut applied = Applied::default();
    for step in plan {
        let Some(action) = &step.action else {
            continue;
        };
        if *action == Action::ReloadRpcrdma && usage.in_use() {
            return Err(ApplyError::InUse(usage.reasons().join("; ")));
        }
        let _ = writeln!(log, "==> {}", step.title);
        for (program, args) in action.commands() {
            let line = std::iter::once(program.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ");
            let _ = writeln!(log, "    $ {line}");
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            match system.run(&program, &argv) {
                Output::Missing => return Err(ApplyError::Missing(program)),
                Output::Ran {
                    code: Some(0),
                    stdout,
                    ..
                } => {
                    for l in stdout.lines() {
                        let _ = writeln!(log, "    {l}");
                    }
                    applied.commands.push(line);
                }
                Output::Ran { code, stderr, .. } => {
                    return Err(ApplyError::CommandFailed {
                        command: line,
                        status: code.map_or("killed by a signal".into(), |c| format!("exit {c}")),
                        detail: if stderr.trim().is_empty() {
                            String::new()
                        } else {
                            format!(": {}", stderr.trim())
                        },
                    })
                }
            }
        }
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::Fake;

    fn step(action: Action) -> Step {
        Step {
            title: "t".into(),
            why: "w".into(),
            commands: action.command_lines(),
            action: Some(action),
        }
    }

    fn manual() -> Step {
        Step {
            title: "reboot".into(),
            why: "w".into(),
            commands: vec!["systemctl reboot".into()],
            action: None,
        }
    }

    #[test]
    fn runs_only_automatable_steps_in_order() {
        let r = Fake::new()
            .answer("depmod -a 6.8.0", "")
            .answer("modprobe -r rpcrdma", "")
            .answer("modprobe rpcrdma", "");
        let plan = vec![
            step(Action::Depmod {
                kernel: "6.8.0".into(),
            }),
            manual(),
            step(Action::ReloadRpcrdma),
        ];
        let mut log = Vec::new();
        let a = apply(&plan, &r, &RpcrdmaUsage::default(), &mut log).unwrap();
        assert_eq!(
            r.calls(),
            vec![
                "run depmod -a 6.8.0",
                "run modprobe -r rpcrdma",
                "run modprobe rpcrdma"
            ]
        );
        assert_eq!(a.commands.len(), 3);
        assert!(!String::from_utf8(log).unwrap().contains("systemctl reboot"));
    }

    #[test]
    fn refuses_reload_while_mounted_and_runs_nothing_after() {
        let r = Fake::new().answer("modprobe nvidia-fs", "");
        let usage = RpcrdmaUsage {
            refcount: Some(3),
            rdma_mounts: vec!["/mnt/data".into()],
            nfsd_rdma_listener: false,
        };
        let plan = vec![
            step(Action::LoadModule {
                module: "nvidia-fs".into(),
            }),
            step(Action::ReloadRpcrdma),
            step(Action::Depmod {
                kernel: "6.8.0".into(),
            }),
        ];
        let err = apply(&plan, &r, &usage, &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("/mnt/data"), "{err}");
        assert_eq!(r.calls(), vec!["run modprobe nvidia-fs"]);
    }

    #[test]
    fn stops_at_the_first_failure() {
        let r = Fake::new().answer_with(
            "dkms remove mlnx-nfsrdma/24.10 -k 6.8.0",
            Output::Ran {
                code: Some(3),
                stdout: String::new(),
                stderr: "Error! no such module".into(),
            },
        );
        let plan = vec![
            step(Action::DkmsRebuild {
                module: "mlnx-nfsrdma".into(),
                version: "24.10".into(),
                kernel: "6.8.0".into(),
            }),
            step(Action::Depmod {
                kernel: "6.8.0".into(),
            }),
        ];
        let err = apply(&plan, &r, &RpcrdmaUsage::default(), &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("exit 3"), "{err}");
        assert!(err.to_string().contains("no such module"), "{err}");
        assert_eq!(r.calls().len(), 1);
    }
}
