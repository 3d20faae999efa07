//! What a command found, and the one place that shows it: a command returns its report, and
//! [`show`] prints it as text, as one JSON document (or as Markdown, for doctor) and maps it to
//! the exit code. A closed stdout goes back to [`super::run`] as the write error, which ends the
//! process by SIGPIPE.

use crate::checks::render::{self, TextStyle};

use super::context::CmdError;
use super::exit;

/// A command's finding, as `cli` shows it.
pub trait Report {
    /// The text report, every line ending in a newline.
    fn text(&self, style: TextStyle) -> String;
    /// The `--json` document, pretty-printed, ending in a newline.
    fn json(&self) -> Result<String, CmdError>;
    /// The exit code it stands for.
    fn exit_code(&self) -> u8;
    /// The `--markdown` text, for the commands that take that flag.
    fn markdown(&self) -> Option<String> {
        None
    }
}

/// How a report is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Markdown,
}

impl From<bool> for Format {
    /// `--json` or text.
    fn from(json: bool) -> Self {
        if json {
            Format::Json
        } else {
            Format::Text
        }
    }
}

/// Prints `report` in `format`, and returns its exit code.
pub fn show(
    report: &dyn Report,
    format: impl Into<Format>,
    style: TextStyle,
) -> Result<u8, CmdError> {
    match format.into() {
        Format::Json => out!("{}", report.json()?),
        Format::Text => out!("{}", report.text(style)),
        Format::Markdown => match report.markdown() {
            Some(text) => out!("{text}"),
            None => return Err("this command has no Markdown report".into()),
        },
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

/// Doctor's diagnosis: text, the document of `schemas/doctor.schema.json`, or Markdown for a
/// ticket; 0 ready, 1 not ready.
impl Report for crate::doctor::Diagnosis {
    fn text(&self, style: TextStyle) -> String {
        crate::doctor::render::text(self, style)
    }

    fn json(&self) -> Result<String, CmdError> {
        Ok(format!("{}\n", serde_json::to_string_pretty(self)?))
    }

    fn exit_code(&self) -> u8 {
        exit::of(self.verdict)
    }

    fn markdown(&self) -> Option<String> {
        Some(crate::doctor::render::markdown(self))
    }
}
