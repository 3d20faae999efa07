//! When output is coloured: the `--color=auto|always|never` choice and the `NO_COLOR`
//! convention (<https://no-color.org>: set *and non-empty* disables colour), decided in one place
//! for stdout reports and stderr logs alike.

use std::ffi::OsStr;

/// The value of `--color`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// Colour when writing to a terminal, unless `NO_COLOR` is set to a non-empty value.
    #[default]
    Auto,
    /// Always colour, even into a pipe or file, and whatever `NO_COLOR` says.
    Always,
    /// Never colour.
    Never,
}

/// Whether to colour a stream: `is_terminal` says what the stream is, `no_color` is the value
/// of `NO_COLOR` (if set). An explicit `--color=always|never` beats the environment.
pub fn enabled(when: ColorWhen, is_terminal: bool, no_color: Option<&OsStr>) -> bool {
    match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => is_terminal && no_color.is_none_or(OsStr::is_empty),
    }
}

/// [`enabled`] with this process's `NO_COLOR` ([`Env`](crate::host::io::env::Env)).
pub fn enabled_here(when: ColorWhen, is_terminal: bool) -> bool {
    let no_color = crate::host::io::env::Env::get()
        .no_color
        .then_some(OsStr::new("1"));
    enabled(when, is_terminal, no_color)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_colours_a_terminal_unless_no_color_is_non_empty() {
        assert!(enabled(ColorWhen::Auto, true, None));
        assert!(enabled(ColorWhen::Auto, true, Some(OsStr::new(""))));
        assert!(!enabled(ColorWhen::Auto, true, Some(OsStr::new("1"))));
        assert!(!enabled(ColorWhen::Auto, false, None));
        assert!(!enabled(ColorWhen::Auto, false, Some(OsStr::new(""))));
    }

    #[test]
    fn an_explicit_choice_beats_the_terminal_and_the_environment() {
        assert!(enabled(ColorWhen::Always, false, Some(OsStr::new("1"))));
        assert!(!enabled(ColorWhen::Never, true, None));
    }
}
