//! The mount options: one table of option kinds, and the rebuilt option string for `mount.nfs`.
//!
//! mount(8) hands the helper everything except `x-*`, `comment=`, `defaults`, `noauto` and a few
//! loop/propagation options; `_netdev`, `nofail`, `user…`, `helper=` and `bg` do arrive. The
//! helper keeps the options meant for NFS in their order, drops its own (`gds_*`) and the
//! userspace-only ones, refuses what would defeat verification (`bg`, a non-RDMA transport), and
//! appends `vers=…,proto=rdma|rdma6,port=…` last, because the rightmost transport option wins in
//! `mount.nfs` and the kernel. On a remount nothing is appended: the transport of an existing
//! mount cannot change.

use crate::checks::Level;
use crate::nfs::{NfsVersion, OptionDefaults, ServerHost, RDMA6_NETID, RDMA_NETID, RDMA_NETIDS};

/// What an option means to the helper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `gds_policy=enforce|warn|off` (alias `gds.policy=`): the policy level for this mount.
    GdsPolicy,
    /// `gds_wait=SECONDS` (alias `gds.wait=`): how long to wait for the pre-checks to pass.
    GdsWait,
    /// Any other `gds_…` / `gds.…` / `gds-…`, in any case, and `gdspolicy`/`gdswait` written
    /// without a separator: a misspelt option of ours, refused rather than sent to the kernel
    /// (where it would fail, or be ignored with `sloppy` and silently lose the policy).
    GdsUnknown,
    /// Meaningful to mount(8), libmount or systemd only; never passed on.
    Userspace,
    /// `rdma`, `proto=rdma`, `proto=rdma6`: what the helper appends anyway (deduplicated).
    Rdma,
    /// `tcp`, `udp`, `proto=` anything but rdma: contradicts the point of nfs-gds.
    OtherTransport,
    /// `mountproto=rdma|rdma6`: the kernel refuses it (MOUNT never runs over RDMA).
    MountProtoRdma,
    /// `bg`: mount.nfs would fork and exit 0 before the mount exists.
    Background,
    /// `vers=`, `nfsvers=`, `v3`, `v4`, `v4.x`: collected and appended once, last.
    Version,
    /// `port=`: kept where the user wrote it; suppresses the default port.
    Port,
    /// `remount`: passed on; switches the helper to verifying the existing mount.
    Remount,
    /// Everything else: passed to mount.nfs unchanged, in order.
    PassThrough,
}

/// How a table row matches an option.
#[derive(Debug, Clone, Copy)]
enum Pattern {
    /// Exactly this word, no value.
    Flag(&'static str),
    /// `key=anything`.
    Key(&'static str),
    /// The word alone or `key=anything`.
    FlagOrKey(&'static str),
    /// `key=` one of these values.
    KeyValue(&'static str, &'static [&'static str]),
    Prefix(&'static str),
    /// A spelling of one of the helper's own options that is not exactly ours.
    OursMisspelt,
}

impl Pattern {
    fn matches(self, opt: &str) -> bool {
        let (key, value) = match opt.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (opt, None),
        };
        match self {
            Pattern::Flag(f) => value.is_none() && key == f,
            Pattern::Key(k) => value.is_some() && key == k,
            Pattern::FlagOrKey(k) => key == k,
            Pattern::KeyValue(k, values) => key == k && value.is_some_and(|v| values.contains(&v)),
            Pattern::Prefix(p) => opt.starts_with(p),
            Pattern::OursMisspelt => super::near_miss::looks_like_ours(opt),
        }
    }
}

use Kind::*;
use Pattern::*;

/// The one table. First match wins; no match is [`Kind::PassThrough`].
const TABLE: &[(Pattern, Kind)] = &[
    (Key("gds_policy"), GdsPolicy),
    (Key("gds.policy"), GdsPolicy),
    (Key("gds_wait"), GdsWait),
    (Key("gds.wait"), GdsWait),
    (OursMisspelt, GdsUnknown),
    // libmount / systemd / fstab semantics (util-linux optmap.c userspace_opts_map).
    (Flag("_netdev"), Userspace),
    (Flag("_rnetdev"), Userspace),
    (Flag("nofail"), Userspace),
    (Flag("auto"), Userspace),
    (Flag("noauto"), Userspace),
    (Flag("defaults"), Userspace),
    (FlagOrKey("user"), Userspace),
    (Flag("nouser"), Userspace),
    (Flag("users"), Userspace),
    (Flag("owner"), Userspace),
    (Flag("group"), Userspace),
    (Key("helper"), Userspace),
    (Key("uhelper"), Userspace),
    (Key("comment"), Userspace),
    (Prefix("x-"), Userspace),
    (Prefix("X-"), Userspace),
    (FlagOrKey("loop"), Userspace),
    (Key("offset"), Userspace),
    (Key("sizelimit"), Userspace),
    (Key("encryption"), Userspace),
    (Prefix("verity."), Userspace),
    // Propagation flags: mount(8) applies them itself after the helper succeeds.
    (Flag("shared"), Userspace),
    (Flag("rshared"), Userspace),
    (Flag("slave"), Userspace),
    (Flag("rslave"), Userspace),
    (Flag("private"), Userspace),
    (Flag("rprivate"), Userspace),
    (Flag("unbindable"), Userspace),
    (Flag("runbindable"), Userspace),
    // Transport.
    (Flag("rdma"), Rdma),
    (KeyValue("proto", &RDMA_NETIDS), Rdma),
    // `tcp=1` and `bg=1` are still tcp and bg to mount.nfs, which looks at the keyword only.
    (FlagOrKey("tcp"), OtherTransport),
    (FlagOrKey("udp"), OtherTransport),
    (Key("proto"), OtherTransport),
    (KeyValue("mountproto", &RDMA_NETIDS), MountProtoRdma),
    (FlagOrKey("bg"), Background),
    // Version.
    (Key("vers"), Version),
    (Key("nfsvers"), Version),
    (Flag("v2"), Version),
    (Flag("v3"), Version),
    (Flag("v4"), Version),
    (Flag("v4.0"), Version),
    (Flag("v4.1"), Version),
    (Flag("v4.2"), Version),
    (Key("port"), Port),
    (Flag("remount"), Remount),
];

/// Every option the table names, spelt as a user writes it: `bg`, `port=`, `proto=rdma6`,
/// `x-` for a prefix. The manual page is checked against this list.
pub fn spellings() -> Vec<String> {
    TABLE
        .iter()
        .flat_map(|(pattern, _)| match *pattern {
            Flag(f) | FlagOrKey(f) | Prefix(f) => vec![f.to_string()],
            Key(k) => vec![format!("{k}=")],
            KeyValue(k, values) => values.iter().map(|v| format!("{k}={v}")).collect(),
            // Not an option of its own: every spelling near `gds_policy=` / `gds_wait=`.
            OursMisspelt => Vec::new(),
        })
        .collect()
}

/// The options a completion offers after `-o`, from the table: the helper's own with their
/// values (`gds_policy=` each [`Level`], `gds_wait=`), the RDMA transport, each [`NfsVersion`]
/// as `vers=`, `nfsvers=` and `vN`, `port=` the NFS/RDMA port, `remount`, and the userspace
/// words mount(8) and systemd read (`_netdev`, `nofail`, …). What the helper refuses is never
/// offered, nor a prefix (`x-`) or a key whose value is free (`comment=`).
pub fn offered() -> Vec<String> {
    let mut out = Vec::new();
    for (pattern, kind) in TABLE {
        match (*kind, *pattern) {
            (GdsPolicy, Key(k)) if !k.contains('.') => {
                out.extend(Level::ALL.iter().map(|l| format!("{k}={l}")))
            }
            (GdsWait, Key(k)) if !k.contains('.') => out.push(format!("{k}=")),
            (Rdma, Flag(f)) => out.push(f.to_string()),
            (Rdma, KeyValue(k, values)) => out.extend(values.iter().map(|v| format!("{k}={v}"))),
            (Version, Key(k)) => out.extend(NfsVersion::ALL.iter().map(|v| format!("{k}={v}"))),
            (Version, Flag(f))
                if f.strip_prefix('v')
                    .is_some_and(|v| v.parse::<NfsVersion>().is_ok()) =>
            {
                out.push(f.to_string())
            }
            (Port, Key(k)) => out.push(format!("{k}={}", OptionDefaults::default().port)),
            (Remount, Flag(f)) => out.push(f.to_string()),
            (Userspace, Flag(f)) => out.push(f.to_string()),
            _ => {}
        }
    }
    out
}

/// The kind of one option.
pub fn classify(opt: &str) -> Kind {
    TABLE
        .iter()
        .find(|(p, _)| p.matches(opt))
        .map(|(_, k)| *k)
        .unwrap_or(PassThrough)
}

/// Splits an option string on commas that are not inside double quotes (SELinux contexts such as
/// `context="system_u:object_r:nfs_t:s0:c1,c2"` carry commas). Each item is stripped of ASCII
/// whitespace at both ends (a unit's `Options=` passes `_netdev, gds_policy=enforce` verbatim,
/// and the item is `gds_policy=enforce` all the same); empty items are dropped.
pub fn split(options: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in options.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                cur.push(c);
            }
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|o| {
            o.trim_matches(|c: char| c.is_ascii_whitespace())
                .to_string()
        })
        .filter(|o| !o.is_empty())
        .collect()
}

/// Why an option string cannot be used. Each message names the option.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    #[error("option {0}: nfs-gds mounts only over RDMA; drop it (or mount with -t nfs if this mount is not meant for GPUDirect Storage)")]
    OtherTransport(String),
    #[error("option {0}: the MOUNT side protocol cannot run over RDMA and the kernel refuses it; drop it (NFSv3 over RDMA uses TCP for MOUNT by itself)")]
    MountProtoRdma(String),
    #[error("option {0}: mount.nfs would fork and report success before the mount exists, so nfs-gds could not verify its transport; use nofail with x-systemd.automount (or x-systemd.mount-timeout=) instead")]
    Background(String),
    #[error(
        "option {0}: unknown nfs-gds option (known: gds_policy=enforce|warn|off, gds_wait=SECONDS)"
    )]
    UnknownGds(String),
    #[error("option {option}: {reason}")]
    BadValue { option: String, reason: String },
    #[error("options {first} and {second} contradict each other")]
    Conflict { first: String, second: String },
    #[error("option {0}: rdma6 is for IPv6 servers, but the server is an IPv4 address")]
    Rdma6ForIpv4(String),
    #[error("option {0}: a double quote is never closed, so mount.nfs would read the options nfs-gds appends (vers=, proto=rdma, port=) as part of its value; close the quote")]
    UnclosedQuote(String),
}

/// The options after rebuilding, and what the helper learnt from them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rebuilt {
    /// The options for mount.nfs, in order, transport last.
    pub options: Vec<String>,
    /// Options not passed on (userspace-only, ours, and duplicates of what is appended).
    pub dropped: Vec<String>,
    pub policy: Option<Level>,
    /// `gds_wait=` in seconds.
    pub wait: Option<u64>,
    pub version: NfsVersion,
    /// The port the mount must end up on.
    pub port: u16,
    /// `rdma` or `rdma6`.
    pub netid: &'static str,
    pub remount: bool,
}

impl Rebuilt {
    /// The `-o` argument for mount.nfs.
    pub fn option_string(&self) -> String {
        self.options.join(",")
    }
}

fn value_of(opt: &str) -> &str {
    opt.split_once('=').map(|(_, v)| v).unwrap_or("")
}

fn bad(option: &str, reason: impl Into<String>) -> OptionError {
    OptionError::BadValue {
        option: option.to_string(),
        reason: reason.into(),
    }
}

/// Sets `slot` once; a second, different value is a conflict.
fn once<T: PartialEq>(
    slot: &mut Option<(T, String)>,
    value: T,
    opt: &str,
) -> Result<(), OptionError> {
    match slot {
        Some((v, first)) if *v != value => Err(OptionError::Conflict {
            first: first.clone(),
            second: opt.to_string(),
        }),
        Some(_) => Ok(()),
        None => {
            *slot = Some((value, opt.to_string()));
            Ok(())
        }
    }
}

fn version_of(opt: &str) -> Result<NfsVersion, OptionError> {
    match crate::nfs::named_version(opt) {
        Some(v) => v.map_err(|e| bad(opt, e.to_string())),
        None => Err(bad(opt, "names no NFS version")),
    }
}

/// Rebuilds the option string received from mount(8) for mount.nfs.
pub fn rebuild(
    received: &str,
    defaults: OptionDefaults,
    server: &ServerHost,
) -> Result<Rebuilt, OptionError> {
    let mut options = Vec::new();
    let mut dropped = Vec::new();
    let mut policy: Option<(Level, String)> = None;
    let mut wait: Option<(u64, String)> = None;
    let mut version: Option<(NfsVersion, String)> = None;
    let mut port: Option<(u16, String)> = None;
    let mut rdma6: Option<String> = None;
    let items = split(received);
    // `split` lets a quote run to the end of the string; mount.nfs splits the same way, so
    // whatever the helper appended would become part of that last option.
    if let Some(open) = items.iter().find(|o| o.matches('"').count() % 2 == 1) {
        return Err(OptionError::UnclosedQuote(open.clone()));
    }
    let remount = items.iter().any(|o| classify(o) == Remount);
    for opt in items {
        match classify(&opt) {
            GdsPolicy => {
                let level = value_of(&opt)
                    .parse::<Level>()
                    .map_err(|e| bad(&opt, e.to_string()))?;
                once(&mut policy, level, &opt)?;
                dropped.push(opt);
            }
            GdsWait => {
                let secs = value_of(&opt)
                    .parse::<u64>()
                    .map_err(|_| bad(&opt, "the wait is a whole number of seconds"))?;
                if secs > crate::policy::MAX_WAIT_SECS {
                    return Err(bad(
                        &opt,
                        format!(
                            "the wait is at most {} seconds (one hour)",
                            crate::policy::MAX_WAIT_SECS
                        ),
                    ));
                }
                once(&mut wait, secs, &opt)?;
                dropped.push(opt);
            }
            GdsUnknown => return Err(OptionError::UnknownGds(opt)),
            Userspace => dropped.push(opt),
            OtherTransport => return Err(OptionError::OtherTransport(opt)),
            MountProtoRdma => return Err(OptionError::MountProtoRdma(opt)),
            Background => return Err(OptionError::Background(opt)),
            Rdma => {
                if value_of(&opt) == RDMA6_NETID {
                    rdma6 = Some(opt.clone());
                }
                if remount {
                    options.push(opt);
                } else {
                    dropped.push(opt);
                }
            }
            Version => {
                let v = version_of(&opt)?;
                once(&mut version, v, &opt)?;
                if remount {
                    options.push(opt);
                } else {
                    dropped.push(opt);
                }
            }
            Port => {
                let p = value_of(&opt)
                    .parse::<u16>()
                    .map_err(|_| bad(&opt, "the port is a number from 0 to 65535"))?;
                once(&mut port, p, &opt)?;
                options.push(opt);
            }
            Remount | PassThrough => options.push(opt),
        }
    }
    let netid = if server.is_ipv6() {
        RDMA6_NETID
    } else if let Some(opt) = rdma6 {
        if matches!(server, ServerHost::V4(_)) {
            return Err(OptionError::Rdma6ForIpv4(opt));
        }
        RDMA6_NETID
    } else {
        RDMA_NETID
    };
    let user_port = port.is_some();
    let version = defaults.version(version.map(|(v, _)| v));
    if !remount {
        options.push(format!("vers={version}"));
        options.push(format!("proto={netid}"));
        if !user_port {
            options.push(format!("port={}", defaults.port));
        }
    }
    let port = match port {
        // port=0 means "the default", which the kernel makes 20049 for RDMA.
        Some((0, _)) => crate::nfs::NFS_RDMA_PORT,
        Some((p, _)) => p,
        None => defaults.port,
    };
    Ok(Rebuilt {
        options,
        dropped,
        policy: policy.map(|(l, _)| l),
        wait: wait.map(|(w, _)| w),
        version,
        port,
        netid,
        remount,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4() -> ServerHost {
        ServerHost::parse("10.0.2.15").unwrap()
    }

    fn rebuilt(opts: &str) -> Result<Rebuilt, OptionError> {
        rebuild(opts, OptionDefaults::default(), &v4())
    }

    fn string(opts: &str) -> String {
        rebuilt(opts).unwrap().option_string()
    }

    #[test]
    fn every_table_row_classifies_as_listed() {
        let cases: &[(&str, Kind)] = &[
            ("gds_policy=warn", GdsPolicy),
            ("gds.policy=warn", GdsPolicy),
            ("gds_wait=30", GdsWait),
            ("gds.wait=30", GdsWait),
            ("gds_polcy=warn", GdsUnknown),
            ("gds.anything", GdsUnknown),
            ("_netdev", Userspace),
            ("_rnetdev", Userspace),
            ("nofail", Userspace),
            ("auto", Userspace),
            ("noauto", Userspace),
            ("defaults", Userspace),
            ("user", Userspace),
            ("user=bob", Userspace),
            ("nouser", Userspace),
            ("users", Userspace),
            ("owner", Userspace),
            ("group", Userspace),
            ("helper=nfs-gds", Userspace),
            ("uhelper=foo", Userspace),
            ("comment=hi", Userspace),
            ("x-systemd.automount", Userspace),
            ("X-mount.mkdir", Userspace),
            ("loop", Userspace),
            ("loop=/dev/loop0", Userspace),
            ("offset=4", Userspace),
            ("sizelimit=4", Userspace),
            ("encryption=aes", Userspace),
            ("verity.hashdevice=x", Userspace),
            ("shared", Userspace),
            ("rshared", Userspace),
            ("slave", Userspace),
            ("rslave", Userspace),
            ("private", Userspace),
            ("rprivate", Userspace),
            ("unbindable", Userspace),
            ("runbindable", Userspace),
            ("rdma", Rdma),
            ("proto=rdma", Rdma),
            ("proto=rdma6", Rdma),
            ("tcp", OtherTransport),
            ("udp", OtherTransport),
            ("proto=tcp", OtherTransport),
            ("proto=tcp6", OtherTransport),
            ("proto=udp", OtherTransport),
            ("proto=udp6", OtherTransport),
            ("proto=local", OtherTransport),
            ("mountproto=rdma", MountProtoRdma),
            ("mountproto=rdma6", MountProtoRdma),
            ("mountproto=tcp", PassThrough),
            ("bg", Background),
            ("fg", PassThrough),
            ("vers=4.2", Version),
            ("nfsvers=3", Version),
            ("v2", Version),
            ("v3", Version),
            ("v4", Version),
            ("v4.0", Version),
            ("v4.1", Version),
            ("v4.2", Version),
            ("port=20049", Port),
            ("remount", Remount),
            ("rw", PassThrough),
            ("ro", PassThrough),
            ("nosuid", PassThrough),
            ("hard", PassThrough),
            ("nconnect=4", PassThrough),
            ("rsize=1048576", PassThrough),
            ("sloppy", PassThrough),
            ("minorversion=1", PassThrough),
            ("sec=krb5p", PassThrough),
            // Near misses of table words are not captured by them.
            ("rdma=1", PassThrough),
            ("portx=1", PassThrough),
            ("username=x", PassThrough),
            ("backup", PassThrough),
            ("tcpfoo", PassThrough),
        ];
        for (opt, kind) in cases {
            assert_eq!(classify(opt), *kind, "{opt}");
        }
        // Every row of the table is exercised above.
        for (pattern, kind) in TABLE {
            assert!(
                cases.iter().any(|(o, k)| k == kind && pattern.matches(o)),
                "table row {pattern:?} has no test case"
            );
        }
    }

    #[test]
    fn quoted_commas_stay_inside_one_option() {
        assert_eq!(
            split(r#"rw,context="system_u:object_r:nfs_t:s0:c1,c2",,hard"#),
            [
                "rw",
                r#"context="system_u:object_r:nfs_t:s0:c1,c2""#,
                "hard"
            ]
        );
        assert!(split("").is_empty());
    }

    /// Found by the `mount_options` fuzz target: with a quote left open, the rebuilt string
    /// split the way mount.nfs splits it had `vers=`, `proto=rdma` and `port=` inside the last
    /// option's value.
    #[test]
    fn an_unclosed_quote_is_refused_before_it_swallows_the_transport() {
        for opts in [
            r#"rw,context="system_u:object_r:nfs_t:s0"#,
            "\u{fffd}:t\"\"\"\"\"\"\"\"0\":",
            r#"a="x,proto=tcp"#,
        ] {
            let e = rebuilt(opts).unwrap_err();
            assert!(matches!(e, OptionError::UnclosedQuote(_)), "{opts}: {e:?}");
            assert!(e.to_string().contains("never closed"), "{e}");
        }
        assert!(rebuilt(r#"rw,context="system_u:object_r:nfs_t:s0:c1,c2",hard"#).is_ok());
    }

    #[test]
    fn transport_goes_last_and_userspace_options_go() {
        assert_eq!(
            string("rw,vers=4.2,gds.policy=warn,_netdev"),
            "rw,vers=4.2,proto=rdma,port=20049"
        );
        let r =
            rebuilt("ro,nosuid,vers=4.2,gds_policy=warn,nofail,x-systemd.automount,hard").unwrap();
        assert_eq!(
            r.option_string(),
            "ro,nosuid,hard,vers=4.2,proto=rdma,port=20049"
        );
        assert_eq!(
            r.dropped,
            [
                "vers=4.2",
                "gds_policy=warn",
                "nofail",
                "x-systemd.automount"
            ]
        );
        assert_eq!(r.policy, Some(Level::Warn));
        assert_eq!(r.version, NfsVersion::V4(Some(2)));
        assert_eq!(r.port, 20049);
        assert!(!r.remount);
    }

    #[test]
    fn default_version_is_added_and_user_version_kept() {
        assert_eq!(string("rw"), "rw,vers=4.2,proto=rdma,port=20049");
        assert_eq!(string("rw,nfsvers=3"), "rw,vers=3,proto=rdma,port=20049");
        assert_eq!(string("v4.1,rw"), "rw,vers=4.1,proto=rdma,port=20049");
        let r = rebuilt("vers=3").unwrap();
        assert_eq!(r.version, NfsVersion::V3);
        let d = OptionDefaults {
            vers: NfsVersion::V4(Some(1)),
            port: 20050,
        };
        assert_eq!(
            rebuild("rw", d, &v4()).unwrap().option_string(),
            "rw,vers=4.1,proto=rdma,port=20050"
        );
    }

    #[test]
    fn conflicting_or_bad_versions_are_refused() {
        assert!(matches!(
            rebuilt("vers=4.2,nfsvers=3"),
            Err(OptionError::Conflict { .. })
        ));
        // The same version twice is not a conflict.
        assert_eq!(string("vers=4.2,v4.2"), "vers=4.2,proto=rdma,port=20049");
        let e = rebuilt("vers=2").unwrap_err().to_string();
        assert!(e.starts_with("option vers=2:"), "{e}");
        assert!(rebuilt("v2").is_err());
    }

    #[test]
    fn a_user_port_is_kept_in_place_and_no_default_added() {
        let r = rebuilt("port=20050,rw").unwrap();
        assert_eq!(r.option_string(), "port=20050,rw,vers=4.2,proto=rdma");
        assert_eq!(r.port, 20050);
        assert_eq!(rebuilt("port=0").unwrap().port, crate::nfs::NFS_RDMA_PORT);
        assert!(rebuilt("port=99999").is_err());
        assert!(rebuilt("port=20049,port=20050").is_err());
    }

    #[test]
    fn rdma_from_the_user_is_deduplicated() {
        assert_eq!(
            string("rdma,proto=rdma,rw"),
            "rw,vers=4.2,proto=rdma,port=20049"
        );
    }

    #[test]
    fn ipv6_servers_get_rdma6() {
        let v6 = ServerHost::parse("[fe80::1]").unwrap();
        let r = rebuild("rw,proto=rdma", OptionDefaults::default(), &v6).unwrap();
        assert_eq!(r.option_string(), "rw,vers=4.2,proto=rdma6,port=20049");
        assert_eq!(r.netid, "rdma6");
        // A name may resolve to IPv6: the user's rdma6 is honoured.
        let name = ServerHost::parse("filer").unwrap();
        let r = rebuild("proto=rdma6", OptionDefaults::default(), &name).unwrap();
        assert_eq!(r.netid, "rdma6");
        assert_eq!(
            rebuilt("proto=rdma6"),
            Err(OptionError::Rdma6ForIpv4("proto=rdma6".into()))
        );
    }

    #[test]
    fn contradicting_transports_are_refused_by_name() {
        for o in ["tcp", "udp", "proto=tcp", "proto=udp6"] {
            let e = rebuilt(&format!("rw,{o}")).unwrap_err();
            assert_eq!(e, OptionError::OtherTransport(o.into()));
            assert!(e.to_string().starts_with(&format!("option {o}:")));
        }
        assert_eq!(
            rebuilt("mountproto=rdma"),
            Err(OptionError::MountProtoRdma("mountproto=rdma".into()))
        );
        assert_eq!(
            string("vers=3,mountproto=tcp"),
            "mountproto=tcp,vers=3,proto=rdma,port=20049"
        );
    }

    #[test]
    fn near_miss_spellings_of_our_options_are_refused() {
        for o in [
            "gds-policy=off",
            "GDS_POLICY=off",
            "gdspolicy=off",
            "Gds.Policy=off",
            "GDS-WAIT=5",
            "gdswait=5",
            "gds_Policy=off",
            "gds-anything",
            "GDS.x",
        ] {
            let e = rebuilt(&format!("rw,{o}")).unwrap_err();
            assert_eq!(e, OptionError::UnknownGds(o.into()), "{o}");
            assert!(
                rebuilt(&format!("sloppy,{o}")).is_err(),
                "{o} must not vanish under sloppy"
            );
        }
        // Ours, as documented, still work.
        assert_eq!(rebuilt("gds.policy=off").unwrap().policy, Some(Level::Off));
        assert_eq!(rebuilt("gds_wait=5").unwrap().wait, Some(5));
    }

    #[test]
    fn whitespace_and_look_alikes_never_reach_mount_nfs() {
        // A unit's Options= passes the space after a comma verbatim.
        let r = rebuilt("_netdev, gds_policy=enforce,\thard ").unwrap();
        assert_eq!(r.policy, Some(Level::Enforce));
        assert_eq!(r.option_string(), "hard,vers=4.2,proto=rdma,port=20049");
        for o in [
            "nfs-gds.policy=off",
            "gds:policy=off",
            "gds/policy=off",
            "nfs_gds_policy=off",
            "gds\u{2010}policy=off",
            "\u{ff47}\u{ff44}\u{ff53}_policy=off",
        ] {
            assert_eq!(
                rebuilt(&format!("sloppy, {o}")),
                Err(OptionError::UnknownGds(o.into())),
                "{o}"
            );
        }
    }

    #[test]
    fn valued_forms_of_refused_flags_are_refused() {
        for o in ["bg=1", "bg=", "bg=yes"] {
            let e = rebuilt(&format!("rw,{o}")).unwrap_err();
            assert_eq!(e, OptionError::Background(o.into()), "{o}");
            assert!(e.to_string().starts_with(&format!("option {o}:")), "{e}");
        }
        for o in ["tcp=1", "udp=0", "tcp="] {
            let e = rebuilt(&format!("rw,{o}")).unwrap_err();
            assert_eq!(e, OptionError::OtherTransport(o.into()), "{o}");
        }
    }

    #[test]
    fn bg_is_refused_with_the_alternative() {
        let e = rebuilt("rw,bg").unwrap_err();
        assert_eq!(e, OptionError::Background("bg".into()));
        assert!(e.to_string().contains("x-systemd.automount"));
        assert_eq!(string("fg"), "fg,vers=4.2,proto=rdma,port=20049");
    }

    #[test]
    fn our_options_are_validated() {
        let r = rebuilt("gds_wait=30,gds_policy=off").unwrap();
        assert_eq!(r.wait, Some(30));
        assert_eq!(r.policy, Some(Level::Off));
        assert_eq!(
            rebuilt("gds_wait=18446744073709551615")
                .unwrap_err()
                .to_string(),
            "option gds_wait=18446744073709551615: the wait is at most 3600 seconds (one hour)"
        );
        assert_eq!(rebuilt("gds_wait=3600").unwrap().wait, Some(3600));
        assert!(matches!(
            rebuilt("gds_wait=soon"),
            Err(OptionError::BadValue { .. })
        ));
        assert!(matches!(
            rebuilt("gds_policy=strict"),
            Err(OptionError::BadValue { .. })
        ));
        assert!(matches!(
            rebuilt("gds_policy=warn,gds.policy=enforce"),
            Err(OptionError::Conflict { .. })
        ));
        assert_eq!(
            rebuilt("gds_polcy=warn"),
            Err(OptionError::UnknownGds("gds_polcy=warn".into()))
        );
    }

    #[test]
    fn remount_appends_nothing_and_keeps_what_the_user_wrote() {
        let r = rebuilt("rw,remount,vers=4.2,proto=rdma,_netdev,gds_policy=warn").unwrap();
        assert!(r.remount);
        assert_eq!(r.option_string(), "rw,remount,vers=4.2,proto=rdma");
        assert_eq!(r.policy, Some(Level::Warn));
        // The transport still cannot be changed on a remount.
        assert!(rebuilt("remount,proto=tcp").is_err());
    }
}
