//! modprobe's configuration: the `modprobe.d` directives, each with the file and line it came from.
//!
//! Parsed as libkmod does (`kmod_config_parse`): a `\` at the end of a line continues it; lines
//! starting with `#` and empty lines are skipped; `alias`, `blacklist`, `options`, `install`,
//! `remove`, `softdep` and `weakdep` are understood, with `-` in module names read as `_`; other
//! lines are ignored by modprobe and kept here as [`BadLine`]s. The module tree's own
//! `modules.softdep` (written by depmod) is read as one more file, sorted among the others by
//! its name, and the kernel command line adds `modprobe.blacklist=` and `module.param=` last.

use std::borrow::Cow;

use serde::Serialize;

use super::module_name::normalize_name;
use crate::host::io::conf_dirs::{list_conf_files, ConfFile, MODPROBE_DIRS};
use crate::host::io::error::HostError;
use crate::host::io::root::Root;

/// Where a directive was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Origin {
    /// Host path, or `/proc/cmdline`.
    pub file: String,
    /// 1-based; the first physical line of a continued line.
    pub line: usize,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One understood directive. Module names are in kernel spelling (`_`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "directive", rename_all = "kebab-case")]
pub enum Directive {
    /// `alias PATTERN MODULE`: the pattern is an fnmatch glob.
    Alias { pattern: String, module: String },
    /// `blacklist MODULE`: ignore the module's aliases.
    Blacklist { module: String },
    /// `options MODULE OPTS…`
    Options { module: String, options: String },
    /// `install MODULE COMMAND…`: run the command instead of loading the module.
    Install { module: String, command: String },
    /// `remove MODULE COMMAND…`: run the command instead of unloading it.
    Remove { module: String, command: String },
    /// `softdep MODULE pre: A B post: C`
    Softdep {
        module: String,
        pre: Vec<String>,
        post: Vec<String>,
    },
    /// `weakdep MODULE A B`
    Weakdep {
        module: String,
        modules: Vec<String>,
    },
}

impl Directive {
    /// The module the directive is about (for `alias`, the module it points to).
    pub fn module(&self) -> &str {
        match self {
            Directive::Alias { module, .. }
            | Directive::Blacklist { module }
            | Directive::Options { module, .. }
            | Directive::Install { module, .. }
            | Directive::Remove { module, .. }
            | Directive::Softdep { module, .. }
            | Directive::Weakdep { module, .. } => module,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigLine {
    #[serde(flatten)]
    pub directive: Directive,
    pub origin: Origin,
    /// The line as written (continuations joined).
    pub text: String,
}

/// A line modprobe ignores ("ignoring bad line starting with …").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BadLine {
    pub origin: Origin,
    pub text: String,
}

/// The whole configuration, in the order modprobe reads it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ModprobeConfig {
    pub lines: Vec<ConfigLine>,
    pub bad_lines: Vec<BadLine>,
    /// The files read, in order, with the same-named files each one hides.
    pub files: Vec<ConfFile>,
}

impl ModprobeConfig {
    /// Directives about `module` (alias lines: those pointing to it), in reading order.
    pub fn about<'a>(&'a self, module: &str) -> impl Iterator<Item = &'a ConfigLine> + 'a {
        let m = normalize_name(module);
        self.lines.iter().filter(move |l| l.directive.module() == m)
    }
}

/// kmod's `underscores()`: `-` becomes `_` outside `[...]`; an unbalanced bracket is an error.
fn underscores(s: &str) -> Option<String> {
    if !s.contains(['-', '[', ']']) {
        return Some(s.to_string()); // most names: nothing to change
    }
    let mut out = String::with_capacity(s.len());
    let mut in_class = false;
    for c in s.chars() {
        match c {
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            ']' => return None,
            '-' if !in_class => {
                out.push('_');
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    (!in_class).then_some(out)
}

/// Joins `\`-continued lines: `(first line number, text)`; a line that is not continued is
/// borrowed from `text`.
fn logical_lines(text: &str) -> Vec<(usize, Cow<'_, str>)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, raw) in text.split('\n').enumerate() {
        match (raw.strip_suffix('\\'), current.take()) {
            (Some(head), None) => current = Some((i + 1, head.to_string())),
            (Some(head), Some((n, mut buf))) => {
                buf.push_str(head);
                current = Some((n, buf));
            }
            (None, None) => out.push((i + 1, Cow::Borrowed(raw))),
            (None, Some((n, mut buf))) => {
                buf.push_str(raw);
                out.push((n, Cow::Owned(buf)));
            }
        }
    }
    if let Some((n, buf)) = current {
        out.push((n, Cow::Owned(buf)));
    }
    // A trailing newline makes one empty last line; drop it like getline would.
    if out.last().is_some_and(|(_, t)| t.is_empty()) {
        out.pop();
    }
    out
}

/// Parses one file's text; `file` is the host path recorded in each origin.
pub fn parse_modprobe_conf(text: &str, file: &str) -> (Vec<ConfigLine>, Vec<BadLine>) {
    let mut lines = Vec::new();
    let mut bad = Vec::new();
    for (n, line) in logical_lines(text) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let origin = Origin {
            file: file.to_string(),
            line: n,
        };
        match parse_directive(&line) {
            Some(directive) => lines.push(ConfigLine {
                directive,
                origin,
                text: line.trim_end().to_string(),
            }),
            None if line.split([' ', '\t']).all(str::is_empty) => {}
            None => bad.push(BadLine {
                origin,
                text: line.trim_end().to_string(),
            }),
        }
    }
    (lines, bad)
}

fn parse_directive(line: &str) -> Option<Directive> {
    let mut words = line.split([' ', '\t']).filter(|w| !w.is_empty());
    let cmd = words.next()?;
    // The rest after the module name, as strtok_r(NULL, "\0") gives it: leading blanks dropped.
    let rest_after = |nth: usize| -> Option<&str> {
        let mut s = line.trim_start_matches([' ', '\t']);
        for _ in 0..nth {
            let end = s.find([' ', '\t'])?;
            s = s[end..].trim_start_matches([' ', '\t']);
        }
        (!s.is_empty()).then_some(s)
    };
    let module = |w: Option<&str>| w.and_then(underscores);
    Some(match cmd {
        "alias" => {
            let pattern = module(words.next())?;
            let target = module(words.next())?;
            Directive::Alias {
                pattern,
                module: target,
            }
        }
        "blacklist" => Directive::Blacklist {
            module: module(words.next())?,
        },
        "options" => Directive::Options {
            module: module(words.next())?,
            options: rest_after(2)?.to_string(),
        },
        "install" => Directive::Install {
            module: module(words.next())?,
            command: rest_after(2)?.to_string(),
        },
        "remove" => Directive::Remove {
            module: module(words.next())?,
            command: rest_after(2)?.to_string(),
        },
        "softdep" => {
            let m = module(words.next())?;
            let _ = rest_after(2)?;
            let (mut pre, mut post) = (Vec::new(), Vec::new());
            let mut into_post = None;
            for w in words {
                match w {
                    "pre:" => into_post = Some(false),
                    "post:" => into_post = Some(true),
                    dep => match into_post {
                        Some(true) => post.push(normalize_name(dep)),
                        Some(false) => pre.push(normalize_name(dep)),
                        None => {}
                    },
                }
            }
            Directive::Softdep {
                module: m,
                pre,
                post,
            }
        }
        "weakdep" => Directive::Weakdep {
            module: module(words.next())?,
            modules: {
                let v: Vec<String> = words.map(normalize_name).collect();
                if v.is_empty() {
                    return None;
                }
                v
            },
        },
        _ => return None,
    })
}

/// The `modprobe.blacklist=` and `module.param=value` words of a kernel command line, as
/// libkmod reads them (`kmod_config_parse_kcmdline`). Quoted values are kept whole.
pub fn parse_cmdline_config(cmdline: &str) -> Vec<ConfigLine> {
    let origin = Origin {
        file: "/proc/cmdline".into(),
        line: 1,
    };
    let mut out = Vec::new();
    for word in split_cmdline(cmdline) {
        let Some((key, value)) = word.split_once('=') else {
            continue;
        };
        let Some((module, param)) = key.split_once('.') else {
            continue;
        };
        if module.is_empty() || param.is_empty() || param.contains('.') {
            continue;
        }
        if module == "modprobe" && param == "blacklist" {
            for m in value.split(',').filter(|m| !m.is_empty()) {
                out.push(ConfigLine {
                    directive: Directive::Blacklist {
                        module: normalize_name(m),
                    },
                    origin: origin.clone(),
                    text: word.clone(),
                });
            }
        } else if let Some(module) = underscores(module) {
            out.push(ConfigLine {
                directive: Directive::Options {
                    module,
                    options: format!("{param}={value}"),
                },
                origin: origin.clone(),
                text: word.clone(),
            });
        }
    }
    out
}

/// Splits a command line on blanks outside double quotes, dropping the quotes.
fn split_cmdline(cmdline: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in cmdline.chars() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// Reads the configuration modprobe would use: the `modprobe.d` directories, the module tree's
/// `modules.softdep` when `module_dir` (a host path such as `/lib/modules/<release>`) is given,
/// and `cmdline` (the command line the kernel runs with) when given.
pub fn read_modprobe_config(
    root: &Root,
    module_dir: Option<&str>,
    cmdline: Option<&str>,
) -> Result<ModprobeConfig, HostError> {
    let mut files = list_conf_files(root, &MODPROBE_DIRS)?;
    if let Some(dir) = module_dir {
        let path = format!("{}/modules.softdep", dir.trim_end_matches('/'));
        if root.is_file(&path) {
            files.push(ConfFile {
                name: "modules.softdep".into(),
                path,
                hides: Vec::new(),
            });
            files.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        }
    }
    let mut config = ModprobeConfig::default();
    for f in &files {
        let Some(text) = root.read_text_lossy(&f.path)? else {
            continue;
        };
        let (lines, bad) = parse_modprobe_conf(&text, &f.path);
        config.lines.extend(lines);
        config.bad_lines.extend(bad);
    }
    if let Some(c) = cmdline {
        config.lines.extend(parse_cmdline_config(c));
    }
    config.files = files;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_directive_parses_with_its_line() {
        let text = "# MOFED\n\
alias xprt-rdma rpcrdma\n\
blacklist rpcrdma\n\
options rpcrdma   max_requests=128  \n\
install rpcrdma /sbin/modprobe --ignore-install rpcrdma $CMDLINE_OPTS && \\\n  echo loaded\n\
remove rpcrdma /bin/true\n\
softdep rpcrdma pre: ib-core post: nvidia_fs\n\
weakdep nvidia_fs nvidia\n\
\n\
   \t\n\
bogus line here\n\
\x20# indented comment\n\
include /etc/other.conf\n\
options rpcrdma\n";
        let (lines, bad) = parse_modprobe_conf(text, "/etc/modprobe.d/mlnx.conf");
        let d: Vec<&Directive> = lines.iter().map(|l| &l.directive).collect();
        assert_eq!(
            d[0],
            &Directive::Alias {
                pattern: "xprt_rdma".into(),
                module: "rpcrdma".into()
            }
        );
        assert_eq!(lines[0].origin.line, 2);
        assert_eq!(
            d[1],
            &Directive::Blacklist {
                module: "rpcrdma".into()
            }
        );
        assert_eq!(
            d[2],
            &Directive::Options {
                module: "rpcrdma".into(),
                options: "max_requests=128  ".into()
            }
        );
        match d[3] {
            Directive::Install { command, .. } => {
                assert_eq!(
                    command,
                    "/sbin/modprobe --ignore-install rpcrdma $CMDLINE_OPTS &&   echo loaded"
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(lines[3].origin.line, 5);
        assert_eq!(lines[4].origin.line, 7, "continuation counted");
        assert_eq!(
            d[5],
            &Directive::Softdep {
                module: "rpcrdma".into(),
                pre: vec!["ib_core".into()],
                post: vec!["nvidia_fs".into()]
            }
        );
        assert_eq!(lines.len(), 7);
        let bad_lines: Vec<usize> = bad.iter().map(|b| b.origin.line).collect();
        assert_eq!(bad_lines, vec![12, 13, 14, 15], "{bad:#?}");
        assert_eq!(bad[0].origin.to_string(), "/etc/modprobe.d/mlnx.conf:12");
    }

    #[test]
    fn continued_lines_join_and_keep_their_first_line_number() {
        let got: Vec<(usize, String)> = logical_lines("a \\\nb \\\nc\nd\n\ne \\\nf \\")
            .into_iter()
            .map(|(n, t)| (n, t.into_owned()))
            .collect();
        let want = [(1, "a b c"), (4, "d"), (5, ""), (6, "e f ")];
        assert_eq!(
            got,
            want.map(|(n, t)| (n, t.to_string())),
            "three lines joined, an empty line kept, a continued last line closed at the end"
        );
        // Only a joined line is copied.
        let text = "x\ny \\\nz\n";
        let lines = logical_lines(text);
        assert!(matches!(lines[0].1, Cow::Borrowed("x")));
        assert!(matches!(&lines[1].1, Cow::Owned(t) if t == "y z"));
    }

    #[test]
    fn brackets_keep_dashes_and_must_balance() {
        assert_eq!(underscores("pci:v[0-9]*").as_deref(), Some("pci:v[0-9]*"));
        assert_eq!(underscores("nvidia-fs").as_deref(), Some("nvidia_fs"));
        assert_eq!(underscores("a]b"), None);
        assert_eq!(underscores("a[b"), None);
    }

    #[test]
    fn command_line_blacklists_and_options() {
        let l = parse_cmdline_config(
            "BOOT_IMAGE=/vmlinuz ro modprobe.blacklist=rpcrdma,nouveau rpcrdma.max_requests=64 quiet \"nvidia-fs.dbg=a b\" a.b.c=1",
        );
        let d: Vec<&Directive> = l.iter().map(|l| &l.directive).collect();
        assert_eq!(
            d,
            vec![
                &Directive::Blacklist {
                    module: "rpcrdma".into()
                },
                &Directive::Blacklist {
                    module: "nouveau".into()
                },
                &Directive::Options {
                    module: "rpcrdma".into(),
                    options: "max_requests=64".into()
                },
                &Directive::Options {
                    module: "nvidia_fs".into(),
                    options: "dbg=a b".into()
                },
            ]
        );
        assert_eq!(l[0].origin.file, "/proc/cmdline");
    }
}
