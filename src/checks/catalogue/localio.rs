//! `localio`: NFS LOCALIO cannot carry a GDS mount past rpcrdma. With `CONFIG_NFS_LOCALIO`
//! (Linux 6.12+) a mount of an nfsd on this host bypasses RPC and XDR: its mountstats still say
//! `xprt: rdma`, but no byte crosses rpcrdma, so nothing is GPU-direct whatever the transport
//! checks see. Where the kernel has LOCALIO on, this warns when an NFS server the client talks to
//! is one of this host's addresses, or when an nfsd runs here in any network namespace (a
//! hyper-converged node, a pod talking to an in-cluster nfsd). Advisory.

use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Level};
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("localio");

pub static CHECK: Check = Check {
    id: ID,
    doc: "NFS LOCALIO (`CONFIG_NFS_LOCALIO`, Linux 6.12+) cannot bypass RPC for a GDS mount: where the kernel has it on, no NFS server the client uses is this host and no nfsd runs here in any network namespace (such a mount shows `xprt: rdma` yet never reaches rpcrdma) (advisory)",
    scope: Scope::Node(run),
    default_level: Level::Warn,
    waitable: false,
};

const REMEDY: &str = "mount GDS data from an nfsd on another host, or turn LOCALIO off for the NFS client (`options nfs localio_enabled=N` in /etc/modprobe.d, then reload nfs or reboot): a LOCALIO mount is never GPU-direct";

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let l = &facts.localio;
    let config = l.config.clone().unwrap_or_default();
    match l.built {
        None => {
            return CheckResult::skip(
                id,
                "no kernel configuration to read (/boot/config-<release>, /proc/config.gz)",
            )
        }
        Some(false) => {
            return CheckResult::pass(
                id,
                format!("the kernel has no NFS LOCALIO ({})", l.why_not_built()),
            )
            .with("configuration", config)
        }
        Some(true) if !l.possible() => {
            return CheckResult::pass(
                id,
                "the kernel has NFS LOCALIO, turned off (nfs.localio_enabled=N)",
            )
            .with("configuration", config)
        }
        Some(true) => {}
    }
    let local: Vec<String> = facts
        .io_paths
        .servers
        .iter()
        .flatten()
        .filter(|s| l.is_local(s.server.address))
        .map(|s| format!("{} ({})", s.server.hostname, s.server.address))
        .collect();
    if !local.is_empty() {
        return CheckResult::warn(
            id,
            format!(
                "NFS LOCALIO is on and the client uses an NFS server on this host ({}): its mounts bypass RPC, so they are not GPU-direct whatever `xprt:` says",
                local.join(", ")
            ),
        )
        .with("configuration", config)
        .with("local servers", local.join(", "))
        .remedy(REMEDY);
    }
    if let Some(nfsd) = &l.nfsd {
        return CheckResult::warn(
            id,
            "NFS LOCALIO is on and an nfsd runs on this host: a mount of it (any of this host's addresses, or from a container's network namespace) bypasses RPC and is not GPU-direct whatever `xprt:` says",
        )
        .with("configuration", config)
        .with("nfsd", nfsd.clone())
        .remedy(REMEDY);
    }
    CheckResult::pass(
        id,
        "NFS LOCALIO is on, but no nfsd runs on this host and no NFS server in use is this host",
    )
    .with("configuration", config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{says, seen};
    use crate::checks::Status;
    use crate::host::modules::localio::Localio;
    use crate::host::platform::io_path::{IoPaths, NfsServer, ServerPath};

    fn node(localio: Localio, server: Option<&str>) -> HostFacts {
        HostFacts::builder()
            .with(|f| {
                f.localio = localio;
                f.io_paths = IoPaths {
                    servers: server.map(|a| {
                        vec![ServerPath {
                            server: NfsServer {
                                version: "v4".into(),
                                address: a.parse().unwrap(),
                                port: 20049,
                                hostname: "filer".into(),
                            },
                            route: None,
                            net: None,
                            nic: None,
                            gpus: vec![],
                        }]
                    }),
                }
            })
            .build()
    }

    fn on() -> Localio {
        Localio {
            built: Some(true),
            config: Some("/boot/config-6.12.30-amd64".into()),
            enabled_param: None,
            addresses: vec!["10.0.2.15".parse().unwrap()],
            ..Localio::default()
        }
    }

    #[test]
    fn a_local_server_or_a_local_nfsd_warns_where_localio_is_on() {
        let r = run(&node(on(), Some("10.0.2.15")));
        says(
            &r,
            Status::Warn,
            &["NFS server on this host (filer (10.0.2.15))", "bypass RPC"],
        );
        assert_eq!(seen(&r, "configuration"), "/boot/config-6.12.30-amd64");
        let mut nfsd = on();
        nfsd.nfsd = Some("/proc/fs/nfsd/threads: 8".into());
        says(
            &run(&node(nfsd, Some("10.0.9.9"))),
            Status::Warn,
            &["an nfsd runs on this host"],
        );
        says(
            &run(&node(on(), Some("10.0.9.9"))),
            Status::Pass,
            &["no nfsd runs"],
        );
    }

    #[test]
    fn without_localio_or_with_it_turned_off_nothing_bypasses_rpc() {
        let mut off = on();
        off.built = Some(false);
        says(
            &run(&node(off, Some("10.0.2.15"))),
            Status::Pass,
            &["no NFS LOCALIO"],
        );
        let mut param = on();
        param.enabled_param = Some(false);
        says(
            &run(&node(param, Some("10.0.2.15"))),
            Status::Pass,
            &["turned off"],
        );
        says(&run(&node(Localio::default(), None)), Status::Skip, &[]);
    }
}
