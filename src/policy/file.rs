//! The TOML schema of the policy file, and its parser.
//!
//! Every table denies unknown keys, check ids are validated as keys, and every value is
//! checked while it is deserialized, so each error carries the position of the offending text.
//! See `contrib/nfs-gds.toml` for a commented example of every key.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use super::{Backend, JobWhenUnsure, Level, MountRule, Policy, SlurmPolicy, WhenUnsure};
use crate::checks::CheckId;
use crate::nfs::NfsVersion;
use crate::nfs::OptionDefaults;

/// `vers = "4.2"` or `vers = 3`.
fn deserialize_version<'de, D: Deserializer<'de>>(d: D) -> Result<Option<NfsVersion>, D::Error> {
    struct V;
    impl Visitor<'_> for V {
        type Value = NfsVersion;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an NFS version: \"3\", \"4\", \"4.0\", \"4.1\" or \"4.2\"")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<NfsVersion, E> {
            s.parse()
                .map_err(|e: crate::nfs::BadVersion| E::custom(e.to_string()))
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<NfsVersion, E> {
            self.visit_str(&n.to_string())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<NfsVersion, E> {
            Err(E::custom(
                "write the NFS version as a string (vers = \"4.2\"): as a number 4.10 would equal 4.1",
            ))
        }
    }
    d.deserialize_any(V).map(Some)
}

/// A whole number from `min` to `max`, read as whatever integer TOML holds, so that a value out
/// of range gets `out_of_range`'s words rather than serde's type names (`expected u16`,
/// `as i128`).
fn bounded_int<'de, D: Deserializer<'de>>(
    d: D,
    min: u64,
    max: u64,
    out_of_range: fn(&str) -> String,
) -> Result<u64, D::Error> {
    struct V {
        min: u64,
        max: u64,
        out_of_range: fn(&str) -> String,
    }
    impl V {
        fn check<E: de::Error>(&self, n: i128) -> Result<u64, E> {
            if n < i128::from(self.min) || n > i128::from(self.max) {
                return Err(E::custom((self.out_of_range)(&n.to_string())));
            }
            Ok(n as u64)
        }
    }
    impl Visitor<'_> for V {
        type Value = u64;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            write!(f, "a whole number from {} to {}", self.min, self.max)
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<u64, E> {
            self.check(n.into())
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<u64, E> {
            self.check(n.into())
        }
        fn visit_i128<E: de::Error>(self, n: i128) -> Result<u64, E> {
            self.check(n)
        }
        fn visit_u128<E: de::Error>(self, n: u128) -> Result<u64, E> {
            Err(E::custom((self.out_of_range)(&n.to_string())))
        }
    }
    d.deserialize_any(V {
        min,
        max,
        out_of_range,
    })
}

fn deserialize_port<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u16>, D::Error> {
    let p = bounded_int(d, 1, u16::MAX.into(), |n| {
        format!("the port must be between 1 and 65535, not {n}")
    })?;
    Ok(Some(p as u16))
}

fn deserialize_wait<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    bounded_int(d, 0, super::MAX_WAIT_SECS, |n| {
        if n.starts_with('-') {
            format!(
                "the wait is a number of seconds from 0 to {}, not {n}",
                super::MAX_WAIT_SECS
            )
        } else {
            format!(
                "the wait is at most {} seconds (one hour), not {n}",
                super::MAX_WAIT_SECS
            )
        }
    })
    .map(Some)
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionsTable {
    #[serde(default, deserialize_with = "deserialize_version")]
    vers: Option<NfsVersion>,
    #[serde(default, deserialize_with = "deserialize_port")]
    port: Option<u16>,
}

/// `[oci-hook]`: the container hook.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct OciHookTable {
    when_unsure: Option<WhenUnsure>,
}

/// `[slurm]`: the Slurm health check and prolog.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct SlurmTable {
    #[serde(default, deserialize_with = "deserialize_feature")]
    feature: Option<String>,
    when_unsure: Option<JobWhenUnsure>,
}

fn deserialize_feature<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let name = String::deserialize(d)?;
    super::check_slurm_feature(&name).map_err(serde::de::Error::custom)?;
    Ok(Some(name))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MountTable {
    target: Option<PathBuf>,
    source: Option<String>,
    default: Option<Level>,
    #[serde(default)]
    checks: BTreeMap<CheckId, Level>,
    #[serde(default, deserialize_with = "deserialize_wait")]
    wait: Option<u64>,
}

impl TryFrom<MountTable> for MountRule {
    type Error = String;

    fn try_from(t: MountTable) -> Result<Self, String> {
        if t.target.is_none() && t.source.is_none() {
            return Err(
                "a [[mount]] table needs `target` (the mount point) or `source` (server:/export)"
                    .into(),
            );
        }
        if let Some(target) = &t.target {
            super::check_rule_target(target)?;
        }
        if let Some(source) = &t.source {
            super::check_rule_source(source)?;
        }
        Ok(MountRule {
            target: t.target,
            source: t.source,
            default: t.default,
            checks: t.checks,
            wait: t.wait,
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(try_from = "MountTable")]
struct MountEntry(MountRule);

impl TryFrom<MountTable> for MountEntry {
    type Error = String;
    fn try_from(t: MountTable) -> Result<Self, String> {
        MountRule::try_from(t).map(MountEntry)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct PolicyFile {
    default: Option<Level>,
    #[serde(default)]
    checks: BTreeMap<CheckId, Level>,
    modprobe_rpcrdma: Option<bool>,
    probe: Option<bool>,
    #[serde(default, deserialize_with = "deserialize_wait")]
    wait: Option<u64>,
    backend: Option<Backend>,
    #[serde(default)]
    options: OptionsTable,
    #[serde(default)]
    mount: Vec<MountEntry>,
    #[serde(default)]
    oci_hook: OciHookTable,
    #[serde(default)]
    slurm: SlurmTable,
}

/// A parse error with its 1-based position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

fn position(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, column)
}

/// The first error of `text`, and the byte range of the text it is about.
fn first_error(text: &str) -> Result<PolicyFile, (ParseError, std::ops::Range<usize>)> {
    toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        let (line, column) = position(text, span.start);
        let error = ParseError {
            line,
            column,
            message: e.message().trim().to_string(),
        };
        (error, span)
    })
}

/// Every error of `text`, in order, for `policy check`: after each error the text it is about is
/// blanked out (spaces, so later positions stay true) and the rest is parsed again. A syntax
/// error ends the list when blanking does not get the parser past it.
pub fn all_errors(text: &str) -> Vec<ParseError> {
    const MAX_ERRORS: usize = 100;
    let mut text = text.to_string();
    let mut errors: Vec<ParseError> = Vec::new();
    while let Err((error, span)) = first_error(&text) {
        // The same error again: blanking did not get the parser past it.
        if errors.last() == Some(&error) {
            break;
        }
        errors.push(error);
        if span.is_empty() || errors.len() >= MAX_ERRORS {
            break;
        }
        // The whole lines of the span, so a half-blanked `key = value` is not a new error.
        let start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
        let end = text[span.end.min(text.len())..]
            .find('\n')
            .map_or(text.len(), |i| span.end + i);
        // An error about a table (a `[[mount]]` the parser refused, `[mount.check]`) points at
        // its header: blank its keys and sub-tables too, or they would land in the table above
        // and each be an error of its own.
        let end = match header_name(&text[start..end]) {
            Some(name) => section_end(&text, end, name),
            None => end,
        };
        let blank: String = text[start..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        text.replace_range(start..end, &blank);
    }
    errors.sort_by_key(|e| (e.line, e.column));
    errors
}

/// The dotted name of a `[table]` or `[[array]]` header line, without spaces around dots.
fn header_name(line: &str) -> Option<String> {
    let line = line.trim();
    let inner = line
        .strip_prefix("[[")
        .and_then(|l| l.split("]]").next())
        .or_else(|| line.strip_prefix('[').and_then(|l| l.split(']').next()))?;
    Some(
        inner
            .split('.')
            .map(str::trim)
            .collect::<Vec<_>>()
            .join("."),
    )
}

/// Where the section whose header ends at `from` ends: at the next header that is not one of
/// `name`'s sub-tables, or the end of the text.
fn section_end(text: &str, from: usize, name: String) -> usize {
    let mut at = from;
    for line in text[from..].split_inclusive('\n') {
        if line.trim_start().starts_with('[') {
            match header_name(line) {
                Some(n) if n.starts_with(&format!("{name}.")) => {}
                _ => break,
            }
        }
        at += line.len();
    }
    at.min(text.len()).max(from)
}

/// Parses and validates the text of a policy file.
pub fn parse(text: &str) -> Result<Policy, ParseError> {
    let raw = first_error(text).map_err(|(e, _)| e)?;
    let builtin = Policy::default();
    Ok(Policy {
        default: raw.default.unwrap_or(builtin.default),
        checks: raw.checks,
        modprobe_rpcrdma: raw.modprobe_rpcrdma.unwrap_or(builtin.modprobe_rpcrdma),
        probe: raw.probe.unwrap_or(builtin.probe),
        wait: raw.wait.unwrap_or(builtin.wait),
        backend: raw.backend.unwrap_or(builtin.backend),
        options: OptionDefaults {
            vers: raw.options.vers.unwrap_or(builtin.options.vers),
            port: raw.options.port.unwrap_or(builtin.options.port),
        },
        mounts: raw.mount.into_iter().map(|m| m.0).collect(),
        oci_hook_when_unsure: raw
            .oci_hook
            .when_unsure
            .unwrap_or(builtin.oci_hook_when_unsure),
        slurm: SlurmPolicy {
            feature: raw.slurm.feature.unwrap_or(builtin.slurm.feature),
            when_unsure: raw.slurm.when_unsure.unwrap_or(builtin.slurm.when_unsure),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slurm_table_names_a_feature_and_what_the_prolog_does_when_unsure() {
        let p = parse("").unwrap();
        assert_eq!(p.slurm, SlurmPolicy::default());
        assert_eq!(p.slurm.feature, "gds_nfs");
        assert_eq!(p.slurm.when_unsure, JobWhenUnsure::Start);
        let p = parse("[slurm]\nfeature = \"gds\"\nwhen-unsure = \"refuse\"\n").unwrap();
        assert_eq!(p.slurm.feature, "gds");
        assert_eq!(p.slurm.when_unsure, JobWhenUnsure::Refuse);
        let e = parse("[slurm]\nfeature = \"gds&nfs\"\n").unwrap_err();
        assert_eq!(e.line, 2, "{e:?}");
        assert!(e.message.contains("not a Slurm feature name"), "{e:?}");
        let e = parse("[slurm]\nfeature = \"\"\n").unwrap_err();
        assert!(e.message.contains("not a Slurm feature name"), "{e:?}");
        let e = parse("[slurm]\nwhen-unsure = \"start-unless-marked\"\n").unwrap_err();
        assert!(e.message.contains("unknown variant"), "{e:?}");
        let e = parse("[slurm]\nfeatures = \"gds\"\n").unwrap_err();
        assert!(e.message.contains("unknown field"), "{e:?}");
    }

    #[test]
    fn the_container_hooks_answer_when_unsure_is_one_of_three_words() {
        assert_eq!(
            parse("").unwrap().oci_hook_when_unsure,
            WhenUnsure::StartUnlessMarked
        );
        let p = parse("[oci-hook]\nwhen-unsure = \"refuse\"\n").unwrap();
        assert_eq!(p.oci_hook_when_unsure, WhenUnsure::Refuse);
        let e = parse("[oci-hook]\nwhen-unsure = \"maybe\"\n").unwrap_err();
        assert_eq!(e.line, 2, "{e:?}");
        assert!(e.message.contains("start-unless-marked"), "{e:?}");
        let e = parse("[oci-hook]\nwhen_unsure = \"start\"\n").unwrap_err();
        assert_eq!(e.line, 2, "{e:?}");
    }

    #[test]
    fn every_error_is_found_not_only_the_first() {
        let text = "default = \"enforced\"\nwait = 5\n[checks]\nrpcrdma-hook = \"warn\"\ntransport-trap = \"loud\"\n[options]\nport = 0\n";
        let errors = all_errors(text);
        let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [1, 4, 5, 7], "{errors:?}");
        assert!(
            errors[1].message.contains("did you mean `rpcrdma-hooks`"),
            "{errors:?}"
        );
        assert!(all_errors("default = \"warn\"\n").is_empty());
        // A syntax error is reported once, not in a loop.
        assert_eq!(all_errors("[checks\nx = 1\n").len(), 1);
    }
    use crate::checks::catalogue::{nvidia_fs_devices, rpcrdma_fresh, transport_trap};

    fn err(text: &str) -> ParseError {
        parse(text).unwrap_err()
    }

    #[test]
    fn empty_file_is_the_builtin_policy() {
        assert_eq!(parse("").unwrap(), Policy::default());
        assert_eq!(parse("# only comments\n").unwrap(), Policy::default());
    }

    #[test]
    fn every_key_parses() {
        let p = parse(
            r#"
default = "warn"
modprobe-rpcrdma = false
wait = 30
backend = "syscall"

[options]
vers = 3
port = 20050

[checks]
nvidia-fs-devices = "off"
transport-trap = "enforce"

[[mount]]
target = "/mnt/data"
default = "enforce"
wait = 120
[mount.checks]
rpcrdma-fresh = "warn"

[[mount]]
source = "filer:/scratch"
default = "off"
"#,
        )
        .unwrap();
        assert_eq!(p.default, Level::Warn);
        assert!(!p.modprobe_rpcrdma);
        assert_eq!(p.wait, 30);
        assert_eq!(p.backend, Backend::Syscall);
        assert_eq!(p.options.vers, NfsVersion::V3);
        assert_eq!(p.options.port, 20050);
        assert_eq!(p.checks[&nvidia_fs_devices::ID], Level::Off);
        assert_eq!(p.checks[&transport_trap::ID], Level::Enforce);
        assert_eq!(p.mounts.len(), 2);
        assert_eq!(p.mounts[0].target.as_deref(), Some("/mnt/data".as_ref()));
        assert_eq!(p.mounts[0].wait, Some(120));
        assert_eq!(p.mounts[0].checks[&rpcrdma_fresh::ID], Level::Warn);
        assert_eq!(p.mounts[1].source.as_deref(), Some("filer:/scratch"));
        assert_eq!(p.mounts[1].default, Some(Level::Off));
        assert_eq!(
            parse("[options]\nvers = \"4.1\"\n").unwrap().options.vers,
            NfsVersion::V4(Some(1))
        );
    }

    #[test]
    fn unknown_keys_are_errors_with_position() {
        let e = err("default = \"warn\"\nenforce = true\n");
        assert_eq!((e.line, e.column), (2, 1));
        assert!(e.message.starts_with("unknown field `enforce`"), "{e:?}");
        let e = err("[options]\nvers = \"4.2\"\nproto = \"tcp\"\n");
        assert_eq!((e.line, e.column), (3, 1));
        let e = err("[[mount]]\ntarget = \"/mnt/x\"\n  polcy = \"warn\"\n");
        assert_eq!((e.line, e.column), (3, 3));
    }

    #[test]
    fn unknown_check_ids_list_the_known_ones() {
        let e = err("[checks]\ntransport-trap = \"off\"\nmount-transprot = \"off\"\n");
        assert_eq!((e.line, e.column), (3, 1));
        assert!(
            e.message.starts_with(
                "unknown check id `mount-transprot`: did you mean `mount-transport`? (known: "
            ) && e.message.contains(" nvidia-fs-loaded, "),
            "{e:?}"
        );
    }

    #[test]
    fn bad_values_and_types_are_errors_with_position() {
        let e = err("default = \"strict\"\n");
        assert_eq!((e.line, e.column), (1, 11));
        assert!(e.message.contains("unknown variant `strict`"), "{e:?}");
        let e = err("wait = \"long\"\n");
        assert_eq!((e.line, e.column), (1, 8));
        let e = err("wait = 18446744073709551615\n");
        assert_eq!(
            (e.line, e.message.as_str()),
            (
                1,
                "the wait is at most 3600 seconds (one hour), not 18446744073709551615"
            )
        );
        let e = err("[[mount]]\ntarget = \"/mnt/a\"\nwait = 3601\n");
        assert_eq!(e.line, 3, "{e:?}");
        assert!(parse("wait = 3600\n").is_ok());
        let e = err("wait = -1\n");
        assert_eq!(e.line, 1);
        let e = err("\n[options]\nvers = 4.2\n");
        assert_eq!((e.line, e.column), (3, 8));
        assert!(e.message.contains("as a string"), "{e:?}");
        let e = err("[options]\nvers = \"2\"\n");
        assert!(e.message.contains("not one nfs-gds mounts"), "{e:?}");
        let e = err("[options]\nport = 0\n");
        assert!(e.message.contains("between 1 and 65535"), "{e:?}");
        let e = err("[options]\nport = 70000\n");
        assert_eq!((e.line, e.column), (2, 8));
        let e = err("backend = \"nfs\"\n");
        assert!(e.message.contains("mount-nfs"), "{e:?}");
        let e = err("modprobe-rpcrdma = \"yes\"\n");
        assert_eq!((e.line, e.column), (1, 20));
    }

    /// Out-of-range numbers get the policy's words, never serde's type names.
    #[test]
    fn out_of_range_numbers_are_said_in_words() {
        for (text, want) in [
            (
                "[options]\nport = 70000\n",
                "the port must be between 1 and 65535, not 70000",
            ),
            (
                "[options]\nport = -1\n",
                "the port must be between 1 and 65535, not -1",
            ),
            (
                "[options]\nport = 0\n",
                "the port must be between 1 and 65535, not 0",
            ),
            (
                "wait = 1844674407370955161500\n",
                "the wait is at most 3600 seconds (one hour), not 1844674407370955161500",
            ),
            (
                "wait = -1\n",
                "the wait is a number of seconds from 0 to 3600, not -1",
            ),
        ] {
            let e = err(text);
            assert_eq!(e.message, want, "{text}");
            for serde_words in ["expected u16", "expected u64", "i128"] {
                assert!(!e.message.contains(serde_words), "{e:?}");
            }
        }
    }

    /// One mistake, one error: the keys of a refused table do not fall into the table above.
    #[test]
    fn a_refused_table_is_one_error_not_one_per_key() {
        let e = all_errors("[[mount]]\ntarget = \"mnt/scratch\"\n");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].message.contains("absolute"), "{e:?}");
        let text = "default = \"warn\"\n[checks]\ntransport-trap = \"warn\"\n\
                    [[mount]]\ntarget = \"mnt/scratch\"\nwait = 5\n[mount.checks]\nrpcrdma-fresh = \"warn\"\n\
                    [[mount]]\ntarget = \"/mnt/ok\"\n[options]\nport = 70000\n";
        let e = all_errors(text);
        let lines: Vec<usize> = e.iter().map(|e| e.line).collect();
        assert_eq!(lines, [4, 12], "{e:?}");
        let e = all_errors(
            "[[mount]]\ntarget = \"/mnt/a\"\n[mount.check]\nrpcrdma-fresh = \"warn\"\ntransport-trap = \"off\"\n",
        );
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].message.contains("unknown field `check`"), "{e:?}");
    }

    #[test]
    fn a_mount_source_must_be_server_and_export() {
        let e = err("[[mount]]\nsource = \"filer\"\n");
        assert!(e.message.contains("SERVER:/EXPORT"), "{e:?}");
        let e = err("[[mount]]\nsource = \"filer:scratch\"\n");
        assert!(e.message.contains("SERVER:/EXPORT"), "{e:?}");
        assert!(parse("[[mount]]\nsource = \"filer:/\"\n").is_ok());
        assert!(parse("[[mount]]\nsource = \"[fe80::1]:/x\"\n").is_ok());
    }

    #[test]
    fn mount_tables_need_a_criterion_and_an_absolute_target() {
        let e = err("default = \"warn\"\n[[mount]]\ndefault = \"off\"\n");
        assert_eq!(e.line, 2);
        assert!(e.message.contains("needs `target`"), "{e:?}");
        let e = err("[[mount]]\ntarget = \"mnt/data\"\n");
        assert!(e.message.contains("absolute"), "{e:?}");
    }

    #[test]
    fn syntax_errors_have_positions_too() {
        let e = err("default = \"warn\n");
        assert_eq!(e.line, 1);
        let e = err("[checks\n");
        assert_eq!(e.line, 1);
    }

    const EXAMPLE: &str = include_str!("../../contrib/nfs-gds.toml");

    #[test]
    fn the_shipped_example_is_valid_and_states_the_builtin_defaults() {
        assert_eq!(parse(EXAMPLE).unwrap(), Policy::default());
    }

    #[test]
    fn the_commented_examples_in_the_shipped_file_are_valid_too() {
        let uncommented: String = EXAMPLE
            .lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(rest)
                    if rest.starts_with('[')
                        || rest.split_once(" = ").is_some_and(|(k, _)| {
                            k.chars().all(|c| c.is_ascii_lowercase() || c == '-')
                        }) =>
                {
                    rest
                }
                _ => l,
            })
            .map(|l| format!("{l}\n"))
            .collect();
        let p = parse(&uncommented).unwrap();
        assert_eq!(p.checks.len(), 2);
        assert_eq!(p.mounts.len(), 2);
        assert_eq!(p.mounts[0].checks[&transport_trap::ID], Level::Enforce);
        assert_eq!(
            p.mounts[1].source.as_deref(),
            Some("filer.example.com:/datasets")
        );
    }

    #[test]
    fn position_counts_characters_not_bytes() {
        assert_eq!(position("ab\ncdé f", 8), (2, 5));
        assert_eq!(position("x", 99), (1, 2));
        // Inside a multi-byte character: the character's own position, no panic.
        assert_eq!(position("é", 1), (1, 1));
    }
}
