//! A command's synopsis from its clap definition, as parts that the guide's command table and
//! the manual pages each spell their own way: every visible option with its value's name
//! (`--interval SECONDS`), then the positionals, each in brackets unless it is required.

/// One option or positional of a synopsis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// `-v`, for an option with a short spelling.
    pub short: Option<String>,
    /// `--verbose`, for an option with a long spelling.
    pub long: Option<String>,
    /// The value's name (`SECONDS`), or the positional's (`DIR`, `FILE…`).
    pub value: Option<String>,
    pub required: bool,
}

/// The parts of `cmd`'s synopsis: its visible options in declaration order, then its
/// positionals.
pub fn parts(cmd: &clap::Command) -> Vec<Part> {
    let value_of = |a: &clap::Arg| {
        a.get_value_names()
            .map(|v| v.join(" "))
            .unwrap_or_else(|| a.get_id().as_str().to_uppercase())
    };
    let mut out = Vec::new();
    for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        if a.get_long().is_none() && a.get_short().is_none() {
            continue;
        }
        out.push(Part {
            short: a.get_short().map(|c| format!("-{c}")),
            long: a.get_long().map(|l| format!("--{l}")),
            value: a
                .get_num_args()
                .is_some_and(|n| n.takes_values())
                .then(|| value_of(a)),
            required: a.is_required_set(),
        });
    }
    for a in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let mut value = value_of(a);
        if a.get_num_args().is_some_and(|n| n.max_values() > 1) && !value.contains(' ') {
            value.push('…');
        }
        out.push(Part {
            short: None,
            long: None,
            value: Some(value),
            required: a.is_required_set(),
        });
    }
    out
}

impl Part {
    /// Spelt with `flag` for the option's name and `value` for its value's, in brackets unless
    /// required: `[--interval SECONDS]`, `DIR`.
    pub fn spell(&self, flag: impl Fn(&str) -> String, value: impl Fn(&str) -> String) -> String {
        let name = match (&self.short, &self.long) {
            (_, Some(long)) => Some(flag(long)),
            (Some(short), None) => Some(flag(short)),
            (None, None) => None,
        };
        let text = match (name, &self.value) {
            (Some(n), Some(v)) => format!("{n} {}", value(v)),
            (Some(n), None) => n,
            (None, Some(v)) => value(v),
            (None, None) => String::new(),
        };
        if self.required {
            text
        } else {
            format!("[{text}]")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_show_their_values_and_positionals_follow() {
        let cmd = super::super::command();
        let agent = cmd.find_subcommand("agent").unwrap();
        let plain: Vec<String> = parts(agent)
            .iter()
            .map(|p| p.spell(|f| f.to_string(), |v| v.to_string()))
            .collect();
        assert!(
            plain.contains(&"[--interval SECONDS]".to_string()),
            "{plain:?}"
        );
        assert!(plain.contains(&"[--once]".to_string()), "{plain:?}");
        let verify = cmd.find_subcommand("verify").unwrap();
        let last = parts(verify).last().unwrap().clone();
        assert_eq!(last.spell(|f| f.to_string(), |v| v.to_string()), "DIR");
    }
}
