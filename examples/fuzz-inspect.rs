//! A quick mutation fuzzer for the module reader (not run in CI): takes generated modules in
//! every packing, flips, inserts, deletes and overwrites bytes (with bias towards the ELF and
//! section headers), and runs [`nfs_gds::kmod::inspect_bytes`] and the kernel-image scanner on
//! each mutant, reporting any
//! panic with the input saved for a regression test.
//!
//! `cargo run --release --example fuzz-inspect -- ITERATIONS [SEED]`; needs xz, zstd and gzip.

#[path = "../tests/support/module_gen.rs"]
#[allow(dead_code)]
mod module_gen;
#[path = "../tests/support/pack.rs"]
#[allow(dead_code)]
mod pack;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::process::ExitCode;

use module_gen::{build, HookExport, Layout, ModuleSpec};
use nfs_gds::kmod::image_scan::{scan_bytes, Budget};
use nfs_gds::kmod::{inspect_bytes, RPCRDMA_HOOKS};
use pack::Packing;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let iterations: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let mut seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 11
    };
    let mut corpus = Vec::new();
    for layout in [Layout::SplitTables, Layout::FlagsTable] {
        for hooks in [Some(HookExport::Gpl), Some(HookExport::Plain), None] {
            let elf = build(&ModuleSpec::rpcrdma("6.8.0").layout(layout).hooks(hooks));
            for packing in Packing::ALL {
                corpus.push(pack::pack(&elf, packing));
            }
        }
    }
    std::panic::set_hook(Box::new(|_| {}));
    let mut panics = 0;
    let (mut ok, mut err) = (0u64, 0u64);
    for i in 0..iterations {
        let mut input = corpus[(next() as usize) % corpus.len()].clone();
        let edits = 1 + next() % 3;
        for _ in 0..edits {
            if input.is_empty() {
                break;
            }
            // Half of the edits land in the first 4 KiB or the last 4 KiB (headers, tables).
            let len = input.len();
            let at = match next() % 4 {
                0 => (next() as usize) % len.min(4096),
                1 => len - 1 - (next() as usize) % len.min(4096),
                _ => (next() as usize) % len,
            };
            match next() % 16 {
                0..=5 => input[at] ^= 1 << (next() % 8),
                6..=9 => input[at] = next() as u8,
                10 | 11 => {
                    let v = [0x00, 0xff, 0x7f, 0x80][(next() % 4) as usize];
                    let n = (1 + next() % 8) as usize;
                    for b in input.iter_mut().skip(at).take(n) {
                        *b = v;
                    }
                }
                12 => {
                    input.truncate(at);
                }
                13 | 14 => {
                    let n = (1 + next() % 64) as usize;
                    input.drain(at..(at + n).min(len));
                }
                _ => {
                    let n = (1 + next() % 64) as usize;
                    let bytes: Vec<u8> = (0..n).map(|_| next() as u8).collect();
                    input.splice(at..at, bytes);
                }
            }
        }
        let result = catch_unwind(AssertUnwindSafe(|| {
            // The kernel-image scanner tries a decoder at every magic number: same input.
            let _ = scan_bytes(&input, b"failing symbol_get", Budget::DEFAULT);
            inspect_bytes(Path::new("mutant.ko"), &input, &RPCRDMA_HOOKS).is_ok()
        }));
        match result {
            Ok(true) => ok += 1,
            Ok(false) => err += 1,
            Err(_) => {
                panics += 1;
                let name = format!("fuzz-panic-{i}.bin");
                let _ = std::fs::write(&name, &input);
                eprintln!("iteration {i}: panic; input saved as {name}");
            }
        }
    }
    println!("{iterations} mutants: {ok} parsed, {err} refused with an error, {panics} panics");
    if panics == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
