//! The manual pages the packages install stay true: each names every option of the helper's
//! option table, every policy key, every check id, every command and its options, and states
//! the crate's version. `nfs-gds(8)` and `mount.nfs-gds(8)` are written by `nfs-gds
//! generate-man` from their hand-written templates (`packaging/man/PAGE.in`) and the program's
//! definitions; `nfs-gds.toml(5)` is written by hand. (That `man` renders them without warnings
//! is checked in `external_tools`.)

use std::path::Path;

use clap::{CommandFactory, ValueEnum};
use nfs_gds::checks::registry;
use nfs_gds::cli::reference::man::{self, Page};
use nfs_gds::cli::reference::roff::check_list;
use nfs_gds::cli::reference::usage::helper_flag_names;
use nfs_gds::mount::options;
use nfs_gds::policy::file::parse;

use crate::support::generated::check_block;
use crate::support::{nfs_gds, stderr, stdout};

/// The roff source of a page, as the packages install it: what `nfs-gds generate-man PAGE`
/// prints, or the hand-written file.
fn source(name: &str) -> String {
    if let Ok(page) = Page::from_str(name, false) {
        let out = nfs_gds().args(["generate-man", name]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let printed = stdout(&out);
        assert_eq!(printed, man::page(page).unwrap(), "{name}");
        return printed;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("packaging/man")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The arguments of a macro line, split as roff does: on spaces, except inside double quotes,
/// where `""` is a quote character.
fn macro_args(rest: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.next_if_eq(&' ').is_some() {}
        let Some(&first) = chars.peek() else {
            return args;
        };
        let mut arg = String::new();
        if first == '"' {
            chars.next();
            while let Some(c) = chars.next() {
                if c == '"' {
                    if chars.next_if_eq(&'"').is_some() {
                        arg.push('"');
                        continue;
                    }
                    break;
                }
                arg.push(c);
            }
        } else {
            while let Some(c) = chars.next_if(|&c| c != ' ') {
                arg.push(c);
            }
        }
        args.push(arg);
    }
}

/// The words of a page roughly as `man` shows them: comments dropped, font-alternating macros
/// joined as they render, and the escapes the pages use replaced by their characters.
fn text(roff: &str) -> String {
    let mut out = String::new();
    for line in roff.lines() {
        if line.starts_with(".\\\"") {
            continue;
        }
        let rendered = match line.strip_prefix('.') {
            Some(m) => {
                let (name, rest) = m.split_once(' ').unwrap_or((m, ""));
                let args = macro_args(rest);
                match name {
                    "BR" | "RB" | "BI" | "IB" | "IR" | "RI" => args.concat(),
                    _ => args.join(" "),
                }
            }
            None => line.to_string(),
        };
        out.push_str(&rendered);
        out.push('\n');
    }
    for (escape, plain) in [
        ("\\fB", ""),
        ("\\fI", ""),
        ("\\fR", ""),
        ("\\fP", ""),
        ("\\&", ""),
        ("\\-", "-"),
        ("\\(aq", "'"),
        ("\\(dq", "\""),
        ("\\e", "\\"),
        ("\\ ", " "),
    ] {
        out = out.replace(escape, plain);
    }
    out
}

/// Whether `word` occurs in `text` as a word of its own: not inside a longer name. A word
/// ending in `=`, `-`, `.` or `_` (a key or a prefix) may be followed by anything.
fn names(text: &str, word: &str) -> bool {
    let part = |c: char| c.is_ascii_alphanumeric() || "_-.=".contains(c);
    let open_ended = word.ends_with(['=', '-', '.', '_']);
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(part)
            && (open_ended || !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_'))
    })
}

fn missing<'a>(page: &str, words: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let text = text(&source(page));
    words.into_iter().filter(|w| !names(&text, w)).collect()
}

#[test]
fn the_helper_page_names_every_option_of_the_option_table_and_every_flag() {
    let spellings = options::spellings();
    assert!(spellings.len() > 40, "{spellings:?}");
    let gone = missing("mount.nfs-gds.8", spellings.iter().map(String::as_str));
    assert!(gone.is_empty(), "mount.nfs-gds.8 does not name {gone:?}");
    // The flags of the helper's usage text: "  -s  sloppy…", "  -r, -w  …".
    let flags = helper_flag_names();
    assert!(flags.len() >= 10, "{flags:?}");
    let gone = missing("mount.nfs-gds.8", flags.iter().map(String::as_str));
    assert!(
        gone.is_empty(),
        "mount.nfs-gds.8 does not name the flags {gone:?}"
    );
}

/// The keys a table of the policy file accepts, from the schema's own error for an unknown key
/// ("unknown field `x`, expected one of `a`, `b`").
fn schema_keys(prefix: &str) -> Vec<String> {
    let e = parse(&format!("{prefix}no-such-key = 1\n")).unwrap_err();
    let expected = e
        .message
        .split_once("expected")
        .unwrap_or_else(|| panic!("no key list in {e:?}"))
        .1;
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn the_policy_page_names_every_key_and_every_check_id() {
    let top = schema_keys("");
    let options = schema_keys("[options]\n");
    let mount = schema_keys("[[mount]]\ntarget = \"/mnt/x\"\n");
    let oci_hook = schema_keys("[oci-hook]\n");
    assert!(top.len() >= 8, "{top:?}");
    assert!(options.len() >= 2, "{options:?}");
    assert!(mount.len() >= 5, "{mount:?}");
    assert_eq!(oci_hook, ["when-unsure"]);
    let tables = [
        "[options]",
        "[checks]",
        "[[mount]]",
        "[mount.checks]",
        "[oci-hook]",
    ];
    let keys = top
        .iter()
        .chain(&options)
        .chain(&mount)
        .chain(&oci_hook)
        .map(String::as_str);
    let gone = missing("nfs-gds.toml.5", keys.chain(tables));
    assert!(gone.is_empty(), "nfs-gds.toml.5 does not name {gone:?}");
    let ids = registry::names();
    let gone = missing("nfs-gds.toml.5", ids);
    assert!(
        gone.is_empty(),
        "nfs-gds.toml.5 does not name the checks {gone:?}"
    );
}

/// The check list of the hand-written `nfs-gds.toml(5)`; `nfs-gds(8)` gets it when generated.
#[test]
fn the_check_list_of_the_policy_page_is_the_registry() {
    check_block(
        "packaging/man/nfs-gds.toml.5",
        ".\\\" checks:begin",
        ".\\\" checks:end",
        &check_list(),
    );
    assert!(source("nfs-gds.8").contains(&check_list()));
}

#[test]
fn the_policy_page_example_is_a_valid_policy() {
    let page = source("nfs-gds.toml.5");
    let example = text(
        page.split_once("\n.EX\n")
            .and_then(|(_, rest)| rest.split_once("\n.EE\n"))
            .expect("an .EX example")
            .0,
    );
    let example = example.as_str();
    let policy = parse(example).unwrap_or_else(|e| panic!("{e:?} in\n{example}"));
    assert_eq!(policy.mounts.len(), 2);
}

/// The page the packages install names every command of the clap definition, at any depth,
/// and every option of each: an option added to a command cannot be missing from it.
#[test]
fn the_command_page_names_every_command_its_options_and_every_check_id() {
    fn walk(cmd: &clap::Command, words: &mut Vec<String>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            words.push(sub.get_name().to_string());
            for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
                words.extend(arg.get_long().map(|l| format!("--{l}")));
                words.extend(arg.get_short().map(|s| format!("-{s}")));
            }
            walk(sub, words);
        }
    }
    let mut cli = nfs_gds::cli::Cli::command();
    cli.build();
    let mut words: Vec<String> = Vec::new();
    walk(&cli, &mut words);
    assert!(words.len() > 30, "{words:?}");
    for must in ["--target", "--hooks-dir", "--output", "-o"] {
        assert!(words.iter().any(|w| w == must), "{must}: {words:?}");
    }
    let gone = missing("nfs-gds.8", words.iter().map(String::as_str));
    assert!(gone.is_empty(), "nfs-gds.8 does not name {gone:?}");
    let gone = missing("nfs-gds.8", registry::names());
    assert!(
        gone.is_empty(),
        "nfs-gds.8 does not name the checks {gone:?}"
    );
}

#[test]
fn every_page_states_the_crate_version_and_names_the_others() {
    let pages = ["mount.nfs-gds.8", "nfs-gds.8", "nfs-gds.toml.5"];
    // The templates of the generated pages, and the hand-written one.
    let kept: Vec<String> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/man"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
    for name in &kept {
        let page = name.strip_suffix(".in").unwrap_or(name);
        assert!(pages.contains(&page), "unexpected page {name}");
        assert_eq!(
            name.ends_with(".in"),
            Page::from_str(page, false).is_ok(),
            "{name}: a page is generated from its template or written by hand"
        );
    }
    for name in pages {
        let roff = source(name);
        let th = roff.lines().find(|l| l.starts_with(".TH ")).expect(".TH");
        let version = format!("\"nfs\\-gds {}\"", env!("CARGO_PKG_VERSION"));
        assert!(th.contains(&version), "{name}: {th} lacks {version}");
        let text = text(&roff);
        for other in ["mount.nfs-gds(8)", "nfs-gds(8)", "nfs-gds.toml(5)"] {
            let own = format!(
                "{}({})",
                name.rsplit_once('.').unwrap().0,
                name.rsplit_once('.').unwrap().1
            );
            if other != own {
                assert!(text.contains(other), "{name} does not refer to {other}");
            }
        }
    }
}

/// What a missing policy file means, as mount.nfs-gds(8) says it: every check whose built-in
/// level is `warn` is named there, and no other.
#[test]
fn the_helper_page_names_the_checks_that_default_to_warn() {
    let text = text(&source("mount.nfs-gds.8"));
    let warn: Vec<&str> = registry::all()
        .iter()
        .filter(|c| c.default_level == nfs_gds::checks::Level::Warn)
        .map(|c| c.id.as_str())
        .collect();
    assert!(warn.len() > 5, "{warn:?}");
    let list = text
        .split("for the advisory ones\n(")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .expect("the list of advisory checks");
    let named: Vec<&str> = list.split(',').map(str::trim).collect();
    assert_eq!(named, warn);
}

/// The section `name` of a page's text (as [`text`] renders it), up to the next section.
fn section(page: &str, name: &str) -> String {
    let from = page
        .find(&format!("\n{name}\n"))
        .unwrap_or_else(|| panic!("no section {name}"));
    let body = &page[from + name.len() + 2..];
    let end = [
        "\nDESCRIPTION\n",
        "\nOPTIONS\n",
        "\nEXAMPLES\n",
        "\nCOMMANDS\n",
    ]
    .iter()
    .filter_map(|h| body.find(h))
    .min()
    .unwrap_or(body.len());
    body[..end].to_string()
}

/// nfs-gds(8)'s EXIT STATUS as `man` shows it: the JSON object an error prints under `--json`
/// is valid JSON (roff eats unescaped double quotes in a macro's arguments), and every
/// command's exit status is given.
#[test]
fn the_exit_status_shows_valid_json_and_every_command() {
    let status = section(&text(&source("nfs-gds.8")), "EXIT STATUS");
    let line = status
        .lines()
        .find(|l| l.contains("command") && l.contains('{'))
        .unwrap_or_else(|| panic!("no JSON object in EXIT STATUS:\n{status}"));
    let json = &line[line.find('{').unwrap()..=line.rfind('}').unwrap()];
    let doc: serde_json::Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{json:?} is not JSON: {e}"));
    assert_eq!(doc["command"], "check", "{json}");
    // The same line written without roff's quote escape renders as no JSON at all.
    let unescaped = text(".BR {\"command\": \"check\", \"error\": \"...\"} .\n");
    assert!(
        serde_json::from_str::<serde_json::Value>(unescaped.trim().trim_end_matches('.')).is_err()
    );
    let cmd = nfs_gds::cli::reference::command();
    for (words, _) in nfs_gds::cli::reference::commands(&cmd) {
        let name = words.join(" ");
        assert!(
            names(&status, &name),
            "nfs-gds(8)'s EXIT STATUS does not say how {name} exits:\n{status}"
        );
    }
}

/// nfs-gds(8)'s synopsis shows each option's value (`--interval SECONDS`), as `--help` does.
#[test]
fn the_synopsis_shows_option_values() {
    let synopsis = section(&text(&source("nfs-gds.8")), "SYNOPSIS");
    let cmd = nfs_gds::cli::reference::command();
    let mut shown = 0;
    for (words, sub) in nfs_gds::cli::reference::commands(&cmd) {
        for a in sub
            .get_arguments()
            .filter(|a| !a.is_hide_set() && a.get_action().takes_values())
        {
            let (Some(long), Some(values)) = (a.get_long(), a.get_value_names()) else {
                continue;
            };
            let want = format!("--{long} {}", values.join(" "));
            assert!(
                synopsis.contains(&want),
                "the synopsis of nfs-gds {} lacks {want}:\n{synopsis}",
                words.join(" ")
            );
            shown += 1;
        }
    }
    assert!(synopsis.contains("--interval SECONDS"), "{synopsis}");
    assert!(shown >= 8, "{shown}");
}
