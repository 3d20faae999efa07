//! The kernel's escapes in mount table paths: 3-digit octal (`\040` for a space, `\011` tab,
//! `\012` newline, `\134` backslash), decoded byte for byte so mount points that are not UTF-8
//! still compare correctly.

use std::borrow::Cow;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

/// Decodes the kernel's `\ooo` escapes. A backslash not followed by three octal digits is kept.
pub fn unescape(field: &[u8]) -> Vec<u8> {
    unescaped(field).into_owned()
}

/// [`unescape`], borrowing the field when it has no backslash (nearly every field).
pub(super) fn unescaped(field: &[u8]) -> Cow<'_, [u8]> {
    let Some(first) = memchr::memchr(b'\\', field) else {
        return Cow::Borrowed(field);
    };
    let mut out = Vec::with_capacity(field.len());
    out.extend_from_slice(&field[..first]);
    let mut i = first;
    while i < field.len() {
        if field[i] == b'\\' && i + 3 < field.len() {
            let digits = &field[i + 1..i + 4];
            if digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                let v = (u32::from(digits[0] - b'0') << 6)
                    | (u32::from(digits[1] - b'0') << 3)
                    | u32::from(digits[2] - b'0');
                if let Ok(b) = u8::try_from(v) {
                    out.push(b);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(field[i]);
        i += 1;
    }
    Cow::Owned(out)
}

pub(super) fn path_of(field: &[u8]) -> PathBuf {
    PathBuf::from(OsString::from_vec(unescaped(field).into_owned()))
}

pub(super) fn text_of(field: &[u8]) -> String {
    match unescaped(field) {
        Cow::Borrowed(b) => lossy(b).into_owned(),
        Cow::Owned(v) => String::from_utf8(v)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
    }
}

/// `String::from_utf8_lossy`, with the check for valid text (nearly all of it) first: that
/// is several times cheaper on the short fields of a mount table.
pub(super) fn lossy(b: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(b) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn octal_escapes_decode_byte_for_byte() {
        assert_eq!(unescape(br"/tmp/a\040b"), b"/tmp/a b");
        assert_eq!(
            unescape(br"src\040with\040space\134x"),
            b"src with space\\x"
        );
        assert_eq!(unescape(br"tab\011nl\012"), b"tab\tnl\n");
        assert_eq!(unescape(br"\377"), [0xff]);
        // Not an escape: kept as written.
        assert_eq!(unescape(br"a\09b"), br"a\09b");
        assert_eq!(unescape(br"end\04"), br"end\04");
        assert_eq!(unescape(br"\"), br"\");
        // \400 does not fit a byte.
        assert_eq!(unescape(br"\400"), br"\400");
    }
}
