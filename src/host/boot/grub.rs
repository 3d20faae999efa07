//! GRUB's view of the next boot: `grubenv`, `GRUB_DEFAULT` and the menu of `grub.cfg`.
//!
//! `grub-mkconfig` writes into `grub.cfg` how the default is chosen: `next_entry` from
//! `grubenv` once (`grub-reboot`), else `saved_entry` from `grubenv` when `GRUB_DEFAULT=saved`
//! (`grub-set-default`), else the literal `GRUB_DEFAULT` of `/etc/default/grub`. An entry is
//! named by its position (`1>2`: the third entry of the second item's submenu), its
//! `$menuentry_id_option` id, or its title, each level separated by `>`. A default that names
//! nothing falls back to the first entry. Each menu entry's `linux` line gives the image and
//! the command line it boots.
//!
//! Everything here is pure text processing; [`crate::host::boot::next_boot`] reads the files.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::host::boot::installed_kernels::release_of_image_name;

/// `grubenv`: `key=value` lines after the `# GRUB Environment Block` header, `#` padding.
pub fn parse_grubenv(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `GRUB_DEFAULT` of `/etc/default/grub` (a shell fragment; the last assignment wins).
pub fn parse_grub_default(text: &str) -> Option<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("GRUB_DEFAULT="))
        .map(|v| {
            let v = v.split(" #").next().unwrap_or(v).trim();
            v.trim_matches('"').trim_matches('\'').to_string()
        })
        .next_back()
}

/// One bootable entry of the menu.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrubEntry {
    pub title: String,
    pub id: Option<String>,
    /// The image path of its `linux` line.
    pub linux: Option<String>,
    /// The rest of the `linux` line: the kernel command line.
    pub cmdline: Option<String>,
    /// The release its image names (`vmlinuz-<release>`).
    pub release: Option<String>,
    /// 1-based line of the `menuentry` in `grub.cfg`.
    pub line: usize,
}

/// An item of a menu level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum MenuItem {
    Entry(GrubEntry),
    Submenu {
        title: String,
        id: Option<String>,
        items: Vec<MenuItem>,
    },
}

/// How `grub.cfg` picks its default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum DefaultRule {
    /// `set default="${saved_entry}"`: `grubenv` decides.
    Saved,
    /// `set default="X"`.
    Literal { value: String },
    /// No `set default`: the first entry.
    First,
}

/// What `grub.cfg` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrubCfg {
    pub menu: Vec<MenuItem>,
    pub default: DefaultRule,
    /// It honours `next_entry` from `grubenv` (`grub-reboot`).
    pub honours_next_entry: bool,
    /// It loads Boot Loader Specification entries (`blscfg`, RHEL and Fedora).
    pub uses_blscfg: bool,
}

/// Splits a GRUB command line into words: `'…'` and `"…"` quoting, `\` escapes, and the
/// `'\''` idiom grub-mkconfig uses for quotes inside titles.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut any = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                any = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    cur.push(q);
                }
            }
            '"' => {
                any = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                cur.push(n);
                            }
                        }
                        q => cur.push(q),
                    }
                }
            }
            '\\' => {
                any = true;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            c if c.is_whitespace() => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                any = true;
                cur.push(c);
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// The title and `$menuentry_id_option` id of a `menuentry`/`submenu` line.
fn title_and_id(line: &str) -> (String, Option<String>) {
    let w = words(line.trim_end().trim_end_matches('{'));
    let title = w.get(1).cloned().unwrap_or_default();
    let id = w
        .iter()
        .position(|x| x == "$menuentry_id_option" || x == "--id")
        .and_then(|i| w.get(i + 1).cloned());
    (title, id)
}

enum Frame {
    Entry(GrubEntry),
    Submenu {
        title: String,
        id: Option<String>,
        items: Vec<MenuItem>,
    },
    Other,
}

/// Parses `grub.cfg`.
pub fn parse_grub_cfg(text: &str) -> GrubCfg {
    let mut top: Vec<MenuItem> = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut default = DefaultRule::First;
    let mut honours_next_entry = false;
    let mut uses_blscfg = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let first = line.split_whitespace().next().unwrap_or("");
        match first {
            "menuentry" => {
                let (title, id) = title_and_id(line);
                stack.push(Frame::Entry(GrubEntry {
                    title,
                    id,
                    linux: None,
                    cmdline: None,
                    release: None,
                    line: i + 1,
                }));
                continue;
            }
            "submenu" => {
                let (title, id) = title_and_id(line);
                stack.push(Frame::Submenu {
                    title,
                    id,
                    items: Vec::new(),
                });
                continue;
            }
            "}" => {
                let item = match stack.pop() {
                    Some(Frame::Entry(e)) => Some(MenuItem::Entry(e)),
                    Some(Frame::Submenu { title, id, items }) => {
                        Some(MenuItem::Submenu { title, id, items })
                    }
                    Some(Frame::Other) | None => None,
                };
                if let Some(item) = item {
                    let parent = stack.iter_mut().rev().find_map(|f| match f {
                        Frame::Submenu { items, .. } => Some(items),
                        _ => None,
                    });
                    match parent {
                        Some(items) => items.push(item),
                        None => top.push(item),
                    }
                }
                continue;
            }
            "linux" | "linuxefi" | "linux16" => {
                if let Some(Frame::Entry(e)) = stack.last_mut() {
                    let mut w = line.split_whitespace().skip(1);
                    if let Some(path) = w.next() {
                        let base = path.rsplit('/').next().unwrap_or(path);
                        e.release = release_of_image_name(base).map(str::to_string);
                        e.linux = Some(path.to_string());
                        e.cmdline = Some(w.collect::<Vec<_>>().join(" "));
                    }
                }
            }
            "blscfg" => uses_blscfg = true,
            "set" => {
                if let Some(v) = line.strip_prefix("set default=") {
                    let v = words(v).into_iter().next().unwrap_or_default();
                    // Only the top level counts; `set default` inside `if` for next_entry too.
                    default = if v.contains("saved_entry") {
                        DefaultRule::Saved
                    } else if v.contains("next_entry") {
                        default
                    } else {
                        DefaultRule::Literal { value: v }
                    };
                }
            }
            _ => {}
        }
        if line.contains("${next_entry}") || line.contains("$next_entry") {
            honours_next_entry = true;
        }
        if line.ends_with('{') {
            stack.push(Frame::Other);
        }
    }
    GrubCfg {
        menu: top,
        default,
        honours_next_entry,
        uses_blscfg,
    }
}

/// The entry a default names (`2`, `1>0`, an id, a title, or `>`-joined mixes).
pub fn select_entry<'a>(menu: &'a [MenuItem], spec: &str) -> Option<&'a GrubEntry> {
    let mut level = menu;
    let parts: Vec<&str> = spec.split('>').collect();
    for (n, part) in parts.iter().enumerate() {
        let last = n + 1 == parts.len();
        let item = match part.parse::<usize>() {
            Ok(i) => level.get(i),
            Err(_) => level.iter().find(|it| match it {
                MenuItem::Entry(e) => e.id.as_deref() == Some(part) || e.title == *part,
                MenuItem::Submenu { title, id, .. } => id.as_deref() == Some(part) || title == part,
            }),
        }?;
        match (item, last) {
            (MenuItem::Entry(e), true) => return Some(e),
            (MenuItem::Submenu { items, .. }, false) => level = items,
            _ => return None,
        }
    }
    None
}

/// The first bootable entry (GRUB's fallback when the default names nothing).
pub fn first_entry(menu: &[MenuItem]) -> Option<&GrubEntry> {
    match menu.first()? {
        MenuItem::Entry(e) => Some(e),
        MenuItem::Submenu { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const DEBIAN_CFG: &str = r#"
#
# DO NOT EDIT THIS FILE
#
if [ -s $prefix/grubenv ]; then
  set have_grubenv=true
  load_env
fi
if [ "${next_entry}" ] ; then
   set default="${next_entry}"
   set next_entry=
   save_env next_entry
   set boot_once=true
else
   set default="${saved_entry}"
fi
function load_video {
  if [ x$feature_all_video_module = xy ]; then
    insmod all_video
  fi
}
menuentry 'Debian GNU/Linux' --class debian --class gnu-linux --class gnu --class os $menuentry_id_option 'gnulinux-simple-1b2c' {
	load_video
	linux	/boot/vmlinuz-6.12.117+deb13-amd64 root=UUID=1b2c ro  quiet
	initrd	/boot/initrd.img-6.12.117+deb13-amd64
}
submenu 'Advanced options for Debian GNU/Linux' $menuentry_id_option 'gnulinux-advanced-1b2c' {
	menuentry 'Debian GNU/Linux, with Linux 6.12.117+deb13-amd64' --class debian $menuentry_id_option 'gnulinux-6.12.117+deb13-amd64-advanced-1b2c' {
		linux	/boot/vmlinuz-6.12.117+deb13-amd64 root=UUID=1b2c ro  quiet
	}
	menuentry 'Debian GNU/Linux, with Linux 6.1.0-50-amd64' --class debian $menuentry_id_option 'gnulinux-6.1.0-50-amd64-advanced-1b2c' {
		linux	/boot/vmlinuz-6.1.0-50-amd64 root=UUID=1b2c ro  quiet module.sig_enforce=1
	}
	menuentry 'Debian GNU/Linux, with Linux 6.1.0-50-amd64 (recovery mode)' --class debian $menuentry_id_option 'gnulinux-6.1.0-50-amd64-recovery-1b2c' {
		linux	/boot/vmlinuz-6.1.0-50-amd64 root=UUID=1b2c ro single
	}
}
menuentry 'It'\''s memtest' {
	linux16 /boot/memtest86+x64.bin
}
"#;

    #[test]
    fn grubenv_and_grub_default() {
        let env = parse_grubenv("# GRUB Environment Block\nsaved_entry=gnulinux-advanced-1b2c>gnulinux-6.1.0-50-amd64-advanced-1b2c\nnext_entry=\n##########\n");
        assert_eq!(
            env["saved_entry"],
            "gnulinux-advanced-1b2c>gnulinux-6.1.0-50-amd64-advanced-1b2c"
        );
        assert_eq!(env["next_entry"], "");
        assert_eq!(
            parse_grub_default("GRUB_DEFAULT=0\n#GRUB_DEFAULT=2\nGRUB_DEFAULT=\"saved\" # keep\n")
                .as_deref(),
            Some("saved")
        );
        assert_eq!(parse_grub_default("GRUB_TIMEOUT=5\n"), None);
    }

    #[test]
    fn menu_structure_titles_ids_and_linux_lines() {
        let cfg = parse_grub_cfg(DEBIAN_CFG);
        assert_eq!(cfg.default, DefaultRule::Saved);
        assert!(cfg.honours_next_entry);
        assert!(!cfg.uses_blscfg);
        assert_eq!(cfg.menu.len(), 3, "{:#?}", cfg.menu);
        let MenuItem::Submenu { items, id, .. } = &cfg.menu[1] else {
            panic!("submenu")
        };
        assert_eq!(id.as_deref(), Some("gnulinux-advanced-1b2c"));
        assert_eq!(items.len(), 3);
        let MenuItem::Entry(memtest) = &cfg.menu[2] else {
            panic!("entry")
        };
        assert_eq!(memtest.title, "It's memtest");
        assert_eq!(memtest.release, None);
        let first = first_entry(&cfg.menu).unwrap();
        assert_eq!(first.release.as_deref(), Some("6.12.117+deb13-amd64"));
        assert_eq!(first.cmdline.as_deref(), Some("root=UUID=1b2c ro quiet"));
    }

    #[test]
    fn defaults_by_index_id_title_and_mixes() {
        let cfg = parse_grub_cfg(DEBIAN_CFG);
        let rel = |spec: &str| select_entry(&cfg.menu, spec).and_then(|e| e.release.clone());
        assert_eq!(rel("0").as_deref(), Some("6.12.117+deb13-amd64"));
        assert_eq!(rel("1>1").as_deref(), Some("6.1.0-50-amd64"));
        assert_eq!(
            rel("gnulinux-advanced-1b2c>gnulinux-6.1.0-50-amd64-advanced-1b2c").as_deref(),
            Some("6.1.0-50-amd64")
        );
        assert_eq!(
            rel(
                "Advanced options for Debian GNU/Linux>Debian GNU/Linux, with Linux 6.1.0-50-amd64"
            )
            .as_deref(),
            Some("6.1.0-50-amd64")
        );
        assert_eq!(
            rel("gnulinux-advanced-1b2c>2").as_deref(),
            Some("6.1.0-50-amd64")
        );
        assert!(
            select_entry(&cfg.menu, "1").is_none(),
            "a submenu is not bootable"
        );
        assert!(select_entry(&cfg.menu, "7").is_none());
        assert!(select_entry(&cfg.menu, "no-such-id").is_none());
    }

    #[test]
    fn literal_default_and_blscfg() {
        let cfg = parse_grub_cfg("set default=\"2\"\nblscfg\n");
        assert_eq!(cfg.default, DefaultRule::Literal { value: "2".into() });
        assert!(cfg.uses_blscfg && !cfg.honours_next_entry);
        assert!(cfg.menu.is_empty());
    }
}
