//! Standard error of every face, and what happens when it cannot be written.
//!
//! `eprintln!` panics when a write to stderr fails (a pipe whose reader has exited: `nfs-gds …
//! 2>&1 | head -1`, a journal stream that went away), and so does the tracing writer's own
//! report of a failed write: exit 101, halfway through. Every message to stderr goes through
//! [`errln!`] and the tracing writer [`Stderr`] instead, and a failed write is handled by what
//! the process is doing ([`keep_going`]): the mount helper and the agent ignore it and go on
//! (the helper never stops between `mount.nfs` and its verdict on the new mount; the agent
//! finishes its pass and writes its outputs), and the read-only commands end as they end on a
//! closed stdout ([`super::out::end_on_closed_pipe`]): quietly, by SIGPIPE.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a failed write to stderr is ignored (the helper, the agent) rather than the end.
static KEEP_GOING: AtomicBool = AtomicBool::new(false);

/// From now on a failed write to stderr is ignored: for the faces that must finish what they
/// started (the mount helper, the agent).
pub fn keep_going() {
    KEEP_GOING.store(true, Ordering::Relaxed);
}

/// What a failed write to stderr does.
fn failed(e: &io::Error) {
    if e.kind() == io::ErrorKind::BrokenPipe && !KEEP_GOING.load(Ordering::Relaxed) {
        super::out::end_on_closed_pipe();
    }
}

/// Writes `args` and a newline to stderr, as one write; a failure is handled by [`failed`].
pub fn line(args: fmt::Arguments) {
    let mut text = args.to_string();
    text.push('\n');
    if let Err(e) = io::stderr().lock().write_all(text.as_bytes()) {
        failed(&e);
    }
}

/// `eprintln!` that never panics.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::err_out::line(format_args!($($arg)*))
    };
}

/// Stderr for tracing: every write reports success to it, so it neither panics nor reports
/// its own failure; the failure is handled by [`failed`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Stderr;

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Err(e) = io::stderr().lock().write_all(buf) {
            failed(&e);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Stderr {
    type Writer = Stderr;

    fn make_writer(&'a self) -> Self::Writer {
        Stderr
    }
}
