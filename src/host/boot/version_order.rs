//! Ordering of version strings the way `sort -V` and GRUB's "newest kernel" do.
//!
//! Kernel releases (`6.1.0-50-amd64`, `6.12.117+deb13-amd64`, `5.14.0-427.13.1.el9_4.x86_64`) and
//! DKMS versions (`24.10.OFED.24.10.1.1.4.0`) compare by runs: digit runs numerically, other runs
//! byte-wise, a `~` before anything (Debian's pre-release marker). Written here because what is
//! needed is this one comparison, not a crate's idea of semantic versions, which these strings
//! are not.

use std::cmp::Ordering;

/// Compares two version strings run by run.
pub fn compare(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a.is_empty(), b.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => {
                return if b[0] == b'~' {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            (false, true) => {
                return if a[0] == b'~' {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            _ => {}
        }
        let (ra, rest_a) = run(a);
        let (rb, rest_b) = run(b);
        let ord = match (ra[0].is_ascii_digit(), rb[0].is_ascii_digit()) {
            (true, true) => {
                let na = trim_zeros(ra);
                let nb = trim_zeros(rb);
                na.len().cmp(&nb.len()).then_with(|| na.cmp(nb))
            }
            (false, false) => compare_text(ra, rb),
            // A number sorts after text at the same place (`1.0a` < `1.0.1` is not asked).
            (true, false) => {
                if rb[0] == b'~' {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            (false, true) => {
                if ra[0] == b'~' {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
        };
        if ord != Ordering::Equal {
            return ord;
        }
        a = rest_a;
        b = rest_b;
    }
}

fn run(s: &[u8]) -> (&[u8], &[u8]) {
    let digit = s[0].is_ascii_digit();
    let end = s
        .iter()
        .position(|c| c.is_ascii_digit() != digit)
        .unwrap_or(s.len());
    s.split_at(end)
}

fn trim_zeros(s: &[u8]) -> &[u8] {
    let i = s.iter().position(|c| *c != b'0').unwrap_or(s.len());
    &s[i..]
}

fn compare_text(a: &[u8], b: &[u8]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return match (*x == b'~', *y == b'~') {
                (true, false) => Ordering::Less,
                (false, true) => Ordering::Greater,
                _ => x.cmp(y),
            };
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_releases_sort_as_sort_v_does() {
        let mut v = vec![
            "6.12.117+deb13-amd64",
            "6.1.0-9-amd64",
            "6.1.0-50-amd64",
            "5.14.0-503.el9.x86_64",
            "5.14.0-427.13.1.el9_4.x86_64",
            "6.1.0-50-amd64",
        ];
        v.sort_by(|a, b| compare(a, b));
        assert_eq!(
            v,
            vec![
                "5.14.0-427.13.1.el9_4.x86_64",
                "5.14.0-503.el9.x86_64",
                "6.1.0-9-amd64",
                "6.1.0-50-amd64",
                "6.1.0-50-amd64",
                "6.12.117+deb13-amd64",
            ]
        );
        assert_eq!(
            compare("24.10.OFED.24.10.1.1.4.0", "24.07.OFED.24.07.0.6.1.1"),
            Ordering::Greater
        );
        assert_eq!(compare("2.28.4~rc1", "2.28.4"), Ordering::Less);
        assert_eq!(compare("010", "10"), Ordering::Equal);
    }
}
