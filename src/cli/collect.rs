//! `nfs-gds collect -o FILE`: a support bundle that `doctor --root` can read elsewhere. FILE's
//! directory must exist, and FILE must not, unless `--force` says to replace a regular file
//! (never a directory or a device). `-o -` writes the bundle to stdout (not a terminal), built
//! first in a private temporary directory, so a failed collection writes nothing there.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use super::context::{CmdError, Ctx};
use super::{exit, out};
use crate::doctor::collect;
use crate::escape::escape_control;

#[derive(Debug, Args)]
pub struct CollectArgs {
    /// Where to write the archive (gzip-compressed tar); `-` writes it to stdout
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Replace FILE when it exists already
    #[arg(long)]
    pub force: bool,
}

/// Refuses, before anything is read, an output that cannot be written or that would replace a
/// file without `--force`, naming what the user gave.
fn check_output(args: &CollectArgs) -> Result<(), CmdError> {
    let out = &args.output;
    if is_stdout(out) {
        if std::io::stdout().is_terminal() {
            return Err("-o - writes a gzip archive to stdout, which is a terminal: redirect it (`> bundle.tar.gz`) or give -o FILE".into());
        }
        return Ok(());
    }
    let dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(format!(
            "cannot write {}: the directory {} does not exist",
            escape_control(&out.display().to_string()),
            escape_control(&dir.display().to_string())
        )
        .into());
    }
    let existing = std::fs::symlink_metadata(out).ok();
    if let Some(m) = existing.as_ref().filter(|m| !m.file_type().is_file()) {
        let what = if m.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(format!(
            "{} is {what}: give the path of a new file, e.g. -o {}",
            escape_control(&out.display().to_string()),
            escape_control(&out.join("nfs-gds-bundle.tar.gz").display().to_string())
        )
        .into());
    }
    if !args.force && existing.is_some() {
        return Err(format!(
            "{} exists already; give --force to replace it, or another -o",
            escape_control(&out.display().to_string())
        )
        .into());
    }
    Ok(())
}

/// What made the bundle, when and where: the first thing to read when one arrives with a ticket.
#[derive(Serialize)]
struct Manifest {
    /// `nfs-gds --version`.
    version: &'static str,
    /// When it was collected (RFC 3339, UTC).
    collected_at: String,
    hostname: Option<String>,
    kernel: Option<String>,
    command_line: Vec<String>,
}

fn manifest(ctx: &Ctx) -> Result<Vec<u8>, CmdError> {
    let first_line = |rel: &str| -> Result<Option<String>, CmdError> {
        Ok(ctx
            .host
            .root
            .read_text(rel)?
            .and_then(|t| t.lines().next().map(str::to_string)))
    };
    let m = Manifest {
        version: super::version::LONG_VERSION,
        collected_at: humantime::format_rfc3339_seconds(ctx.host.system().wall_clock()).to_string(),
        hostname: first_line("proc/sys/kernel/hostname")?,
        kernel: first_line("proc/sys/kernel/osrelease")?,
        command_line: std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
    };
    let mut bytes = serde_json::to_vec_pretty(&m)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Whether `-o` names stdout.
fn is_stdout(out: &Path) -> bool {
    out == Path::new("-")
}

pub fn run(args: &CollectArgs, ctx: &Ctx) -> Result<u8, CmdError> {
    check_output(args)?;
    let (policy_path, policy) = ctx.policy_with_path()?;
    let manifest = manifest(ctx)?;
    let system = ctx.host.system();
    let collect_to = |out: &Path| {
        collect::collect(
            &ctx.host.root,
            &policy_path,
            &policy,
            system,
            &crate::policy::intent::read_declared_strict,
            out,
            &manifest,
        )
    };
    if is_stdout(&args.output) {
        let scratch = tempfile::tempdir()
            .map_err(|e| format!("cannot make a temporary directory for the bundle: {e}"))?;
        let built = scratch.path().join("bundle.tar.gz");
        let c = collect_to(&built).map_err(|e| match e {
            collect::CollectError::Write { source, .. } => {
                format!("cannot build the bundle for stdout in the temporary directory: {source}")
                    .into()
            }
            other => CmdError::from(other),
        })?;
        let mut bundle = std::fs::File::open(&built)?;
        out::copy_to_stdout(&mut bundle)?;
        errln!(
            "nfs-gds collect: wrote the bundle to stdout ({} files, {} command outputs)",
            c.files.len(),
            c.commands.len()
        );
        return Ok(exit::READY);
    }
    let c = collect_to(&args.output)?;
    outln!(
        "nfs-gds collect: wrote {} ({} files, {} command outputs)",
        args.output.display(),
        c.files.len(),
        c.commands.len()
    );
    outln!(
        "unpack it with `mkdir bundle && tar -xzf {} -C bundle` and run `nfs-gds --root bundle doctor`",
        args.output.display()
    );
    Ok(exit::READY)
}
