//! `nfs-gds completions SHELL`: shell completion scripts, generated from the same clap
//! definition the binary parses with, so they cannot drift from the real options.
//!
//! Two repairs for bash. clap_complete names its states after the command, and spells a
//! hyphenated name two ways (`nfs__gds` where it walks the words, `nfs__subcmd__gds` in the
//! states), so after `nfs-gds SUBCOMMAND` no state ever matched and nothing was offered; the
//! states are renamed to the spelling the walk uses (a no-op once clap_complete agrees with
//! itself). And the mount helper `mount.nfs-gds`, which parses mount(8)'s flags by hand, gets a
//! completion of its own, written from its flag table and its option table.

use clap::Args;
use clap_complete::Shell;

use super::context::CmdError;
use super::exit;
use super::reference::usage::helper_flag_names;
use super::version::HELPER_NAME;
use crate::mount::args::{Does, FLAGS};
use crate::mount::options;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to write completions for (bash, zsh, fish, elvish, powershell)
    pub shell: Shell,
}

/// Bash completion for `mount.nfs-gds SPEC DIR [FLAGS]`: the flags from the helper's one
/// declaration ([`FLAGS`]), the `-o` values from the option table ([`options::offered`]).
fn helper_bash() -> String {
    let flags = helper_flag_names().join(" ");
    let mut values = String::new();
    for f in FLAGS.iter().filter(|f| f.value.is_some()) {
        let reply = match f.does {
            Does::Options => format!(
                "compgen -W \"{}\" -- \"${{cur}}\"",
                options::offered().join(" ")
            ),
            Does::Type => format!(
                "compgen -W \"{}\" -- \"${{cur}}\"",
                HELPER_NAME.trim_start_matches("mount.")
            ),
            _ => "compgen -f -- \"${cur}\"".to_string(),
        };
        values.push_str(&format!(
            "        -{})\n            COMPREPLY=( $({reply}) )\n            return 0\n            ;;\n",
            f.short
        ));
    }
    let func = format!("_{}", HELPER_NAME.replace(['.', '-'], "_"));
    format!(
        r#"
{func}() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    case "${{prev}}" in
{values}    esac
    if [[ "${{cur}}" == -* ]]; then
        COMPREPLY=( $(compgen -W "{flags}" -- "${{cur}}") )
        return 0
    fi
    COMPREPLY=( $(compgen -d -- "${{cur}}") )
}}
complete -F {func} -o bashdefault -o default {HELPER_NAME}
"#
    )
}

/// The completion script for `shell`, of the command line `cli` (the whole of `nfs-gds`).
pub fn script(shell: Shell, mut cli: clap::Command) -> Vec<u8> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cli, "nfs-gds", &mut script);
    if shell != Shell::Bash {
        return script;
    }
    let mut text = String::from_utf8_lossy(&script).replace("nfs__subcmd__gds", "nfs__gds");
    text.push_str(&helper_bash());
    text.into_bytes()
}

/// Prints the script of `cli` for the shell `args` names.
pub fn run(args: &CompletionsArgs, cli: clap::Command) -> Result<u8, CmdError> {
    // Into memory first: clap_complete panics on a failed write (a closed pipe).
    std::io::Write::write_all(&mut std::io::stdout().lock(), &script(args.shell, cli))?;
    Ok(exit::READY)
}
