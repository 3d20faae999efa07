//! The manual pages of the two commands, `nfs-gds(8)` and `mount.nfs-gds(8)`, as the packages
//! install them: the prose is written by hand in `packaging/man/PAGE.in`, and the sections that
//! describe the command line are written into it here, from what the program parses with, so
//! that they cannot drift from it: the synopsis, the global options and every command with its
//! options from the clap definition ([`clap_mangen`]), the helper's flags from its usage text,
//! the check lists from the registry.
//!
//! A template line `.\" @generated SECTION` is replaced by that section. In `nfs-gds.8.in`, the
//! block from the first `.\" @prose COMMAND` line to `.\" @end-prose` holds the hand-written
//! prose of each command (`check`, `policy show`), which describes it in its section (a command
//! without prose is described by its clap `about`); prose for a command that does not exist is
//! an error. `@VERSION@` is the crate's version.

use clap::ValueEnum;
use clap_mangen::roff::{roman, Roff};
use clap_mangen::Man;

use super::described::{command, commands};
use super::roff::{check_list, escape, warn_checks};
use super::synopsis::parts;
use super::usage::helper_flags;

/// The pages written here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Page {
    #[value(name = "nfs-gds.8")]
    NfsGds,
    #[value(name = "mount.nfs-gds.8")]
    Helper,
}

impl Page {
    /// The file name the packages install it as (`nfs-gds.8`).
    pub fn file_name(self) -> &'static str {
        match self {
            Page::NfsGds => "nfs-gds.8",
            Page::Helper => "mount.nfs-gds.8",
        }
    }

    fn template(self) -> &'static str {
        match self {
            Page::NfsGds => include_str!("../../../packaging/man/nfs-gds.8.in"),
            Page::Helper => include_str!("../../../packaging/man/mount.nfs-gds.8.in"),
        }
    }
}

/// The roff source of `page`.
pub fn page(page: Page) -> Result<String, String> {
    expand(
        &format!("packaging/man/{}.in", page.file_name()),
        page.template(),
        &command(),
    )
}

/// What the roff crate puts before every document it writes: the string `\*(Aq` it writes an
/// apostrophe as. The page defines it once, after its `.TH` line.
const PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";

/// Roff from the roff crate, without its preamble and `.SH` headings.
fn without_preamble(roff: &str) -> String {
    let roff = roff.strip_prefix(PREAMBLE).unwrap_or(roff);
    roff.lines()
        .filter(|l| !l.starts_with(".SH "))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// A section clap_mangen renders, without its `.SH` heading.
fn body(render: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut buf = Vec::new();
    render(&mut buf).expect("writing into memory");
    without_preamble(&String::from_utf8_lossy(&buf))
}

/// Plain text (a clap `about`) as a roff text line.
fn text(s: &str) -> String {
    without_preamble(&Roff::new().text([roman(s)]).to_roff())
}

/// One synopsis line as roff: the command's words in bold, each option in bold with its value
/// in italics (`[\fB\-\-interval\fR \fISECONDS\fR]`), from [`parts`].
fn synopsis_line(words: &str, cmd: &clap::Command) -> String {
    let bold = |s: &str| format!("\\fB{}\\fR", escape(s));
    let italic = |s: &str| format!("\\fI{}\\fR", escape(s));
    let mut line = bold(words);
    for part in parts(cmd) {
        line.push(' ');
        line.push_str(&part.spell(bold, italic));
    }
    line
}

fn synopsis(cmd: &clap::Command) -> String {
    let mut out = format!(
        "{} \\fI{}\\fR\n",
        synopsis_line(cmd.get_name(), cmd),
        escape(cmd.get_subcommand_value_name().unwrap_or("command"))
    );
    for (words, sub) in commands(cmd) {
        out.push_str(".br\n");
        out.push_str(&synopsis_line(
            &format!("nfs-gds {}", words.join(" ")),
            &sub,
        ));
        out.push('\n');
    }
    out
}

fn command_sections(cmd: &clap::Command, prose: &[(String, String)]) -> String {
    let mut out = String::new();
    for (words, sub) in commands(cmd) {
        let name = words.join(" ");
        out.push_str(&format!(".SS \"{}\"\n", escape(&name)));
        out.push_str(&synopsis_line(&format!("nfs-gds {name}"), &sub));
        out.push('\n');
        // The hand-written prose is the long description; without it, clap's.
        out.push_str(".PP\n");
        match prose.iter().find(|(k, _)| *k == name) {
            Some((_, p)) => out.push_str(p),
            None => {
                let about = sub.get_long_about().or(sub.get_about());
                out.push_str(&text(&about.map(|a| a.to_string()).unwrap_or_default()));
            }
        }
        out.push_str(&body(|w| Man::new(sub).render_options_section(w)));
    }
    out
}

fn flag_list() -> String {
    let mut out = String::new();
    for flag in helper_flags() {
        let names: Vec<String> = flag
            .names
            .iter()
            .map(|n| format!("\\fB{}\\fR", escape(n)))
            .collect();
        let value = flag
            .value
            .map(|v| format!(" \\fI{}\\fR", escape(v)))
            .unwrap_or_default();
        out.push_str(&format!(".TP\n{}{value}\n", names.join(", ")));
        out.push_str(&text(flag.help));
    }
    out
}

/// The template without its prose block, and the prose of each command.
fn split_prose(file: &str, template: &str) -> Result<(String, Vec<(String, String)>), String> {
    let mut rest = String::new();
    let mut prose: Vec<(String, String)> = Vec::new();
    let mut inside = false;
    for line in template.split_inclusive('\n') {
        let directive = line.trim_end();
        if let Some(name) = directive.strip_prefix(".\\\" @prose ") {
            inside = true;
            prose.push((name.trim().to_string(), String::new()));
        } else if directive == ".\\\" @end-prose" {
            if !inside {
                return Err(format!("{file}: @end-prose without @prose"));
            }
            inside = false;
        } else if inside {
            prose.last_mut().expect("inside a block").1.push_str(line);
        } else {
            rest.push_str(line);
        }
    }
    if inside {
        return Err(format!("{file}: no @end-prose after the last @prose"));
    }
    Ok((rest, prose))
}

/// The page written from `template`.
fn expand(file: &str, template: &str, cmd: &clap::Command) -> Result<String, String> {
    let (template, prose) = split_prose(file, template)?;
    let names: Vec<String> = commands(cmd).iter().map(|(w, _)| w.join(" ")).collect();
    for (name, _) in &prose {
        if !names.contains(name) {
            return Err(format!(
                "{file}: prose for `{name}`, which is no command ({})",
                names.join(", ")
            ));
        }
    }
    let version = escape(env!("CARGO_PKG_VERSION"));
    let mut out = String::new();
    for line in template.split_inclusive('\n') {
        match line.trim_end().strip_prefix(".\\\" @generated ") {
            Some("synopsis") => out.push_str(&synopsis(cmd)),
            Some("global-options") => {
                out.push_str(&body(|w| Man::new(cmd.clone()).render_options_section(w)))
            }
            Some("commands") => out.push_str(&command_sections(cmd, &prose)),
            Some("checks") => out.push_str(&check_list()),
            Some("warn-checks") => out.push_str(&warn_checks()),
            Some("helper-flags") => out.push_str(&flag_list()),
            Some(other) => return Err(format!("{file}: no section {other:?} to generate")),
            None if line.starts_with(".TH ") => {
                out.push_str(&line.replace("@VERSION@", &version));
                out.push_str(PREAMBLE);
            }
            None => out.push_str(line),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_pages_are_written_whole() {
        for p in [Page::NfsGds, Page::Helper] {
            let text = page(p).unwrap();
            assert!(
                !text.contains("@generated") && !text.contains("@prose"),
                "{text}"
            );
            assert!(!text.contains("@VERSION@"), "{text}");
            // The string apostrophes are written as is defined once, before its first use.
            assert_eq!(text.matches(PREAMBLE).count(), 1, "{text}");
            let defined = text.find(PREAMBLE).unwrap();
            assert!(text.find("\\*(Aq").is_none_or(|used| used > defined));
        }
    }

    #[test]
    fn prose_for_a_command_that_does_not_exist_is_an_error() {
        let template =
            ".SH COMMANDS\n.\\\" @generated commands\n.\\\" @prose chek\nTypo.\n.\\\" @end-prose\n";
        let e = expand("t.in", template, &command()).unwrap_err();
        assert!(e.contains("`chek`, which is no command"), "{e}");
        let e = expand("t.in", ".\\\" @prose check\n", &command()).unwrap_err();
        assert!(e.contains("no @end-prose"), "{e}");
        let e = expand("t.in", ".\\\" @generated nothing\n", &command()).unwrap_err();
        assert!(e.contains("no section \"nothing\""), "{e}");
    }

    #[test]
    fn a_command_section_holds_its_synopsis_about_prose_and_options() {
        let template =
            ".\\\" @generated commands\n.\\\" @prose check\nHand\\-written.\n.\\\" @end-prose\n";
        let text = expand("t.in", template, &command()).unwrap();
        assert!(!text.contains(".ds Aq"), "{text}");
        let check = text
            .split(".SS \"check\"\n")
            .nth(1)
            .and_then(|s| s.split(".SS ").next())
            .unwrap();
        assert!(check.starts_with("\\fBnfs\\-gds check\\fR"), "{check}");
        assert!(check.contains("\n.PP\nHand\\-written.\n"), "{check}");
        // The prose is the description; a command without it is described by its about.
        assert!(!check.contains("Run the pre\\-mount checks"), "{check}");
        assert!(text.contains("Run the post\\-mount checks"), "{text}");
        assert!(check.contains("\\fB\\-\\-probe\\fR"), "{check}");
        // Global options are described once, not in every command.
        assert!(!check.contains("\\-\\-root"), "{check}");
        assert!(text.contains(".SS \"policy show\""), "{text}");
        assert!(!text.contains(".SS \"policy\"\n"), "{text}");
    }
}
