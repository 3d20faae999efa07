//! Writes a generated rpcrdma module (the test suite's generator) to a file, for benchmarks
//! and for looking at with `readelf`/`modinfo`:
//! `gen-module OUT.ko [--hooks gpl|plain|none|unexported] [--layout split|flags]
//! [--release R] [--pad BYTES] [--build-id SEED] [--srcversion S] [--imports-from KO]`.
//! The output is plain ELF; compress it with the distribution's tools. `--imports-from` takes
//! the imports and their CRCs from the `__versions` of another (plain) module, such as the
//! distribution's own rpcrdma.ko, so that the generated module agrees with that kernel's
//! providers as a correctly rebuilt one does.

#[path = "../tests/support/module_gen.rs"]
#[allow(dead_code)] // the test suite uses more of the generator than this tool
mod module_gen;

use std::process::ExitCode;

use module_gen::{build, build_id_of, HookExport, Layout, ModuleSpec};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(out) = args.next().filter(|o| !o.starts_with('-')) else {
        eprintln!("usage: gen-module OUT.ko [--hooks gpl|plain|none|unexported] [--layout split|flags] [--release R] [--pad BYTES] [--build-id SEED] [--srcversion S] [--imports-from KO]");
        return ExitCode::from(2);
    };
    let mut release = "6.1.0-50-amd64".to_string();
    let mut hooks = Some(HookExport::Gpl);
    let mut layout = Layout::SplitTables;
    let mut pad = None;
    let mut build_id = None;
    let mut srcversion = None;
    let mut imports_from = None;
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
            "--imports-from" => imports_from = Some(value),
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
    if let Some(path) = imports_from {
        match versions_of(&path) {
            Ok(imports) => spec.imports = imports,
            Err(e) => {
                eprintln!("--imports-from {path}: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if let Err(e) = std::fs::write(&out, build(&spec)) {
        eprintln!("cannot write {out}: {e}");
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

/// The `(name, crc)` entries of a plain module's `__versions` section (64-byte records: a
/// little-endian CRC, then the NUL-padded name).
fn versions_of(path: &str) -> Result<Vec<(String, u32)>, String> {
    let data = std::fs::read(path).map_err(|e| e.to_string())?;
    let elf = goblin::elf::Elf::parse(&data).map_err(|e| e.to_string())?;
    let section = elf
        .section_headers
        .iter()
        .find(|sh| elf.shdr_strtab.get_at(sh.sh_name) == Some("__versions"))
        .ok_or("no __versions section (not a CONFIG_MODVERSIONS module, or compressed)")?;
    let bytes = section
        .file_range()
        .and_then(|r| data.get(r))
        .ok_or("__versions lies outside the file")?;
    let imports: Vec<(String, u32)> = bytes
        .chunks_exact(64)
        .map(|entry| {
            let crc = u32::from_le_bytes([entry[0], entry[1], entry[2], entry[3]]);
            let name = &entry[8..];
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            (String::from_utf8_lossy(&name[..end]).into_owned(), crc)
        })
        .collect();
    if imports.is_empty() {
        return Err("empty __versions section".into());
    }
    Ok(imports)
}
