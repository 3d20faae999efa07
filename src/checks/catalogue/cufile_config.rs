//! `cufile-config`: the cufile.json cuFile reads parses, has no unknown or misshapen keys, names
//! only this node's addresses, and does not allow the silent POSIX fallback. Advisory: cuFile
//! runs with any of these, only not the way the admin thinks.

use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Level};
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("cufile-config");

pub static CHECK: Check = Check {
    id: ID,
    doc: "cufile.json parses, every key is a cuFile setting in its right shape, `rdma_dev_addr_list` holds this node's addresses, `allow_compat_mode` is false (advisory; skipped without the file)",
    scope: Scope::Node(run),
    default_level: Level::Warn,
    waitable: false,
};

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let Some(c) = &facts.cufile else {
        return CheckResult::skip(
            id,
            "there is no cufile.json (cuFile's defaults allow compat mode)",
        );
    };
    if let Some(e) = &c.parse_error {
        return CheckResult::warn(id, format!("{} cannot be used: {e}", c.path))
            .remedy(format!("fix {} (JSON with // comments)", c.path));
    }
    let mut problems = c.problems.clone();
    if c.compat_allowed() {
        problems.push(format!(
            "`properties.allow_compat_mode` is {}: when GDS is not possible cuFile silently falls back to POSIX I/O",
            if c.allow_compat_mode.is_some() { "true" } else { "unset (default true)" }
        ));
    }
    if problems.is_empty() {
        return CheckResult::pass(id, format!("{}: no mistakes, compat mode off", c.path));
    }
    let more = match problems.len() {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    let mut r = CheckResult::warn(id, format!("{}: {}{more}", c.path, problems[0]));
    for p in &problems {
        r = r.with(c.path.clone(), p.clone());
    }
    let compat =
        "set `\"allow_compat_mode\": false` under `properties` where failures should be loud";
    r.remedy(if c.problems.is_empty() {
        format!("edit {}: {compat}", c.path)
    } else {
        format!("edit {}: correct the keys named above; {compat}", c.path)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;
    use crate::host::platform::cufile_json::CufileLint;

    const PATH: &str = "/etc/cufile.json";

    fn lint(compat: Option<bool>, problems: &[&str], parse_error: Option<&str>) -> HostFacts {
        HostFacts::builder()
            .cufile(Some(CufileLint {
                path: PATH.into(),
                parse_error: parse_error.map(str::to_string),
                allow_compat_mode: compat,
                problems: problems.iter().map(|p| p.to_string()).collect(),
            }))
            .build()
    }

    #[test]
    fn passes_a_clean_file_without_compat_mode() {
        let r = run(&lint(Some(false), &[], None));
        says(
            &r,
            Status::Pass,
            &["/etc/cufile.json: no mistakes, compat mode off"],
        );
    }

    #[test]
    fn warns_of_compat_mode_left_at_its_default() {
        let r = run(&lint(None, &[], None));
        says(
            &r,
            Status::Warn,
            &[
                "allow_compat_mode` is unset (default true)",
                "silently falls back",
            ],
        );
        assert!(seen(&r, PATH).contains("unset (default true)"));
        assert!(remedy(&r).starts_with("edit /etc/cufile.json: set"));
    }

    #[test]
    fn warns_of_each_mistake_and_counts_the_rest() {
        let r = run(&lint(
            Some(true),
            &["`properties.max_direct_io_size_kb` is a string, not a number"],
            None,
        ));
        says(&r, Status::Warn, &["max_direct_io_size_kb", "(and 1 more)"]);
        assert_eq!(r.evidence.len(), 2, "{r:#?}");
        assert!(remedy(&r).contains("correct the keys named above"));
    }

    #[test]
    fn warns_of_a_file_that_does_not_parse() {
        let r = run(&lint(Some(false), &[], Some("line 4: expected `,`")));
        says(&r, Status::Warn, &["cannot be used: line 4: expected `,`"]);
    }

    #[test]
    fn skips_without_a_file() {
        says(
            &run(&HostFacts::builder().build()),
            Status::Skip,
            &["there is no cufile.json"],
        );
    }
}
