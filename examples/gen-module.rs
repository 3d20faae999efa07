//! Writes a generated rpcrdma module (the test suite's generator) to a file, for benchmarks
//! and for looking at with `readelf`/`modinfo`:
//! `gen-module OUT.ko [--hooks gpl|plain|none|unexported] [--layout split|flags]
//! [--release R] [--pad BYTES] [--build-id SEED] [--srcversion S] [--imports FILE]`.
//! `--imports` replaces the module's imports with those of FILE, one `0xCRC<TAB>symbol` line
//! each as `modprobe --dump-modversions` prints them, so a generated module can want exactly
//! what a real build against the same kernel wants.
//! The output is plain ELF; compress it with the distribution's tools.

#[path = "../tests/support/module_gen.rs"]
#[allow(dead_code)] // the test suite uses more of the generator than this tool
mod module_gen;

use std::process::ExitCode;

use module_gen::{build, build_id_of, HookExport, Layout, ModuleSpec};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(out) = args.next().filter(|o| !o.starts_with('-')) else {
        eprintln!("usage: gen-module OUT.ko [--hooks gpl|plain|none|unexported] [--layout split|flags] [--release R] [--pad BYTES] [--build-id SEED] [--srcversion S] [--imports FILE]");
        return ExitCode::from(2);
    };
    let mut release = "6.1.0-50-amd64".to_string();
    let mut hooks = Some(HookExport::Gpl);
    let mut layout = Layout::SplitTables;
    let mut pad = None;
    let mut build_id = None;
    let mut srcversion = None;
    let mut imports = None;
    while let Some(flag) = args.next() {
        let Some(value) = args.next() else {
            eprintln!("{flag} needs a value");
            return ExitCode::from(2);
        };
        match flag.as_str() {
            "--release" => release = value,
            "--hooks" => {
                hooks = match value.as_str() {
                    "gpl" => Some(HookExport::Gpl),
                    "plain" => Some(HookExport::Plain),
                    "unexported" => Some(HookExport::NotExported),
                    "none" => None,
                    other => {
                        eprintln!("unknown --hooks {other}");
                        return ExitCode::from(2);
                    }
                }
            }
            "--layout" => {
                layout = match value.as_str() {
                    "split" => Layout::SplitTables,
                    "flags" => Layout::FlagsTable,
                    other => {
                        eprintln!("unknown --layout {other}");
                        return ExitCode::from(2);
                    }
                }
            }
            "--pad" => match value.parse() {
                Ok(n) => pad = Some(n),
                Err(e) => {
                    eprintln!("--pad {value}: {e}");
                    return ExitCode::from(2);
                }
            },
            "--build-id" => build_id = Some(value),
            "--srcversion" => srcversion = Some(value),
            "--imports" => match read_imports(&value) {
                Ok(list) => imports = Some(list),
                Err(e) => {
                    eprintln!("--imports {value}: {e}");
                    return ExitCode::from(2);
                }
            },
            other => {
                eprintln!("unknown option {other}");
                return ExitCode::from(2);
            }
        }
    }
    let mut spec = ModuleSpec::rpcrdma(&release).hooks(hooks).layout(layout);
    if let Some(p) = pad {
        spec = spec.padded_to(p);
    }
    if let Some(seed) = build_id {
        spec = spec.build_id(Some(build_id_of(&seed)));
    }
    if let Some(s) = srcversion {
        spec = spec.srcversion(Some(&s));
    }
    if let Some(list) = imports {
        spec.imports = list;
    }
    if let Err(e) = std::fs::write(&out, build(&spec)) {
        eprintln!("cannot write {out}: {e}");
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

/// `0xCRC<TAB>symbol` lines (`modprobe --dump-modversions`); an error names the line.
fn read_imports(path: &str) -> Result<Vec<(String, u32)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| {
            let bad = || format!("line {}: not `0xCRC<TAB>symbol`: {line:?}", n + 1);
            let (crc, symbol) = line.split_once('\t').ok_or_else(bad)?;
            let crc = crc.strip_prefix("0x").ok_or_else(bad)?;
            let crc = u32::from_str_radix(crc, 16).map_err(|_| bad())?;
            Ok((symbol.to_string(), crc))
        })
        .collect()
}
