//! How a module alias pattern matches a name: `fnmatch(pattern, name, 0)` as libkmod calls it,
//! in the C library's C locale — the one matcher for the patterns of `modules.alias` (the
//! index's wildcard keys) and of modprobe's configuration (`alias PATTERN MODULE`).
//!
//! With no flags: `*` and `?` match any byte, `/` and a leading `.` included; a backslash makes
//! the next byte plain, and a pattern that ends in one matches nothing; a bracket expression is
//! negated by `!` or `^`, takes a `]` first as a plain byte, ranges by byte value (`-` first or
//! last is plain), escapes, and the classes `[:alpha:]`, `[:digit:]`, … of the C locale (an
//! unknown class matches nothing). A `[` without its `]` is a plain `[`. Written here because the glob
//! crates implement path globbing (`**`, `/` rules, `[!…]` only), not POSIX `fnmatch`; the tests
//! hold it against the C library's own `fnmatch(3)`.

/// Whether `string` matches `pattern` as `fnmatch(pattern, string, 0)` says.
pub fn fnmatch(pattern: &[u8], string: &[u8]) -> bool {
    let (mut p, mut s) = (0usize, 0usize);
    // Where to resume after the last `*`: the pattern after it, and the string byte it took up to.
    let mut star: Option<(usize, usize)> = None;
    while s < string.len() {
        let c = string[s];
        let next = match pattern.get(p) {
            None => None,
            Some(b'*') => {
                star = Some((p + 1, s));
                p += 1;
                continue;
            }
            Some(b'?') => Some(p + 1),
            Some(b'\\') => (pattern.get(p + 1) == Some(&c)).then_some(p + 2),
            Some(b'[') => match bracket(pattern, p + 1, c) {
                Bracket::Matched(after) => Some(after),
                Bracket::Unterminated => (c == b'[').then_some(p + 1),
                Bracket::Unmatched | Bracket::Invalid => None,
            },
            Some(&b) => (b == c).then_some(p + 1),
        };
        match (next, star) {
            (Some(next), _) => {
                p = next;
                s += 1;
            }
            (None, Some((after, taken))) => {
                p = after;
                s = taken + 1;
                star = Some((after, taken + 1));
            }
            (None, None) => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// What a bracket expression said of one byte.
enum Bracket {
    /// It matched; the pattern goes on at this index.
    Matched(usize),
    Unmatched,
    /// No `]` closes it: the `[` is a plain byte.
    Unterminated,
    /// Malformed past repair (a trailing backslash or range end, an unknown class): glibc
    /// matches nothing.
    Invalid,
}

/// Matches `c` against the bracket expression whose `[` is just before `start`.
fn bracket(pattern: &[u8], start: usize, c: u8) -> Bracket {
    let mut i = start;
    let negate = matches!(pattern.get(i), Some(b'!' | b'^'));
    if negate {
        i += 1;
    }
    let mut first = true;
    loop {
        let Some(&b) = pattern.get(i) else {
            return Bracket::Unterminated;
        };
        if b == b']' && !first {
            return match negate {
                true => Bracket::Matched(i + 1),
                false => Bracket::Unmatched,
            };
        }
        first = false;
        i += 1;
        let lo = match b {
            b'\\' => match pattern.get(i) {
                Some(&e) => {
                    i += 1;
                    e
                }
                None => return Bracket::Invalid,
            },
            b'[' if pattern.get(i) == Some(&b':') => match class_at(pattern, i + 1) {
                Some((Some(class), after)) => {
                    i = after;
                    if class(c) {
                        return matched(pattern, i, negate);
                    }
                    continue;
                }
                Some((None, _)) => return Bracket::Invalid,
                // Not a class name: the `[` is a plain byte, and `:` the next.
                None => b'[',
            },
            b => b,
        };
        if pattern.get(i) == Some(&b'-') && pattern.get(i + 1) != Some(&b']') {
            let hi = match pattern.get(i + 1) {
                Some(b'\\') => pattern.get(i + 2).map(|&h| (h, i + 3)),
                Some(&h) => Some((h, i + 2)),
                None => None,
            };
            let Some((hi, after)) = hi else {
                return Bracket::Invalid;
            };
            i = after;
            if lo <= c && c <= hi {
                return matched(pattern, i, negate);
            }
        } else if lo == c {
            return matched(pattern, i, negate);
        }
    }
}

/// A byte matched at `i` inside a bracket: the rest of it is skipped to its `]`.
fn matched(pattern: &[u8], mut i: usize, negate: bool) -> Bracket {
    loop {
        let Some(&b) = pattern.get(i) else {
            return Bracket::Unterminated;
        };
        i += 1;
        match b {
            b']' => break,
            b'\\' if pattern.get(i).is_none() => return Bracket::Invalid,
            b'\\' => i += 1,
            b'[' if pattern.get(i) == Some(&b':') => {
                if let Some((_, after)) = class_at(pattern, i + 1) {
                    i = after;
                }
            }
            _ => {}
        }
    }
    match negate {
        true => Bracket::Unmatched,
        false => Bracket::Matched(i),
    }
}

/// A C-locale character class.
type Class = fn(u8) -> bool;

/// The class named at `pattern[at..]` up to `:]`: `Some((class, index after it))`, with `None`
/// for a well-formed name no class has; `None` when no name of lower-case letters is closed
/// there (then it is no class at all).
fn class_at(pattern: &[u8], at: usize) -> Option<(Option<Class>, usize)> {
    let len = pattern[at.min(pattern.len())..]
        .iter()
        // glibc reads a class name as letters before `z`: no class has one.
        .take_while(|b| (b'a'..=b'y').contains(b))
        .count();
    if pattern.get(at + len..at + len + 2) != Some(b":]") {
        return None;
    }
    let class: Option<Class> = match &pattern[at..at + len] {
        b"alnum" => Some(|b| b.is_ascii_alphanumeric()),
        b"alpha" => Some(|b| b.is_ascii_alphabetic()),
        b"blank" => Some(|b| b == b' ' || b == b'\t'),
        b"cntrl" => Some(|b| b.is_ascii_control()),
        b"digit" => Some(|b| b.is_ascii_digit()),
        b"graph" => Some(|b| b.is_ascii_graphic()),
        b"lower" => Some(|b| b.is_ascii_lowercase()),
        b"print" => Some(|b| b.is_ascii_graphic() || b == b' '),
        b"punct" => Some(|b| b.is_ascii_punctuation()),
        b"space" => Some(|b| matches!(b, b' ' | b'\t'..=b'\r')),
        b"upper" => Some(|b| b.is_ascii_uppercase()),
        b"xdigit" => Some(|b| b.is_ascii_hexdigit()),
        _ => None,
    };
    Some((class, at + len + 2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    /// The C library's `fnmatch(pattern, string, 0)`: the oracle.
    #[allow(unsafe_code)]
    fn libc_fnmatch(pattern: &[u8], string: &[u8]) -> bool {
        let (p, s) = (
            CString::new(pattern).unwrap(),
            CString::new(string).unwrap(),
        );
        // SAFETY: both are NUL-terminated strings that live across the call; fnmatch only reads
        // them.
        unsafe { nix::libc::fnmatch(p.as_ptr(), s.as_ptr(), 0) == 0 }
    }

    fn agree(pattern: &[u8], string: &[u8]) -> Result<(), String> {
        let (ours, theirs) = (fnmatch(pattern, string), libc_fnmatch(pattern, string));
        match ours == theirs {
            true => Ok(()),
            false => Err(format!(
                "{:?} ~ {:?}: ours {ours}, fnmatch(3) {theirs}",
                String::from_utf8_lossy(pattern),
                String::from_utf8_lossy(string)
            )),
        }
    }

    #[test]
    fn agrees_with_the_c_library_on_the_cases_that_differ_between_matchers() {
        let cases: &[(&str, &[&str])] = &[
            ("[^a]", &["a", "b", "^"]),
            ("[!a]", &["a", "b", "!"]),
            ("\\*", &["*", "x", "\\*"]),
            ("a\\", &["a", "a\\"]),
            ("\\[a]", &["[a]", "a"]),
            ("[a-]", &["a", "-", "b"]),
            ("[-a]", &["a", "-", "b"]),
            ("[]a]", &["]", "a", "b"]),
            ("[!]a]", &["]", "a", "b"]),
            ("[]-a]", &["]", "^", "a", "b"]),
            ("[\\]]", &["]", "\\"]),
            ("[a\\-z]", &["-", "m", "z"]),
            ("[\\a-\\c]", &["b", "d"]),
            ("*", &["", "a/b", ".hidden"]),
            ("a*b", &["ab", "a/x/b", "a/x/c"]),
            ("?", &["/", ".", ""]),
            ("[[:digit:]]", &["5", "a"]),
            ("[[:alpha:]_]", &["q", "_", "1"]),
            ("[![:space:]]", &[" ", "x", "\x0b"]),
            ("[[:nope:]]", &["n", "["]),
            ("[[:alpha]", &["[", ":", "a"]),
            ("[z-a]", &["m", "a", "z"]),
            ("[", &["["]),
            ("[!", &["[!", "["]),
            ("a[b", &["a[b", "ab"]),
            ("[ab", &["a", "[ab"]),
            ("[a-", &["a", "[a-"]),
            ("x[]]y", &["x]y", "xy"]),
            ("**", &["", "abc"]),
            ("*[0-9]", &["abc7", "abc"]),
            (
                "pci:v000010DEd*sv*sd*bc03sc*i*",
                &["pci:v000010DEd00001234sv0sd0bc03sc00i00"],
            ),
            ("pci:v000010DEd*bc03*", &["pci:v000010DEd1bc02"]),
            ("xprtrdma", &["xprtrdma", "xprtrdma6"]),
            ("rpcrdma[^6]", &["rpcrdma4", "rpcrdma6"]),
            ("\u{e9}[\u{e8}-\u{ea}]", &["\u{e9}\u{e9}", "\u{e9}e"]),
        ];
        let wrong: Vec<String> = cases
            .iter()
            .flat_map(|(p, strings)| strings.iter().map(move |s| (p, s)))
            .filter_map(|(p, s)| agree(p.as_bytes(), s.as_bytes()).err())
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn agrees_with_the_c_library_on_every_short_pattern() {
        const PATTERN: &[u8] = b"a-]![^\\*?:";
        const STRING: &[u8] = b"a-]![";
        fn all(alphabet: &[u8], max: usize) -> Vec<Vec<u8>> {
            let mut out = vec![Vec::new()];
            let mut last = vec![Vec::new()];
            for _ in 0..max {
                last = last
                    .iter()
                    .flat_map(|w| alphabet.iter().map(move |&c| [w.as_slice(), &[c]].concat()))
                    .collect();
                out.extend(last.iter().cloned());
            }
            out
        }
        let strings = all(STRING, 2);
        let mut wrong = Vec::new();
        for p in all(PATTERN, 4) {
            for s in &strings {
                if let Err(e) = agree(&p, s) {
                    wrong.push(e);
                }
            }
        }
        assert!(
            wrong.is_empty(),
            "{} disagreements, first:\n{}",
            wrong.len(),
            wrong[..wrong.len().min(20)].join("\n")
        );
    }
}
