//! The user-space side: `cufile.json` and `libcufile_rdma.so`.
//!
//! Kernel NFS mounts never use `libcufile_rdma.so` (it serves cuFile's user-space RDMA), so doctor
//! only reports it to stop anyone chasing it. `cufile.json`'s `properties.allow_compat_mode`
//! (default `true`) is what lets applications fall back to POSIX I/O silently; the file is JSON
//! with `//` and `/* */` comments, which are stripped before parsing.

use serde::Serialize;

use crate::host::platform::cufile_json::remove_trailing_commas;
pub use crate::host::platform::cufile_json::strip_json_comments;
use crate::host::{HostError, Root};

#[derive(Debug, Clone, Serialize)]
pub struct CufileConfig {
    pub path: String,
    /// `properties.allow_compat_mode`; `None` when not set (the library's default is `true`).
    pub allow_compat_mode: Option<bool>,
    /// Set when the file is not valid JSON even with comments removed.
    pub parse_error: Option<String>,
}

impl CufileConfig {
    /// Whether applications may silently fall back (explicit `true`, or unset).
    pub fn compat_allowed(&self) -> bool {
        self.allow_compat_mode.unwrap_or(true)
    }
}

pub fn parse_cufile(path: &str, text: &str) -> CufileConfig {
    let cleaned = strip_json_comments(text);
    // cufile.json as shipped tolerates trailing commas in some releases; remove ",}" / ",]".
    let cleaned = remove_trailing_commas(&cleaned);
    match serde_json::from_str::<serde_json::Value>(&cleaned) {
        Ok(v) => CufileConfig {
            path: path.to_string(),
            allow_compat_mode: v
                .pointer("/properties/allow_compat_mode")
                .and_then(|b| b.as_bool()),
            parse_error: None,
        },
        Err(e) => CufileConfig {
            path: path.to_string(),
            allow_compat_mode: None,
            parse_error: Some(e.to_string()),
        },
    }
}

/// Reads the cufile configuration: the file `CUFILE_ENV_PATH_JSON` names on this machine
/// (`override_path`), else `/etc/cufile.json`.
pub fn read_cufile(
    root: &Root,
    override_path: Option<&str>,
) -> Result<Option<CufileConfig>, HostError> {
    let path = override_path.unwrap_or("/etc/cufile.json").to_string();
    let bytes = match root.read_bytes(&path) {
        Ok(b) => b,
        // That one file unreadable, not the whole diagnosis.
        Err(e) => {
            return Ok(Some(CufileConfig {
                path,
                allow_compat_mode: None,
                parse_error: Some(e.to_string()),
            }))
        }
    };
    Ok(bytes.map(|b| match String::from_utf8(b) {
        Ok(text) => parse_cufile(&path, &text),
        // That one file unreadable, not the whole diagnosis.
        Err(e) => CufileConfig {
            path: path.clone(),
            allow_compat_mode: None,
            parse_error: Some(format!("not valid UTF-8 text: {e}")),
        },
    }))
}

/// Where `libcufile_rdma.so*` is installed, if anywhere (first match).
pub fn find_libcufile_rdma(root: &Root) -> Result<Option<String>, HostError> {
    let mut dirs = vec![
        "/usr/lib/x86_64-linux-gnu".to_string(),
        "/usr/lib/aarch64-linux-gnu".to_string(),
        "/usr/lib64".to_string(),
        "/usr/local/cuda/lib64".to_string(),
    ];
    for cuda in root.list_dir("usr/local")?.unwrap_or_default() {
        if cuda.starts_with("cuda") {
            dirs.push(format!("/usr/local/{cuda}/lib64"));
            for t in root
                .list_dir(format!("usr/local/{cuda}/targets"))?
                .unwrap_or_default()
            {
                dirs.push(format!("/usr/local/{cuda}/targets/{t}/lib"));
            }
        }
    }
    for d in dirs {
        if let Some(names) = root.list_dir(&d)? {
            if let Some(n) = names.iter().find(|n| n.starts_with("libcufile_rdma.so")) {
                return Ok(Some(format!("{d}/{n}")));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_are_tolerated() {
        let text = r#"{
            // a comment with "quotes"
            "logging": { "dir": "/var/log//x", "level": "ERROR" },
            /* block
               comment */
            "properties": {
                "allow_compat_mode": false, // inline
                "rdma_dev_addr_list": [ ],
            },
        }"#;
        let c = parse_cufile("/etc/cufile.json", text);
        assert_eq!(c.parse_error, None);
        assert_eq!(c.allow_compat_mode, Some(false));
        assert!(!c.compat_allowed());
    }

    #[test]
    fn unset_means_allowed() {
        let c = parse_cufile("/etc/cufile.json", r#"{"properties": {}}"#);
        assert_eq!(c.allow_compat_mode, None);
        assert!(c.compat_allowed());
    }

    #[test]
    fn broken_json_is_reported() {
        let c = parse_cufile("/etc/cufile.json", "{ nope");
        assert!(c.parse_error.is_some());
    }
}
