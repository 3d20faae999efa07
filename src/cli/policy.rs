//! `nfs-gds policy check [FILE]` and `nfs-gds policy show`: validate a policy file before
//! installing it, and see what the policy in force means for a mount before editing fstab.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::context::{CmdError, Ctx};
use super::exit;
use crate::checks::registry;
use crate::host::io::reader;
use crate::host::FileKind;
use crate::nfs::{ServerAddrs, ShownExport};
use crate::policy;

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Validate a policy file (default: the one in force): every syntax and value error, and the trust rules (notes for a draft, errors for the file in force); exit 0 when valid, 1 listing every error, 2 when it cannot be read
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

/// Validates the file: every syntax and value error, always. The trust rules' findings about
/// where the file lies are errors for the file in force and notes for a draft, which may be
/// installed elsewhere; a file that is not a regular file, too large, or outside the root is
/// not read at all.
fn check(args: &CheckArgs, ctx: &Ctx) -> Result<u8, CmdError> {
    let in_force = policy::path_for(&ctx.host.root, ctx.config.as_deref());
    let explicit = args.file.is_some() || ctx.config.is_some();
    let path = args.file.clone().unwrap_or_else(|| in_force.clone());
    let is_in_force = args.file.is_none() || same_file(&path, &in_force);
    let read = if explicit {
        policy::trust::read
    } else {
        policy::trust::read_confined
    };
    let (bytes, finding) = match read(&path, &ctx.host.trust()) {
        Ok(bytes) => (bytes, None),
        Err(e) if e.is_not_found() && !explicit && !path_exists(&path) => {
            outln!(
                "valid: the built-in defaults are in force ({} does not exist)",
                path.display()
            );
            return Ok(exit::READY);
        }
        Err(e) if e.is_not_found() => {
            return Err(Box::new(policy::PolicyError::Missing { path }));
        }
        Err(e) if e.is_about_location() => {
            let read = reader::read_named(&path, FileKind::Config)?
                .ok_or_else(|| policy::PolicyError::Missing { path: path.clone() })?;
            (read.bytes, Some(e))
        }
        Err(e) => return Err(Box::new(e)),
    };
    let text =
        String::from_utf8(bytes).map_err(|e| format!("{}: not UTF-8 text: {e}", path.display()))?;
    let errors = policy::file::all_errors(&text);
    for e in &errors {
        errln!(
            "{}:{}:{}: {}",
            path.display(),
            e.line,
            e.column,
            crate::escape::escape_control(&e.message)
        );
    }
    let mut count = errors.len();
    if let Some(e) = &finding {
        let e = e.to_string();
        let e = crate::escape::escape_control(&e);
        if is_in_force {
            errln!("{e}");
            count += 1;
        } else {
            errln!("note: {e} (every command would refuse it there; installed as the policy, it must pass this rule)");
        }
    }
    if count > 0 {
        errln!(
            "nfs-gds: {}: {count} error{}",
            path.display(),
            if count == 1 { "" } else { "s" }
        );
        return Ok(exit::NOT_READY);
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

/// Whether two paths name the same file (both exist and resolve alike).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
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
