//! Boot Loader Specification entries and systemd-boot's `loader.conf`.
//!
//! A BLS type #1 entry is `/boot/loader/entries/<id>.conf` (RHEL and Fedora put them there for
//! GRUB's `blscfg`; systemd-boot reads them from the ESP): `key value` lines, of which `title`,
//! `version`, `linux` and `options` matter here. GRUB's `blscfg` lists entries newest version
//! first and names the default by entry id (file name without `.conf`) in `saved_entry`;
//! systemd-boot matches `default` of `loader.conf` (a glob) against entry ids with `.conf`, and
//! lets the EFI variables `LoaderEntryOneShot` and `LoaderEntryDefault` (UTF-16 strings, set by
//! `systemctl reboot --boot-loader-entry=` and `bootctl set-default`) override it.

use serde::Serialize;

use crate::host::boot::installed_kernels::release_of_image_name;
use crate::host::boot::version_order;

/// systemd-boot's vendor GUID for its EFI variables.
pub const LOADER_GUID: &str = "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f";

/// One entry file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlsEntry {
    /// The file name without `.conf` (GRUB's id; systemd-boot's id is the file name).
    pub id: String,
    /// Host path of the file.
    pub path: String,
    pub title: Option<String>,
    pub version: Option<String>,
    pub linux: Option<String>,
    /// `options` lines joined; `$var` references are left as written.
    pub options: Option<String>,
}

impl BlsEntry {
    /// The kernel release this entry boots, matched against the installed releases: its
    /// `version` when that is one, else the release its `linux` path names
    /// (`/vmlinuz-<release>`, or `/<machine-id>/<release>/linux`).
    pub fn release_among(&self, installed: &[&str]) -> Option<String> {
        if let Some(v) = &self.version {
            if installed.contains(&v.as_str()) {
                return Some(v.clone());
            }
        }
        let linux = self.linux.as_deref()?;
        let base = linux.rsplit('/').next().unwrap_or(linux);
        if let Some(r) = release_of_image_name(base) {
            return Some(r.to_string());
        }
        linux
            .split('/')
            .find(|part| installed.contains(part))
            .map(str::to_string)
            .or_else(|| self.version.clone())
    }
}

/// Parses one entry file. `name` is its file name (`<id>.conf`).
pub fn parse_bls_entry(text: &str, name: &str, path: &str) -> BlsEntry {
    let mut e = BlsEntry {
        id: name.strip_suffix(".conf").unwrap_or(name).to_string(),
        path: path.to_string(),
        title: None,
        version: None,
        linux: None,
        options: None,
    };
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let (key, value) = match line.split_once([' ', '\t']) {
            Some((k, v)) => (k, v.trim().to_string()),
            None => continue,
        };
        match key {
            "title" => e.title = Some(value),
            "version" => e.version = Some(value),
            "linux" => e.linux = Some(value),
            "options" => {
                e.options = Some(match e.options.take() {
                    Some(prev) => format!("{prev} {value}"),
                    None => value,
                })
            }
            _ => {}
        }
    }
    e
}

/// Orders entries as GRUB's `blscfg` lists them: newest `version` first (then by id).
pub fn sort_newest_first(entries: &mut [BlsEntry]) {
    entries.sort_by(|a, b| {
        let va = a.version.as_deref().unwrap_or(&a.id);
        let vb = b.version.as_deref().unwrap_or(&b.id);
        version_order::compare(vb, va).then_with(|| version_order::compare(&b.id, &a.id))
    });
}

/// Expands `$name` / `${name}` in `options` from `grubenv` (RHEL 8 writes `options $kernelopts`).
pub fn expand_grubenv_vars(
    options: &str,
    env: &std::collections::BTreeMap<String, String>,
) -> String {
    options
        .split_whitespace()
        .map(|w| {
            let name = w
                .strip_prefix("${")
                .and_then(|n| n.strip_suffix('}'))
                .or_else(|| w.strip_prefix('$'));
            match name.and_then(|n| env.get(n)) {
                Some(v) => v.clone(),
                None => w.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `default` of systemd-boot's `loader.conf`.
pub fn parse_loader_conf_default(text: &str) -> Option<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let (k, v) = l.split_once([' ', '\t'])?;
            (k == "default").then(|| v.trim().to_string())
        })
        .next_back()
        .filter(|v| !v.is_empty())
}

/// A systemd-boot EFI string variable: 4 attribute bytes, then NUL-terminated UTF-16LE.
pub fn parse_efi_string(bytes: &[u8]) -> Option<String> {
    let data = bytes.get(4..)?;
    let units: Vec<u16> = data
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|u| *u != 0)
        .collect();
    let s = String::from_utf16(&units).ok()?;
    (!s.is_empty()).then_some(s)
}

/// The entry systemd-boot picks for `pattern` (a glob over ids with `.conf`, or a plain id):
/// the first match in its order (newest version first).
pub fn select_by_pattern<'a>(entries: &'a [BlsEntry], pattern: &str) -> Option<&'a BlsEntry> {
    let glob = glob::Pattern::new(pattern).ok();
    entries.iter().find(|e| {
        let file = format!("{}.conf", e.id);
        e.id == pattern
            || file == pattern
            || glob
                .as_ref()
                .is_some_and(|g| g.matches(&file) || g.matches(&e.id))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RHEL: &str = "title Red Hat Enterprise Linux (5.14.0-427.13.1.el9_4.x86_64) 9.4 (Plow)\n\
version 5.14.0-427.13.1.el9_4.x86_64\n\
linux /vmlinuz-5.14.0-427.13.1.el9_4.x86_64\n\
initrd /initramfs-5.14.0-427.13.1.el9_4.x86_64.img $tuned_initrd\n\
options root=/dev/mapper/rhel-root ro crashkernel=1G-4G:192M $tuned_params\n\
grub_users $grub_users\n";

    #[test]
    fn entry_fields_and_release() {
        let e = parse_bls_entry(
            RHEL,
            "0123abcd-5.14.0-427.13.1.el9_4.x86_64.conf",
            "/boot/loader/entries/x.conf",
        );
        assert_eq!(e.id, "0123abcd-5.14.0-427.13.1.el9_4.x86_64");
        assert_eq!(e.version.as_deref(), Some("5.14.0-427.13.1.el9_4.x86_64"));
        assert_eq!(
            e.release_among(&[]).as_deref(),
            Some("5.14.0-427.13.1.el9_4.x86_64")
        );
        let sd = parse_bls_entry(
            "title Fedora\nversion 6.11.4\nlinux /0123abcd/6.11.4-301.fc41.x86_64/linux\noptions quiet\noptions rhgb\n",
            "fedora.conf",
            "/efi/loader/entries/fedora.conf",
        );
        assert_eq!(
            sd.release_among(&["6.11.4-301.fc41.x86_64"]).as_deref(),
            Some("6.11.4-301.fc41.x86_64")
        );
        assert_eq!(sd.options.as_deref(), Some("quiet rhgb"));
    }

    #[test]
    fn blscfg_order_and_grubenv_expansion() {
        let mut v = vec![
            parse_bls_entry(
                "version 5.14.0-427.el9.x86_64\n",
                "m-5.14.0-427.el9.x86_64.conf",
                "a",
            ),
            parse_bls_entry(
                "version 5.14.0-503.el9.x86_64\n",
                "m-5.14.0-503.el9.x86_64.conf",
                "b",
            ),
            parse_bls_entry("version 0-rescue\n", "m-0-rescue.conf", "c"),
        ];
        sort_newest_first(&mut v);
        let ids: Vec<&str> = v.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(
            ids,
            vec![
                "m-5.14.0-503.el9.x86_64",
                "m-5.14.0-427.el9.x86_64",
                "m-0-rescue"
            ]
        );
        let env = [(
            "kernelopts".to_string(),
            "root=/dev/sda1 ro module.sig_enforce=1".to_string(),
        )]
        .into();
        assert_eq!(
            expand_grubenv_vars("$kernelopts quiet ${nothing}", &env),
            "root=/dev/sda1 ro module.sig_enforce=1 quiet ${nothing}"
        );
    }

    #[test]
    fn systemd_boot_default_and_efi_strings() {
        assert_eq!(
            parse_loader_conf_default("timeout 3\ndefault  fedora-*\n").as_deref(),
            Some("fedora-*")
        );
        assert_eq!(parse_loader_conf_default("timeout 3\n"), None);
        let mut bytes = vec![7, 0, 0, 0];
        for u in "arch.conf".encode_utf16() {
            bytes.extend(u.to_le_bytes());
        }
        bytes.extend([0, 0]);
        assert_eq!(parse_efi_string(&bytes).as_deref(), Some("arch.conf"));
        assert_eq!(parse_efi_string(&[7, 0, 0]), None);
        let entries = vec![
            parse_bls_entry("version 6.12\n", "arch-lts.conf", "a"),
            parse_bls_entry("version 6.13\n", "arch.conf", "b"),
        ];
        assert_eq!(select_by_pattern(&entries, "arch.conf").unwrap().id, "arch");
        assert_eq!(
            select_by_pattern(&entries, "arch-*").unwrap().id,
            "arch-lts"
        );
        assert!(select_by_pattern(&entries, "debian*").is_none());
    }
}
