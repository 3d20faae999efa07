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

use std::io::{IsTerminal, Read};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use clap::Args;

use super::context::{CmdError, Ctx};
use super::gate_voice;
use crate::escape::escape_control;
use crate::host::io::reader::FileKind;
use crate::host::Root;
use crate::judge::container::{self, Answer, Container, Inputs, Noted};
use crate::oci::{self, Marks, MAX_STATE_BYTES};
use crate::policy::WhenUnsure;

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

/// Reads the state from stdin: at most [`MAX_STATE_BYTES`], within [`STDIN_WAIT`], and no further
/// than the end of the first whole JSON value (a runtime need not close stdin). At the deadline,
/// what was read is the state if it parses. In this thread, waiting in poll(2): a reader thread
/// would cost a scheduler round trip per container start, tens of milliseconds on a loaded node.
/// Stdin is a terminal: says what the hook expects there, and gives the exit code (2).
fn started_by_hand() -> Option<u8> {
    if !std::io::stdin().is_terminal() {
        return None;
    }
    errln!("{NOT_A_RUNTIME}");
    Some(super::exit::ERROR)
}

fn read_stdin() -> Result<Vec<u8>, String> {
    let input = std::io::stdin();
    read_state(input.as_fd(), &mut input.lock(), STDIN_WAIT)
}

fn read_state(
    fd: std::os::fd::BorrowedFd<'_>,
    stdin: &mut impl Read,
    wait: Duration,
) -> Result<Vec<u8>, String> {
    use nix::poll::{poll, PollFd, PollFlags};
    let deadline = Instant::now() + wait;
    let mut bytes = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return match oci::whole_value(&bytes) {
                oci::Whole::Value(end) => Ok(bytes[..end].to_vec()),
                _ => Err(format!(
                    "no whole container state on stdin within {} s ({} bytes read)",
                    wait.as_secs(),
                    bytes.len()
                )),
            };
        }
        let ms = u16::try_from(left.as_millis()).unwrap_or(u16::MAX);
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        match poll(&mut fds, ms) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => {}
            Err(e) => return Err(format!("cannot read the container state on stdin: {e}")),
        }
        match stdin.read(&mut buf) {
            Ok(0) => return Ok(bytes),
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("cannot read the container state on stdin: {e}")),
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
    if let Some(code) = started_by_hand() {
        return Ok(code);
    }
    let policy = || ctx.policy_with_path().map(|(_, p)| p);
    let (state, answer) =
        match read_stdin().and_then(|b| oci::parse_state(&b).map_err(|e| e.to_string())) {
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
/// decides from the state's annotations alone.
pub fn run_without_root(root: &Root, why: &str) -> u8 {
    if let Some(code) = started_by_hand() {
        return code;
    }
    let state = read_stdin().ok().and_then(|b| oci::parse_state(&b).ok());
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
