//! One message to the system log: a datagram to `/dev/log` (below the root), as syslog(3) sends
//! it — `<PRI>TAG[PID]: MESSAGE`, facility `daemon` (RFC 3164's local form; syslogd, rsyslog
//! and journald all take it and stamp the time). Runtimes drop a hook's stderr, so this is
//! where an administrator reads why a container was refused. Never blocking and never fatal:
//! a log that is not there, or full, loses the line and the hook goes on.

use std::io;
use std::os::unix::net::UnixDatagram;

use crate::host::io::root::Root;

/// How grave a line is (syslog severities).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Err = 3,
    Warning = 4,
    Notice = 5,
}

/// Facility `daemon`.
const DAEMON: u8 = 3;

/// The socket the local syslog daemon (or journald) reads.
pub const SOCKET: &str = "dev/log";

/// A datagram larger than this is cut (journald and rsyslog take far more; syslogd 1 KiB+).
const MAX_LINE: usize = 8 * 1024;

/// The datagram for `message`.
pub fn datagram(severity: Severity, pid: u32, message: &str) -> Vec<u8> {
    let pri = DAEMON * 8 + severity as u8;
    let clean: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut line = format!("<{pri}>nfs-gds[{pid}]: {clean}").into_bytes();
    if line.len() > MAX_LINE {
        line.truncate(MAX_LINE);
    }
    line
}

/// Sends `message` to the system log below `root`.
pub fn log(root: &Root, severity: Severity, message: &str) -> io::Result<()> {
    let socket = UnixDatagram::unbound()?;
    socket.set_nonblocking(true)?;
    socket.send_to(
        &datagram(severity, std::process::id(), message),
        root.join(SOCKET),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reaches_the_socket_below_the_root_in_syslogs_form() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("dev")).unwrap();
        let server = UnixDatagram::bind(dir.path().join(SOCKET)).unwrap();
        log(
            &Root::new(dir.path()),
            Severity::Err,
            "refused\ncontainer x",
        )
        .unwrap();
        let mut buf = [0u8; 512];
        let n = server.recv(&mut buf).unwrap();
        let got = String::from_utf8_lossy(&buf[..n]);
        let want = format!("<27>nfs-gds[{}]: refused container x", std::process::id());
        assert_eq!(got, want);
    }

    #[test]
    fn no_log_socket_is_an_error_for_the_caller_to_drop() {
        let dir = tempfile::tempdir().unwrap();
        assert!(log(&Root::new(dir.path()), Severity::Warning, "x").is_err());
    }
}
