//! What every command runs with: the host (its root, its system, the node context), the policy
//! file named, and the text style; and the error a command ends with.

use std::path::PathBuf;

use super::host::Host;
use crate::checks::render::TextStyle;

/// What a command ends with when it could not do its job (exit 2).
pub type CmdError = Box<dyn std::error::Error>;

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
}
