//! What a stack answers for one kind of fix: its steps, and whether they rebuild module files.

use crate::doctor::step::Step;

/// Steps for one kind of fix, and whether they rebuild module files (which then need a fresh
/// module index, an initramfs and a reload).
#[derive(Debug, Default)]
pub struct Remedy {
    pub steps: Vec<Step>,
    pub rebuilt: bool,
}

impl Remedy {
    pub fn manual(step: Step) -> Self {
        Remedy {
            steps: vec![step],
            rebuilt: false,
        }
    }

    pub fn none() -> Self {
        Remedy::default()
    }
}
