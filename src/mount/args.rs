//! The helper's argv, parsed by hand the way mount(8) passes it.
//!
//! `SPEC DIR [-s] [-f] [-n] [-v] [-N NS] [-o OPTS] [-t TYPE]`, flags before or after the
//! positionals, short flags combinable (`-fv`), values attached or separate (`-orw`, `-o rw`),
//! `-o` repeatable (joined with `,`), `--` ends the flags. `-r`/`-w` (mount.nfs's read-only /
//! read-write) add `ro`/`rw`. Hand-parsed rather than clap, so every usage error is mount(8)'s
//! exit code 1 and the flags mean exactly what mount(8) means by them. The flags are declared
//! once, in [`FLAGS`]: the parser looks each one up there, and the usage text, the manual page's
//! flag list and the completions are written from it.

use std::ffi::OsString;

/// What one of the helper's flags does to the parsed arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Does {
    Sloppy,
    Fake,
    NoMtab,
    Verbose,
    Namespace,
    Options,
    Type,
    ReadOnly,
    ReadWrite,
    Help,
    Version,
}

/// One flag of the helper, as mount(8) passes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag {
    /// The letter: `-s`.
    pub short: char,
    /// The long spelling the helper also accepts (`--help`), if any.
    pub long: Option<&'static str>,
    /// The name of its value (`NAMESPACE`), for a flag that takes one.
    pub value: Option<&'static str>,
    /// One line on what it does.
    pub help: &'static str,
    pub does: Does,
}

/// The helper's flags: the one declaration the parser ([`parse`]), the usage text ([`usage`]),
/// the manual page's flag list and the shell completions are all made from.
pub const FLAGS: &[Flag] = &[
    Flag {
        short: 's',
        long: None,
        value: None,
        help: "sloppy: let mount.nfs ignore unknown options",
        does: Does::Sloppy,
    },
    Flag {
        short: 'f',
        long: None,
        value: None,
        help: "fake: run every check and show what would be done; mount nothing",
        does: Does::Fake,
    },
    Flag {
        short: 'n',
        long: None,
        value: None,
        help: "do not write /etc/mtab (passed to mount.nfs)",
        does: Does::NoMtab,
    },
    Flag {
        short: 'v',
        long: None,
        value: None,
        help: "verbose",
        does: Does::Verbose,
    },
    Flag {
        short: 'N',
        long: None,
        value: Some("NAMESPACE"),
        help: "mount in this mount namespace (a path, or a pid)",
        does: Does::Namespace,
    },
    Flag {
        short: 'o',
        long: None,
        value: Some("OPTIONS"),
        help: "mount options; nfs-gds's own: gds_policy=enforce|warn|off, gds_wait=SECONDS",
        does: Does::Options,
    },
    Flag {
        short: 't',
        long: None,
        value: Some("TYPE"),
        help: "nfs-gds (or nfs-gds.SUBTYPE); accepted for mount(8)'s sake",
        does: Does::Type,
    },
    Flag {
        short: 'r',
        long: None,
        value: None,
        help: "mount read-only (adds ro)",
        does: Does::ReadOnly,
    },
    Flag {
        short: 'w',
        long: None,
        value: None,
        help: "mount read-write (adds rw)",
        does: Does::ReadWrite,
    },
    Flag {
        short: 'h',
        long: Some("help"),
        value: None,
        help: "print this help",
        does: Does::Help,
    },
    Flag {
        short: 'V',
        long: Some("version"),
        value: None,
        help: "print the version",
        does: Does::Version,
    },
];

/// The flag spelt `-c`.
pub fn flag(c: char) -> Option<&'static Flag> {
    FLAGS.iter().find(|f| f.short == c)
}

/// How wide the flag column of the usage text is (`-N NAMESPACE` and two spaces).
const COLUMN: usize = 16;

/// A flag as the usage text's first column spells it: `-N NAMESPACE`, `-h, --help`.
pub fn spelling(f: &Flag) -> String {
    let mut out = format!("-{}", f.short);
    if let Some(long) = f.long {
        out.push_str(&format!(", --{long}"));
    }
    if let Some(value) = f.value {
        out.push_str(&format!(" {value}"));
    }
    out
}

/// The helper's usage text (`-h`, and after a usage error), written from [`FLAGS`].
pub fn usage() -> String {
    let synopsis: Vec<String> = FLAGS
        .iter()
        .filter(|f| !matches!(f.does, Does::Help | Does::Version))
        .map(|f| match f.value {
            Some(v) => format!("[-{} {v}]", f.short),
            None => format!("[-{}]", f.short),
        })
        .collect();
    let mut out = format!(
        "Usage: mount.nfs-gds SPEC DIR {}\n       nfs-gds mount SPEC DIR [same flags]\n\n\
         Mount SPEC (server:/export, or [ipv6]:/export) on DIR over NFS/RDMA, after checking that\n\
         GPUDirect Storage will really be used, and verify the new mount's transport afterwards.\n\n",
        synopsis.join(" ")
    );
    for f in FLAGS {
        out.push_str(&format!("  {:<COLUMN$}{}\n", spelling(f), f.help));
    }
    out.push_str(
        "\nExit status (mount(8)'s): 0 mounted, 1 usage or permission, 2 system error,\n\
         32 mount failure or refusal by policy.",
    );
    out
}

/// The flags and positionals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HelperArgs {
    pub spec: OsString,
    pub dir: OsString,
    pub sloppy: bool,
    pub fake: bool,
    pub no_mtab: bool,
    pub verbose: u8,
    pub namespace: Option<String>,
    /// Each `-o` (and `-r`/`-w`), in order.
    pub options: Vec<String>,
    pub fstype: Option<String>,
}

impl HelperArgs {
    /// All `-o` values joined with `,`.
    pub fn option_string(&self) -> String {
        self.options.join(",")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Run(HelperArgs),
    Help,
    Version,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    #[error("unknown flag {0}")]
    UnknownFlag(String),
    #[error("flag -{0} needs a value")]
    MissingValue(char),
    #[error("expected SPEC and DIR, got {0} argument(s)")]
    Positionals(usize),
    #[error("{0} is empty")]
    Empty(&'static str),
    #[error("the value of -{0} is not valid UTF-8")]
    NotUtf8(char),
    #[error("-t {0}: this helper mounts type nfs-gds only")]
    WrongType(String),
}

/// Parses the arguments after argv\[0\].
pub fn parse(args: &[OsString]) -> Result<Parsed, UsageError> {
    let mut out = HelperArgs::default();
    let mut positionals: Vec<OsString> = Vec::new();
    let mut it = args.iter();
    let mut only_positionals = false;
    while let Some(arg) = it.next() {
        let bytes = arg.as_encoded_bytes();
        if only_positionals || bytes.len() < 2 || bytes[0] != b'-' {
            positionals.push(arg.clone());
            continue;
        }
        if bytes == b"--" {
            only_positionals = true;
            continue;
        }
        let Some(text) = arg.to_str() else {
            return Err(UsageError::UnknownFlag(arg.to_string_lossy().into_owned()));
        };
        if let Some(long) = text.strip_prefix("--") {
            return match FLAGS.iter().find(|f| f.long == Some(long)).map(|f| f.does) {
                Some(Does::Help) => Ok(Parsed::Help),
                Some(Does::Version) => Ok(Parsed::Version),
                _ => Err(UsageError::UnknownFlag(text.to_string())),
            };
        }
        let flags: Vec<char> = text[1..].chars().collect();
        let mut i = 0;
        while i < flags.len() {
            let c = flags[i];
            let Some(flag) = flag(c) else {
                return Err(UsageError::UnknownFlag(format!("-{c}")));
            };
            if flag.value.is_some() {
                // The rest of the word is the value (`-orw`), else the next word is.
                let attached: String = flags[i + 1..].iter().collect();
                let value = if attached.is_empty() {
                    let v = it.next().ok_or(UsageError::MissingValue(c))?;
                    v.to_str().ok_or(UsageError::NotUtf8(c))?.to_string()
                } else {
                    attached
                };
                match flag.does {
                    Does::Options => out.options.push(value),
                    Does::Namespace => out.namespace = Some(value),
                    _ => out.fstype = Some(value),
                }
                break;
            }
            match flag.does {
                Does::Sloppy => out.sloppy = true,
                Does::Fake => out.fake = true,
                Does::NoMtab => out.no_mtab = true,
                Does::Verbose => out.verbose = out.verbose.saturating_add(1),
                Does::ReadOnly => out.options.push("ro".into()),
                Does::ReadWrite => out.options.push("rw".into()),
                Does::Help => return Ok(Parsed::Help),
                Does::Version => return Ok(Parsed::Version),
                Does::Namespace | Does::Options | Does::Type => {}
            }
            i += 1;
        }
    }
    if positionals.len() != 2 {
        return Err(UsageError::Positionals(positionals.len()));
    }
    out.dir = positionals.pop().unwrap_or_default();
    out.spec = positionals.pop().unwrap_or_default();
    if out.spec.is_empty() {
        return Err(UsageError::Empty("SPEC"));
    }
    if out.dir.is_empty() {
        return Err(UsageError::Empty("DIR"));
    }
    if let Some(t) = &out.fstype {
        if t != "nfs-gds" && !t.starts_with("nfs-gds.") {
            return Err(UsageError::WrongType(t.clone()));
        }
    }
    if out.namespace.as_deref() == Some("") {
        return Err(UsageError::Empty("the -N namespace"));
    }
    Ok(Parsed::Run(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The usage text read back as a user reads it: each line of its table, indented by two
    /// spaces and starting with `-`, names flags (up to two spaces) and maybe a value.
    fn usage_table() -> Vec<(Vec<String>, Option<String>)> {
        usage()
            .lines()
            .filter_map(|l| l.strip_prefix("  "))
            .filter(|l| l.starts_with('-'))
            .map(|l| {
                let column = l.split("  ").next().unwrap();
                let mut names = Vec::new();
                let mut value = None;
                for spelt in column.split(", ") {
                    let mut words = spelt.split_whitespace();
                    names.extend(words.next().map(str::to_string));
                    value = value.or(words.next().map(str::to_string));
                }
                (names, value)
            })
            .collect()
    }

    /// The usage text and the parser agree: every flag the text shows is accepted, with a value
    /// exactly when the text names one, and every other letter is refused.
    #[test]
    fn the_usage_text_and_the_parser_agree() {
        let table = usage_table();
        assert_eq!(table.len(), FLAGS.len(), "{}", usage());
        let mut shown = Vec::new();
        for (names, value) in &table {
            for name in names {
                shown.push(name.clone());
                let mut argv = vec!["srv:/x", "/mnt", name.as_str()];
                match value {
                    Some(_) => {
                        argv.push("nfs-gds");
                        assert!(parse_strs(&argv).is_ok(), "{name} {value:?}");
                        assert_eq!(
                            parse_strs(&argv[..3]),
                            Err(UsageError::MissingValue(name.chars().nth(1).unwrap())),
                            "{name} takes a value"
                        );
                    }
                    None => {
                        assert!(parse_strs(&argv).is_ok(), "{name}");
                        if !name.starts_with("--") {
                            // A flag without a value combines with the next (`-fv`).
                            let combined = format!("{name}v");
                            assert!(
                                parse_strs(&["srv:/x", "/mnt", &combined]).is_ok(),
                                "{combined}"
                            );
                        }
                    }
                }
            }
        }
        for c in ('a'..='z').chain('A'..='Z') {
            let flag = format!("-{c}");
            if !shown.contains(&flag) {
                assert_eq!(
                    parse_strs(&["srv:/x", "/mnt", &flag]),
                    Err(UsageError::UnknownFlag(flag.clone())),
                    "the parser accepts {flag}, which the usage text does not show"
                );
            }
        }
        assert_eq!(
            parse_strs(&["srv:/x", "/mnt", "--fake"]),
            Err(UsageError::UnknownFlag("--fake".into()))
        );
    }

    /// Each flag is declared once: no letter or long name twice in the table.
    #[test]
    fn no_flag_is_declared_twice() {
        let mut names: Vec<String> = FLAGS
            .iter()
            .flat_map(|f| std::iter::once(f.short.to_string()).chain(f.long.map(String::from)))
            .collect();
        let all = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all, "{FLAGS:?}");
    }

    fn parse_strs(args: &[&str]) -> Result<Parsed, UsageError> {
        parse(&args.iter().map(OsString::from).collect::<Vec<_>>())
    }

    fn run(args: &[&str]) -> HelperArgs {
        match parse_strs(args).unwrap() {
            Parsed::Run(a) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn mount8_argv_from_the_vm_captures() {
        let a = run(&[
            "10.0.2.15:/export",
            "/mnt/gds",
            "-f",
            "-v",
            "-o",
            "rw,vers=4.2,gds.policy=warn,_netdev",
        ]);
        assert_eq!(a.spec, "10.0.2.15:/export");
        assert_eq!(a.dir, "/mnt/gds");
        assert!(a.fake);
        assert_eq!(a.verbose, 1);
        assert_eq!(a.option_string(), "rw,vers=4.2,gds.policy=warn,_netdev");
        assert!(!a.sloppy && !a.no_mtab);
    }

    #[test]
    fn every_flag_and_their_order_before_or_after() {
        let a = run(&[
            "-s",
            "-f",
            "-n",
            "-v",
            "-N",
            "/proc/77/fd/5",
            "-o",
            "ro",
            "srv:/x",
            "/mnt",
            "-t",
            "nfs-gds.sub",
            "-o",
            "hard",
        ]);
        assert!(a.sloppy && a.fake && a.no_mtab);
        assert_eq!(a.namespace.as_deref(), Some("/proc/77/fd/5"));
        assert_eq!(a.fstype.as_deref(), Some("nfs-gds.sub"));
        assert_eq!(a.option_string(), "ro,hard");
        assert_eq!(a.spec, "srv:/x");
        assert_eq!(a.dir, "/mnt");
    }

    #[test]
    fn combined_and_attached_flags() {
        let a = run(&["srv:/x", "/mnt", "-fvv", "-orw,hard", "-N1234", "-r"]);
        assert!(a.fake);
        assert_eq!(a.verbose, 2);
        assert_eq!(a.option_string(), "rw,hard,ro");
        assert_eq!(a.namespace.as_deref(), Some("1234"));
        let a = run(&["srv:/x", "/mnt", "-fo", "ro"]);
        assert!(a.fake);
        assert_eq!(a.option_string(), "ro");
        let a = run(&["srv:/x", "/mnt", "-w"]);
        assert_eq!(a.option_string(), "rw");
    }

    #[test]
    fn double_dash_ends_flags_and_a_lone_dash_is_positional() {
        let a = run(&["-v", "--", "-weird:/x", "/mnt"]);
        assert_eq!(a.spec, "-weird:/x");
        let a = run(&["srv:/x", "-"]);
        assert_eq!(a.dir, "-");
    }

    #[test]
    fn help_and_version() {
        assert_eq!(parse_strs(&["-h"]), Ok(Parsed::Help));
        assert_eq!(parse_strs(&["--help"]), Ok(Parsed::Help));
        assert_eq!(parse_strs(&["srv:/x", "-V"]), Ok(Parsed::Version));
        assert!(usage().contains("32 mount failure"));
    }

    #[test]
    fn usage_errors_name_what_is_wrong() {
        assert_eq!(
            parse_strs(&["srv:/x", "/m", "-x"]),
            Err(UsageError::UnknownFlag("-x".into()))
        );
        assert_eq!(
            parse_strs(&["srv:/x", "/m", "--fake"]),
            Err(UsageError::UnknownFlag("--fake".into()))
        );
        assert_eq!(
            parse_strs(&["srv:/x", "/m", "-o"]),
            Err(UsageError::MissingValue('o'))
        );
        assert_eq!(
            parse_strs(&["srv:/x", "/m", "-N"]),
            Err(UsageError::MissingValue('N'))
        );
        assert_eq!(parse_strs(&["srv:/x"]), Err(UsageError::Positionals(1)));
        assert_eq!(
            parse_strs(&["a:/x", "/m", "extra"]),
            Err(UsageError::Positionals(3))
        );
        assert_eq!(parse_strs(&[]), Err(UsageError::Positionals(0)));
        assert_eq!(parse_strs(&["", "/m"]), Err(UsageError::Empty("SPEC")));
        assert_eq!(
            parse_strs(&["s:/x", "/m", "-t", "nfs"]),
            Err(UsageError::WrongType("nfs".into()))
        );
        assert_eq!(
            parse_strs(&["s:/x", "/m", "-N", ""]),
            Err(UsageError::Empty("the -N namespace"))
        );
    }

    #[test]
    fn non_utf8_values_are_usage_errors_not_panics() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(vec![0xff, 0xfe]);
        let args = vec![
            OsString::from("s:/x"),
            OsString::from("/m"),
            OsString::from("-o"),
            bad.clone(),
        ];
        assert_eq!(parse(&args), Err(UsageError::NotUtf8('o')));
        let mut flag = b"-".to_vec();
        flag.push(0xff);
        let args = vec![
            OsString::from("s:/x"),
            OsString::from("/m"),
            OsString::from_vec(flag),
        ];
        assert!(matches!(parse(&args), Err(UsageError::UnknownFlag(_))));
        // A non-UTF-8 DIR is fine: paths are bytes.
        let args = vec![OsString::from("s:/x"), bad];
        assert!(matches!(parse(&args), Ok(Parsed::Run(_))));
    }
}
