//! `nfs-gds watch DIR [--seconds N] [--json]`: while the user's workload runs, sample the mount's
//! mountstats counters and nvidia-fs's counters at the start and the end, and say whether the
//! bytes went GPU-direct. Exit 0 GPU-direct, 1 anything else, 2 error. Reads only: it never
//! writes nvidia-fs's stats file or a module parameter.

use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use super::context::{CmdError, Ctx};
use super::exit;
use crate::checks::render::TextStyle;
use crate::checks::SCHEMA_VERSION;
use crate::host::mounts::read_mount_table;
use crate::watch::report::{size, WatchReport};
use crate::watch::{watch, RootSampler};

/// The longest watch: a day.
const MAX_SECONDS: u64 = 86_400;

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The mount point to watch
    pub dir: PathBuf,
    /// How long to watch, while the workload runs (1 to 86400 seconds)
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=MAX_SECONDS))]
    pub seconds: u64,
    #[command(flatten)]
    pub output: super::shared::OutputArgs,
}

/// What a watch found, with what was watched: `watch --json`'s document
/// (`schemas/watch.schema.json`).
#[derive(Debug, Serialize)]
pub struct Watched {
    schema_version: u32,
    command: &'static str,
    mount_point: String,
    #[serde(flatten)]
    report: WatchReport,
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

/// The watch's report, for [`super::report::show`].
pub fn report(args: &WatchArgs, ctx: &Ctx) -> Result<Watched, CmdError> {
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
    let report = watch(&mut sampler, args.seconds, ctx.host.system(), &mut || {
        errln!(
            "nfs-gds: watching {} for {} s: run the workload now",
            target.display(),
            args.seconds
        )
    })?;
    Ok(Watched {
        schema_version: SCHEMA_VERSION,
        command: "watch",
        mount_point: target.display().to_string(),
        report,
    })
}

impl super::report::Report for Watched {
    fn text(&self, _: TextStyle) -> String {
        text(&self.report, &self.mount_point)
    }

    fn json(&self) -> Result<String, CmdError> {
        Ok(format!("{}\n", serde_json::to_string_pretty(self)?))
    }

    /// 0 when the bytes went GPU-direct, 1 otherwise.
    fn exit_code(&self) -> u8 {
        exit::ready_or_not(self.report.outcome.is_gpu_direct())
    }
}
