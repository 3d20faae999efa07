//! Kernel command lines in the boot configuration as they may go into a support bundle.
//!
//! The next-boot check reads `grub.cfg`, `grubenv`, `/etc/default/grub` and the Boot Loader
//! Specification entries, and each of them holds kernel command lines, with whatever
//! credentials those carry. Every command line here goes through the `/proc/cmdline` redactor
//! ([`cmdline_line`]), which keeps each word a check reads: `grub.cfg`'s `linux`, `linuxefi`
//! and `linux16` lines after the image path, and the values it `set`s for command lines
//! (`kernelopts`, `tuned_params`); every `grubenv` value but the entry names GRUB boots by
//! (`saved_entry`, `next_entry`, `prev_saved_entry`); `GRUB_CMDLINE_*` of `/etc/default/grub`
//! inside their shell quotes; the `options` lines of `loader/entries/*.conf`. What picks the
//! next boot — titles, ids, image paths, `set default`, `GRUB_DEFAULT`, `version` — is kept
//! as written.

use super::redact_cmdline::cmdline_line;

/// The grubenv keys that name a menu entry rather than hold a command line.
const ENTRY_NAMES: [&str; 3] = ["saved_entry", "next_entry", "prev_saved_entry"];

/// How the lines of the boot file at `host_path` are redacted; `None` when it is not one.
pub fn boot_line_redactor(host_path: &str) -> Option<fn(&str) -> String> {
    let name = host_path.rsplit('/').next().unwrap_or(host_path);
    Some(match name {
        "grub.cfg" => grub_cfg_line,
        "grubenv" => grubenv_line,
        _ if host_path == "/etc/default/grub" => default_grub_line,
        _ if host_path == "/etc/kernel/cmdline" => cmdline_line,
        _ if host_path.contains("/loader/entries/") && name.ends_with(".conf") => bls_line,
        _ => return None,
    })
}

/// Splits `line` after its leading blanks and first word, and the blanks after that.
fn keyword(line: &str) -> (&str, &str, &str) {
    let body = line.trim_start();
    let lead = &line[..line.len() - body.len()];
    let end = body.find(char::is_whitespace).unwrap_or(body.len());
    let rest = &body[end..];
    let gap = rest.len() - rest.trim_start().len();
    (lead, &body[..end], &rest[..gap])
}

/// `linux IMAGE CMDLINE…` and `set NAME="CMDLINE"` where NAME holds a command line.
fn grub_cfg_line(line: &str) -> String {
    let (lead, word, gap) = keyword(line);
    let rest = &line[lead.len() + word.len() + gap.len()..];
    match word {
        "linux" | "linuxefi" | "linux16" => {
            let image_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let (image, args) = rest.split_at(image_end);
            format!("{lead}{word}{gap}{image}{}", cmdline_line(args))
        }
        "set" => match rest.split_once('=') {
            Some((name, value)) if holds_cmdline(name) => {
                format!("{lead}{word}{gap}{name}={}", in_shell_quotes(value))
            }
            _ => line.to_string(),
        },
        _ => line.to_string(),
    }
}

/// The names grub.cfg (RHEL's `kernelopts`, tuned's `tuned_params`) keeps command lines under.
fn holds_cmdline(name: &str) -> bool {
    name.ends_with("kernelopts") || name.ends_with("params") || name.ends_with("cmdline")
}

/// `key=value` after the `# GRUB Environment Block` header; `#` is padding.
fn grubenv_line(line: &str) -> String {
    match line.split_once('=') {
        Some((key, value)) if !line.starts_with('#') && !ENTRY_NAMES.contains(&key) => {
            format!("{key}={}", cmdline_line(value))
        }
        _ => line.to_string(),
    }
}

/// `GRUB_CMDLINE_LINUX="…"`, `GRUB_CMDLINE_LINUX_DEFAULT='…'` and the other `GRUB_CMDLINE_*`.
fn default_grub_line(line: &str) -> String {
    let body = line.trim_start();
    let lead = &line[..line.len() - body.len()];
    let (export, assignment) = match body.strip_prefix("export ") {
        Some(a) => ("export ", a.trim_start()),
        None => ("", body),
    };
    match assignment.split_once('=') {
        Some((name, value)) if name.starts_with("GRUB_CMDLINE_") => {
            format!("{lead}{export}{name}={}", in_shell_quotes(value))
        }
        _ => line.to_string(),
    }
}

/// `options CMDLINE…`.
fn bls_line(line: &str) -> String {
    let (lead, word, gap) = keyword(line);
    if word != "options" {
        return line.to_string();
    }
    let rest = &line[lead.len() + word.len() + gap.len()..];
    format!("{lead}{word}{gap}{}", cmdline_line(rest))
}

/// A shell value (`"…"`, `'…'` or bare) with the command line inside its quotes redacted and
/// what follows the closing quote (a comment) kept.
fn in_shell_quotes(value: &str) -> String {
    let Some(q) = value.chars().next().filter(|c| *c == '"' || *c == '\'') else {
        return cmdline_line(value);
    };
    let inner = &value[1..];
    match inner.find(q) {
        Some(close) => format!("{q}{}{}", cmdline_line(&inner[..close]), &inner[close..]),
        None => format!("{q}{}", cmdline_line(inner)),
    }
}

#[cfg(test)]
mod tests {
    use crate::doctor::redact::redact;

    #[test]
    fn every_command_line_of_the_boot_files_loses_its_secrets() {
        let cfg = "set default=\"${saved_entry}\"\n\
            if [ -z \"${kernelopts}\" ]; then\n  set kernelopts=\"root=/dev/sda1 ro rd.iscsi.password=S1 \"\n\
            fi\n\
            menuentry 'Debian, a=b' $menuentry_id_option 'gnulinux-x' {\n\
            \tlinux\t/boot/vmlinuz-6.1 root=UUID=1b2c ro password=S2 iommu=pt module.sig_enforce=1 -- --token S3\n\
            \tlinuxefi /vmlinuz netroot=iscsi:u:S4@h quiet\n\
            \tlinux16 /memtest secret=S5\n}\n";
        let r = redact("/boot/grub/grub.cfg", cfg);
        for s in ["S1", "S2", "S3", "S4", "S5"] {
            assert!(!r.contains(s), "{s}: {r}");
        }
        for kept in [
            "set default=\"${saved_entry}\"\n",
            "menuentry 'Debian, a=b' $menuentry_id_option 'gnulinux-x' {\n",
            "\tlinux\t/boot/vmlinuz-6.1 root=REDACTED ro password=REDACTED iommu=pt module.sig_enforce=1 -- REDACTED REDACTED\n",
            "\tlinuxefi /vmlinuz netroot=REDACTED quiet\n",
            "  set kernelopts=\"root=REDACTED ro rd.iscsi.password=REDACTED \"\n",
        ] {
            assert!(r.contains(kept), "{kept:?} lost: {r}");
        }

        let env = "# GRUB Environment Block\nsaved_entry=gnulinux-x>Title a=b\nkernelopts=root=/dev/sda1 ro password=S6 module.sig_enforce=1\nboot_success=1\n####\n";
        assert_eq!(
            redact("/boot/grub2/grubenv", env),
            "# GRUB Environment Block\nsaved_entry=gnulinux-x>Title a=b\nkernelopts=root=REDACTED ro password=REDACTED module.sig_enforce=1\nboot_success=1\n####\n"
        );

        let default = "GRUB_DEFAULT=saved\nGRUB_CMDLINE_LINUX=\"quiet pass=S7 iommu=pt\" # keep\n  export GRUB_CMDLINE_LINUX_DEFAULT='token=S8 $GRUB_CMDLINE_LINUX'\nGRUB_CMDLINE_XEN=key=S9\n";
        assert_eq!(
            redact("/etc/default/grub", default),
            "GRUB_DEFAULT=saved\nGRUB_CMDLINE_LINUX=\"quiet pass=REDACTED iommu=pt\" # keep\n  export GRUB_CMDLINE_LINUX_DEFAULT='token=REDACTED $GRUB_CMDLINE_LINUX'\nGRUB_CMDLINE_XEN=key=REDACTED\n"
        );

        let bls = "title Linux a=b\nversion 6.1\nlinux /vmlinuz-6.1\noptions $kernelopts password=S10 lockdown=integrity\n";
        assert_eq!(
            redact("/boot/loader/entries/m-6.1.conf", bls),
            "title Linux a=b\nversion 6.1\nlinux /vmlinuz-6.1\noptions $kernelopts password=REDACTED lockdown=integrity\n"
        );
        assert_eq!(
            redact("/etc/kernel/cmdline", "root=/dev/sda1 pw=S11\n"),
            "root=REDACTED pw=REDACTED\n"
        );
    }
}
