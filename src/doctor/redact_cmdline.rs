//! The kernel command line (`/proc/cmdline`) as it may go into a support bundle.
//!
//! A command line can carry credentials: a `password=` for an init script, dracut's
//! `netroot=iscsi:user:PASS@…` and `rd.iscsi.password=`, a `cifsroot=` with its options. It
//! also carries words the checks read, and a bundle must replay to the same verdict. So each
//! word is judged by the very functions that read the command line for the checks: a word one
//! of them reads (`module.sig_enforce`, `lockdown=`, the IOMMU words, `modprobe.blacklist=`,
//! `MODULE.PARAM=value`) is kept as it is, unless the parameter it sets is named like a secret;
//! a flag without a value (`ro`, `quiet`, `nomodule`) is kept; every other `key=value` keeps its
//! key and loses its value. After a bare `--` the words are init's arguments (`--token VALUE`),
//! which the kernel never reads: each becomes [`REDACTED`], save a module parameter, which
//! libkmod reads from the whole line. Blanks and double quotes stay where they were.

use std::borrow::Cow;

use super::secret_names::{is_secret_key, REDACTED};
use crate::checks::catalogue::iommu_mode::iommu_words;
use crate::host::modules::modprobe_config::parse_cmdline_config;
use crate::host::modules::sig_enforcement::{cmdline_lockdown, cmdline_sig_enforce};

/// One line of `/proc/cmdline` with every value no check reads replaced.
pub fn cmdline_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    let mut for_init = false;
    while !rest.is_empty() {
        let blank = rest.len() - rest.trim_start().len();
        out.push_str(&rest[..blank]);
        rest = &rest[blank..];
        let end = word_end(rest);
        let word = &rest[..end];
        if for_init {
            out.push_str(&judge_for_init(word));
        } else {
            out.push_str(&judge(word));
            for_init = word.trim_matches('"') == "--";
        }
        rest = &rest[end..];
    }
    out
}

/// Where the word at the start of `text` ends: at the first blank outside double quotes, as
/// the kernel and libkmod split it.
fn word_end(text: &str) -> usize {
    let mut quoted = false;
    for (i, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => return i,
            _ => {}
        }
    }
    text.len()
}

/// Whether a function that reads the command line for a check reads something in `word`: the
/// kernel's own words, or a module parameter (`MODULE.PARAM=value`) whose name is not that of
/// a secret.
fn read_by_a_check(word: &str, key: &str) -> bool {
    !iommu_words(word).is_empty()
        || cmdline_sig_enforce(word).is_some()
        || cmdline_lockdown(word).is_some()
        || read_by_modprobe(word, key)
}

/// Whether libkmod reads `word` as a module parameter (`MODULE.PARAM=value`,
/// `modprobe.blacklist=`) whose name is not that of a secret.
fn read_by_modprobe(word: &str, key: &str) -> bool {
    let param = key.rsplit('.').next().unwrap_or(key);
    !parse_cmdline_config(word).is_empty() && !is_secret_key(param)
}

/// A word after `--`: init's, not the kernel's, so nothing but modprobe reads it.
fn judge_for_init(word: &str) -> Cow<'_, str> {
    let key = word.trim_matches('"').split_once('=').map(|(k, _)| k);
    if key.is_some_and(|k| read_by_modprobe(word, k)) && every_piece_kept(word) {
        return Cow::Borrowed(word);
    }
    in_quotes_like(word, REDACTED)
}

/// The word as it goes into the bundle.
fn judge(word: &str) -> Cow<'_, str> {
    let bare = word.trim_matches('"');
    let Some((key, _)) = bare.split_once('=') else {
        return Cow::Borrowed(word);
    };
    if read_by_a_check(word, key) && every_piece_kept(word) {
        return Cow::Borrowed(word);
    }
    in_quotes_like(word, &format!("{key}={REDACTED}"))
}

/// Whether each blank-separated piece of a quoted word with blanks would be kept on its own:
/// readers that split at blanks must not keep `"iommu=pt password=…"` for its first piece.
fn every_piece_kept(word: &str) -> bool {
    word.split_whitespace()
        .all(|piece| piece == word || judge(piece) == piece)
}

/// `text` in double quotes where `word` opened with one.
fn in_quotes_like(word: &str, text: &str) -> Cow<'static, str> {
    let quote = if word.starts_with('"') { "\"" } else { "" };
    Cow::Owned(format!("{quote}{text}{quote}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::kernel_cmdline::has_kernel_flag;

    const CMDLINE: &str = "BOOT_IMAGE=/vmlinuz-6.1.0-50-amd64 root=UUID=1b2c ro quiet password=hunter2 netroot=iscsi:bob:hunter2@10.0.0.1::3260::iqn.x rd.iscsi.password=hunter2 module.sig_enforce=1 lockdown=integrity intel_iommu=on iommu=pt iommu.passthrough=1 amd_iommu=off modprobe.blacklist=rpcrdma,nouveau rpcrdma.max_requests=64 \"nvidia-fs.dbg=a b\" mymod.password=hunter2 nomodule -- init_secret=hunter2 --token hunter2 -v rpcrdma.max_requests=32";

    #[test]
    fn secrets_go_and_every_word_a_check_reads_stays() {
        let r = cmdline_line(CMDLINE);
        assert!(!r.contains("hunter2"), "{r}");
        for kept in [
            " ro quiet ",
            " module.sig_enforce=1 lockdown=integrity intel_iommu=on iommu=pt iommu.passthrough=1 amd_iommu=off modprobe.blacklist=rpcrdma,nouveau rpcrdma.max_requests=64 \"nvidia-fs.dbg=a b\" ",
            " nomodule -- ",
            " rpcrdma.max_requests=32",
        ] {
            assert!(r.contains(kept), "{kept:?} lost: {r}");
        }
        for gone in [
            "password=REDACTED",
            "netroot=REDACTED",
            "rd.iscsi.password=REDACTED",
            "mymod.password=REDACTED",
            "-- REDACTED REDACTED REDACTED REDACTED rpcrdma.max_requests=32",
            "root=REDACTED",
        ] {
            assert!(r.contains(gone), "{gone}: {r}");
        }
    }

    #[test]
    fn the_redacted_line_reads_the_same_to_every_check() {
        let r = cmdline_line(CMDLINE);
        assert_eq!(iommu_words(&r), iommu_words(CMDLINE));
        assert_eq!(cmdline_sig_enforce(&r), cmdline_sig_enforce(CMDLINE));
        assert_eq!(cmdline_lockdown(&r), cmdline_lockdown(CMDLINE));
        let directives = |c: &str| {
            parse_cmdline_config(c)
                .into_iter()
                .filter(|l| !l.text.contains("password"))
                .map(|l| format!("{:?} {}", l.directive, l.text))
                .collect::<Vec<_>>()
        };
        assert_eq!(directives(&r), directives(CMDLINE));
        assert_eq!(
            has_kernel_flag(&r, "nomodule"),
            has_kernel_flag(CMDLINE, "nomodule")
        );
        // Init's words are read by no check of the kernel's parameters.
        let init = "ro -- nomodule iommu=off module.sig_enforce=0 lockdown=none";
        let r = cmdline_line(init);
        // A module parameter stays: libkmod reads the whole line.
        assert_eq!(r, "ro -- REDACTED REDACTED module.sig_enforce=0 REDACTED");
        assert_eq!(iommu_words(&r), iommu_words(init));
        assert_eq!(cmdline_sig_enforce(&r), cmdline_sig_enforce(init));
        assert_eq!(cmdline_lockdown(&r), cmdline_lockdown(init));
        assert_eq!(
            has_kernel_flag(&r, "nomodule"),
            has_kernel_flag(init, "nomodule")
        );
        // A quoted word with blanks keeps no secret behind a word a check reads.
        let r = cmdline_line("\"iommu=pt password=hunter2\" ro -- \"mod.p=a token=hunter2\"");
        assert!(!r.contains("hunter2"), "{r}");
        // An unreadable value of a word a check reads is judged alike either way.
        let odd = "module.sig_enforce=1 module.sig_enforce=maybe lockdown=integrity lockdown=bogus";
        let r = cmdline_line(odd);
        assert_eq!(cmdline_sig_enforce(&r), cmdline_sig_enforce(odd));
        assert_eq!(cmdline_lockdown(&r), cmdline_lockdown(odd));
    }
}
