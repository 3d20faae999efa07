//! Standard output of the commands, and what happens when its reader goes away.
//!
//! `println!` panics when stdout is a pipe whose reader has exited (`nfs-gds … | head -1`):
//! Rust ignores SIGPIPE, so the write fails with `EPIPE` and the macro turns that into a panic
//! (exit 101 and a backtrace hint). Every command writes through [`out!`] and [`outln!`]
//! instead, which return the error to the command; [`crate::cli::run`] recognises a closed pipe
//! and ends the process the way Unix tools end there, by SIGPIPE's default action: quietly,
//! with the shell's status 141, never claiming a verdict nobody read. Any other failed write
//! (a full disk, `> /dev/full`) names standard output and says why in plain words, and the
//! command ends with exit 2.

use std::fmt;
use std::io::{self, Write};

/// Writes `args` to stdout.
pub fn text(args: fmt::Arguments) -> io::Result<()> {
    io::stdout().lock().write_fmt(args).map_err(on_stdout)
}

/// Writes `args` and a newline to stdout.
pub fn line(args: fmt::Arguments) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(on_stdout)
}

/// Copies `input` to stdout (a bundle for `collect -o -`) and flushes it.
pub fn copy_to_stdout(input: &mut impl io::Read) -> io::Result<()> {
    let mut out = io::stdout().lock();
    io::copy(input, &mut out)
        .and_then(|_| out.flush())
        .map_err(on_stdout)
}

/// A failed write to stdout, of the same kind, naming what could not be written.
fn on_stdout(e: io::Error) -> io::Error {
    io::Error::new(
        e.kind(),
        format!(
            "cannot write to standard output: {}",
            plain_words(&e.to_string())
        ),
    )
}

/// A message with the errno numbers std adds (`No space left on device (os error 28)`) left
/// out: the words before them say it.
pub fn plain_words(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(" (os error ") {
        let tail = &rest[at + " (os error ".len()..];
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && tail[digits..].starts_with(')') {
            out.push_str(&rest[..at]);
            rest = &tail[digits + 1..];
        } else {
            out.push_str(&rest[..at + 1]);
            rest = &rest[at + 1..];
        }
    }
    out.push_str(rest);
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_numbers_are_left_out() {
        assert_eq!(
            plain_words("cannot write /x: No space left on device (os error 28)"),
            "cannot write /x: No space left on device"
        );
        assert_eq!(
            plain_words("a (os error 2); b: Permission denied (os error 13) ok"),
            "a; b: Permission denied ok"
        );
        assert_eq!(
            plain_words("odd (os error x) (os error"),
            "odd (os error x) (os error"
        );
    }
}
