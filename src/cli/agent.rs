//! `nfs-gds agent`: re-checks the node periodically and publishes the result for NFD (labels),
//! Prometheus (textfile collector) and anything that reads a status JSON.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use clap::Args;

use super::{exit, CmdError, Ctx};
use crate::agent::{self, atomic::write_atomic};
use crate::checks::{node, render, Report};
use crate::host::HostFacts;

const NFD_DIR: &str = "/etc/kubernetes/node-feature-discovery/features.d";
const TEXTFILE_DIR: &str = "/var/lib/prometheus/node-exporter";

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Check once, write the outputs, and exit (0 ready, 1 not ready, 2 error)
    #[arg(long)]
    pub once: bool,
    /// Seconds between checks
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub interval: u64,
    /// NFD features.d directory [default: /etc/kubernetes/node-feature-discovery/features.d, used only if it exists]
    #[arg(long, value_name = "DIR")]
    pub nfd_dir: Option<PathBuf>,
    /// node_exporter textfile directory [default: /var/lib/prometheus/node-exporter, used only if it exists]
    #[arg(long, value_name = "DIR")]
    pub textfile_dir: Option<PathBuf>,
    /// Where to write the status JSON
    #[arg(long, value_name = "FILE", default_value = "/run/nfs-gds/status.json")]
    pub status_file: PathBuf,
}

fn target(given: &Option<PathBuf>, default: &str) -> Option<PathBuf> {
    match given {
        Some(d) => Some(d.clone()),
        None => {
            let d = PathBuf::from(default);
            d.is_dir().then_some(d)
        }
    }
}

fn one_pass(args: &AgentArgs, ctx: &Ctx) -> Result<Report, CmdError> {
    let facts = HostFacts::read(&ctx.root)?;
    let report = Report::new(
        "agent",
        &ctx.root.dir().display().to_string(),
        facts.kernel.release.clone(),
        None,
        node::premount(&facts),
    );
    let now = SystemTime::now();
    let nvfs = facts.nvidia_fs.version.clone().unwrap_or_default();
    let kernel = facts.kernel.release.unwrap_or_default();
    if let Some(dir) = target(&args.nfd_dir, NFD_DIR) {
        let labels = [
            ("nvidia-fs.version", nvfs.clone()),
            ("kernel", kernel.clone()),
        ];
        let text = agent::features_file(&report, &labels, now, Duration::from_secs(args.interval));
        write_atomic(&dir.join("nfs-gds"), text.as_bytes(), 0o644)?;
    }
    if let Some(dir) = target(&args.textfile_dir, TEXTFILE_DIR) {
        let info = [("kernel_release", kernel), ("nvidia_fs_version", nvfs)];
        let text = agent::prometheus_file(&report, &info, now);
        write_atomic(&dir.join("nfs-gds.prom"), text.as_bytes(), 0o644)?;
    }
    write_atomic(&args.status_file, render::json(&report).as_bytes(), 0o644)?;
    Ok(report)
}

pub fn run(args: &AgentArgs, ctx: &Ctx) -> Result<u8, CmdError> {
    if args.once {
        let r = one_pass(args, ctx)?;
        print!("{}", render::verdict_line(&r, ctx.style));
        println!();
        return Ok(if r.verdict.is_ready() {
            exit::READY
        } else {
            exit::NOT_READY
        });
    }
    tracing::info!("checking every {} s", args.interval);
    let mut last = None;
    loop {
        match one_pass(args, ctx) {
            Ok(r) => {
                if last != Some(r.verdict) {
                    eprintln!("{}", render::verdict_line(&r, Default::default()));
                    last = Some(r.verdict);
                }
            }
            // A failed pass is logged and retried; the previous outputs stay until they expire.
            Err(e) => eprintln!(
                "nfs-gds agent: {}",
                crate::escape::escape_control(&e.to_string())
            ),
        }
        std::thread::sleep(Duration::from_secs(args.interval));
    }
}
