//! `nfs-gds watch DIR [--seconds N] [--json]`: while the user's workload runs, sample the mount's
//! mountstats counters and nvidia-fs's counters at the start and the end, and say whether the
//! bytes went GPU-direct. Exit 0 GPU-direct, 1 anything else, 2 error. Reads only: it never
//! writes nvidia-fs's stats file or a module parameter.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::{exit, CmdError, Ctx};
use crate::host::mounts::read_mount_table;
use crate::watch::report::{size, WatchReport};
use crate::watch::{watch, RootSampler};

/// The longest watch: a day.
const MAX_SECONDS: u64 = 86_400;

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The mount point to watch
    pub dir: PathBuf,
    /// How long to watch, while the workload runs
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=MAX_SECONDS))]
    pub seconds: u64,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

fn text(r: &WatchReport, dir: &str) -> String {
    let mut out = format!("nfs-gds watch {dir} ({} s): {}\n", r.seconds, r.summary);
    let m = &r.mount;
    out.push_str(&format!(
        "  mount: {} READs ({}), {} WRITEs ({}) over {}\n",
        m.read_ops,
        size(m.read_bytes),
        m.write_ops,
        size(m.write_bytes),
        if m.transports.is_empty() {
            "no transport".to_string()
        } else {
            m.transports.join("+")
        }
    ));
    if let Some(c) = m.rdma {
        out.push_str(&format!(
            "  rdma: {} write chunks (READ payload), {} read chunks (WRITE payload), {} reply chunks\n",
            c.write_chunks, c.read_chunks, c.reply_chunks
        ));
    }
    if let Some(n) = r.nvidia_fs {
        out.push_str(&format!(
            "  nvidia-fs: {} reads ({}), {} writes ({})\n",
            n.reads,
            size(n.read_bytes),
            n.writes,
            size(n.write_bytes)
        ));
    }
    for note in &r.notes {
        out.push_str(&format!("  note: {note}\n"));
    }
    out
}

pub fn run(args: &WatchArgs, ctx: &Ctx) -> Result<u8, CmdError> {
    let target = ctx.host.mount_point(&args.dir);
    let table = read_mount_table(&ctx.host.root)?;
    let Some(mount) = table.topmost_at(&target) else {
        return Err(format!("nothing is mounted on {}", target.display()).into());
    };
    if !mount.is_nfs() {
        return Err(format!(
            "{} is a {} mount, not NFS: there is nothing to watch",
            target.display(),
            mount.info.fstype()
        )
        .into());
    }
    let nth = table
        .mounts
        .iter()
        .take_while(|m| m.info.mount_id != mount.info.mount_id)
        .filter(|m| m.info.mount_point() == target && m.info.source() == mount.info.source())
        .count();
    let mut sampler = RootSampler {
        root: ctx.host.root.clone(),
        mount_point: target.clone(),
        device: mount.info.source().to_string(),
        nth,
    };
    let report = watch(
        &mut sampler,
        args.seconds,
        &mut std::thread::sleep,
        &mut || {
            errln!(
                "nfs-gds: watching {} for {} s: run the workload now",
                target.display(),
                args.seconds
            )
        },
    )?;
    let out = if args.json {
        let mut v = serde_json::to_value(&report)?;
        v["command"] = "watch".into();
        v["mount_point"] = target.display().to_string().into();
        format!("{}\n", serde_json::to_string_pretty(&v)?)
    } else {
        text(&report, &target.display().to_string())
    };
    // A closed pipe (`| head`) is not an error of the watch.
    let _ = std::io::stdout().write_all(out.as_bytes());
    Ok(if report.outcome.is_gpu_direct() {
        exit::READY
    } else {
        exit::NOT_READY
    })
}
