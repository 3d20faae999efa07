//! The command line as clap parses it: the global options and one variant per command.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use super::version::LONG_VERSION;
use super::{
    agent, check, collect, color, completions, doctor, inspect_module, lint, mount_helper, nri,
    oci_hook, policy, provision, slurm, verify, watch,
};

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
