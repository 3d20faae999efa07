//! `nfs-gds oci-hook`: the gate at container start, an OCI runtime hook (`prestart` or
//! `createRuntime`, in the runtime's namespace). It reads the container state on stdin, the
//! bundle's `config.json`, and hands the container to the container judge
//! ([`crate::judge::container`]), which asks, for each bind mount whose source lies on an NFS
//! mount, whether that volume is meant for GDS and what its checks and the node's say. Then it
//! answers the runtime with its exit code:
//!
//! - 0, silently: no NFS volume meant for GDS (nearly every container), or all of them ready;
//! - 0 with one warning line per volume on stderr: a check at `warn` failed, or could not be
//!   proven;
//! - 1 with one line per failing volume (container path, NFS source, reason, fix): a check at
//!   `enforce` failed, and the container does not start.
//!
//! When it cannot tell (a state that is not JSON, a missing bundle, a hostile `config.json`,
//! an unreadable mount table or node), the policy's `[oci-hook] when-unsure` decides: by default
//! the container starts and the reason is logged, unless its annotations mark it for GDS or a
//! volume was already found meant for GDS; then it is refused. A hook error would block every
//! container on the node, so nothing here ends in the error exit of the other commands.
//!
//! Runtimes drop a succeeding hook's stderr (and crun a failing one's too): every refusal and
//! warning also goes to the system log ([`super::gate_voice`]) and to the counters the agent exports
//! ([`crate::agent::hook_counts`]).

pub mod install;

use std::time::Duration;

use clap::Args;

use super::context::{CmdError, Ctx};
use super::gate_voice;
use crate::escape::escape_control;
use crate::host::io::reader::FileKind;
use crate::host::Root;
use crate::judge::container::{self, Answer, Container, Inputs, Noted};
use crate::oci::{self, Marks, MAX_STATE_BYTES};
use crate::policy::WhenUnsure;
use crate::system::{StdinRead, System};

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("install_or_uninstall").args(["install", "uninstall"]))]
pub struct OciHookArgs {
    /// The hook's stage, as some hook configurations pass it (`prestart`, `createRuntime`);
    /// it judges the same in either
    #[arg(value_name = "STAGE")]
    pub stage: Option<String>,
    /// Do not judge a container: copy this binary to <root>/opt/nfs-gds/bin and its hooks.d file
    /// into the hooks directory below the root (the DaemonSet's installer on CRI-O nodes)
    #[arg(long, conflicts_with_all = ["stage", "uninstall"])]
    pub install: bool,
    /// Remove what --install wrote below the root: every hooks.d file naming the installed binary in /usr/share/containers/oci/hooks.d, /etc/containers/oci/hooks.d and --hooks-dir, then the binary
    #[arg(long, conflicts_with = "stage")]
    pub uninstall: bool,
    /// The hooks directory --install writes to, below the root: the one the runtime reads (CRI-O's hooks_dir; OpenShift's CRI-O reads /etc/containers/oci/hooks.d); --uninstall also looks there [default: /usr/share/containers/oci/hooks.d, which CRI-O and podman read unless their hooks_dir says otherwise]
    #[arg(long, value_name = "DIR", requires = "install_or_uninstall")]
    pub hooks_dir: Option<String>,
}

impl OciHookArgs {
    /// Whether it judges a container (rather than installing or removing the hook): then its
    /// exit code is its verdict, and nothing else may end it.
    pub fn judges(&self) -> bool {
        !self.install && !self.uninstall
    }
}

/// `--install` / `--uninstall`: says what was written or removed.
fn install_or_uninstall(args: &OciHookArgs, ctx: &Ctx) -> Result<u8, CmdError> {
    let dir = args.hooks_dir.as_deref().unwrap_or(install::HOOKS_DIR);
    let (done, paths) = if args.install {
        ("installed", install::install(&ctx.host.root, dir)?)
    } else {
        (
            "removed",
            install::uninstall(&ctx.host.root, args.hooks_dir.as_deref())?,
        )
    };
    for p in paths {
        outln!("nfs-gds oci-hook: {done} {}", p.display());
    }
    Ok(super::exit::READY)
}

/// The exit code that refuses the container.
pub const REFUSE: u8 = 1;

/// How long the runtime may take to write the state. (The hooks.d file's `timeout` bounds the
/// whole hook; this bounds a stdin nobody closes.)
const STDIN_WAIT: Duration = Duration::from_secs(10);

/// What the hook says, with exit 2, when started by hand with a terminal on stdin.
const NOT_A_RUNTIME: &str = "nfs-gds oci-hook: stdin is a terminal: this hook reads the container state JSON an OCI runtime passes on stdin (ociVersion, id, bundle, annotations) | fix: let the runtime run it through its hooks.d file (oci-hook --install), or pipe a state in: nfs-gds oci-hook < state.json";

/// Stdin is a terminal: says what the hook expects there, and gives the exit code (2).
fn started_by_hand(system: &dyn System) -> Option<u8> {
    if !system.stdin_is_terminal() {
        return None;
    }
    errln!("{NOT_A_RUNTIME}");
    Some(super::exit::ERROR)
}

/// Reads the state from stdin, through `system`: at most [`MAX_STATE_BYTES`], within `wait`,
/// and no further than the end of the first whole JSON value (a runtime need not close stdin).
/// At the deadline, what was read is the state if it parses.
fn read_state(system: &dyn System, wait: Duration) -> Result<Vec<u8>, String> {
    let deadline = system.now() + wait;
    let mut bytes = Vec::new();
    loop {
        let left = deadline.saturating_sub(system.now());
        let read = if left.is_zero() {
            StdinRead::Waited
        } else {
            system
                .read_stdin(left)
                .map_err(|e| format!("cannot read the container state on stdin: {e}"))?
        };
        match read {
            StdinRead::Waited => {
                return match oci::whole_value(&bytes) {
                    oci::Whole::Value(end) => Ok(bytes[..end].to_vec()),
                    _ => Err(format!(
                        "no whole container state on stdin within {} s ({} bytes read)",
                        wait.as_secs(),
                        bytes.len()
                    )),
                }
            }
            StdinRead::End => return Ok(bytes),
            StdinRead::Bytes(more) => bytes.extend_from_slice(&more),
        }
        if bytes.len() as u64 > MAX_STATE_BYTES {
            return Err(format!(
                "the container state on stdin is larger than {MAX_STATE_BYTES} bytes"
            ));
        }
        match oci::whole_value(&bytes) {
            oci::Whole::Value(end) => {
                bytes.truncate(end);
                return Ok(bytes);
            }
            // Parsed (and refused) as it is: more bytes cannot mend it.
            oci::Whole::Broken => return Ok(bytes),
            oci::Whole::Incomplete => {}
        }
    }
}

/// The container of `state` as the container judge takes it: the state's annotations, then
/// `config.json`'s, and its mounts with bind sources made absolute against the bundle; or,
/// when the bundle cannot be read, why (with whether its annotations mark it for GDS).
fn container_of(state: &oci::State, root: &Root) -> Result<Container, Answer> {
    let marked = || Marks::of(&state.annotations).any();
    let config_rel =
        oci::config_path(state).map_err(|e| container::unsure(e.to_string(), marked()))?;
    let shown = root.join(&config_rel).display().to_string();
    let bytes = match root.read_file(&config_rel, FileKind::Config) {
        Ok(Some(read)) => read.bytes,
        Ok(None) => {
            return Err(container::unsure(
                format!("{shown} does not exist"),
                marked(),
            ))
        }
        Err(e) => return Err(container::unsure(e.to_string(), marked())),
    };
    let config = oci::parse_config(&shown, &bytes)
        .map_err(|e| container::unsure(e.to_string(), marked()))?;
    let bundle = state.bundle.as_deref().unwrap_or(std::path::Path::new("/"));
    let mounts = config
        .mounts
        .into_iter()
        .map(|mut m| {
            if m.is_bind() {
                m.source = m
                    .source
                    .map(|s| bundle.join(s).to_string_lossy().into_owned());
            }
            m
        })
        .collect();
    let linux = config.linux.unwrap_or_default();
    let name = oci::CONTAINER_NAME_ANNOTATIONS
        .iter()
        .find_map(|k| state.annotations.get(*k).or(config.annotations.get(*k)))
        .cloned();
    Ok(Container {
        annotations: vec![state.annotations.clone(), config.annotations],
        mounts,
        devices: linux.devices.into_iter().map(|d| d.path.into()).collect(),
        privileged: linux
            .resources
            .is_some_and(|r| oci::allows_every_device(&r.devices)),
        name,
    })
}

/// The judge's answer for the container of `state`.
fn decide(state: &oci::State, inputs: &Inputs) -> (Answer, Noted) {
    match container_of(state, inputs.root) {
        Ok(c) => container::decide(&c, inputs),
        Err(answer) => (answer, Noted::default()),
    }
}

pub fn run(args: &OciHookArgs, ctx: &Ctx) -> Result<u8, CmdError> {
    if !args.judges() {
        return install_or_uninstall(args, ctx);
    }
    if let Some(code) = started_by_hand(ctx.host.system()) {
        return Ok(code);
    }
    let policy = || ctx.policy_with_path().map(|(_, p)| p);
    let (state, answer) = match read_state(ctx.host.system(), STDIN_WAIT)
        .and_then(|b| oci::parse_state(&b).map_err(|e| e.to_string()))
    {
        Ok(state) => {
            let inputs = Inputs {
                root: &ctx.host.root,
                system: ctx.host.system(),
                policy: &policy,
                kept: None,
            };
            let (answer, noted) = decide(&state, &inputs);
            let who = container(Some(&state));
            gate_voice::say_problems(&ctx.host.root, &who, &noted.problems);
            gate_voice::say_unresolved(&ctx.host.root, &who, &noted.unresolved);
            (Some(state), answer)
        }
        Err(reason) => (
            None,
            Answer::Unsure {
                reason,
                meant: false,
            },
        ),
    };
    let when_unsure = match &answer {
        Answer::Unsure { .. } => policy().map_or(WhenUnsure::default(), |p| p.oci_hook_when_unsure),
        _ => WhenUnsure::default(),
    };
    Ok(answer_runtime(
        &ctx.host.root,
        state.as_ref(),
        &answer,
        when_unsure,
    ))
}

/// `--root` is not a directory: nothing can be judged, and the failure policy's default
/// decides from the state's annotations alone (read through `process`, the process's own
/// system: there is no host).
pub fn run_without_root(process: &dyn System, root: &Root, why: &str) -> u8 {
    if let Some(code) = started_by_hand(process) {
        return code;
    }
    let state = read_state(process, STDIN_WAIT)
        .ok()
        .and_then(|b| oci::parse_state(&b).ok());
    let meant = state
        .as_ref()
        .is_some_and(|s| Marks::of(&s.annotations).any());
    let answer = Answer::Unsure {
        reason: why.to_string(),
        meant,
    };
    answer_runtime(root, state.as_ref(), &answer, WhenUnsure::default())
}

/// The container, as lines name it.
fn container(state: Option<&oci::State>) -> String {
    match state.map(|s| s.id.as_str()).filter(|id| !id.is_empty()) {
        Some(id) => format!("container {}", escape_control(id)),
        None => "a container".to_string(),
    }
}

/// Says the answer where people read it (stderr, the system log), counts it, and returns the
/// exit code.
fn answer_runtime(
    root: &Root,
    state: Option<&oci::State>,
    answer: &Answer,
    when_unsure: WhenUnsure,
) -> u8 {
    let who = container(state);
    let Some(said) = container::lines(answer, &who, when_unsure) else {
        return super::exit::READY;
    };
    gate_voice::tell(root, &said, |_| true);
    if said.refused {
        REFUSE
    } else {
        super::exit::READY
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::{Answer as Said, Call, Fake};

    /// A fake whose stdin gives `reads` in turn, then `last` for good.
    fn stdin(reads: Vec<Result<StdinRead, String>>, last: StdinRead) -> Fake {
        let mut reads = reads.into_iter();
        Fake::new().on(move |call| match call {
            Call::ReadStdin { .. } => Some(Said::Stdin(
                reads.next().unwrap_or_else(|| Ok(last.clone())),
            )),
            _ => None,
        })
    }

    fn bytes(s: &str) -> Result<StdinRead, String> {
        Ok(StdinRead::Bytes(s.as_bytes().to_vec()))
    }

    #[test]
    fn on_a_terminal_the_hook_says_what_it_expects_and_reads_nothing() {
        let terminal = Fake::new().on(|call| match call {
            Call::StdinIsTerminal => Some(Said::IsTerminal(true)),
            _ => None,
        });
        assert_eq!(started_by_hand(&terminal), Some(super::super::exit::ERROR));
        assert_eq!(terminal.calls(), ["is stdin a terminal"]);
        assert_eq!(started_by_hand(&Fake::new()), None);
    }

    #[test]
    fn the_state_is_read_to_its_first_whole_value_on_a_stdin_never_closed() {
        let fake = stdin(
            vec![
                bytes("{\"ociVersion\":\"1.0.2\","),
                bytes("\"id\":\"c1\"}\n{\"more\""),
            ],
            StdinRead::Waited,
        );
        let state = read_state(&fake, STDIN_WAIT).unwrap();
        assert_eq!(state, b"{\"ociVersion\":\"1.0.2\",\"id\":\"c1\"}");
        assert_eq!(
            fake.calls(),
            [
                "read stdin (at most 10000 ms)",
                "read stdin (at most 10000 ms)"
            ]
        );
        // Closed after a whole value: the value.
        let fake = stdin(vec![bytes("{\"id\":\"c2\"}")], StdinRead::End);
        assert_eq!(read_state(&fake, STDIN_WAIT).unwrap(), b"{\"id\":\"c2\"}");
    }

    #[test]
    fn a_stdin_that_brings_no_whole_state_in_time_is_refused_not_waited_on() {
        let fake = stdin(vec![bytes("{\"id\":")], StdinRead::Waited);
        let e = read_state(&fake, STDIN_WAIT).unwrap_err();
        assert_eq!(
            e,
            "no whole container state on stdin within 10 s (6 bytes read)"
        );
        let fake = stdin(vec![Err("EIO".into())], StdinRead::End);
        assert_eq!(
            read_state(&fake, STDIN_WAIT).unwrap_err(),
            "cannot read the container state on stdin: EIO"
        );
        // Endless bytes on a clock that stands still: bounded by size, not by time.
        let fake = stdin(Vec::new(), StdinRead::Bytes(vec![b' '; 64 * 1024]));
        let e = read_state(&fake, STDIN_WAIT).unwrap_err();
        assert!(e.contains("is larger than"), "{e}");
    }
}
