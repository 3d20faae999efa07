//! The helper's argv, parsed by hand the way mount(8) passes it.
//!
//! `SPEC DIR [-s] [-f] [-n] [-v] [-N NS] [-o OPTS] [-t TYPE]`, flags before or after the
//! positionals, short flags combinable (`-fv`), values attached or separate (`-orw`, `-o rw`),
//! `-o` repeatable (joined with `,`), `--` ends the flags. `-r`/`-w` (mount.nfs's read-only /
//! read-write) add `ro`/`rw`. Hand-parsed rather than clap, so every usage error is mount(8)'s
//! exit code 1 and the flags mean exactly what mount(8) means by them.

use std::ffi::OsString;

pub const USAGE: &str = "\
Usage: mount.nfs-gds SPEC DIR [-s] [-f] [-n] [-v] [-N NAMESPACE] [-o OPTIONS] [-t nfs-gds]
       nfs-gds mount SPEC DIR [same flags]

Mount SPEC (server:/export, or [ipv6]:/export) on DIR over NFS/RDMA, after checking that
GPUDirect Storage will really be used, and verify the new mount's transport afterwards.

  -s            sloppy: let mount.nfs ignore unknown options
  -f            fake: run every check and show what would be done; mount nothing
  -n            do not write /etc/mtab (passed to mount.nfs)
  -v            verbose
  -N NAMESPACE  mount in this mount namespace (a path, or a pid)
  -o OPTIONS    mount options; nfs-gds's own: gds_policy=enforce|warn|off, gds_wait=SECONDS
  -t TYPE       nfs-gds (or nfs-gds.SUBTYPE); accepted for mount(8)'s sake
  -r, -w        mount read-only / read-write
  -h, -V        help / version

Exit status (mount(8)'s): 0 mounted, 1 usage or permission, 2 system error,
32 mount failure or refusal by policy.";

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
        match text {
            "--help" => return Ok(Parsed::Help),
            "--version" => return Ok(Parsed::Version),
            _ if text.starts_with("--") => return Err(UsageError::UnknownFlag(text.to_string())),
            _ => {}
        }
        let flags: Vec<char> = text[1..].chars().collect();
        let mut i = 0;
        while i < flags.len() {
            let c = flags[i];
            match c {
                's' => out.sloppy = true,
                'f' => out.fake = true,
                'n' => out.no_mtab = true,
                'v' => out.verbose = out.verbose.saturating_add(1),
                'r' => out.options.push("ro".into()),
                'w' => out.options.push("rw".into()),
                'h' => return Ok(Parsed::Help),
                'V' => return Ok(Parsed::Version),
                'o' | 'N' | 't' => {
                    let attached: String = flags[i + 1..].iter().collect();
                    let value = if attached.is_empty() {
                        let v = it.next().ok_or(UsageError::MissingValue(c))?;
                        v.to_str().ok_or(UsageError::NotUtf8(c))?.to_string()
                    } else {
                        attached
                    };
                    match c {
                        'o' => out.options.push(value),
                        'N' => out.namespace = Some(value),
                        _ => out.fstype = Some(value),
                    }
                    break;
                }
                other => return Err(UsageError::UnknownFlag(format!("-{other}"))),
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
        assert!(USAGE.contains("32 mount failure"));
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
