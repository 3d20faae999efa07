//! Logs: one line per event on stderr, every field escaped as messages are.

use super::err_out;

/// Logs go to stderr; `ansi` says whether they may be coloured.
pub(crate) fn init_logging(verbose: u8, ansi: bool) {
    let level = match verbose {
        0 => tracing::Level::WARN,
        1 => tracing::Level::INFO,
        2 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    let _ = tracing::subscriber::set_global_default(log_subscriber(level, ansi, err_out::Stderr));
}

/// The subscriber every face logs through: one line per event on `writer`, and every field,
/// the message too, with its control characters and line separators escaped as in messages
/// ([`crate::escape`]): a value quoted from the command line or a file (an option's quoted
/// newline) cannot forge a log line of its own.
fn log_subscriber<W>(level: tracing::Level, ansi: bool, writer: W) -> impl tracing::Subscriber
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    use tracing_subscriber::field::MakeExt;
    let fields = tracing_subscriber::fmt::format::debug_fn(|w, field, value| {
        let text = format!("{value:?}");
        let text = crate::escape::escape_control(&text);
        if field.name() == "message" {
            write!(w, "{text}")
        } else {
            write!(w, "{field}={text}")
        }
    })
    .delimited(" ");
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(writer)
        .log_internal_errors(false)
        .with_target(false)
        .without_time()
        .with_ansi(ansi)
        .fmt_fields(fields)
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_line_cannot_be_forged_by_a_value_it_quotes() {
        use std::sync::{Arc, Mutex};
        #[derive(Clone, Default)]
        struct Buffer(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buffer {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buffer = Buffer::default();
        let writer = {
            let buffer = buffer.clone();
            move || buffer.clone()
        };
        let subscriber = log_subscriber(tracing::Level::INFO, false, writer);
        let option = "rw,context=\"a\nnfs-gds: mounted srv:/x\u{2028}\u{1b}[2J\"";
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("options for mount.nfs: {option}");
            tracing::info!(path = %"/mnt/a\nb", "named");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text:?}");
        assert!(
            lines[0].ends_with(
                "options for mount.nfs: rw,context=\"a\\nnfs-gds: mounted srv:/x\\u{2028}\\u{1b}[2J\""
            ),
            "{text:?}"
        );
        assert!(lines[1].ends_with("named path=/mnt/a\\nb"), "{text:?}");
    }
}
