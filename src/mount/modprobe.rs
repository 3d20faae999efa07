//! Loading rpcrdma before the checks, so the module that will carry the mount can be checked.
//!
//! The kernel would load rpcrdma itself at mount time (`request_module("rpcrdma")`), but only
//! then; loading it first lets the pre-checks see the loaded module's hooks and build.

use std::path::PathBuf;

use crate::system::System;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot run {}: {source}", program.display())]
    Spawn {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error("`{} {module}` failed ({status})", program.display())]
    Failed {
        program: PathBuf,
        module: String,
        status: std::process::ExitStatus,
    },
}

/// `modprobe MODULE`, by absolute path, run through the system.
#[derive(Debug, Clone)]
pub struct Modprobe {
    pub program: PathBuf,
}

impl Modprobe {
    /// The command that [`Modprobe::load`] runs, for messages and `-f`.
    pub fn plan(&self, module: &str) -> String {
        format!("{} {module}", self.program.display())
    }

    pub fn load(&self, system: &dyn System, module: &str) -> Result<(), LoadError> {
        let status = system
            .exec(&self.program, vec![module.into()])
            .map_err(|source| LoadError::Spawn {
                program: self.program.clone(),
                source,
            })?;
        if status.success() {
            Ok(())
        } else {
            Err(LoadError::Failed {
                program: self.program.clone(),
                module: module.to_string(),
                status,
            })
        }
    }
}
