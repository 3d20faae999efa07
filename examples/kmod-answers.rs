//! Prints what nfs-gds reads from module files and depmod's indexes in the formats of kmod's own
//! tools, so the readers can be diffed against them on a real module tree:
//!
//! ```sh
//! kmod-answers versions M.ko            # vs: modprobe --dump-modversions M.ko
//! kmod-answers signature M.ko           # vs: modinfo -F signer / sig_key / sig_hashalgo M.ko
//! kmod-answers exports M.ko             # 0x<crc>\t<symbol> per export (vs Module.symvers)
//! kmod-answers resolve ROOT REL NAME…   # <name>\t<module>\t<file>, after alias resolution
//! kmod-answers provider ROOT REL SYM…   # <symbol>\t<module> from modules.symbols
//! kmod-answers abi ROOT REL M.ko        # each import whose CRC disagrees with its provider
//! ```

use std::path::Path;
use std::process::ExitCode;

use nfs_gds::host::modules::module_files::read_load_facts;
use nfs_gds::host::modules::symbol_providers::TreeProviders;
use nfs_gds::host::modules::{ModuleTree, Resolution};
use nfs_gds::host::Root;
use nfs_gds::kmod::abi::{compare_import_crcs, AbiVerdict, KernelModversions};
use nfs_gds::kmod::load_facts::SignatureFacts;
use nfs_gds::kmod::modversions::ImportVersions;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kmod-answers: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: kmod-answers versions|signature|exports FILE | resolve|provider ROOT REL NAME… | abi ROOT REL FILE";
    let (cmd, rest) = args.split_first().ok_or(usage)?;
    match (cmd.as_str(), rest) {
        ("versions", [file]) => {
            if let ImportVersions::Versioned { versions, .. } =
                read_load_facts(Path::new(file))?.imports
            {
                for v in versions {
                    println!("{:#010x}\t{}", v.crc, v.symbol);
                }
            }
        }
        ("exports", [file]) => {
            for (sym, crc) in read_load_facts(Path::new(file))?.exports.crcs {
                println!("{crc:#010x}\t{sym}");
            }
        }
        ("signature", [file]) => match read_load_facts(Path::new(file))?.signature {
            SignatureFacts::Unsigned => println!("unsigned"),
            SignatureFacts::Unreadable { reason } => println!("unreadable: {reason}"),
            SignatureFacts::Signed(s) => {
                println!("signer: {}", s.signer.unwrap_or_default());
                println!("sig_key: {}", s.key_id.unwrap_or_default());
                println!("sig_hashalgo: {}", s.hash_algorithm.unwrap_or_default());
            }
        },
        ("resolve", [root, rel, names @ ..]) => {
            let root = Root::new(root);
            let tree = ModuleTree::read(&root, rel)?;
            for name in names {
                match tree.resolve(&root, name)? {
                    Resolution::File {
                        module, rel_path, ..
                    } => println!("{name}\t{module}\t{rel_path}"),
                    Resolution::BuiltIn { module } => println!("{name}\t{module}\t(builtin)"),
                    Resolution::NotFound { module } => println!("{name}\t{module}\t(not found)"),
                    Resolution::NoModuleTree { dir } => {
                        println!("{name}\t-\t(no tree at {})", dir.display())
                    }
                }
            }
        }
        ("provider", [root, rel, symbols @ ..]) => {
            let tree = ModuleTree::read(&Root::new(root), rel)?;
            for s in symbols {
                println!(
                    "{s}\t{}",
                    tree.symbol_provider(s)?.unwrap_or_else(|| "-".into())
                );
            }
        }
        ("abi", [root, rel, file]) => {
            let tree = ModuleTree::read(&Root::new(root), rel)?;
            let facts = read_load_facts(Path::new(file))?;
            let mut providers = TreeProviders::new(&tree);
            let verdict = compare_import_crcs(&facts.imports, &KernelModversions::Unknown, |s| {
                providers.provider_of(s)
            });
            match verdict {
                AbiVerdict::Compared(r) => {
                    println!(
                        "matched {} uncompared {} mismatched {}",
                        r.matched,
                        r.uncompared.len(),
                        r.mismatches.len()
                    );
                    for m in r.mismatches {
                        println!("{}", m.describe());
                    }
                }
                other => println!("{other:?}"),
            }
        }
        _ => return Err(usage.into()),
    }
    Ok(())
}
