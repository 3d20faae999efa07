//! The command outputs a collected bundle keeps: below a root other than `/` commands are never
//! run; their outputs are read from `<root>/`[`RECORDED_DIR`]`/<key>`, where the key is the
//! command line with spaces turned into `_` and `/` into `%` (see [`record_key`]). `collect`
//! writes them from its recording of the system; the tree's system reads them back.

use super::root::Root;
use crate::system::Output;

/// Where a bundle keeps captured command outputs, relative to its root.
pub const RECORDED_DIR: &str = "nfs-gds-commands";

/// The file name under which a command's output is recorded.
pub fn record_key(program: &str, args: &[&str]) -> String {
    std::iter::once(program)
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ")
        .replace(' ', "_")
        .replace('/', "%")
}

/// The recorded output of `program args` below `root`: a successful run printing what was
/// kept, or [`Output::Missing`] when nothing was.
pub fn read(root: &Root, program: &str, args: &[&str]) -> Output {
    let key = record_key(program, args);
    match root.read_text_lossy(format!("{RECORDED_DIR}/{key}")) {
        Ok(Some(stdout)) => Output::Ran {
            code: Some(0),
            stdout,
            stderr: String::new(),
        },
        _ => Output::Missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_file_names() {
        assert_eq!(record_key("ofed_info", &["-s"]), "ofed_info_-s");
        assert_eq!(
            record_key("dpkg", &["-S", "/lib/modules/6.1/x.ko"]),
            "dpkg_-S_%lib%modules%6.1%x.ko"
        );
    }

    #[test]
    fn a_bundle_answers_what_it_recorded() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(RECORDED_DIR)).unwrap();
        std::fs::write(
            dir.path().join(RECORDED_DIR).join("ofed_info_-s"),
            "OFED-internal-24.10-1.1.4.0.200:\n",
        )
        .unwrap();
        let root = Root::new(dir.path());
        assert_eq!(
            read(&root, "ofed_info", &["-s"]).ok_stdout(),
            Some("OFED-internal-24.10-1.1.4.0.200:\n")
        );
        assert_eq!(read(&root, "dkms", &["status"]), Output::Missing);
    }
}
