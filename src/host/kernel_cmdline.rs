//! The kernel command line as the kernel splits it: the words before a bare `--` are the
//! kernel's own parameters; those after it are handed to init, and the kernel never reads them.

/// The kernel's own words of a command line, double quotes taken off, up to a bare `--`.
pub fn kernel_words(cmdline: &str) -> impl Iterator<Item = &str> {
    cmdline
        .split_whitespace()
        .map(|w| w.trim_matches('"'))
        .take_while(|w| *w != "--")
}

/// Whether the command line carries the bare flag `word` as a kernel parameter.
pub fn has_kernel_flag(cmdline: &str, word: &str) -> bool {
    kernel_words(cmdline).any(|w| w == word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_after_dashes_belong_to_init() {
        let line = "ro \"quiet\" iommu=pt -- nomodule iommu=off";
        assert_eq!(
            kernel_words(line).collect::<Vec<_>>(),
            ["ro", "quiet", "iommu=pt"]
        );
        assert!(has_kernel_flag("ro nomodule", "nomodule"));
        assert!(!has_kernel_flag("ro -- nomodule", "nomodule"));
    }
}
