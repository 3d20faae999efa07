//! `nfs-gds policy check [FILE]` and `nfs-gds policy show`: validate a policy file before
//! installing it, and see what the policy in force means for a mount before editing fstab.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::{exit, CmdError, Ctx};
use crate::checks::registry;
use crate::nfs::{ServerAddrs, ShownExport};
use crate::policy;

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Validate a policy file (default: the one in force) under the trust rules; exit 0 when valid, 2 listing every error
    Check(CheckArgs),
    /// Show the effective level of every check, and the wait, for a mount (or the node)
    Show(ShowArgs),
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The file to validate [default: --config, NFS_GDS_CONFIG, or /etc/nfs-gds/nfs-gds.toml]
    pub file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The mount point, as in fstab (matches `target` of a `[[mount]]` table)
    #[arg(long, value_name = "DIR", value_parser = mount_point)]
    pub target: Option<PathBuf>,
    /// The source, as in fstab, e.g. server:/export (matches `source` of a `[[mount]]` table)
    #[arg(long, value_name = "SPEC", value_parser = mount_source)]
    pub source: Option<String>,
}

/// `--target`: an absolute path, as a `[[mount]]` target is; a relative one matches no table.
fn mount_point(text: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(text);
    policy::check_rule_target(&p).map(|()| p)
}

/// `--source`: SERVER:/EXPORT, as a `[[mount]]` source is.
fn mount_source(text: &str) -> Result<String, String> {
    policy::check_rule_source(text).map(|()| text.to_string())
}

pub fn run(cmd: &PolicyCommand, ctx: &Ctx) -> Result<u8, CmdError> {
    match cmd {
        PolicyCommand::Check(args) => check(args, ctx),
        PolicyCommand::Show(args) => show(args, ctx),
    }
}

fn check(args: &CheckArgs, ctx: &Ctx) -> Result<u8, CmdError> {
    let path = match &args.file {
        Some(f) => f.clone(),
        None => policy::path_for(&ctx.host.root, ctx.config.as_deref()),
    };
    // The trust rules every command applies: a file they would refuse is not valid.
    let bytes = policy::trust::read(&path, &ctx.host.trust()).map_err(|e| -> CmdError {
        if e.is_not_found() {
            Box::new(policy::PolicyError::Missing { path: path.clone() })
        } else {
            Box::new(e)
        }
    })?;
    let text =
        String::from_utf8(bytes).map_err(|e| format!("{}: not UTF-8 text: {e}", path.display()))?;
    let errors = policy::file::all_errors(&text);
    if !errors.is_empty() {
        for e in &errors {
            errln!(
                "{}:{}:{}: {}",
                path.display(),
                e.line,
                e.column,
                crate::escape::escape_control(&e.message)
            );
        }
        errln!(
            "nfs-gds: {}: {} error{}",
            path.display(),
            errors.len(),
            if errors.len() == 1 { "" } else { "s" }
        );
        return Ok(exit::ERROR);
    }
    let parsed =
        policy::file::parse(&text).map_err(|e| format!("{}: {}", path.display(), e.message))?;
    if let Some(w) = crate::nfs::rdma_port_warning(parsed.options.port) {
        errln!("{}: warning: [options] {w}", path.display());
    }
    outln!(
        "{}: valid ({} [[mount]] table{}, default level {})",
        path.display(),
        parsed.mounts.len(),
        if parsed.mounts.len() == 1 { "" } else { "s" },
        parsed.default
    );
    Ok(exit::READY)
}

fn show(args: &ShowArgs, ctx: &Ctx) -> Result<u8, CmdError> {
    let (path, loaded) = ctx.policy_with_path()?;
    let from = if path_exists(&path) {
        path.display().to_string()
    } else {
        format!("built-in defaults ({} does not exist)", path.display())
    };
    let effective = match (&args.target, &args.source) {
        (None, None) => loaded.for_node(),
        (target, source) => loaded.for_mount(
            target.as_deref().unwrap_or(Path::new("")),
            ShownExport::written(source.as_deref().unwrap_or("")),
            &ServerAddrs::new(ctx.host.system()),
            None,
            None,
        ),
    };
    outln!("policy: {from}");
    match (effective.rule, &args.target, &args.source) {
        (Some(i), _, _) => outln!("mount: [[mount]] table {} applies", i + 1),
        (None, None, None) => {
            outln!("mount: none given (node checks as `nfs-gds check` runs them)")
        }
        (None, _, _) => outln!("mount: no [[mount]] table matches"),
    }
    outln!("wait: {} s", effective.wait.as_secs());
    outln!("probe: {}", if effective.probe { "yes" } else { "no" });
    let width = registry::all()
        .iter()
        .map(|c| c.id.as_str().len())
        .max()
        .unwrap_or(0);
    for c in registry::all() {
        let level = effective.level(c.id);
        let note = if level == c.default_level {
            String::new()
        } else {
            format!("  (default {})", c.default_level)
        };
        outln!("  {:<width$}  {:<7}{note}", c.id.as_str(), level.as_str());
    }
    Ok(exit::READY)
}

fn path_exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}
