//! The loaded modules: the lines of `/proc/modules`.

use serde::Serialize;

use crate::host::io::error::HostError;
use crate::host::io::root::Root;

/// One line of `/proc/modules`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadedModule {
    pub name: String,
    pub size: u64,
    pub refcount: Option<u32>,
    pub used_by: Vec<String>,
    pub state: String,
}

/// Parses `/proc/modules`: `name size refcount deps state address [taint]`.
/// Lines that do not have that shape are skipped.
pub fn parse_proc_modules(text: &str) -> Vec<LoadedModule> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 5 {
                return None;
            }
            let used_by = if f[3] == "-" {
                Vec::new()
            } else {
                f[3].split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            };
            Some(LoadedModule {
                name: f[0].to_string(),
                size: f[1].parse().ok()?,
                refcount: f[2].parse().ok(),
                used_by,
                state: f[4].to_string(),
            })
        })
        .collect()
}

/// `/proc/modules`. A stray non-UTF-8 byte garbles only its own line (no module name matches
/// it), so the list is read lossily rather than refused.
pub fn read_proc_modules(root: &Root) -> Result<Option<Vec<LoadedModule>>, HostError> {
    Ok(root
        .read_text_lossy("proc/modules")?
        .map(|t| parse_proc_modules(&t)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_modules_lines_parse() {
        let text = "rpcrdma 364544 5 - Live 0x0000000000000000\n\
                    sunrpc 692224 22 nfsd,rpcrdma,nfsv4, Live 0x0000000000000000\n\
                    nvidia_fs 262144 0 - Live 0x0000000000000000 (OE)\n\
                    garbage\n";
        let m = parse_proc_modules(text);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].name, "rpcrdma");
        assert_eq!(m[0].refcount, Some(5));
        assert!(m[0].used_by.is_empty());
        assert_eq!(m[1].used_by, vec!["nfsd", "rpcrdma", "nfsv4"]);
        assert_eq!(m[2].state, "Live");
    }
}
