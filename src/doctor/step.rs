//! A step of the remediation plan, and the [`Action`] that `nfs-gds provision --apply` may run
//! for it.

use serde::Serialize;

use crate::doctor::stack::Family;

/// A step `provision --apply` may run by itself: idempotent, and never disruptive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Action {
    /// `modprobe NAME`.
    LoadModule { module: String },
    /// Rebuild and reinstall a DKMS module for one kernel.
    DkmsRebuild {
        module: String,
        version: String,
        kernel: String,
    },
    /// `depmod -a KERNEL`.
    Depmod { kernel: String },
    /// Regenerate the initramfs for one kernel.
    UpdateInitramfs { family: Family, kernel: String },
    /// `modprobe -r rpcrdma && modprobe rpcrdma`, only while nothing uses it.
    ReloadRpcrdma,
}

impl Action {
    /// The commands the action runs, as `(program, args)`.
    pub fn commands(&self) -> Vec<(String, Vec<String>)> {
        let c = |p: &str, a: &[&str]| (p.to_string(), a.iter().map(|s| s.to_string()).collect());
        match self {
            Action::LoadModule { module } => vec![c("modprobe", &[module])],
            Action::DkmsRebuild {
                module,
                version,
                kernel,
            } => {
                let mv = format!("{module}/{version}");
                vec![
                    c("dkms", &["remove", &mv, "-k", kernel]),
                    c("dkms", &["install", &mv, "-k", kernel, "--force"]),
                ]
            }
            Action::Depmod { kernel } => vec![c("depmod", &["-a", kernel])],
            Action::UpdateInitramfs { family, kernel } => match family {
                Family::Debian => vec![c("update-initramfs", &["-u", "-k", kernel])],
                _ => vec![c("dracut", &["-f", "--kver", kernel])],
            },
            Action::ReloadRpcrdma => vec![
                c("modprobe", &["-r", "rpcrdma"]),
                c("modprobe", &["rpcrdma"]),
            ],
        }
    }

    pub fn command_lines(&self) -> Vec<String> {
        self.commands()
            .into_iter()
            .map(|(p, a)| std::iter::once(p).chain(a).collect::<Vec<_>>().join(" "))
            .collect()
    }
}

/// One step of the plan. A step without an [`Action`] cannot be automated (it needs a reboot, a
/// package choice or a cluster change); the JSON says so as `"manual": true`, derived from the
/// action so the two cannot disagree.
#[derive(Debug, Clone)]
pub struct Step {
    pub title: String,
    /// Why this step is needed, tied to what doctor saw.
    pub why: String,
    /// Commands to run, in order (shell syntax, for people).
    pub commands: Vec<String>,
    /// Set when `provision --apply` may run it.
    pub action: Option<Action>,
}

impl Serialize for Step {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = ser.serialize_struct("Step", 5)?;
        st.serialize_field("title", &self.title)?;
        st.serialize_field("why", &self.why)?;
        st.serialize_field("commands", &self.commands)?;
        if let Some(action) = &self.action {
            st.serialize_field("action", action)?;
        } else {
            st.skip_field("action")?;
        }
        st.serialize_field("manual", &self.is_manual())?;
        st.end()
    }
}

impl Step {
    /// No `provision --apply` can run it.
    pub fn is_manual(&self) -> bool {
        self.action.is_none()
    }

    pub fn manual(title: impl Into<String>, why: impl Into<String>, commands: Vec<String>) -> Self {
        Step {
            title: title.into(),
            why: why.into(),
            commands,
            action: None,
        }
    }

    pub fn auto(title: impl Into<String>, why: impl Into<String>, action: Action) -> Self {
        Step {
            title: title.into(),
            why: why.into(),
            commands: action.command_lines(),
            action: Some(action),
        }
    }
}
