//! Command-line entry: argv\[0\] dispatch, the subcommands, and the one place where an outcome
//! becomes an exit code.
//!
//! Started as `mount.nfs-gds` (exact file name of argv\[0\]) the binary is the mount(8) helper;
//! otherwise it is `nfs-gds <command>`. Read-only commands exit 0 when the node (or mount) is
//! ready, 1 when it is not, 2 when they could not do their job.

#[macro_use]
pub mod out;
#[macro_use]
pub mod err_out;

pub mod agent;
pub mod args;
pub mod check;
pub mod collect;
pub mod color;
pub mod completions;
pub mod context;
pub mod doctor;
pub mod exit;
pub mod gate_voice;
pub mod host;
pub mod inspect_module;
pub mod lint;
pub mod logging;
pub mod memory;
pub mod mount_helper;
pub mod nri;
pub mod oci_hook;
pub mod policy;
pub mod provision;
pub mod reference;
pub mod report;
pub mod shared;
pub mod slurm;
pub mod verify;
pub mod version;
pub mod watch;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::Path;

use clap::{CommandFactory, FromArgMatches};

pub use args::{Cli, Command, GlobalArgs};
pub use context::{CmdError, Ctx};
pub(crate) use logging::init_logging;
pub use version::{HELPER_NAME, LONG_VERSION};

/// The context of one run: the host from [`Host::open`], the one constructor both entry
/// points use.
/// `--root` and `--config` when given, else `NFS_GDS_ROOT` and `NFS_GDS_CONFIG` as the
/// environment's one reader gives them (empty is unset), as the mount helper takes them.
fn open_ctx(global: &GlobalArgs) -> Result<Ctx, host::BadRoot> {
    use crate::checks::render::TextStyle;
    use host::Host;
    let color = color::enabled_here(global.color, std::io::stdout().is_terminal());
    let env = crate::host::io::env::Env::get();
    Ok(Ctx {
        host: Host::open(global.root.as_deref().or(env.root.as_deref()))?,
        config: global.config.clone().or_else(|| env.config.clone()),
        style: TextStyle {
            color,
            verbose: global.verbose > 0,
        },
    })
}

/// Whether argv\[0\] names the mount helper: exact file name, never a prefix or substring.
pub fn is_helper_name(argv0: &OsString) -> bool {
    Path::new(argv0).file_name() == Some(std::ffi::OsStr::new(HELPER_NAME))
}

/// The global options whose value is the next word (`--root`, `--config`, `--color`, and any
/// short spelling), as [`GlobalArgs`] declares them: that struct is their one list.
fn global_options_with_value() -> Vec<String> {
    let mut cli = Cli::command();
    cli.build();
    cli.get_arguments()
        .filter(|a| a.is_global_set() && a.get_action().takes_values())
        .flat_map(|a| {
            let long = a.get_long().map(|l| format!("--{l}"));
            let short = a.get_short().map(|c| format!("-{c}"));
            long.into_iter().chain(short)
        })
        .collect()
}

/// The subcommand named in `argv`, skipping the global options and their values.
fn subcommand_of(argv: &[OsString]) -> Option<&OsString> {
    let with_value = global_options_with_value();
    let mut it = argv.iter().skip(1);
    while let Some(a) = it.next() {
        let s = a.to_string_lossy();
        if with_value.iter().any(|g| *g == s) {
            it.next();
        } else if !s.starts_with('-') {
            return Some(a);
        }
    }
    None
}

/// Runs the program for `argv` and returns the process exit code.
pub fn run(argv: Vec<OsString>) -> u8 {
    if argv.first().is_some_and(is_helper_name) {
        return mount_helper::run_persona(&argv);
    }
    // Before parsing: not even --help or --version runs setuid.
    // The process's own ids: the same on the machine and below any root.
    let process = crate::system::Live::new(true);
    if let Err(e) = crate::mount::privilege::refuse_setuid(&process) {
        errln!("nfs-gds: {}", crate::escape::escape_control(&e.to_string()));
        return exit::ERROR;
    }
    if argv.get(1).is_some_and(|a| a == reference::GENERATE_MAN) {
        return reference::generate_man(&argv[1..]);
    }
    let (cli, json) = match parse(&argv) {
        Ok(parsed) => parsed,
        Err(e) => return refused(&argv, &e),
    };
    // The faces that must finish what they started are never stopped by a stderr that can no
    // longer be written, not even by their first message (a root that is not a directory).
    match &cli.command {
        Command::Mount(_) | Command::Agent(_) | Command::Nri(_) => err_out::keep_going(),
        Command::OciHook(a) if a.judges() => err_out::keep_going(),
        // slurmd acts on the drain and the prolog's exit code, not on what they print.
        Command::Slurm(_) => err_out::keep_going(),
        _ => {}
    }
    // The helper starts its own logging, at the level of `-v` before or after `mount`.
    if !matches!(cli.command, Command::Mount(_)) {
        init_logging(
            cli.global.verbose,
            color::enabled_here(cli.global.color, std::io::stderr().is_terminal()),
        );
    }
    // Completions need no host: a wrong --root does not stop them.
    if let Command::Completions(args) = &cli.command {
        return match completions::run(args, Cli::command()) {
            Ok(code) => code,
            Err(e) if out::is_closed_pipe(&*e) => out::end_on_closed_pipe(),
            Err(e) => failed(None, &e.to_string(), exit::ERROR),
        };
    }
    let ctx = match open_ctx(&cli.global) {
        Ok(ctx) => ctx,
        Err(bad) => {
            // The hook's exit code is its verdict on a container: its failure policy decides,
            // and it says so in its own line. The helper exits with mount(8)'s usage code.
            if let Command::OciHook(a) = &cli.command {
                if a.judges() {
                    return oci_hook::run_without_root(&process, &bad.root, &bad.message);
                }
            }
            let code = match cli.command {
                Command::Mount(_) => crate::mount::exit_code::USAGE,
                _ => exit::ERROR,
            };
            return failed(json.as_deref(), &bad.message, code);
        }
    };
    let result = match cli.command {
        Command::Check(args) => check::report(&args, &ctx)
            .and_then(|r| report::show(&r, args.output.format(), ctx.style)),
        Command::InspectModule(args) => inspect_module::report(&args, &ctx)
            .and_then(|r| report::show(&r, args.output.format(), ctx.style)),
        Command::Doctor(args) => doctor::diagnose_host(&ctx, args.probe.probe)
            .and_then(|d| report::show(&d, args.format(), ctx.style)),
        Command::Provision(args) => provision::run(&args, &ctx),
        Command::Collect(args) => collect::run(&args, &ctx),
        Command::Agent(args) => agent::run(&args, &ctx),
        Command::Mount(args) => return mount_helper::run(&args, &ctx, cli.global.verbose),
        Command::Verify(args) => verify::report(&args, &ctx)
            .and_then(|r| report::show(&r, args.output.format(), ctx.style)),
        Command::Watch(args) => watch::report(&args, &ctx)
            .and_then(|r| report::show(&r, args.output.format(), ctx.style)),
        Command::OciHook(args) => oci_hook::run(&args, &ctx),
        Command::Nri(args) => nri::run(&args, &ctx),
        Command::Slurm(cmd) => slurm::run(&cmd, &ctx),
        Command::Policy(cmd) => policy::run(&cmd, &ctx),
        Command::Lint(args) => lint::report(&args, &ctx)
            .and_then(|r| report::show(&r, args.output.format(), ctx.style)),
        Command::Completions(args) => completions::run(&args, Cli::command()),
    };
    match result {
        Ok(code) => code,
        Err(e) if out::is_closed_pipe(&*e) => out::end_on_closed_pipe(),
        Err(e) => failed(json.as_deref(), &e.to_string(), exit::ERROR),
    }
}

/// Parses `argv`, and says which command was asked for JSON.
fn parse(argv: &[OsString]) -> Result<(Cli, Option<String>), clap::Error> {
    let mut matches = Cli::command().try_get_matches_from(argv)?;
    let json = json_command(&matches);
    let cli = Cli::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut Cli::command()))?;
    Ok((cli, json))
}

/// The command (`check`, `policy show`) when its arguments define `--json` and it was given:
/// every command with such a flag speaks JSON, errors included, without being listed here.
fn json_command(matches: &clap::ArgMatches) -> Option<String> {
    let mut names = Vec::new();
    let mut m = matches;
    while let Some((name, sub)) = m.subcommand() {
        names.push(name);
        m = sub;
    }
    matches!(m.try_get_one::<bool>(JSON), Ok(Some(true))).then(|| names.join(" "))
}

/// The id of the flag that asks a command for JSON.
const JSON: &str = "json";

/// The same for a command line clap refused: the subcommands `argv` names, and `--json` among
/// its words when the last of them defines it.
fn json_command_refused(argv: &[OsString]) -> Option<String> {
    let with_value = global_options_with_value();
    let mut cmd = Cli::command();
    let mut names = Vec::new();
    let mut asked = false;
    let mut words = argv.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(w) = words.next() {
        if w == "--" {
            break;
        } else if w.strip_prefix("--") == Some(JSON) {
            asked = true;
        } else if with_value.iter().any(|g| *g == w) {
            words.next();
        } else if !w.starts_with('-') {
            if let Some(sub) = cmd.find_subcommand(&*w).cloned() {
                names.push(sub.get_name().to_string());
                cmd = sub;
            }
        }
    }
    let speaks = cmd.get_arguments().any(|a| a.get_id() == JSON);
    (asked && speaks && !names.is_empty()).then(|| names.join(" "))
}

/// A command line clap refused (or `--help`, `--version`): its message, and the exit code.
fn refused(argv: &[OsString], e: &clap::Error) -> u8 {
    let printed = e.print();
    if !e.use_stderr() {
        // --help and --version into a closed pipe end as every output there ends.
        return match printed {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => out::end_on_closed_pipe(),
            _ => exit::READY,
        };
    }
    if subcommand_of(argv).is_some_and(|s| s == "mount") {
        // mount(8)'s code for a usage error; 2 would read as a system error.
        return crate::mount::exit_code::USAGE;
    }
    if let Some(command) = json_command_refused(argv) {
        let text = e.to_string();
        let first = text.lines().next().unwrap_or_default();
        let message = first.strip_prefix("error: ").unwrap_or(first);
        if json_error(&command, message).is_err() {
            return out::end_on_closed_pipe();
        }
    }
    exit::ERROR
}

/// An error that ends a command: its message on stderr, and under `--json` (`json` names the
/// command) one JSON object on stdout too, so a script that parses stdout gets an object, not
/// an empty document. Returns `code`, or ends as on any closed stdout.
fn failed(json: Option<&str>, message: &str, code: u8) -> u8 {
    let message = &out::plain_words(message);
    errln!("nfs-gds: {}", crate::escape::escape_control(message));
    if let Some(command) = json {
        // The message on stderr is the answer when stdout cannot take the object (a full
        // disk); only a closed pipe ends quietly.
        if let Err(e) = json_error(command, message) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                return out::end_on_closed_pipe();
            }
            if e.to_string() != *message {
                errln!("nfs-gds: {}", crate::escape::escape_control(&e.to_string()));
            }
        }
    }
    code
}

/// `{"command": …, "error": …}` on one line of stdout.
fn json_error(command: &str, message: &str) -> std::io::Result<()> {
    let doc = serde_json::json!({"command": command, "error": message});
    out::line(format_args!("{doc}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn helper_name_is_matched_exactly() {
        assert!(is_helper_name(&"mount.nfs-gds".into()));
        assert!(is_helper_name(&"/sbin/mount.nfs-gds".into()));
        assert!(!is_helper_name(&"/sbin/mount.nfs".into()));
        assert!(!is_helper_name(&"mount.nfs-gds-old".into()));
        assert!(!is_helper_name(&"/usr/sbin/nfs-gds".into()));
    }

    #[test]
    fn the_subcommand_is_found_past_global_options() {
        let argv = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            subcommand_of(&argv(&["nfs-gds", "--root", "/r", "-v", "mount", "x"])),
            Some(&OsString::from("mount"))
        );
        assert_eq!(
            subcommand_of(&argv(&["nfs-gds", "--config=/c", "verify", "/m"])),
            Some(&OsString::from("verify"))
        );
        assert_eq!(subcommand_of(&argv(&["nfs-gds", "--root"])), None);
        assert_eq!(
            subcommand_of(&argv(&["nfs-gds", "--color", "never", "check"])),
            Some(&OsString::from("check"))
        );
        assert_eq!(
            global_options_with_value(),
            ["--root", "--config", "--color"]
        );
    }

    #[test]
    fn a_command_speaks_json_when_its_arguments_define_json_and_it_is_given() {
        let argv = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let asked = |v: &[&str]| parse(&argv(v)).unwrap().1;
        assert_eq!(
            asked(&["nfs-gds", "watch", "/m", "--json"]).as_deref(),
            Some("watch")
        );
        assert_eq!(
            asked(&["nfs-gds", "--root", "/r", "check", "--json"]).as_deref(),
            Some("check")
        );
        assert_eq!(asked(&["nfs-gds", "check"]), None);
        assert_eq!(asked(&["nfs-gds", "agent", "--once"]), None);
        assert_eq!(asked(&["nfs-gds", "policy", "show"]), None);
        // A command line clap refuses: the same answer from its words.
        let refused = |v: &[&str]| json_command_refused(&argv(v));
        assert_eq!(
            refused(&["nfs-gds", "--root", "/r", "lint", "--json", "--bad"]).as_deref(),
            Some("lint")
        );
        assert_eq!(refused(&["nfs-gds", "lint", "--bad"]), None);
        assert_eq!(refused(&["nfs-gds", "agent", "--json"]), None);
        assert_eq!(refused(&["nfs-gds", "--json"]), None);
        assert_eq!(refused(&["nfs-gds", "lint", "--", "--json"]), None);
    }
}
