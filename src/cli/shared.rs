//! The flags several commands share, each declared once here and flattened into every command
//! that takes it: `--json` means one thing with one help line wherever it is accepted (and an
//! error under it is a JSON object too, see [`super::run`]), and so does `--probe`. A test
//! (`tests/flags_once.rs`) fails when a long flag is declared in two places.

use clap::Args;

use super::report::Format;

/// How a command prints its report.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct OutputArgs {
    /// Print the report as one JSON document (schemas/), errors as {"command", "error"}
    #[arg(long)]
    pub json: bool,
}

impl OutputArgs {
    /// Text, or JSON under `--json`.
    pub fn format(self) -> Format {
        Format::from(self.json)
    }
}

/// Whether the node checks include the live registration probe.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct ProbeArgs {
    /// Also run the live registration probe: open /dev/nvidia-fs0 and see whether rpcrdma
    /// registers its hooks with nvidia-fs (needs the device; the close may block about 1 s)
    #[arg(long)]
    pub probe: bool,
}
