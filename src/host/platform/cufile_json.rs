//! `cufile.json` as cuFile reads it — JSON with `//` and `/* */` comments — and a lint of what
//! decides whether GDS or the silent POSIX fallback is used.
//!
//! The known keys are those of the schema NVIDIA ships in the GDS Best Practices guide
//! (`/etc/cufile.json`): a key outside it is almost always a typo, which cuFile ignores without
//! a word. `fs.nfs.mount_table` only parses as `{ "/mnt/x": { "rdma_dev_addr_list": [...] } }`,
//! and `rdma_dev_addr_list` entries must be this node's own addresses.
//!
//! GDS 1.17–1.20 added keys the lint knows: `block.{nvme,raid1,raid10}.use_pci_p2pdma`,
//! `sparse.p2p_compat_enable`, `properties.gpu_bounce_buffer_slab_config`,
//! `properties.vanilla_posix_mode` (POSIX I/O when GDS libraries are missing: as silent as compat
//! mode), and moved cuObject's settings (`rdma_transport_type`) to their own `/etc/cuobj.json`.
//! The P2PDMA switches are for NVMe only: for NFS they are set in vain, and the lint lists them
//! apart ([`CufileLint::nfs_irrelevant`]) so doctor can say so.

use serde::Serialize;
use serde_json::Value;

use crate::host::io::error::HostError;
use crate::host::io::root::Root;

const TOP: &[&str] = &[
    "logging",
    "profile",
    "execution",
    "properties",
    "fs",
    "block",
    "denylist",
    "miscellaneous",
    "sparse",
];
const PROPERTIES: &[&str] = &[
    "gpu_bounce_buffer_slab_config",
    "max_direct_io_size_kb",
    "max_device_cache_size_kb",
    "per_buffer_cache_size_kb",
    "max_device_pinned_mem_size_kb",
    "posix_pool_slab_size_kb",
    "posix_pool_slab_count",
    "use_poll_mode",
    "poll_mode_max_size_kb",
    "use_pci_p2pdma",
    "allow_compat_mode",
    "force_compat_mode",
    "vanilla_posix_mode",
    "gds_rdma_write_support",
    "io_batchsize",
    "io_priority",
    "rdma_dev_addr_list",
    "rdma_load_balancing_policy",
    "rdma_dc_key",
    "rdma_access_mask",
    "rdma_dynamic_routing",
    "rdma_dynamic_routing_order",
];
const FS_NFS: &[&str] = &["use_pci_p2pdma", "rdma_dev_addr_list", "mount_table"];
/// `block.*` (GDS 1.19): each a `{ "use_pci_p2pdma": bool }`.
const BLOCK: &[&str] = &["nvme", "raid1", "raid10"];
const SPARSE: &[&str] = &["p2p_compat_enable"];
/// cuObject's settings, in `/etc/cuobj.json` since GDS 1.20.
const CUOBJ_ONLY: &[&str] = &["rdma_transport_type"];

/// What the lint found in one cufile.json.
#[derive(Debug, Clone, Serialize)]
pub struct CufileLint {
    pub path: String,
    /// Not readable, or not valid JSON even with comments removed.
    pub parse_error: Option<String>,
    /// `properties.allow_compat_mode`; `None` when unset (cuFile's default is `true`).
    pub allow_compat_mode: Option<bool>,
    /// Each mistake, naming the key.
    pub problems: Vec<String>,
    /// P2PDMA switches that are on (`use_pci_p2pdma` anywhere): NVMe only, nothing for NFS.
    #[serde(default)]
    pub nfs_irrelevant: Vec<String>,
}

impl CufileLint {
    pub fn compat_allowed(&self) -> bool {
        self.allow_compat_mode.unwrap_or(true)
    }
}

/// Removes `//` and `/* */` comments outside strings.
pub fn strip_json_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut prev = ' ';
                for n in chars.by_ref() {
                    if prev == '*' && n == '/' {
                        break;
                    }
                    prev = n;
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Removes the trailing commas of `,}` and `,]` outside strings.
pub fn remove_trailing_commas(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let chars: Vec<char> = s.chars().collect();
    let mut in_string = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if in_string {
            out.push(c);
            if c == '\\' && i + 1 < chars.len() {
                out.push(chars[i + 1]);
                i += 1;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if c == ',' {
            let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
            if !matches!(next, Some('}') | Some(']')) {
                out.push(c);
            }
        } else {
            out.push(c);
        }
        i += 1;
    }
    out
}

fn unknown_keys(v: &Value, at: &str, known: &[&str], problems: &mut Vec<String>) {
    if let Some(map) = v.as_object() {
        for k in map.keys().filter(|k| !known.contains(&k.as_str())) {
            problems.push(format!(
                "`{at}{k}` is not a cuFile setting (a typo is ignored silently)"
            ));
        }
    }
}

fn check_addr_list(v: &Value, at: &str, local: Option<&[String]>, problems: &mut Vec<String>) {
    let Some(list) = v.as_array() else {
        problems.push(format!(
            "`{at}` must be a list of this node's RDMA interface addresses"
        ));
        return;
    };
    for e in list {
        match e.as_str() {
            Some(a) if a.parse::<std::net::IpAddr>().is_err() => {
                problems.push(format!("`{at}` entry `{a}` is not an IP address"))
            }
            Some(a) => {
                if let Some(local) = local {
                    if !local.iter().any(|l| l == a) {
                        problems.push(format!(
                            "`{at}` entry {a} is not an address of this node, so cuFile ignores it"
                        ));
                    }
                }
            }
            None => problems.push(format!("`{at}` entry {e} is not a string")),
        }
    }
}

/// Lints a cufile.json; `local` holds this node's addresses when they could be read.
pub fn lint(path: &str, text: &str, local: Option<&[String]>) -> CufileLint {
    let cleaned = remove_trailing_commas(&strip_json_comments(text));
    let v: Value = match serde_json::from_str(&cleaned) {
        Ok(v) => v,
        Err(e) => {
            return CufileLint {
                path: path.to_string(),
                parse_error: Some(format!("line {}: {e}", e.line())),
                allow_compat_mode: None,
                problems: Vec::new(),
                nfs_irrelevant: Vec::new(),
            }
        }
    };
    let mut problems = Vec::new();
    unknown_keys(&v, "", TOP, &mut problems);
    let props = v.get("properties").cloned().unwrap_or(Value::Null);
    unknown_keys(&props, "properties.", PROPERTIES, &mut problems);
    let compat = props.get("allow_compat_mode");
    if compat.is_some_and(|c| !c.is_boolean()) {
        problems.push("`properties.allow_compat_mode` must be true or false".into());
    }
    if props.get("use_poll_mode").is_some_and(|c| !c.is_boolean()) {
        problems.push("`properties.use_poll_mode` must be true or false".into());
    }
    if let Some(size) = props.get("max_direct_io_size_kb") {
        match size.as_u64() {
            Some(n) if n > 0 && n % 64 == 0 => {}
            _ => problems.push(format!(
                "`properties.max_direct_io_size_kb` is {size}: it must be a positive multiple of 64"
            )),
        }
    }
    if let Some(list) = props.get("rdma_dev_addr_list") {
        check_addr_list(list, "properties.rdma_dev_addr_list", local, &mut problems);
    }
    let nfs = v.pointer("/fs/nfs").cloned().unwrap_or(Value::Null);
    unknown_keys(&nfs, "fs.nfs.", FS_NFS, &mut problems);
    if let Some(list) = nfs.get("rdma_dev_addr_list") {
        check_addr_list(list, "fs.nfs.rdma_dev_addr_list", local, &mut problems);
    }
    if let Some(table) = nfs.get("mount_table") {
        lint_mount_table(table, local, &mut problems);
    }
    lint_newer_keys(&v, &props, &mut problems);
    let nfs_irrelevant = p2pdma_switches(&v);
    CufileLint {
        path: path.to_string(),
        parse_error: None,
        allow_compat_mode: compat.and_then(Value::as_bool),
        problems,
        nfs_irrelevant,
    }
}

fn must_be_bool(v: &Value, at: &str, problems: &mut Vec<String>) {
    if !v.is_boolean() {
        problems.push(format!("`{at}` must be true or false"));
    }
}

/// The GDS 1.17–1.20 keys: `block.*`, `sparse`, `vanilla_posix_mode`, and cuObject's keys that
/// moved to cuobj.json.
fn lint_newer_keys(v: &Value, props: &Value, problems: &mut Vec<String>) {
    let block = v.get("block").cloned().unwrap_or(Value::Null);
    unknown_keys(&block, "block.", BLOCK, problems);
    for dev in BLOCK {
        if let Some(entry) = block.get(dev) {
            let at = format!("block.{dev}.");
            unknown_keys(entry, &at, &["use_pci_p2pdma"], problems);
            if let Some(b) = entry.get("use_pci_p2pdma") {
                must_be_bool(b, &format!("{at}use_pci_p2pdma"), problems);
            }
        }
    }
    let sparse = v.get("sparse").cloned().unwrap_or(Value::Null);
    unknown_keys(&sparse, "sparse.", SPARSE, problems);
    if let Some(b) = sparse.get("p2p_compat_enable") {
        must_be_bool(b, "sparse.p2p_compat_enable", problems);
    }
    match props.get("vanilla_posix_mode") {
        Some(Value::Bool(true)) => problems.push(
            "`properties.vanilla_posix_mode` is true: where GDS libraries are missing cuFile does plain POSIX I/O without a word, as silent as compat mode".into(),
        ),
        Some(Value::Bool(false)) | None => {}
        Some(_) => problems.push("`properties.vanilla_posix_mode` must be true or false".into()),
    }
    for key in CUOBJ_ONLY {
        if props.get(key).is_some() {
            problems.push(format!(
                "`properties.{key}` is cuObject's: since GDS 1.20 it is read from /etc/cuobj.json (`CUOBJ_*`), not cufile.json"
            ));
        }
    }
}

/// The `use_pci_p2pdma` switches that are on, by key.
fn p2pdma_switches(v: &Value) -> Vec<String> {
    let mut at = vec![
        "/properties/use_pci_p2pdma".to_string(),
        "/fs/nfs/use_pci_p2pdma".to_string(),
    ];
    at.extend(BLOCK.iter().map(|d| format!("/block/{d}/use_pci_p2pdma")));
    at.into_iter()
        .filter(|p| v.pointer(p) == Some(&Value::Bool(true)))
        .map(|p| p.trim_start_matches('/').replace('/', "."))
        .collect()
}

const TABLE_SHAPE: &str = r#"{ "/mnt/data": { "rdma_dev_addr_list": ["10.0.0.1"] } }"#;

fn lint_mount_table(table: &Value, local: Option<&[String]>, problems: &mut Vec<String>) {
    let Some(map) = table.as_object() else {
        problems.push(format!(
            "`fs.nfs.mount_table` must be an object of mount points, like {TABLE_SHAPE}"
        ));
        return;
    };
    for (mount, entry) in map {
        let at = format!("fs.nfs.mount_table.{mount}");
        if !mount.starts_with('/') {
            problems.push(format!(
                "`{at}`: the key must be a mount point (an absolute path)"
            ));
        }
        match entry.get("rdma_dev_addr_list") {
            Some(list) if entry.is_object() => {
                unknown_keys(entry, &format!("{at}."), &["rdma_dev_addr_list"], problems);
                check_addr_list(list, &format!("{at}.rdma_dev_addr_list"), local, problems);
            }
            _ => problems.push(format!(
                "`{at}` must be {{ \"rdma_dev_addr_list\": [...] }}, like {TABLE_SHAPE}"
            )),
        }
    }
}

/// This node's local addresses: the `/32 host LOCAL` entries of `/proc/net/fib_trie` and the
/// addresses of `/proc/net/if_inet6`.
pub fn parse_local_addresses(fib_trie: &str, if_inet6: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut last: Option<&str> = None;
    for line in fib_trie.lines() {
        let t = line.trim_start_matches([' ', '|', '+', '-', '`']).trim();
        if t.contains("host LOCAL") {
            if let Some(a) = last {
                if !out.iter().any(|o| o == a) {
                    out.push(a.to_string());
                }
            }
        } else if let Some(a) = t.split_whitespace().next() {
            last = a.parse::<std::net::Ipv4Addr>().is_ok().then_some(a);
        }
    }
    for line in if_inet6.lines() {
        let Some(hex) = line.split_whitespace().next().filter(|h| h.len() == 32) else {
            continue;
        };
        let Ok(n) = u128::from_str_radix(hex, 16) else {
            continue;
        };
        out.push(std::net::Ipv6Addr::from(n).to_string());
    }
    out
}

/// Where this host's addresses are listed: IPv4 and IPv6.
pub const FIB_TRIE: &str = "/proc/net/fib_trie";
pub const IF_INET6: &str = "/proc/net/if_inet6";

/// This node's local addresses, read from `/proc/net/fib_trie` and `/proc/net/if_inet6`
/// ([`parse_local_addresses`]), with the files of them that were there.
pub fn read_local_addresses(
    root: &Root,
) -> Result<(Vec<std::net::IpAddr>, Vec<&'static str>), HostError> {
    let mut read = Vec::new();
    let mut text = |file: &'static str| -> Result<String, HostError> {
        let t = root.read_text_lossy(&file[1..])?;
        if t.is_some() {
            read.push(file);
        }
        Ok(t.unwrap_or_default())
    };
    let (fib, v6) = (text(FIB_TRIE)?, text(IF_INET6)?);
    let addresses = parse_local_addresses(&fib, &v6)
        .iter()
        .filter_map(|a| a.parse().ok())
        .collect();
    Ok((addresses, read))
}

/// Reads and lints the cufile.json cuFile would use: `CUFILE_ENV_PATH_JSON` on this machine
/// (never in a tree), else `/etc/cufile.json`. `None` when there is none.
pub fn read_cufile_lint(root: &Root) -> Result<Option<CufileLint>, HostError> {
    let path = root
        .context()
        .cufile_json()
        .unwrap_or("/etc/cufile.json")
        .to_string();
    // Unreadable (a 0600 file for a non-root `check`) is this one fact unknown, not every check.
    let bytes = match root.read_bytes(&path) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(None),
        Err(e) => {
            return Ok(Some(CufileLint {
                path,
                parse_error: Some(e.to_string()),
                allow_compat_mode: None,
                problems: Vec::new(),
                nfs_irrelevant: Vec::new(),
            }))
        }
    };
    let fib = root.read_text_lossy("proc/net/fib_trie")?;
    let v6 = root
        .read_text_lossy("proc/net/if_inet6")?
        .unwrap_or_default();
    let local = fib.map(|f| parse_local_addresses(&f, &v6));
    Ok(Some(match String::from_utf8(bytes) {
        Ok(text) => lint(&path, &text, local.as_deref()),
        Err(_) => CufileLint {
            path,
            parse_error: Some("not valid UTF-8 text".into()),
            allow_compat_mode: None,
            problems: Vec::new(),
            nfs_irrelevant: Vec::new(),
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> Vec<String> {
        vec!["192.168.10.5".into()]
    }

    #[test]
    fn a_clean_file_has_no_problems() {
        let text = r#"{ // comment
            "logging": { "level": "ERROR" },
            "properties": { "allow_compat_mode": false, "max_direct_io_size_kb": 16384,
                            "rdma_dev_addr_list": ["192.168.10.5"], },
            "fs": { "nfs": { "mount_table": { "/mnt/data": { "rdma_dev_addr_list": ["192.168.10.5"] } } } }
        }"#;
        let l = lint("c.json", text, Some(&local()));
        assert_eq!(l.problems, Vec::<String>::new());
        assert!(!l.compat_allowed());
    }

    #[test]
    fn each_mistake_is_named() {
        let text = r#"{
            "properties": { "allow_compat_mod": false, "max_direct_io_size_kb": 1000,
                            "use_poll_mode": "yes", "rdma_dev_addr_list": ["10.9.9.9", "mlx5_0"] },
            "fs": { "nfs": { "mount_table": [ { "/mnt/data": ["192.168.10.5"] } ] } }
        }"#;
        let l = lint("c.json", text, Some(&local()));
        let all = l.problems.join("\n");
        assert!(
            all.contains("`properties.allow_compat_mod` is not a cuFile setting"),
            "{all}"
        );
        assert!(all.contains("max_direct_io_size_kb` is 1000"), "{all}");
        assert!(
            all.contains("use_poll_mode` must be true or false"),
            "{all}"
        );
        assert!(
            all.contains("10.9.9.9 is not an address of this node"),
            "{all}"
        );
        assert!(all.contains("`mlx5_0` is not an IP address"), "{all}");
        assert!(
            all.contains("`fs.nfs.mount_table` must be an object"),
            "{all}"
        );
        assert!(l.compat_allowed(), "the misspelt key leaves the default");
    }

    #[test]
    fn a_mount_table_entry_in_the_wrong_shape() {
        let text = r#"{ "fs": { "nfs": { "mount_table": { "/mnt/data": ["192.168.10.5"] } } } }"#;
        let l = lint("c.json", text, None);
        assert_eq!(l.problems.len(), 1, "{:?}", l.problems);
        assert!(l.problems[0].contains("fs.nfs.mount_table./mnt/data"));
    }

    #[test]
    fn the_gds_1_17_to_1_20_keys_are_known() {
        let text = r#"{
            "properties": { "gpu_bounce_buffer_slab_config": { "nvfs": [] }, "vanilla_posix_mode": false,
                            "use_pci_p2pdma": true },
            "block": { "nvme": { "use_pci_p2pdma": true }, "raid1": { "use_pci_p2pdma": false },
                       "raid10": { "use_pci_p2pdma": false } },
            "sparse": { "p2p_compat_enable": true }
        }"#;
        let l = lint("c.json", text, None);
        assert_eq!(l.problems, Vec::<String>::new());
        assert_eq!(
            l.nfs_irrelevant,
            vec!["properties.use_pci_p2pdma", "block.nvme.use_pci_p2pdma"]
        );
    }

    #[test]
    fn the_newer_keys_mistakes_are_named() {
        let text = r#"{
            "properties": { "vanilla_posix_mode": true, "rdma_transport_type": "rc" },
            "block": { "nvme": { "use_pci_p2pdma": "yes" }, "raid5": {} },
            "sparse": { "p2p_compat": true }
        }"#;
        let all = lint("c.json", text, None).problems.join("\n");
        assert!(
            all.contains("`properties.vanilla_posix_mode` is true"),
            "{all}"
        );
        assert!(all.contains("rdma_transport_type` is cuObject's"), "{all}");
        assert!(
            all.contains("`block.nvme.use_pci_p2pdma` must be true or false"),
            "{all}"
        );
        assert!(
            all.contains("`block.raid5` is not a cuFile setting"),
            "{all}"
        );
        assert!(
            all.contains("`sparse.p2p_compat` is not a cuFile setting"),
            "{all}"
        );
    }

    #[test]
    fn broken_json_names_the_line() {
        let l = lint("c.json", "{\n\"properties\": nope }", None);
        assert!(
            l.parse_error.as_deref().unwrap().starts_with("line 2"),
            "{l:?}"
        );
    }

    #[test]
    fn local_addresses_from_fib_trie() {
        let fib = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 192.168.10.0\n        /24 link UNICAST\n     |-- 192.168.10.5\n        /32 host LOCAL\n     |-- 127.0.0.1\n        /32 host LOCAL\nLocal:\n     |-- 192.168.10.5\n        /32 host LOCAL\n";
        let v6 = "fe800000000000000000000000000001 02 40 20 80 ib0\n";
        let a = parse_local_addresses(fib, v6);
        assert_eq!(a, vec!["192.168.10.5", "127.0.0.1", "fe80::1"]);
    }
}
