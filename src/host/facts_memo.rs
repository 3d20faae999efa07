//! The node facts of the last derivation, kept for as long as everything they were derived from
//! is as it was ([`Inputs`]): an agent that looks every minute re-derives them (module files
//! read and decompressed, indexes searched, kallsyms read) only after something it read changed
//! — a module file, an index, a configuration, a module loaded or unloaded — and otherwise
//! looks only at what it read: a `stat` of each file, the bytes of each small procfs and sysfs
//! file, each directory's names.

use std::path::PathBuf;

use super::facts::HostFacts;
use super::io::error::HostError;
use super::io::inputs::Inputs;
use super::io::root::Root;

/// The last node facts and the recording root they were derived through (whose record keeps
/// growing if a later step reads more through the facts' root).
#[derive(Debug, Default)]
pub struct FactsMemo {
    last: Option<(HostFacts, Root)>,
    /// Why the last [`FactsMemo::read`] derived the facts again (`None`: it did not).
    pub rederived_for: Option<Rederived>,
}

/// Why node facts were derived again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rederived {
    /// There were none yet.
    First,
    /// The first input found changed, relative to the root.
    Changed(PathBuf),
}

impl FactsMemo {
    /// The node facts below `root` (a root that is not recording): the last ones when none of
    /// their inputs changed, else derived again.
    pub fn read(&mut self, root: &Root) -> Result<&HostFacts, HostError> {
        self.rederived_for = match &self.last {
            None => Some(Rederived::First),
            Some((_, recording)) => recording
                .inputs()
                .changed(root)
                .map(|p| Rederived::Changed(p.to_owned())),
        };
        if let Some(why) = &self.rederived_for {
            tracing::debug!("deriving the node facts: {why:?}");
            self.last = None;
            let watching = root.watching();
            let facts = HostFacts::read(&watching)?;
            tracing::debug!("node facts derived from {} inputs", watching.inputs().len());
            self.last = Some((facts, watching));
        } else {
            tracing::debug!("node facts unchanged since the last pass");
        }
        Ok(&self.last.as_ref().expect("derived above").0)
    }

    /// What the kept facts were derived from.
    pub fn inputs(&self) -> Inputs {
        self.last
            .as_ref()
            .map(|(_, r)| r.inputs())
            .unwrap_or_default()
    }
}
