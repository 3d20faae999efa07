//! Which kernel the bootloader starts next, and which evidence says so.
//!
//! "GDS broke after the reboot" starts here: the next boot may start a kernel for which DKMS
//! built nothing. The bootloader is recognised from what is on disk: systemd-boot when its
//! `LoaderInfo` EFI variable says it booted this machine, or when there is no `grub.cfg` but a
//! `loader.conf`; GRUB with `grub.cfg` (with `blscfg`, the menu is the BLS entries of
//! `/boot/loader/entries`, as on RHEL and Fedora). Its default is then resolved as that
//! bootloader does (see [`crate::host::boot::grub`] and [`crate::host::boot::bls`]). When nothing tells, the newest
//! installed kernel is assumed, as a freshly generated menu would start it.
//!
//! [`decide_next_boot`] is pure over [`BootFiles`]; [`read_boot_files`] gathers them.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::host::boot::bls::{self, BlsEntry, LOADER_GUID};
use crate::host::boot::grub::{self, DefaultRule, GrubCfg};
use crate::host::boot::installed_kernels::InstalledKernel;
use crate::host::io::error::HostError;
use crate::host::io::root::Root;

const GRUB_CFGS: [&str; 2] = ["/boot/grub/grub.cfg", "/boot/grub2/grub.cfg"];
const GRUBENVS: [&str; 2] = ["/boot/grub/grubenv", "/boot/grub2/grubenv"];
const BLS_DIR: &str = "/boot/loader/entries";
const ESPS: [&str; 3] = ["/efi", "/boot", "/boot/efi"];
const EFIVARS: &str = "/sys/firmware/efi/efivars";

/// The bootloader that decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bootloader {
    Grub,
    /// GRUB with `blscfg`: the menu is `/boot/loader/entries`.
    GrubBls,
    SystemdBoot,
    /// No bootloader configuration was found.
    Unknown,
}

/// systemd-boot's EFI variables, when efivarfs shows them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LoaderVars {
    /// `/sys/firmware/efi/efivars` exists and can be listed.
    pub readable: bool,
    pub one_shot: Option<String>,
    pub default: Option<String>,
    /// `LoaderInfo`: the booted loader's name and version (`systemd-boot 256.7`).
    pub loader_info: Option<String>,
}

/// The files that bear on the next boot, read once.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BootFiles {
    /// `(host path, parsed)`.
    pub grub_cfg: Option<(String, GrubCfg)>,
    pub grubenv: Option<(String, BTreeMap<String, String>)>,
    /// `GRUB_DEFAULT` of `/etc/default/grub`.
    pub grub_default: Option<String>,
    /// `/boot/loader/entries/*.conf`.
    pub bls_entries: Vec<BlsEntry>,
    /// systemd-boot's `loader.conf` `default` and where it was read.
    pub loader_conf: Option<(String, Option<String>)>,
    /// The ESP's `loader/entries/*.conf`.
    pub esp_entries: Vec<BlsEntry>,
    pub loader_vars: LoaderVars,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NextBoot {
    /// The release the next boot starts; `None` when the chosen entry boots no Linux image
    /// (or nothing is installed).
    pub release: Option<String>,
    pub bootloader: Bootloader,
    /// The entry's title or id.
    pub entry: Option<String>,
    /// The kernel command line of that entry, when the configuration shows it.
    pub cmdline: Option<String>,
    /// One sentence naming the evidence that decided.
    pub decided_by: String,
    /// What else the reader should know (stale configuration, unreadable variables).
    pub notes: Vec<String>,
}

/// Decides the next boot from the files and the installed kernels (oldest to newest).
pub fn decide_next_boot(files: &BootFiles, installed: &[InstalledKernel]) -> NextBoot {
    let releases: Vec<&str> = installed.iter().map(|k| k.release.as_str()).collect();
    let sd_booted = files
        .loader_vars
        .loader_info
        .as_deref()
        .is_some_and(|i| i.contains("systemd-boot"));
    let mut nb = if sd_booted
        || (files.grub_cfg.is_none()
            && (files.loader_conf.is_some() || !files.esp_entries.is_empty()))
    {
        systemd_boot(files, &releases, sd_booted)
    } else if let Some((path, cfg)) = &files.grub_cfg {
        if cfg.uses_blscfg && !files.bls_entries.is_empty() {
            grub_bls(files, path, cfg, &releases)
        } else {
            grub_menu(files, path, cfg)
        }
    } else {
        let mut nb = newest(
            installed,
            "no bootloader configuration was found (no grub.cfg, no loader entries)",
        );
        if let Some(d) = &files.grub_default {
            nb.notes.push(format!(
                "/etc/default/grub has GRUB_DEFAULT={d}, but without a grub.cfg there is no menu to resolve it against"
            ));
        }
        nb
    };
    if let Some(r) = &nb.release {
        if !releases.contains(&r.as_str()) {
            nb.notes.push(format!(
                "{r} has no image with a module tree installed: that boot would find no modules"
            ));
        }
    }
    nb
}

fn newest(installed: &[InstalledKernel], why: &str) -> NextBoot {
    NextBoot {
        release: installed.last().map(|k| k.release.clone()),
        bootloader: Bootloader::Unknown,
        entry: None,
        cmdline: None,
        decided_by: if installed.is_empty() {
            format!("{why}, and no kernel with a module tree is installed")
        } else {
            format!("{why}: assuming the newest installed kernel")
        },
        notes: Vec::new(),
    }
}

/// The default GRUB resolves and the sentence saying where it came from.
fn grub_default_spec(files: &BootFiles, cfg_path: &str, cfg: &GrubCfg) -> (String, String) {
    let env = files.grubenv.as_ref();
    let env_path = env.map(|(p, _)| p.as_str()).unwrap_or("grubenv");
    let get = |k: &str| {
        env.and_then(|(_, e)| e.get(k))
            .filter(|v| !v.is_empty())
            .cloned()
    };
    if cfg.honours_next_entry {
        if let Some(next) = get("next_entry") {
            return (
                next.clone(),
                format!("{env_path} next_entry={next} (a one-shot default set by grub-reboot)"),
            );
        }
    }
    match &cfg.default {
        DefaultRule::Saved => match get("saved_entry") {
            Some(saved) => (
                saved.clone(),
                format!("{cfg_path} uses the saved default and {env_path} has saved_entry={saved}"),
            ),
            None => (
                "0".into(),
                format!("{cfg_path} uses the saved default but {env_path} has no saved_entry: the first entry"),
            ),
        },
        DefaultRule::Literal { value } => (
            value.clone(),
            format!("{cfg_path} sets default=\"{value}\""),
        ),
        DefaultRule::First => ("0".into(), format!("{cfg_path} sets no default: the first entry")),
    }
}

fn stale_default_note(files: &BootFiles, cfg_path: &str, cfg: &GrubCfg) -> Option<String> {
    let wanted = files.grub_default.as_deref()?;
    let stale = match &cfg.default {
        DefaultRule::Saved => wanted != "saved",
        DefaultRule::Literal { value } => wanted == "saved" || wanted != value,
        DefaultRule::First => wanted != "0",
    };
    stale.then(|| {
        format!("/etc/default/grub has GRUB_DEFAULT={wanted}, which {cfg_path} does not reflect: update-grub (grub2-mkconfig) has not been run since it changed")
    })
}

fn grub_menu(files: &BootFiles, cfg_path: &str, cfg: &GrubCfg) -> NextBoot {
    let (spec, mut decided_by) = grub_default_spec(files, cfg_path, cfg);
    let mut notes: Vec<String> = stale_default_note(files, cfg_path, cfg)
        .into_iter()
        .collect();
    let entry = match grub::select_entry(&cfg.menu, &spec) {
        Some(e) => Some(e),
        None => {
            notes.push(format!(
                "the default \"{spec}\" names no entry of {cfg_path}: GRUB falls back to the first entry"
            ));
            decided_by.push_str(", which names no entry; the first entry");
            grub::first_entry(&cfg.menu)
        }
    };
    match entry {
        Some(e) => {
            decided_by.push_str(&format!(
                " → menuentry '{}' ({}:{})",
                e.title, cfg_path, e.line
            ));
            if e.release.is_none() {
                notes.push(format!("menuentry '{}' boots no vmlinuz image", e.title));
            }
            NextBoot {
                release: e.release.clone(),
                bootloader: Bootloader::Grub,
                entry: Some(e.id.clone().unwrap_or_else(|| e.title.clone())),
                cmdline: e.cmdline.clone(),
                decided_by,
                notes,
            }
        }
        None => NextBoot {
            release: None,
            bootloader: Bootloader::Grub,
            entry: None,
            cmdline: None,
            decided_by: format!("{decided_by}, but {cfg_path} has no boot entries"),
            notes,
        },
    }
}

fn grub_bls(files: &BootFiles, cfg_path: &str, cfg: &GrubCfg, releases: &[&str]) -> NextBoot {
    let (spec, mut decided_by) = grub_default_spec(files, cfg_path, cfg);
    let mut notes: Vec<String> = stale_default_note(files, cfg_path, cfg)
        .into_iter()
        .collect();
    let mut entries = files.bls_entries.clone();
    bls::sort_newest_first(&mut entries);
    let Some(newest_entry) = entries.first() else {
        return grub_menu(files, cfg_path, cfg);
    };
    let chosen = match spec.parse::<usize>() {
        Ok(i) => entries.get(i),
        Err(_) => entries
            .iter()
            .find(|e| e.id == spec || e.title.as_deref() == Some(spec.as_str())),
    };
    let entry = match chosen {
        Some(e) => e,
        None => {
            notes.push(format!(
                "the default \"{spec}\" names no entry in {BLS_DIR}: GRUB falls back to the first (newest) entry"
            ));
            decided_by.push_str(", which names no entry; the newest entry");
            newest_entry
        }
    };
    decided_by.push_str(&format!(" → BLS entry {}", entry.path));
    let env = files
        .grubenv
        .as_ref()
        .map(|(_, e)| e.clone())
        .unwrap_or_default();
    NextBoot {
        release: entry.release_among(releases),
        bootloader: Bootloader::GrubBls,
        entry: Some(entry.id.clone()),
        cmdline: entry
            .options
            .as_deref()
            .map(|o| bls::expand_grubenv_vars(o, &env)),
        decided_by,
        notes,
    }
}

fn systemd_boot(files: &BootFiles, releases: &[&str], sd_booted: bool) -> NextBoot {
    let mut notes = Vec::new();
    let vars = &files.loader_vars;
    if !vars.readable {
        notes.push(format!(
            "{EFIVARS} is not readable here: a one-shot entry (LoaderEntryOneShot) or a bootctl set-default (LoaderEntryDefault) would not be seen"
        ));
    }
    let mut entries = files.esp_entries.clone();
    bls::sort_newest_first(&mut entries);
    let conf = files.loader_conf.as_ref();
    let candidates: [(Option<&String>, String); 3] = [
        (
            vars.one_shot.as_ref(),
            "the LoaderEntryOneShot EFI variable (systemctl reboot --boot-loader-entry)".into(),
        ),
        (
            vars.default.as_ref(),
            "the LoaderEntryDefault EFI variable (bootctl set-default)".into(),
        ),
        (
            conf.and_then(|(_, d)| d.as_ref()),
            format!(
                "default in {}",
                conf.map(|(p, _)| p.as_str()).unwrap_or("loader.conf")
            ),
        ),
    ];
    let mut chosen = None;
    for (pattern, source) in candidates.iter() {
        let Some(p) = pattern else { continue };
        match bls::select_by_pattern(&entries, p) {
            Some(e) => {
                chosen = Some((e, format!("{source} is \"{p}\"")));
                break;
            }
            None => notes.push(format!("{source} is \"{p}\", which matches no entry")),
        }
    }
    let (entry, mut decided_by) = match chosen {
        Some(c) => c,
        None => match entries.first() {
            Some(e) => (
                e,
                "systemd-boot has no default that matches: the first (newest) entry".to_string(),
            ),
            None => {
                let mut nb = NextBoot {
                    release: None,
                    bootloader: Bootloader::SystemdBoot,
                    entry: None,
                    cmdline: None,
                    decided_by: "systemd-boot has no type #1 entries in loader/entries; unified kernel images in EFI/Linux are not read".into(),
                    notes,
                };
                if !sd_booted {
                    nb.decided_by
                        .push_str(" (and its LoaderInfo variable was not seen)");
                }
                return nb;
            }
        },
    };
    if sd_booted {
        decided_by = format!("systemd-boot booted this machine (LoaderInfo); {decided_by}");
    }
    decided_by.push_str(&format!(" → {}", entry.path));
    NextBoot {
        release: entry.release_among(releases),
        bootloader: Bootloader::SystemdBoot,
        entry: Some(entry.id.clone()),
        cmdline: entry.options.clone(),
        decided_by,
        notes,
    }
}

fn read_entries(root: &Root, dir: &str) -> Result<Vec<BlsEntry>, HostError> {
    let mut out = Vec::new();
    for name in root.list_dir(dir)?.unwrap_or_default() {
        if !name.ends_with(".conf") || name.starts_with('.') {
            continue;
        }
        let path = format!("{dir}/{name}");
        if !root.is_file(&path) {
            continue;
        }
        if let Some(text) = root.read_text_lossy(&path)? {
            out.push(bls::parse_bls_entry(&text, &name, &path));
        }
    }
    Ok(out)
}

fn efi_string(root: &Root, name: &str) -> Result<Option<String>, HostError> {
    Ok(root
        .read_bytes(format!("{EFIVARS}/{name}-{LOADER_GUID}"))?
        .and_then(|b| bls::parse_efi_string(&b)))
}

/// Reads every file [`decide_next_boot`] weighs.
pub fn read_boot_files(root: &Root) -> Result<BootFiles, HostError> {
    let mut files = BootFiles::default();
    for path in GRUB_CFGS {
        if let Some(text) = root.read_text_lossy(path)? {
            files.grub_cfg = Some((path.to_string(), grub::parse_grub_cfg(&text)));
            break;
        }
    }
    let cfg_dir = files
        .grub_cfg
        .as_ref()
        .and_then(|(p, _)| p.rsplit_once('/').map(|(d, _)| format!("{d}/grubenv")));
    for path in cfg_dir.iter().map(String::as_str).chain(GRUBENVS) {
        if let Some(text) = root.read_text_lossy(path)? {
            files.grubenv = Some((path.to_string(), grub::parse_grubenv(&text)));
            break;
        }
    }
    files.grub_default = root
        .read_text_lossy("/etc/default/grub")?
        .and_then(|t| grub::parse_grub_default(&t));
    files.bls_entries = read_entries(root, BLS_DIR)?;
    for esp in ESPS {
        let conf = format!("{esp}/loader/loader.conf");
        if let Some(text) = root.read_text_lossy(&conf)? {
            files.esp_entries = read_entries(root, &format!("{esp}/loader/entries"))?;
            files.loader_conf = Some((conf, bls::parse_loader_conf_default(&text)));
            break;
        }
    }
    if files.loader_conf.is_none() && files.grub_cfg.is_none() {
        files.esp_entries = files.bls_entries.clone();
    }
    files.loader_vars = LoaderVars {
        readable: root.list_dir(EFIVARS)?.is_some(),
        one_shot: efi_string(root, "LoaderEntryOneShot")?,
        default: efi_string(root, "LoaderEntryDefault")?,
        loader_info: efi_string(root, "LoaderInfo")?,
    };
    Ok(files)
}

/// Reads and decides.
pub fn read_next_boot(root: &Root, installed: &[InstalledKernel]) -> Result<NextBoot, HostError> {
    Ok(decide_next_boot(&read_boot_files(root)?, installed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernels(releases: &[&str]) -> Vec<InstalledKernel> {
        releases
            .iter()
            .map(|r| InstalledKernel {
                release: r.to_string(),
                image: format!("/boot/vmlinuz-{r}"),
                module_dir: format!("/lib/modules/{r}"),
                running: false,
            })
            .collect()
    }

    #[test]
    fn nothing_known_means_the_newest() {
        let nb = decide_next_boot(
            &BootFiles::default(),
            &kernels(&["6.1.0-9-amd64", "6.1.0-50-amd64"]),
        );
        assert_eq!(nb.release.as_deref(), Some("6.1.0-50-amd64"));
        assert_eq!(nb.bootloader, Bootloader::Unknown);
        assert!(nb.decided_by.contains("newest"), "{}", nb.decided_by);
        assert!(nb.notes.is_empty());
        let files = BootFiles {
            grub_default: Some("saved".into()),
            ..Default::default()
        };
        let nb = decide_next_boot(&files, &kernels(&["6.1.0-50-amd64"]));
        assert_eq!(nb.release.as_deref(), Some("6.1.0-50-amd64"));
        assert!(nb.notes[0].contains("GRUB_DEFAULT=saved"), "{:?}", nb.notes);
        let none = decide_next_boot(&BootFiles::default(), &[]);
        assert_eq!(none.release, None);
        assert!(none.decided_by.contains("no kernel"), "{}", none.decided_by);
    }

    #[test]
    fn systemd_boot_without_efivars_says_what_it_cannot_see() {
        let files = BootFiles {
            loader_conf: Some(("/efi/loader/loader.conf".into(), Some("arch-lts*".into()))),
            esp_entries: vec![
                bls::parse_bls_entry(
                    "version 6.13.1-arch1-1\nlinux /vmlinuz-linux\n",
                    "arch.conf",
                    "/efi/loader/entries/arch.conf",
                ),
                bls::parse_bls_entry(
                    "version 6.12.10-1-lts\nlinux /vmlinuz-linux-lts\noptions rw\n",
                    "arch-lts.conf",
                    "/efi/loader/entries/arch-lts.conf",
                ),
            ],
            ..Default::default()
        };
        let nb = decide_next_boot(&files, &kernels(&["6.12.10-1-lts", "6.13.1-arch1-1"]));
        assert_eq!(nb.bootloader, Bootloader::SystemdBoot);
        assert_eq!(nb.release.as_deref(), Some("6.12.10-1-lts"));
        assert_eq!(nb.cmdline.as_deref(), Some("rw"));
        assert!(nb.decided_by.contains("loader.conf"), "{}", nb.decided_by);
        assert!(
            nb.notes.iter().any(|n| n.contains("LoaderEntryOneShot")),
            "{:?}",
            nb.notes
        );
        let mut files = files;
        files.loader_vars = LoaderVars {
            readable: true,
            one_shot: Some("arch.conf".into()),
            default: None,
            loader_info: Some("systemd-boot 257.2".into()),
        };
        let nb = decide_next_boot(&files, &kernels(&["6.12.10-1-lts", "6.13.1-arch1-1"]));
        assert_eq!(nb.release.as_deref(), Some("6.13.1-arch1-1"));
        assert!(
            nb.decided_by.contains("LoaderEntryOneShot"),
            "{}",
            nb.decided_by
        );
        assert!(nb.notes.is_empty(), "{:?}", nb.notes);
    }
}
