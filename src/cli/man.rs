//! `nfs-gds man DIR`: manual pages in section 8, generated from the clap definition (one for
//! `nfs-gds` and one per command), so they cannot drift from the options the binary accepts.
//! The pages shipped in `packaging/man/` are these (plus `mount.nfs-gds.8`, which sources
//! `nfs-gds-mount.8`); a test fails when they are stale.

use std::path::PathBuf;

use clap::{Args, CommandFactory};

use super::{exit, Cli, CmdError, Ctx};

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Directory to write nfs-gds.8 and nfs-gds-COMMAND.8 into
    pub dir: PathBuf,
}

/// Every page as (file name, roff text).
pub fn pages() -> Result<Vec<(String, Vec<u8>)>, std::io::Error> {
    let mut cmd = Cli::command();
    // Building propagates the global options (--root, --config, -v) into every command.
    cmd.build();
    let mut out = Vec::new();
    let mut top = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .section("8")
        .render(&mut top)?;
    out.push(("nfs-gds.8".to_string(), top));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("nfs-gds-{}", sub.get_name());
        let mut page = Vec::new();
        clap_mangen::Man::new(sub.clone().name(name.clone()))
            .section("8")
            .render(&mut page)?;
        out.push((format!("{name}.8"), page));
    }
    Ok(out)
}

pub fn run(args: &ManArgs, _ctx: &Ctx) -> Result<u8, CmdError> {
    std::fs::create_dir_all(&args.dir)
        .map_err(|e| format!("cannot create {}: {e}", args.dir.display()))?;
    for (name, text) in pages()? {
        let path = args.dir.join(&name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(exit::READY)
}
