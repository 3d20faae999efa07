//! The Prometheus text format's pieces every series of the textfile shares: the HELP and TYPE
//! lines, and a label set with its values escaped.

use std::io::{self, Write};

/// Writes a Prometheus label value escaped (`\\`, `\"`, `\n`), without a copy.
fn write_escaped(out: &mut impl Write, v: &str) -> io::Result<()> {
    if super::plain::is_plain(v) {
        return out.write_all(v.as_bytes());
    }
    let mut rest = v.as_bytes();
    while let Some(i) = memchr::memchr3(b'\\', b'"', b'\n', rest) {
        out.write_all(&rest[..i])?;
        out.write_all(match rest[i] {
            b'\\' => b"\\\\",
            b'"' => b"\\\"",
            _ => b"\\n",
        })?;
        rest = &rest[i + 1..];
    }
    out.write_all(rest)
}

pub(super) fn header(out: &mut impl Write, name: &str, help: &str) -> io::Result<()> {
    typed_header(out, name, help, "gauge")
}

/// HELP and TYPE lines of a metric of type `kind` (`gauge`, `counter`).
pub(super) fn typed_header(
    out: &mut impl Write,
    name: &str,
    help: &str,
    kind: &str,
) -> io::Result<()> {
    writeln!(out, "# HELP {name} {help}")?;
    writeln!(out, "# TYPE {name} {kind}")
}

/// `k="v",…`, values escaped.
pub(super) fn write_labels(out: &mut impl Write, pairs: &[(&str, &str)]) -> io::Result<()> {
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        out.write_all(k.as_bytes())?;
        out.write_all(b"=\"")?;
        write_escaped(out, v)?;
        out.write_all(b"\"")?;
    }
    Ok(())
}
