//! What `collect` must not carry off the machine: credentials in mount options, process
//! environments, and kernel addresses.
//!
//! [`redact`] takes a file's host path and its text and returns the text to archive. Mount
//! tables are taken apart line by line and field by field, as their readers do: the options
//! field of `fstab` and `/proc/self/mounts`, the per-mount and the super options of
//! `mountinfo`, the `opts:` lines of `mountstats`, the values of the nfs-gds policy. In each
//! option list the value of an option whose name looks like a credential is replaced by
//! [`REDACTED`]: `pass*`, `*passwd*`, `pw`, `pwd`, `secret*`, `*key*`, `*token*`, `cred*`,
//! `*command*` and `*_cmd` (sshfs's `ssh_command=sshpass -p …`), and `user=`/`username=` when
//! the same list carries a password; cifs's `,,` (a literal comma) stays inside a password. A
//! password in a URL (`scheme://user:password@host`) is replaced too. A mount table field is
//! judged as mount(8) and the kernel read it, its octal escapes decoded (`pass\075S` is
//! `pass=S`); a field with nothing to redact is kept as written. `/proc/PID/environ`
//! keeps only `container=`, the one variable the container check reads. `/proc/kallsyms` keeps
//! its symbols and loses its addresses (they give away the kernel's layout). `/proc/cmdline`
//! and every command line of the boot configuration pass through the command line's redactor
//! (`redact_cmdline`, `redact_boot`). Other files are archived as read.

use std::borrow::Cow;

use super::secret_names::{is_password_key, is_secret_key, is_user_key, REDACTED};
use crate::host::mounts::unescape;
use crate::host::platform::container::parse_environ_container;

/// The text of the file at `host_path` as it may go into a support bundle.
pub fn redact(host_path: &str, text: &str) -> String {
    let Some(per_line) = line_redactor(host_path) else {
        return text.to_string();
    };
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        out.push_str(&per_line(body));
        out.push_str(end);
    }
    out
}

/// [`redact`] for a file's bytes: those of files that carry no secrets pass untouched (module
/// files, kernel images, command outputs); the others are taken as text. A process environment
/// keeps only what the container check reads of it.
pub fn redact_file<'a>(host_path: &str, bytes: &'a [u8]) -> Cow<'a, [u8]> {
    if is_environ(host_path) {
        let kept = parse_environ_container(bytes).map(|c| format!("container={c}\0"));
        return Cow::Owned(kept.unwrap_or_default().into_bytes());
    }
    if line_redactor(host_path).is_none() {
        return Cow::Borrowed(bytes);
    }
    Cow::Owned(redact(host_path, &String::from_utf8_lossy(bytes)).into_bytes())
}

/// `/proc/PID/environ`: in a container without the host's PID namespace, PID 1 is the
/// workload, and its environment is where its secrets are.
fn is_environ(host_path: &str) -> bool {
    host_path
        .strip_prefix("/proc/")
        .and_then(|p| p.strip_suffix("/environ"))
        .is_some_and(|pid| !pid.contains('/'))
}

/// How each line of the file at `host_path` is redacted; `None` when it needs no redaction.
fn line_redactor(host_path: &str) -> Option<fn(&str) -> String> {
    Some(match host_path {
        "/etc/fstab" | "/proc/self/mounts" | "/proc/mounts" => fstab_line,
        "/proc/self/mountinfo" => mountinfo_line,
        "/proc/self/mountstats" => mountstats_line,
        "/proc/kallsyms" => kallsyms_line,
        "/proc/cmdline" => super::redact_cmdline::cmdline_line,
        p if p.starts_with("/etc/nfs-gds/") && p.ends_with(".toml") => policy_line,
        p => return super::redact_boot::boot_line_redactor(p),
    })
}

/// Splits a line into its whitespace-separated fields, keeping the separators so the line can
/// be put back together exactly.
fn fields(line: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = line;
    while !rest.is_empty() {
        let lead = rest.len() - rest.trim_start().len();
        let (sep, after) = rest.split_at(lead);
        let end = after.find(char::is_whitespace).unwrap_or(after.len());
        let (field, tail) = after.split_at(end);
        out.push((sep, field));
        rest = tail;
    }
    out
}

/// Rebuilds a line from [`fields`], passing field `i` through `f`.
fn rebuild(parts: &[(&str, &str)], f: impl Fn(usize, &str) -> String) -> String {
    let mut out = String::new();
    for (i, (sep, field)) in parts.iter().enumerate() {
        out.push_str(sep);
        out.push_str(&f(i, field));
    }
    out
}

/// `SPEC FILE TYPE OPTIONS FREQ PASSNO`: the options are the fourth field.
fn fstab_line(line: &str) -> String {
    if line.trim_start().starts_with('#') {
        return line.to_string();
    }
    let parts = fields(line);
    rebuild(&parts, |i, f| match i {
        0 => decoded(f, redact_url),
        3 => decoded(f, redact_options),
        _ => f.to_string(),
    })
}

/// `ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL…] - TYPE SOURCE SUPER_OPTIONS`.
fn mountinfo_line(line: &str) -> String {
    let parts = fields(line);
    let dash = parts.iter().position(|(_, f)| *f == "-");
    rebuild(&parts, |i, f| match dash {
        _ if i == 5 => decoded(f, redact_options),
        Some(d) if i == d + 2 => decoded(f, redact_url),
        Some(d) if i > d + 2 => decoded(f, redact_options),
        _ => f.to_string(),
    })
}

/// `\topts:\tLIST` carries the options; `device SOURCE mounted on …` the source.
fn mountstats_line(line: &str) -> String {
    let trimmed = line.trim_start();
    if let Some(rest) = trimmed.strip_prefix("opts:") {
        let head = &line[..line.len() - rest.len()];
        let parts = fields(rest);
        return format!(
            "{head}{}",
            rebuild(&parts, |_, f| decoded(f, redact_options))
        );
    }
    if trimmed.starts_with("device ") {
        let parts = fields(line);
        return rebuild(&parts, |i, f| {
            if i == 1 {
                decoded(f, redact_url)
            } else {
                f.to_string()
            }
        });
    }
    line.to_string()
}

/// A mount table field passed through `redact` as its readers see it: its `\ooo` escapes
/// decoded, as mount(8) decodes fstab and the kernel escapes its tables. A field `redact`
/// leaves as it is stays as written; one it changes is written back escaped.
fn decoded(field: &str, redact: fn(&str) -> String) -> String {
    if !field.contains('\\') {
        return redact(field);
    }
    let plain = String::from_utf8_lossy(&unescape(field.as_bytes())).into_owned();
    let judged = redact(&plain);
    if judged == plain {
        return field.to_string();
    }
    let mut out = String::with_capacity(judged.len());
    for c in judged.chars() {
        match c {
            ' ' => out.push_str("\\040"),
            '\t' => out.push_str("\\011"),
            '\n' => out.push_str("\\012"),
            '\\' => out.push_str("\\134"),
            c => out.push(c),
        }
    }
    out
}

/// `ADDRESS TYPE NAME [MODULE]`: the address becomes zeros of the same width.
fn kallsyms_line(line: &str) -> String {
    let lead = line.len() - line.trim_start().len();
    let (sep, rest) = line.split_at(lead);
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (addr, tail) = rest.split_at(end);
    if !addr.is_empty() && addr.bytes().all(|b| b.is_ascii_hexdigit()) {
        format!("{sep}{}{tail}", "0".repeat(addr.len()))
    } else {
        line.to_string()
    }
}

/// `key = value`: a credential-like key loses its value; a quoted option list its secrets.
fn policy_line(line: &str) -> String {
    let Some((key, value)) = line.split_once('=') else {
        return line.to_string();
    };
    if line.trim_start().starts_with('#') {
        return line.to_string();
    }
    let name = key.trim().trim_matches('"');
    if is_secret_key(name) {
        return format!("{key}= \"{REDACTED}\"");
    }
    let lead = value.len() - value.trim_start().len();
    let (sep, v) = value.split_at(lead);
    match v.strip_prefix('"').and_then(|v| v.split_once('"')) {
        Some((inner, after)) => format!("{key}={sep}\"{}\"{after}", redact_options(inner)),
        None => line.to_string(),
    }
}

/// A comma-separated option list with credential values replaced. Commas inside double quotes
/// (SELinux contexts) do not separate options; but an option that holds a comma — a quoted
/// value, or everything after a stray `"` — has each of its comma-separated pieces judged too,
/// so a quote can never hide a password from redaction.
pub fn redact_options(list: &str) -> String {
    let has_password = split_options(list, false)
        .iter()
        .filter_map(|o| o.split_once('=').map(|(k, _)| k))
        .any(is_password_key);
    let is_secret = |opt: &str| {
        opt.split_once('=').is_some_and(|(k, _)| {
            is_secret_key(k)
                || (has_password && matches!(k.to_ascii_lowercase().as_str(), "user" | "username"))
        })
    };
    let redact_one = |opt: &str| match opt.split_once('=') {
        // A whole option in quotes keeps its closing quote.
        Some((k, _)) if is_secret(opt) && k.starts_with('"') => format!("{k}={REDACTED}\""),
        Some((k, _)) if is_secret(opt) => format!("{k}={REDACTED}"),
        Some((k, v)) if is_user_key(k) => format!("{k}={}", redact_user_value(v)),
        _ => redact_url(opt),
    };
    let mut out = Vec::new();
    for opt in split_options(list, true) {
        if !is_secret(opt) && opt.contains(',') {
            let pieces: Vec<String> = split_options(opt, false)
                .into_iter()
                .map(redact_one)
                .collect();
            out.push(pieces.join(","));
        } else {
            out.push(redact_one(opt));
        }
    }
    out.join(",")
}

/// Splits an option list at its commas as the kernel does: with `quotes`, not inside double
/// quotes; and never at cifs's `,,` inside a password (cifs reads it as one literal comma, so
/// `password=a,,b` is the password `a,b`).
fn split_options(list: &str, quotes: bool) -> Vec<&str> {
    let bytes = list.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut i, mut quoted) = (0, 0, false);
    while i < bytes.len() {
        match bytes[i] {
            b'"' if quotes => quoted = !quoted,
            b',' if !quoted => {
                let in_password = list[start..i]
                    .split_once('=')
                    .is_some_and(|(k, _)| is_password_key(k));
                if in_password && bytes.get(i + 1) == Some(&b',') {
                    i += 2;
                    continue;
                }
                out.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(&list[start..]);
    out
}

/// A user value with whatever follows its first `%` or `:` (the password) replaced.
fn redact_user_value(value: &str) -> String {
    match value.find(['%', ':']) {
        Some(i) => format!("{}{REDACTED}", &value[..=i]),
        None => value.to_string(),
    }
}

/// `scheme://user:password@host…` and `user:password@host:/path` (sshfs's source) with the
/// password replaced.
fn redact_url(s: &str) -> String {
    let Some(scheme_end) = s.find("://") else {
        return redact_user_at_host(s);
    };
    let auth_start = scheme_end + 3;
    let rest = &s[auth_start..];
    let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..auth_end].rfind('@') else {
        return s.to_string();
    };
    match rest[..at].split_once(':') {
        Some((user, _)) => format!("{}{user}:{REDACTED}{}", &s[..auth_start], &rest[at..]),
        None => s.to_string(),
    }
}

/// `user:password@host:/path` with the password replaced: the part before the last `@` that
/// precedes any `/` is the user's, and what follows its first `:` the password.
fn redact_user_at_host(s: &str) -> String {
    let head_end = s.find('/').unwrap_or(s.len());
    let Some(at) = s[..head_end].rfind('@') else {
        return s.to_string();
    };
    match s[..at].find(':') {
        Some(colon) => format!("{}{REDACTED}{}", &s[..=colon], &s[at..]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_option_of_a_line_is_redacted() {
        let fstab = "//srv/s /mnt/s cifs username=bob,password=hunter2 0 0\n";
        assert_eq!(
            redact("/etc/fstab", fstab),
            "//srv/s /mnt/s cifs username=REDACTED,password=REDACTED 0 0\n"
        );
        let mi = "36 25 0:40 / /mnt/x rw,relatime shared:1 - cifs //srv/s rw,sec=ntlmssp,password=hunter2\n";
        let r = redact("/proc/self/mountinfo", mi);
        assert!(!r.contains("hunter2"), "{r}");
        assert!(r.ends_with("rw,sec=ntlmssp,password=REDACTED\n"), "{r}");
    }

    #[test]
    fn ordinary_options_and_layout_are_kept() {
        let opts = "\topts:\trw,vers=4.2,proto=rdma,port=20049,sec=sys\n";
        assert_eq!(redact("/proc/self/mountstats", opts), opts);
        let fstab = "# <file system> <mount point>\nsrv:/export  /mnt/data\tnfs-gds  _netdev,vers=4.2  0  0\n";
        assert_eq!(redact("/etc/fstab", fstab), fstab);
        let mi =
            "41 25 0:51 / /mnt/gds rw shared:9 - nfs4 10.0.2.15:/export rw,vers=4.2,proto=rdma\n";
        assert_eq!(redact("/proc/self/mountinfo", mi), mi);
    }

    #[test]
    fn every_spelling_of_a_credential_is_caught() {
        for opt in [
            "pass=s",
            "password=s",
            "password2=s",
            "passwd=s",
            "pw=s",
            "pwd=s",
            "secret=s",
            "secretfile=s",
            "authkey=s",
            "key=s",
            "x-token=s",
            "token=s",
            "credentials=s",
            "cred=s",
            "Password=s",
        ] {
            let r = redact_options(&format!("rw,{opt}"));
            assert!(!r.contains("=s"), "{opt}: {r}");
            assert!(r.ends_with(&format!("={REDACTED}")), "{opt}: {r}");
        }
        // A user name alone is not a secret; beside a password it is part of the credential.
        assert_eq!(redact_options("user=bob,vers=3"), "user=bob,vers=3");
        assert_eq!(
            redact_options("username=bob,pw=x"),
            "username=REDACTED,pw=REDACTED"
        );
    }

    #[test]
    fn quoted_commas_do_not_split_options() {
        assert_eq!(
            redact_options("context=\"system_u:object_r:nfs_t:s0,c1\",password=x"),
            "context=\"system_u:object_r:nfs_t:s0,c1\",password=REDACTED"
        );
    }

    #[test]
    fn urls_lose_their_password() {
        let fstab = "https://bob:hunter2@dav.example/x /mnt/dav davfs rw 0 0\n";
        assert_eq!(
            redact("/etc/fstab", fstab),
            "https://bob:REDACTED@dav.example/x /mnt/dav davfs rw 0 0\n"
        );
        let ms = "device https://bob:hunter2@dav.example/x mounted on /mnt/dav with fstype fuse\n";
        assert!(!redact("/proc/self/mountstats", ms).contains("hunter2"));
    }

    #[test]
    fn kallsyms_keeps_symbols_not_addresses() {
        let k = "ffffffffc0a01234 T rpcrdma_register_nvfs_dma_ops\t[rpcrdma]\n";
        assert_eq!(
            redact("/proc/kallsyms", k),
            "0000000000000000 T rpcrdma_register_nvfs_dma_ops\t[rpcrdma]\n"
        );
    }

    #[test]
    fn policy_secrets_are_redacted() {
        let p = "default = \"warn\"\n[options]\ntoken = \"abc\"\nextra = \"vers=4.2,password=x\"\n";
        let r = redact("/etc/nfs-gds/nfs-gds.toml", p);
        assert!(!r.contains("abc") && !r.contains("=x"), "{r}");
        assert!(r.contains("default = \"warn\""), "{r}");
    }

    #[test]
    fn pid_1_environment_keeps_only_the_container_variable() {
        let env = b"PATH=/bin\0AWS_SECRET_ACCESS_KEY=abc\0container=oci\0DB_PASSWORD=x\0";
        let kept = redact_file("/proc/1/environ", env);
        assert_eq!(kept.as_ref(), b"container=oci\0");
        assert_eq!(
            redact_file("/proc/1/environ", b"HOME=/root\0").as_ref(),
            b""
        );
    }

    #[test]
    fn a_cifs_escaped_comma_stays_inside_the_password() {
        // cifs reads `,,` in a password as one literal comma.
        assert_eq!(
            redact_options("vers=3,password=a,,b,,c,uid=0"),
            "vers=3,password=REDACTED,uid=0"
        );
        assert_eq!(redact_options("pass=a,,,b"), "pass=REDACTED,b");
    }

    #[test]
    fn an_odd_quote_earlier_does_not_hide_a_password() {
        let r = redact_options("context=\"system_u,password=hunter2,vers=3");
        assert!(!r.contains("hunter2"), "{r}");
        let r = redact_options("a=\"x,password=hunter2,b=y\",c");
        assert!(!r.contains("hunter2"), "{r}");
        // Found by the redact fuzz target: a URL password in the same quoted span.
        let r = redact_options("x=\"s://u:p@h,password=hunter2\"");
        assert!(!r.contains("hunter2") && !r.contains(":p@"), "{r}");
    }

    #[test]
    fn an_ssh_command_loses_its_arguments() {
        let fstab =
            "u@h:/ /mnt/h fuse.sshfs ssh_command=sshpass\\040-p\\040hunter2\\040ssh,ro 0 0\n";
        let r = redact("/etc/fstab", fstab);
        assert!(!r.contains("hunter2"), "{r}");
        assert!(r.contains("ssh_command=REDACTED,ro"), "{r}");
    }

    #[test]
    fn octal_escapes_hide_no_option_name() {
        // mount(8) reads `\075` as `=` and `\054` as `,`: these are passwords.
        let fstab = "//srv/s /mnt/s cifs vers=3,pass\\075SECRET1,\\160assword=SECRET2 0 0\n\
                     //srv/t /mnt/t cifs rw\\054password=SECRET3 0 0\n\
                     https://bob\\072SECRET4@dav/x /mnt/d davfs rw 0 0\n";
        let r = redact("/etc/fstab", fstab);
        assert!(!r.contains("SECRET"), "{r}");
        assert!(
            r.contains(" vers=3,pass=REDACTED,password=REDACTED "),
            "{r}"
        );
        assert!(r.contains(" rw,password=REDACTED "), "{r}");
        let mi = "36 25 0:40 / /mnt/a\\040b rw - cifs //srv/s rw,pass\\075SECRET5\n";
        let r = redact("/proc/self/mountinfo", mi);
        assert!(!r.contains("SECRET"), "{r}");
        assert!(r.contains("/mnt/a\\040b rw"), "{r}");
        let ms = "\topts:\trw,key\\075SECRET6\n";
        assert!(!redact("/proc/self/mountstats", ms).contains("SECRET"));
        // Escapes in a field with nothing secret are kept as written; a kept space is escaped.
        let plain = "srv:/a\\040b /mnt/a\\040b nfs-gds _netdev,context\\075x 0 0\n";
        assert_eq!(redact("/etc/fstab", plain), plain);
        let sshfs = "u@h:/ /mnt/h fuse.sshfs ro,pw\\075a\\040b,allow_other 0 0\n";
        assert_eq!(
            redact("/etc/fstab", sshfs),
            "u@h:/ /mnt/h fuse.sshfs ro,pw=REDACTED,allow_other 0 0\n"
        );
    }

    #[test]
    fn other_files_pass_unchanged() {
        let t = "ID=debian\nPASSWORD=not-an-option\n";
        assert_eq!(redact("/etc/os-release", t), t);
    }

    #[test]
    fn credentials_in_user_names_quotes_and_sources_are_caught() {
        for (list, secret) in [
            ("vers=3.0,user=bob%hunter2", "hunter2"),
            ("username=DOM/bob%hunter2,vers=3.0", "hunter2"),
            ("user=bob:hunter2,allow_other", "hunter2"),
            ("proxy_user=bob:hunter2", "hunter2"),
            ("mfsmaster=m,mfspassword=hunter2", "hunter2"),
            ("mfsmd5pass=0123abcd", "0123abcd"),
            ("rw,\"password=hunter2\",vers=3", "hunter2"),
            ("rw,\"password=hun,ter2\"", "ter2"),
        ] {
            let r = redact_options(list);
            assert!(!r.contains(secret), "{list}: {r}");
            assert!(r.contains(REDACTED), "{list}: {r}");
        }
        assert_eq!(
            redact_options("user=bob%hunter2"),
            format!("user=bob%{REDACTED}")
        );
        assert_eq!(
            redact_options("rw,\"password=x\""),
            format!("rw,\"password={REDACTED}\"")
        );
        // A user alone stays; so does an NFS source.
        assert_eq!(redact_options("user=bob,vers=3"), "user=bob,vers=3");
        let fstab = "bob:hunter2@host:/data /mnt/h fuse.sshfs ro 0 0\n10.0.2.15:/export /mnt/gds nfs-gds _netdev 0 0\n";
        assert_eq!(
            redact("/etc/fstab", fstab),
            "bob:REDACTED@host:/data /mnt/h fuse.sshfs ro 0 0\n10.0.2.15:/export /mnt/gds nfs-gds _netdev 0 0\n"
        );
        let mi = "36 25 0:40 / /mnt/h rw - fuse.sshfs bob:hunter2@host:/ rw\n";
        assert!(!redact("/proc/self/mountinfo", mi).contains("hunter2"));
        assert_eq!(redact_url("bob@host:/data"), "bob@host:/data");
    }
}
