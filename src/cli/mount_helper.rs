//! The mount(8) helper persona: `mount.nfs-gds SPEC DIR [-sfnv] [-N NS] [-o OPTS]`, also reached
//! as `nfs-gds mount …`.
//!
//! Order matters: refuse setuid → parse (usage errors exit 1) → unless `-f`, refuse a caller
//! without CAP_SYS_ADMIN → load the policy (the caller's, read before switching namespace) → enter the
//! `-N` namespace before anything reads `/proc` → validate the request → choose the backend →
//! run the flow. Started by mount(8), the helper has no `PATH`, `HOME` or terminal; `--root` and
//! `--config` come from `NFS_GDS_ROOT` / `NFS_GDS_CONFIG` (mount(8) passes no such flags).

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

use clap::Args;

use super::context::Ctx;
use super::host::Host;
use crate::escape::escape_control;
use crate::host::io::programs as tools;
use crate::mount::args::{self, usage, Parsed};
use crate::mount::exit_code::{SUCCESS, SYSERR};
use crate::mount::flow::Helper;
use crate::mount::modprobe::Modprobe;
use crate::mount::privilege;
use crate::mount::request::MountRequest;
use crate::nfs::{ServerAddrs, ShownExport};
use crate::policy;

#[derive(Debug, Args)]
pub struct MountArgs {
    /// SPEC DIR and mount(8)'s flags, exactly as for mount.nfs-gds (see `nfs-gds mount -h`)
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "SPEC DIR [FLAGS]"
    )]
    pub args: Vec<OsString>,
}

/// Entry for argv\[0\] = `mount.nfs-gds`.
pub fn run_persona(argv: &[OsString]) -> u8 {
    // Never stopped by a failed write to stderr, not even by its first message.
    super::err_out::keep_going();
    let env = crate::host::io::env::Env::get();
    let host = match Host::open(env.root.as_deref()) {
        Ok(host) => host,
        Err(bad) => return fail(bad.message, crate::mount::exit_code::USAGE),
    };
    run_helper(
        argv.get(1..).unwrap_or(&[]),
        &host,
        env.config.as_deref(),
        0,
    )
}

/// Entry for `nfs-gds mount …`.
pub fn run(args: &MountArgs, ctx: &Ctx, verbose: u8) -> u8 {
    run_helper(&args.args, &ctx.host, ctx.config.as_deref(), verbose)
}

fn fail(message: impl std::fmt::Display, code: u8) -> u8 {
    errln!(
        "nfs-gds: {}",
        crate::escape::escape_control(&message.to_string())
    );
    code
}

fn run_helper(raw: &[OsString], host: &Host, config: Option<&Path>, verbose: u8) -> u8 {
    // Never stopped by a failed write to stderr: not between mount.nfs and the verdict on the
    // new mount, nor before.
    super::err_out::keep_going();
    let root = &host.root;
    // Before parsing: not even -h, -V or a usage message is answered setuid.
    if let Err(e) = privilege::refuse_setuid(host.system()) {
        return fail(&e, e.exit_code());
    }
    let a = match args::parse(raw) {
        Ok(Parsed::Run(a)) => a,
        Ok(Parsed::Help) => {
            let _ = writeln!(std::io::stdout(), "{}", usage());
            return SUCCESS;
        }
        Ok(Parsed::Version) => {
            let _ = writeln!(
                std::io::stdout(),
                "mount.nfs-gds (nfs-gds {})",
                super::version::LONG_VERSION
            );
            return SUCCESS;
        }
        Err(e) => {
            errln!(
                "nfs-gds: {}\n{}",
                crate::escape::escape_control(&e.to_string()),
                usage()
            );
            return crate::mount::exit_code::USAGE;
        }
    };
    super::logging::init_logging(
        a.verbose.max(verbose),
        super::color::enabled_here(
            super::color::ColorWhen::Auto,
            std::io::IsTerminal::is_terminal(&std::io::stderr()),
        ),
    );

    if let Err(e) = privilege::require(host.system(), !a.fake) {
        return fail(&e, e.exit_code());
    }

    let (policy_path, policy) = match policy::load_for(root, config, &host.trust()) {
        Ok(loaded) => loaded,
        Err(e) => return fail(e, crate::mount::exit_code::USAGE),
    };

    if let Some(ns) = a.namespace.as_deref() {
        let path = crate::mount::namespace::ns_path(ns);
        if let Err(e) = crate::mount::namespace::enter(host.system(), &path) {
            return fail(e, SYSERR);
        }
        tracing::info!("entered mount namespace {}", path.display());
    }

    let mut req = match MountRequest::new(&a, policy.options, host.cwd()) {
        Ok(r) => r,
        Err(e) => return fail(e, crate::mount::exit_code::USAGE),
    };
    // A port other than NFS/RDMA's own, from -o port= or the policy's [options]: the same
    // warning lint and policy check give, and the mount goes ahead.
    if !req.options.remount {
        if let Some(w) = crate::nfs::rdma_port_warning(req.options.port) {
            errln!("nfs-gds: WARNING: {w}");
        }
    }
    // mount(8) passes a canonical path already; a hand-typed one may hold symlinks, and
    // mountinfo shows the resolved path.
    req.target = host.mount_point(&req.target);
    // As mount.nfs would refuse it, before anything is loaded or planned: `-f` agrees with the
    // real run.
    if let Err(e) = crate::mount::target_path::check_mount_point(root, &req.target) {
        return fail(e, crate::mount::exit_code::FAIL);
    }
    let mount_policy = policy.for_mount(
        &req.target,
        ShownExport::written(&req.spec),
        &ServerAddrs::new(host.system()),
        req.options.policy,
        req.options.wait,
    );
    if let Some(i) = mount_policy.rule {
        tracing::info!(
            "policy: [[mount]] table {} of {} applies",
            i + 1,
            policy_path.display()
        );
    }

    let mut mounter = match host.mounter(mount_policy.backend) {
        Ok(m) => m,
        Err(e) => return fail(e, SYSERR),
    };
    // The chosen backend's own call (mount.nfs's command line, or mount(2)'s arguments), not
    // another backend's options.
    tracing::info!(
        "mount call: {} (options not passed on: {})",
        escape_control(&mounter.plan(&req.call())),
        if req.options.dropped.is_empty() {
            "none".to_string()
        } else {
            escape_control(&req.options.dropped.join(",")).into_owned()
        }
    );
    let modprobe = tools::find(root, "modprobe").map(|program| Modprobe { program });
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut out = stdout.lock();
    let mut err = stderr.lock();
    let mut helper = Helper::new(
        root,
        mounter.as_mut(),
        modprobe.as_ref(),
        host.system(),
        &mut out,
        &mut err,
    );
    helper.run(&req, &mount_policy)
}
