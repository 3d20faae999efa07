//! Every command the README and the guide (`docs/*.md`) show, exercised: each line of a `sh`
//! block is parsed by what would run it. `nfs-gds …` (also after `kubectl exec … --` and
//! `cargo run --release --`) by the command-line definition; `mount -t nfs-gds …` and
//! `mount.nfs-gds …` by the helper's parser and its option rules, and so is every `nfs-gds`
//! line of an fstab block; the test command must be a line `.ci/run` runs; a script of this
//! repository must exist and be executable, and every path of it named must exist. Any other
//! program must be one of [`OTHER_PROGRAMS`], so a new kind of command cannot slip past. A block
//! whose lines start with `$ ` shows output: only those lines are commands.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::Parser;
use nfs_gds::cli::Cli;
use nfs_gds::mount::args::{self, Parsed};
use nfs_gds::mount::request::MountRequest;
use nfs_gds::nfs::defaults::OptionDefaults;

/// Programs of the system a document may show, which no test here runs: their lines are only
/// checked for the repository paths they name.
const OTHER_PROGRAMS: &[&str] = &[
    "apt",
    "dnf",
    "install",
    "ln",
    "scp",
    "mkdir",
    "tar",
    "kubectl",
    "kustomize",
    "podman",
    "systemctl",
    "journalctl",
    "echo",
];

/// The top folders of this repository: a word starting with one of them is a path that must be.
const REPO_DIRS: &[&str] = &[
    "benches/",
    "contrib/",
    "deploy/",
    "docs/",
    "fuzz/",
    "packaging/",
    "schemas/",
    "src/",
    "tests/",
    ".ci/",
];

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One line of a fenced block: where it is, which block (counted from 0), the block's info
/// string, and the text.
struct Line {
    at: String,
    block: usize,
    info: String,
    text: String,
}

/// The lines of every fenced block of `text`, continuation lines (`\` at the end) joined.
fn fenced_lines(file: &str, text: &str) -> Vec<Line> {
    let (mut out, mut info, mut pending): (Vec<Line>, Option<String>, Option<Line>) =
        (Vec::new(), None, None);
    let mut block = 0;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if let Some(fence) = line.strip_prefix("```") {
            info = match info {
                None => Some(fence.trim().to_string()),
                Some(_) => {
                    block += 1;
                    None
                }
            };
            continue;
        }
        let Some(info) = &info else { continue };
        let at = format!("{file}:{}", n + 1);
        let mut joined = match pending.take() {
            Some(mut p) => {
                p.text.push(' ');
                p.text.push_str(line);
                p
            }
            None => Line {
                at,
                block,
                info: info.clone(),
                text: line.to_string(),
            },
        };
        if let Some(rest) = joined.text.strip_suffix('\\') {
            joined.text = rest.trim_end().to_string();
            pending = Some(joined);
        } else {
            out.push(joined);
        }
    }
    out
}

/// The commands of one `sh` block's lines: comments cut, `$ ` prompts honoured, `&&` split.
fn commands(block: &[&Line]) -> Vec<(String, String)> {
    let prompted = block.iter().any(|l| l.text.starts_with("$ "));
    let mut out = Vec::new();
    for l in block {
        let text = if prompted {
            match l.text.strip_prefix("$ ") {
                Some(t) => t,
                None => continue,
            }
        } else {
            l.text.as_str()
        };
        let text = text.split(" #").next().unwrap_or("").trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        for part in text.split("&&") {
            out.push((l.at.clone(), part.trim().to_string()));
        }
    }
    out
}

/// Words as the shell splits this simple text: on blanks, with `"…"` and `'…'` kept whole.
fn words(text: &str) -> Vec<String> {
    let (mut out, mut word, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in text.chars() {
        match (quote, c) {
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    out.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            (_, c) => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(word);
    }
    out
}

/// Whether `nfs-gds ARGS` parses (help and version count as parsed).
fn nfs_gds_parses(args: &[String]) -> Result<(), String> {
    let argv = std::iter::once("nfs-gds".to_string()).chain(args.iter().cloned());
    match Cli::try_parse_from(argv) {
        Ok(_) => Ok(()),
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) =>
        {
            Ok(())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Whether the helper accepts `ARGS` (as mount(8) passes them: no `-t`), its options included.
fn helper_accepts(args: &[String]) -> Result<(), String> {
    let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
    match args::parse(&argv).map_err(|e| format!("{e:?}"))? {
        Parsed::Run(parsed) => {
            MountRequest::new(&parsed, OptionDefaults::default(), Path::new("/"))
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
        other => Err(format!("not a mount: {other:?}")),
    }
}

/// The lines `.ci/run` runs.
fn ci_lines() -> Vec<String> {
    std::fs::read_to_string(crate_dir().join(".ci/run"))
        .expect(".ci/run")
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}

/// Checks one command; `cwd` is the directory a `cd` moved to, relative to the repository.
fn check_command(words: &[String], cwd: &mut PathBuf) -> Result<(), String> {
    // Leading environment assignments (`RUSTFLAGS=… cargo build`).
    let start = words
        .iter()
        .position(|w| !w.contains('=') || w.starts_with('-'))
        .unwrap_or(words.len());
    let words = &words[start..];
    let Some(program) = words.first() else {
        return Ok(());
    };
    let rest = &words[1..];
    for w in words {
        let w = w.trim_end_matches([',', ';']);
        if REPO_DIRS.iter().any(|d| w.starts_with(d)) || w.starts_with("../") {
            if w.contains('*') {
                continue;
            }
            let path = crate_dir().join(&*cwd).join(w);
            if !path.exists() {
                return Err(format!("{w} does not exist in the repository"));
            }
        }
    }
    match program.as_str() {
        "nfs-gds" => nfs_gds_parses(rest),
        "mount.nfs-gds" => helper_accepts(rest),
        "mount" => {
            let mut args = rest.to_vec();
            match args.iter().position(|w| w == "-t") {
                Some(i) if args.get(i + 1).is_some_and(|t| t == "nfs-gds") => {
                    args.drain(i..i + 2);
                    helper_accepts(&args)
                }
                Some(_) => Err("a mount of another type".to_string()),
                // `mount DIR`: an fstab line's mount, whose line the fstab blocks check.
                None => Ok(()),
            }
        }
        "cargo" => match rest.first().map(String::as_str) {
            Some("run") => match rest.iter().position(|w| w == "--") {
                Some(i) => nfs_gds_parses(&rest[i + 1..]),
                None => Err("cargo run without `--` and a command".to_string()),
            },
            Some("test") => {
                let line = words.join(" ");
                if ci_lines()
                    .iter()
                    .any(|l| *l == line || l.starts_with(&format!("{line} ")))
                {
                    Ok(())
                } else {
                    Err(format!("`{line}` is not what .ci/run runs"))
                }
            }
            Some("build") => Ok(()),
            _ => Err("an unknown cargo command".to_string()),
        },
        "kubectl" => match rest.iter().position(|w| w == "--") {
            Some(i) if rest.get(i + 1).is_some_and(|p| p == "nfs-gds") => {
                nfs_gds_parses(&rest[i + 2..])
            }
            _ => Ok(()),
        },
        "cd" => {
            let to = rest.first().ok_or("cd without a directory")?;
            let next = cwd.join(to);
            if !crate_dir().join(&next).is_dir() {
                return Err(format!("cd {to}: no such directory"));
            }
            *cwd = next;
            Ok(())
        }
        "bash" => {
            let script = rest.first().ok_or("bash without a script")?;
            if crate_dir().join(&*cwd).join(script).is_file() {
                Ok(())
            } else {
                Err(format!("{script} is not a file of the repository"))
            }
        }
        p if REPO_DIRS.iter().any(|d| p.starts_with(d)) => {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(crate_dir().join(&*cwd).join(p))
                .map_err(|e| format!("{p}: {e}"))?
                .permissions()
                .mode();
            if mode & 0o111 != 0 {
                Ok(())
            } else {
                Err(format!("{p} is not executable"))
            }
        }
        p if OTHER_PROGRAMS.contains(&p) => Ok(()),
        p => Err(format!(
            "`{p}` is neither nfs-gds, the helper, cargo, a script of the repository nor one of \
             the programs the test knows (OTHER_PROGRAMS)"
        )),
    }
}

/// Every failure of one document's blocks, and how many commands were checked.
fn check_document(file: &str, text: &str) -> (Vec<String>, usize) {
    let lines = fenced_lines(file, text);
    let (mut failures, mut checked) = (Vec::new(), 0);
    // `sh` blocks, one block at a time (a `cd` lasts to its end).
    let mut blocks: Vec<Vec<&Line>> = Vec::new();
    for l in &lines {
        if l.info == "sh" {
            match blocks.last_mut() {
                Some(b) if b[0].block == l.block => b.push(l),
                _ => blocks.push(vec![l]),
            }
        }
        // fstab lines: SOURCE DIR nfs-gds OPTIONS DUMP PASS, in a block without a language.
        let fields: Vec<&str> = l.text.split_whitespace().collect();
        if l.info.is_empty() && fields.len() == 6 && fields[2] == "nfs-gds" {
            checked += 1;
            let argv = [fields[0], fields[1], "-o", fields[3]].map(String::from);
            if let Err(e) = helper_accepts(&argv) {
                failures.push(format!("{}: the fstab line is refused: {e}", l.at));
            }
        }
    }
    for block in &blocks {
        let mut cwd = PathBuf::new();
        for (at, command) in commands(block) {
            checked += 1;
            if let Err(e) = check_command(&words(&command), &mut cwd) {
                failures.push(format!("{at}: `{command}`: {e}"));
            }
        }
    }
    (failures, checked)
}

#[test]
fn every_command_in_the_readme_and_the_guide_is_one_that_runs() {
    let (mut failures, mut checked) = (Vec::new(), 0);
    for doc in crate::guide_links::documents() {
        let file = doc.display().to_string();
        let text = std::fs::read_to_string(crate_dir().join(&doc))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let (f, n) = check_document(&file, &text);
        failures.extend(f);
        checked += n;
    }
    assert!(
        checked >= 60,
        "only {checked} commands found: is the block syntax still ```sh?"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_wrong_command_in_a_document_is_named_with_its_line() {
    let doc = "intro\n\n```sh\nnfs-gds doctor --jsn\nmount -t nfs-gds -o tcp srv:/x /mnt\n\
               cargo test --no-such-flag\nbenches/no-such.sh\nfrobnicate --now\n```\n\n```\n\
               srv:/x  /mnt  nfs-gds  _netdev,bg  0 0\n```\n";
    let (failures, checked) = check_document("doc.md", doc);
    assert_eq!(checked, 6, "{failures:?}");
    let at: Vec<&str> = failures
        .iter()
        .map(|f| f.split(": ").next().unwrap())
        .collect();
    assert_eq!(
        at,
        [
            "doc.md:12",
            "doc.md:4",
            "doc.md:5",
            "doc.md:6",
            "doc.md:7",
            "doc.md:8"
        ],
        "{failures:#?}"
    );
}

#[test]
fn output_after_a_prompt_is_not_a_command_and_continuations_join() {
    let doc = "```sh\n$ nfs-gds lint deploy/examples/gds-pod.yaml\nfile.yaml:3: fail: …\n```\n\
               ```sh\nRUSTFLAGS=\"-C x\" \\\n  cargo build --release\n```\n";
    let (failures, checked) = check_document("doc.md", doc);
    assert_eq!((failures.len(), checked), (0, 2), "{failures:?}");
}
