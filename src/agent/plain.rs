//! Whether a value the agent writes needs no escape, told fast: nearly none of the thousands of
//! label values and JSON strings of a large node has a byte to escape, and looking for one is
//! most of what writing them costs.

/// Whether `s` has no control character (below 0x20), `"` or `\`: the bytes both the JSON and
/// the Prometheus escapes start from (a value with one goes the escaping way, which may leave
/// it as it was). Sixteen bytes at a time without an early exit inside, which the compiler
/// turns into vector compares.
pub fn is_plain(s: &str) -> bool {
    fn special(b: u8) -> bool {
        (b < 0x20) | (b == b'"') | (b == b'\\')
    }
    let mut chunks = s.as_bytes().chunks_exact(16);
    for chunk in &mut chunks {
        if chunk.iter().fold(false, |any, &b| any | special(b)) {
            return false;
        }
    }
    !chunks.remainder().iter().any(|&b| special(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_special_byte_anywhere_is_found() {
        assert!(is_plain(""));
        assert!(is_plain("é\u{7f}/var/lib/kubelet/pods/0000-1111/volumes"));
        for special in ['"', '\\', '\n', '\t', '\u{0}', '\u{1f}'] {
            for at in 0..40 {
                let mut s = "x".repeat(40);
                s.insert(at, special);
                assert!(!is_plain(&s), "{s:?}");
            }
        }
    }
}
