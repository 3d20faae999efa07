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
pub mod check;
pub mod collect;
pub mod color;
pub mod completions;
pub mod doctor;
pub mod host;
pub mod inspect_module;
pub mod lint;
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
pub mod watch;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::checks::render::TextStyle;
use host::Host;

/// Exit codes of the read-only commands.
pub mod exit {
    /// Ready: no check failed (warnings may have been printed).
    pub const READY: u8 = 0;
    /// Not ready: at least one check failed.
    pub const NOT_READY: u8 = 1;
    /// The command could not run (bad arguments, unreadable input).
    pub const ERROR: u8 = 2;

    /// The exit code of a command's verdict: every read-only command maps it here.
    pub fn of(verdict: crate::checks::Verdict) -> u8 {
        ready_or_not(verdict.is_ready())
    }

    /// The exit code of a command whose answer is ready or not (`inspect-module`'s hooks).
    pub fn ready_or_not(ready: bool) -> u8 {
        if ready {
            READY
        } else {
            NOT_READY
        }
    }
}

/// The version `--version` prints: the crate's, the commit, the target and the enabled features
/// (set by `build.rs`).
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("NFS_GDS_COMMIT"),
    ", target ",
    env!("NFS_GDS_TARGET"),
    ", features: ",
    env!("NFS_GDS_FEATURES"),
    ")"
);

/// The file name argv\[0\] must have for the mount(8) helper persona.
pub const HELPER_NAME: &str = "mount.nfs-gds";

#[derive(Debug, Parser)]
#[command(
    name = "nfs-gds",
    version = LONG_VERSION,
    about = "Make GPUDirect Storage over NFS/RDMA fail loudly instead of silently",
    long_about = "Checks that GPUDirect Storage over NFS/RDMA will really be used on this node: \
nvidia_fs loaded, an rpcrdma module with the nvfs DMA hooks exported in a way this kernel accepts, \
and mounts running over RDMA.\n\nExit status: 0 ready, 1 not ready, 2 error."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Read the host below DIR instead of / (for fixture trees and collected bundles); else NFS_GDS_ROOT when set and not empty
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Policy file; else NFS_GDS_CONFIG when set and not empty [default: /etc/nfs-gds/nfs-gds.toml]
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// More log output on stderr (-v info, -vv debug, -vvv trace)
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Colour the output: auto (on a terminal, unless NO_COLOR is set and non-empty), always, never
    #[arg(long, global = true, value_name = "WHEN", value_enum, default_value_t)]
    pub color: color::ColorWhen,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the pre-mount checks for this node, as the mount helper would
    Check(check::CheckArgs),
    /// Show what a kernel module file really contains (hooks, exports, identity)
    InspectModule(inspect_module::InspectArgs),
    /// Explain what is wrong on this node and how to fix it for its stack
    Doctor(doctor::DoctorArgs),
    /// Print doctor's plan, or with --apply run its safe, idempotent steps
    Provision(provision::ProvisionArgs),
    /// Write a support bundle of everything doctor reads (replay it with --root)
    Collect(collect::CollectArgs),
    /// Publish readiness for fleets: NFD labels, Prometheus textfile, status JSON
    Agent(agent::AgentArgs),
    /// Mount over NFS/RDMA as the mount(8) helper does (exit codes are mount(8)'s)
    #[command(disable_help_flag = true)]
    Mount(mount_helper::MountArgs),
    /// Run the post-mount checks for an existing mount
    Verify(verify::VerifyArgs),
    /// Watch a mount while a workload runs: did nvidia-fs move the bytes it served?
    Watch(watch::WatchArgs),
    /// OCI runtime hook: refuse a container whose NFS volume meant for GDS is not ready (state on stdin)
    OciHook(oci_hook::OciHookArgs),
    /// NRI plugin: refuse, at CreateContainer, a container whose NFS volume meant for GDS is not ready (containerd, CRI-O)
    Nri(nri::NriArgs),
    /// Slurm: a HealthCheckProgram that drains a node whose GDS over NFS is not ready, and a Prolog for jobs that ask for the GDS feature
    #[command(subcommand)]
    Slurm(slurm::SlurmCommand),
    /// Validate a policy file, or show the level of every check for a mount
    #[command(subcommand)]
    Policy(policy::PolicyCommand),
    /// Check Kubernetes manifests (ClusterPolicy, NicClusterPolicy, NFS StorageClass/PV) for GDS
    Lint(lint::LintArgs),
    /// Print a shell completion script (e.g. `nfs-gds completions bash`)
    Completions(completions::CompletionsArgs),
}

/// Context shared by every command.
#[derive(Debug)]
pub struct Ctx {
    pub host: Host,
    pub config: Option<PathBuf>,
    pub style: TextStyle,
}

impl Ctx {
    /// The policy, loaded as the mount helper loads it (a bad or untrusted file is an error
    /// naming it).
    pub fn policy(&self) -> Result<crate::policy::Policy, CmdError> {
        Ok(self.policy_with_path()?.1)
    }

    /// The policy and the path it was read from.
    pub fn policy_with_path(
        &self,
    ) -> Result<(PathBuf, crate::policy::Policy), crate::policy::PolicyError> {
        crate::policy::load_for(&self.host.root, self.config.as_deref(), &self.host.trust())
    }

    /// The context of one run: the host from [`Host::open`], the one constructor both entry
    /// points use.
    /// `--root` and `--config` when given, else `NFS_GDS_ROOT` and `NFS_GDS_CONFIG` as the
    /// environment's one reader gives them (empty is unset), as the mount helper takes them.
    fn open(global: &GlobalArgs) -> Result<Self, host::BadRoot> {
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
}

/// Logs go to stderr; `ansi` says whether they may be coloured.
pub(crate) fn init_logging(verbose: u8, ansi: bool) {
    let level = match verbose {
        0 => tracing::Level::WARN,
        1 => tracing::Level::INFO,
        2 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    let _ = tracing::subscriber::set_global_default(log_subscriber(level, ansi, err_out::Stderr));
}

/// The subscriber every face logs through: one line per event on `writer`, and every field,
/// the message too, with its control characters and line separators escaped as in messages
/// ([`crate::escape`]): a value quoted from the command line or a file (an option's quoted
/// newline) cannot forge a log line of its own.
fn log_subscriber<W>(level: tracing::Level, ansi: bool, writer: W) -> impl tracing::Subscriber
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    use tracing_subscriber::field::MakeExt;
    let fields = tracing_subscriber::fmt::format::debug_fn(|w, field, value| {
        let text = format!("{value:?}");
        let text = crate::escape::escape_control(&text);
        if field.name() == "message" {
            write!(w, "{text}")
        } else {
            write!(w, "{field}={text}")
        }
    })
    .delimited(" ");
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(writer)
        .log_internal_errors(false)
        .with_target(false)
        .without_time()
        .with_ansi(ansi)
        .fmt_fields(fields)
        .finish()
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
        return match completions::run(args) {
            Ok(code) => code,
            Err(e) if out::is_closed_pipe(&*e) => out::end_on_closed_pipe(),
            Err(e) => failed(None, &e.to_string(), exit::ERROR),
        };
    }
    let ctx = match Ctx::open(&cli.global) {
        Ok(ctx) => ctx,
        Err(bad) => {
            // The hook's exit code is its verdict on a container: its failure policy decides,
            // and it says so in its own line. The helper exits with mount(8)'s usage code.
            if let Command::OciHook(a) = &cli.command {
                if a.judges() {
                    return oci_hook::run_without_root(&bad.root, &bad.message);
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
        Command::Completions(args) => completions::run(&args),
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

/// An error that stops a command; printed once, as `nfs-gds: <message>`.
pub type CmdError = Box<dyn std::error::Error>;

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

    #[test]
    fn a_log_line_cannot_be_forged_by_a_value_it_quotes() {
        use std::sync::{Arc, Mutex};
        #[derive(Clone, Default)]
        struct Buffer(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buffer {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buffer = Buffer::default();
        let writer = {
            let buffer = buffer.clone();
            move || buffer.clone()
        };
        let subscriber = log_subscriber(tracing::Level::INFO, false, writer);
        let option = "rw,context=\"a\nnfs-gds: mounted srv:/x\u{2028}\u{1b}[2J\"";
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("options for mount.nfs: {option}");
            tracing::info!(path = %"/mnt/a\nb", "named");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text:?}");
        assert!(
            lines[0].ends_with(
                "options for mount.nfs: rw,context=\"a\\nnfs-gds: mounted srv:/x\\u{2028}\\u{1b}[2J\""
            ),
            "{text:?}"
        );
        assert!(lines[1].ends_with("named path=/mnt/a\\nb"), "{text:?}");
    }
}
