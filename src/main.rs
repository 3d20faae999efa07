//! The `nfs-gds` binary. Also installed as `mount.nfs-gds`, the mount(8) helper; it dispatches
//! on the exact file name it was started as. All work happens in [`nfs_gds::cli`].

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(nfs_gds::cli::run(std::env::args_os().collect()))
}
