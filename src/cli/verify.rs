//! `nfs-gds verify DIR`: the post-mount checks for an existing mount, with the transport trap
//! as context. Same report, rendering and exit codes as `check` (0 ready, 1 not ready, 2 error).
//!
//! A DIR that is not itself a mount point but lies inside an NFS mount is judged as that mount
//! (and said so); one that does not exist is an error. A path below an NFS mount is never
//! `stat`ed: a hard mount of a dead server would hang the command.

use std::path::PathBuf;

use clap::Args;

use super::context::{CmdError, Ctx};
use crate::checks::catalogue::{mount_options, mount_transport, transport_trap};
use crate::checks::{CheckResult, Report};
use crate::host::kernel::KernelInfo;
use crate::host::mount_localio::MountLocalio;
use crate::host::mounts::read_mount_table;
use crate::judge::MountJudge;
use crate::nfs::{ServerAddrs, ShownExport};
use crate::policy::intent::read_declared;
use crate::verdict;

#[derive(Debug, Args)]
#[command(
    after_help = "With --json: check's report for one mount, with `command` \"verify\" and `subject` the mount point (schemas/verify.schema.json)."
)]
pub struct VerifyArgs {
    /// The mount point to verify, or a directory inside an NFS mount (that mount is verified)
    pub dir: PathBuf,
    /// The port the mount must use, 1 to 65535 [default: the port the helper recorded for it, else `port` in `[options]` of the policy, else 20049]
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    #[command(flatten)]
    pub output: super::shared::OutputArgs,
}

/// The mount's report, for [`super::report::show`].
pub fn report(args: &VerifyArgs, ctx: &Ctx) -> Result<Report, CmdError> {
    let policy = ctx.policy()?;
    let target = ctx.host.mount_point(&args.dir);
    let table = read_mount_table(&ctx.host.root)?;
    let mounted = match table.topmost_at(&target) {
        Some(m) => Some(m),
        None => match table.under(&target).filter(|m| m.is_nfs()) {
            Some(m) => {
                let note = format!(
                    "{} lies on mount {} (export {}): verifying that mount",
                    target.display(),
                    m.info.mount_point().display(),
                    m.info.source()
                );
                errln!("nfs-gds: {}", crate::escape::escape_control(&note));
                Some(m)
            }
            None if !ctx.host.root.exists(&target) => {
                return Err(format!("{} does not exist", target.display()).into());
            }
            None => None,
        },
    };
    let target = mounted.map_or(target, |m| m.info.mount_point().to_path_buf());
    let declared = read_declared(&ctx.host.root)?;
    let addrs = ServerAddrs::new(ctx.host.system());
    let judged = match mounted {
        // The one mount judge, as the agent, doctor and the gates judge this mount.
        Some(m) => {
            let localio = MountLocalio::read(&ctx.host.root, &table)?;
            MountJudge::new(&table, &declared, &policy, &addrs, &localio).judge_on(m, args.port)
        }
        None => {
            let rule = policy.rule_for(&target, ShownExport::written(""), &addrs);
            let results = vec![
                CheckResult::skip(transport_trap::ID, "nothing is mounted"),
                CheckResult::fail(
                    mount_transport::ID,
                    format!("nothing is mounted on {}", target.display()),
                )
                .remedy(format!(
                    "mount it (`mount {}` for an fstab entry, or `mount -t nfs-gds SERVER:/EXPORT {}`)",
                    target.display(),
                    target.display()
                )),
                CheckResult::skip(mount_options::ID, "nothing is mounted"),
            ];
            verdict::judge(results, &policy.for_rule(rule))
        }
    };
    Ok(judged.into_report(
        "verify",
        &ctx.host.root.dir().display().to_string(),
        KernelInfo::read(&ctx.host.root)?.release,
        Some(target.display().to_string()),
    ))
}
