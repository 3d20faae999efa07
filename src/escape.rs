//! Control characters in text shown to people, escaped.
//!
//! Every message nfs-gds prints is one line per fact, and some of them quote what it was given
//! (a mount source, a path, a line of a file). A newline or terminal escape in such a value
//! would forge a line of its own (`nfs-gds: mounted …`) in the journal or repaint the terminal,
//! so control characters are written as Rust escapes (`\n`, `\t`, `\u{1b}`) before printing.

use std::borrow::Cow;

/// `text` with every control character (C0, DEL, C1) escaped; borrowed when there is none.
pub fn escape_control(text: &str) -> Cow<'_, str> {
    // Printable ASCII, told byte by byte (vectorised), is nearly every text shown; the rest
    // is looked at char by char (C1 controls are two bytes in UTF-8).
    let printable_ascii = |b: u8| (0x20..0x7f).contains(&b);
    if text.bytes().all(printable_ascii) || !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
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
}
