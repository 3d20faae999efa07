//! A validated mount request: what mount(8) asked for, checked and with its options rebuilt.

use std::path::{Component, Path, PathBuf};

use super::args::HelperArgs;
use super::mounter::MountCall;
use super::options::{self, OptionError, Rebuilt};
use crate::nfs::OptionDefaults;
use crate::nfs::{NfsSource, SourceError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountRequest {
    /// The source exactly as given.
    pub spec: String,
    pub source: NfsSource,
    /// The mount point, absolute and without `.`/trailing-slash noise.
    pub target: PathBuf,
    pub options: Rebuilt,
    pub sloppy: bool,
    pub fake: bool,
    pub no_mtab: bool,
    pub verbose: u8,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("mount source is not valid UTF-8")]
    SpecNotText,
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Option(#[from] OptionError),
}

/// `path` made absolute against `cwd`, with `.` and repeated or trailing slashes removed.
/// `..` is kept: only the filesystem can say what it means across symlinks.
pub fn absolute(path: &Path, cwd: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    joined
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

impl MountRequest {
    /// Validates the arguments; `cwd` anchors a relative DIR.
    pub fn new(
        args: &HelperArgs,
        defaults: OptionDefaults,
        cwd: &Path,
    ) -> Result<Self, RequestError> {
        let spec = args
            .spec
            .to_str()
            .ok_or(RequestError::SpecNotText)?
            .to_string();
        let source = NfsSource::parse(&spec)?;
        let options = options::rebuild(&args.option_string(), defaults, &source.server)?;
        Ok(MountRequest {
            spec,
            source,
            target: absolute(Path::new(&args.dir), cwd),
            options,
            sloppy: args.sloppy,
            fake: args.fake,
            no_mtab: args.no_mtab,
            verbose: args.verbose,
        })
    }

    /// What the mounter is asked to do.
    pub fn call(&self) -> MountCall {
        MountCall {
            spec: self.spec.clone(),
            source: self.source.clone(),
            target: self.target.clone(),
            options: self.options.option_string(),
            version: self.options.version,
            sloppy: self.sloppy,
            no_mtab: self.no_mtab,
            verbose: self.verbose > 0,
            shown_as: None,
        }
    }

    /// What the mounter is asked to do at the helper's staging point: the same mount on `point`,
    /// never recorded in utab (`-n`): mount(8) records DIR's entry itself once the helper
    /// succeeded, and a staging path must never appear there.
    pub fn staged_call(&self, point: &std::path::Path) -> MountCall {
        MountCall {
            target: point.to_owned(),
            no_mtab: true,
            shown_as: Some(self.target.clone()),
            ..self.call()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(spec: &str, dir: &str, opts: &str) -> HelperArgs {
        HelperArgs {
            spec: spec.into(),
            dir: dir.into(),
            options: vec![opts.to_string()],
            namespace: Some("4242".into()),
            verbose: 1,
            ..Default::default()
        }
    }

    #[test]
    fn a_request_carries_the_rebuilt_options_and_an_absolute_target() {
        let r = MountRequest::new(
            &args(
                "10.0.2.15:/export",
                "mnt//data/./",
                "rw,_netdev,gds_policy=warn",
            ),
            OptionDefaults::default(),
            Path::new("/srv"),
        )
        .unwrap();
        assert_eq!(r.target, Path::new("/srv/mnt/data"));
        let call = r.call();
        assert_eq!(call.options, "rw,vers=4.2,proto=rdma,port=20049");
        assert!(call.verbose);
        assert_eq!(call.spec, "10.0.2.15:/export");
    }

    #[test]
    fn bad_sources_and_options_are_request_errors() {
        let e = MountRequest::new(
            &args("srv", "/m", ""),
            OptionDefaults::default(),
            Path::new("/"),
        )
        .unwrap_err();
        assert!(matches!(e, RequestError::Source(_)));
        let e = MountRequest::new(
            &args("s:/x", "/m", "bg"),
            OptionDefaults::default(),
            Path::new("/"),
        )
        .unwrap_err();
        assert_eq!(
            e,
            RequestError::Option(OptionError::Background("bg".into()))
        );
    }

    #[test]
    fn dot_dot_is_left_to_the_filesystem() {
        assert_eq!(
            absolute(Path::new("/a/../b/"), Path::new("/")),
            Path::new("/a/../b")
        );
    }
}
