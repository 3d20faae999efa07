//! Standard output of the commands, and what happens when its reader goes away.
//!
//! `println!` panics when stdout is a pipe whose reader has exited (`nfs-gds … | head -1`):
//! Rust ignores SIGPIPE, so the write fails with `EPIPE` and the macro turns that into a panic
//! (exit 101 and a backtrace hint). Every command writes through [`out!`] and [`outln!`]
//! instead, which return the error to the command; [`crate::cli::run`] recognises a closed pipe
//! and ends the process the way Unix tools end there, by SIGPIPE's default action: quietly,
//! with the shell's status 141, never claiming a verdict nobody read.

use std::fmt;
use std::io::{self, Write};

/// Writes `args` to stdout.
pub fn text(args: fmt::Arguments) -> io::Result<()> {
    io::stdout().lock().write_fmt(args)
}

/// Writes `args` and a newline to stdout.
pub fn line(args: fmt::Arguments) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)?;
    out.write_all(b"\n")
}

/// Copies `input` to stdout (a bundle for `collect -o -`) and flushes it.
pub fn copy_to_stdout(input: &mut impl io::Read) -> io::Result<()> {
    let mut out = io::stdout().lock();
    io::copy(input, &mut out)?;
    out.flush()
}

/// Whether a command's error is a write into a closed pipe.
pub fn is_closed_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    e.downcast_ref::<io::Error>()
        .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
}

/// Ends the process as SIGPIPE's default action does; returns only if that could not be done,
/// with the code to exit with instead.
pub fn end_on_closed_pipe() -> u8 {
    let _ = signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGPIPE);
    super::exit::ERROR
}

/// `print!` for the commands: the write error goes to the caller (`?`).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::out::text(format_args!($($arg)*))?
    };
}

/// `println!` for the commands: the write error goes to the caller (`?`).
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::out::line(format_args!($($arg)*))?
    };
}
