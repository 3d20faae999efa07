//! Control characters in text shown to people, escaped.
//!
//! Every message nfs-gds prints is one line per fact, and some of them quote what it was given
//! (a mount source, a path, a line of a file). A newline or terminal escape in such a value
//! would forge a line of its own (`nfs-gds: mounted …`) in the journal or repaint the terminal,
//! so control characters are written as Rust escapes (`\n`, `\t`, `\u{1b}`) before printing.
//! The Unicode line and paragraph separators (U+2028, U+2029) end a line too for whatever reads
//! the text as Unicode (a log viewer, a browser showing the journal, a JSON-lines consumer), so
//! they are escaped with the controls.

use std::borrow::Cow;

/// Whether `c` could end or forge a line where text is shown: a control character (C0, DEL, C1)
/// or a Unicode line or paragraph separator.
fn breaks_lines(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')
}

/// `text` with every control character (C0, DEL, C1) and Unicode line or paragraph separator
/// escaped; borrowed when there is none.
pub fn escape_control(text: &str) -> Cow<'_, str> {
    // Printable ASCII, told byte by byte (vectorised), is nearly every text shown; the rest
    // is looked at char by char (C1 controls are two bytes in UTF-8, the separators three).
    let printable_ascii = |b: u8| (0x20..0x7f).contains(&b);
    if text.bytes().all(printable_ascii) || !text.chars().any(breaks_lines) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if breaks_lines(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert!(matches!(escape_control("plain: ü ok"), Cow::Borrowed(_)));
        assert_eq!(
            escape_control("a\nnfs-gds: mounted\tx\r\u{1b}[2J\u{7f}\u{85}"),
            "a\\nnfs-gds: mounted\\tx\\r\\u{1b}[2J\\u{7f}\\u{85}"
        );
        assert_eq!(escape_control("back\\slash"), "back\\slash");
    }

    #[test]
    fn unicode_line_and_paragraph_separators_are_escaped() {
        assert_eq!(
            escape_control("srv:/a\u{2028}nfs-gds: mounted\u{2029}x"),
            "srv:/a\\u{2028}nfs-gds: mounted\\u{2029}x"
        );
    }
}
