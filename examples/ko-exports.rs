//! Lists every export of a kernel module file and how nfs-gds classifies it, one
//! `<symbol>\t<EXPORT_SYMBOL|EXPORT_SYMBOL_GPL|…>` line each, in the vocabulary of the kernel's
//! `Module.symvers`, so the reader can be checked against a real kernel build:
//!
//! ```sh
//! cargo run --example ko-exports -- /lib/modules/$(uname -r)/kernel/net/sunrpc/sunrpc.ko.xz | sort > ours
//! awk -F'\t' '$3 == "net/sunrpc/sunrpc" { print $2 "\t" $4 }' /usr/src/linux-headers-$(uname -r)/Module.symvers | sort > theirs
//! diff ours theirs
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use nfs_gds::kmod::{decompress, elf, Export};

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: ko-exports MODULE.ko[.gz|.xz|.zst]");
        return ExitCode::from(2);
    };
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("cannot read {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let Some(format) = decompress::sniff(&bytes) else {
        eprintln!("{}: not an ELF or compressed module", path.display());
        return ExitCode::from(2);
    };
    let image = match decompress::decompress(format, &bytes, nfs_gds::kmod::MODULE_SIZE_CAP) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("{}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    match elf::list_exports(&image) {
        Ok(exports) => {
            for (name, export) in exports {
                let kind = match export {
                    Export::Gpl => "EXPORT_SYMBOL_GPL".to_string(),
                    Export::Plain => "EXPORT_SYMBOL".to_string(),
                    Export::NotExported => "NOT_EXPORTED".to_string(),
                    Export::Unrecognised { section } => format!("UNRECOGNISED({section})"),
                };
                println!("{name}\t{kind}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{}: {e}", path.display());
            ExitCode::from(2)
        }
    }
}
