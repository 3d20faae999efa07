//! Whether a job asks for a node feature, from its `--constraint` as slurmd passes it to the
//! prolog (`SLURM_JOB_CONSTRAINTS`): features joined by `&`, `|` or `,`, grouped by `[]` and
//! `()`, counted by `*N`, negated by `!` (`gds_nfs&[rack1|rack2]`, `gds_nfs*2`). A feature asked
//! for anywhere but under `!` counts: a job that may land on a GDS node wants it ready.

/// Whether `constraints` asks for `feature`.
pub fn asks_for(constraints: &str, feature: &str) -> bool {
    let is_name = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    let mut rest = constraints;
    while let Some(start) = rest.find(is_name) {
        let negated = rest[..start].trim_end().ends_with('!');
        let word = &rest[start..];
        let end = word.find(|c: char| !is_name(c)).unwrap_or(word.len());
        if &word[..end] == feature && !negated {
            return true;
        }
        rest = &word[end..];
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_feature_is_found_in_every_form_of_a_constraint() {
        for c in [
            "gds_nfs",
            "gds_nfs&intel",
            "intel|gds_nfs",
            "[rack1|rack2]&gds_nfs",
            "gds_nfs*2",
            "(gds_nfs,ib)",
            " gds_nfs ",
        ] {
            assert!(asks_for(c, "gds_nfs"), "{c}");
        }
    }

    #[test]
    fn a_longer_name_a_negation_or_nothing_is_not_the_feature() {
        for c in [
            "",
            "gds_nfs_old",
            "old_gds_nfs",
            "gds",
            "!gds_nfs",
            "intel&!gds_nfs",
        ] {
            assert!(!asks_for(c, "gds_nfs"), "{c}");
        }
    }
}
