//! What a command found, and the one place that shows it: a command returns its report, and
//! [`show`] prints it as text or as one JSON document and maps it to the exit code. A closed
//! stdout goes back to [`super::run`] as the write error, which ends the process by SIGPIPE.

use crate::checks::render::{self, TextStyle};

use super::{exit, CmdError};

/// A command's finding, as `cli` shows it.
pub trait Report {
    /// The text report, every line ending in a newline.
    fn text(&self, style: TextStyle) -> String;
    /// The `--json` document, pretty-printed, ending in a newline.
    fn json(&self) -> Result<String, CmdError>;
    /// The exit code it stands for.
    fn exit_code(&self) -> u8;
}

/// Prints `report` as JSON (`json`) or text, and returns its exit code.
pub fn show(report: &dyn Report, json: bool, style: TextStyle) -> Result<u8, CmdError> {
    if json {
        out!("{}", report.json()?);
    } else {
        out!("{}", report.text(style));
    }
    Ok(report.exit_code())
}

/// A judged report of checks (`check`, `verify`): the verdict line and a line per check, or the
/// document of `schemas/check.schema.json`; 0 ready, 1 not ready.
impl Report for crate::checks::Report {
    fn text(&self, style: TextStyle) -> String {
        render::text(self, style)
    }

    fn json(&self) -> Result<String, CmdError> {
        Ok(render::json(self))
    }

    fn exit_code(&self) -> u8 {
        exit::of(self.verdict)
    }
}
