//! The table a mount's transport trap is judged against, narrowed to what can change its
//! verdict: the NFSv4 mounts *not* over RDMA that may be of its server (the trap fails or warns
//! only on those; the checks leave the judged mount itself out by its id).
//!
//! A node can carry thousands of NFS mounts, often all of one server, and the trap looks at
//! every other mount of a mount's server: run over the whole table for each mount, that is
//! quadratic, with each pair re-parsing server addresses. Here each suspect's server is parsed
//! once, and the narrowed table is built once per server and shared by all its mounts. The
//! verdicts are the same; what a narrowed table leaves out is the trap's count of the server's
//! other RDMA mounts, which is evidence, not judgement. The agent and doctor both judge every
//! mount through it.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::host::mounts::{Mount, MountTable};
use crate::nfs::{Sameness, ServerHost};

/// A non-RDMA NFSv4 mount, with its server parsed once.
#[derive(Debug)]
struct Suspect<'a> {
    mount: &'a Mount,
    server: ServerHost,
    addr: Option<IpAddr>,
}

/// The NFSv4 mounts not over RDMA, and for each server the table of those the trap cannot tell
/// apart from it: what a mount of that server is judged against.
#[derive(Debug)]
pub struct Suspects<'a> {
    all: Vec<Suspect<'a>>,
    by_server: HashMap<String, MountTable>,
    none: MountTable,
}

impl<'a> Suspects<'a> {
    pub fn new(table: &'a MountTable) -> Self {
        let all = table
            .mounts
            .iter()
            .filter(|m| m.is_nfs4() && m.runs_over_rdma() == Some(false))
            .filter_map(|m| {
                let (server, addr) = m.server()?;
                Some(Suspect {
                    mount: m,
                    server,
                    addr,
                })
            })
            .collect();
        Suspects {
            all,
            by_server: HashMap::new(),
            none: MountTable::default(),
        }
    }

    /// The suspects that may be of `m`'s server, found once per server. `m` itself may be
    /// among them: the checks leave the judged mount out by its id.
    pub fn narrowed_for(&mut self, m: &Mount) -> &MountTable {
        if self.all.is_empty() {
            return &self.none;
        }
        let Some((server, _)) = m.server() else {
            return &self.none;
        };
        let all = &self.all;
        self.by_server
            .entry(server.to_string())
            .or_insert_with(|| MountTable {
                mounts: all
                    .iter()
                    .filter(|s| server.sameness(&s.server, s.addr) != Sameness::Different)
                    .map(|s| s.mount.clone())
                    .collect(),
            })
    }
}
