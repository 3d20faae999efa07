//! Slurm: what nfs-gds's verdict means for a Slurm node and job, as pure decisions the command
//! (`nfs-gds slurm`) carries out.
//!
//! - [`reason`]: the drain reason slurmctld keeps and tools parse (`nfs-gds: CHECK SUBJECT`);
//! - [`health`]: the node's health from its verdicts (not applicable, ready, warned, not ready);
//! - [`decide`]: what the health check does with slurmctld — drain, resume, keep, nothing — from
//!   the health, whether nfs-gds drained this node ([`state`]) and what `scontrol show node`
//!   said ([`scontrol`]), asked only when the answer matters;
//! - [`constraints`]: whether a job's `--constraint` asks for the GDS feature (the prolog).

pub mod constraints;
pub mod decide;
pub mod health;
pub mod reason;
pub mod scontrol;
pub mod state;
