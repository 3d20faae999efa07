//! Which option names are spellings of the helper's own `gds_policy=` / `gds_wait=` without being
//! them exactly: those are refused, so that a typo or a look-alike never reaches `mount.nfs`
//! (which would ignore it under `sloppy`, and the mount would go ahead under the default policy).
//!
//! A name is folded first: ASCII case, fullwidth forms (`ｇｄｓ＿ｐｏｌｉｃｙ`) and the Unicode
//! dashes and hyphens become ASCII. Then it is ours when it starts with `gds` and a separator
//! (`gds-anything`), when `gds` is directly followed by one of our names (`gdspolicy`), or when
//! `gds` anywhere in it is followed by a run of separators and one of our names
//! (`nfs-gds.policy`, `gds:policy`, `gds/wait`, `nfs_gds_policy`). Written by hand: the fold is
//! a few ranges, and Unicode normalisation (NFKC) would not map the dashes.

/// The helper's own option names, after `gds` and a separator.
pub const OUR_NAMES: &[&str] = &["policy", "wait"];

/// One character folded: fullwidth ASCII to ASCII, every dash or hyphen to `-`, ASCII lower case.
fn fold_char(c: char) -> char {
    let c = match c {
        '\u{ff01}'..='\u{ff5e}' => char::from_u32(u32::from(c) - 0xfee0).unwrap_or(c),
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{fe58}' | '\u{fe63}' | '\u{2043}' => '-',
        '\u{3000}' => ' ',
        _ => c,
    };
    c.to_ascii_lowercase()
}

/// The option's name (before `=`), folded.
pub fn folded_name(opt: &str) -> String {
    opt.split_once('=')
        .map_or(opt, |(k, _)| k)
        .chars()
        .map(fold_char)
        .collect()
}

/// Whether `opt` names one of the helper's options in a spelling other than its own.
/// (The exact spellings are matched before this is asked.)
pub fn looks_like_ours(opt: &str) -> bool {
    let key = folded_name(opt);
    if let Some(rest) = key.strip_prefix("gds") {
        let direct = match rest.chars().next() {
            Some(c) => !c.is_alphanumeric() || OUR_NAMES.iter().any(|n| rest.starts_with(n)),
            None => false,
        };
        if direct {
            return true;
        }
    }
    key.match_indices("gds").any(|(at, _)| {
        let after = &key[at + 3..];
        let name = after.trim_start_matches(|c: char| !c.is_alphanumeric());
        name.len() < after.len() && OUR_NAMES.iter().any(|n| name.starts_with(n))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_alikes_and_foreign_separators_are_ours() {
        for o in [
            "gds-policy=off",
            "GDS_POLICY=off",
            "gdspolicy=off",
            "gdswait=5",
            "gds-anything",
            "nfs-gds.policy=off",
            "nfs_gds_policy=off",
            "gds:policy=off",
            "gds/policy=off",
            "gds/wait=5",
            "x-gds..wait=5",
            "\u{ff47}\u{ff44}\u{ff53}\u{ff3f}\u{ff50}\u{ff4f}\u{ff4c}\u{ff49}\u{ff43}\u{ff59}=off",
            "gds\u{2010}policy=off",
            "gds\u{2212}wait=5",
            "gds\u{00a0}policy=off",
            "nfs-gds-policy-file",
        ] {
            assert!(looks_like_ours(o), "{o}");
        }
    }

    #[test]
    fn other_options_are_not() {
        for o in [
            "hard",
            "rsize=1048576",
            "context=\"gds_policy\"",
            "x-systemd.automount",
            "gds",
            "mygdsx=policy",
        ] {
            assert!(!looks_like_ours(o), "{o}");
        }
    }
}
