//! The keys this node's kernel trusts for module signatures, as far as files below the root
//! show them: the certificates shim enrolled in its Machine Owner Key list (`MokListRT`, which
//! the kernel mirrors to `/sys/firmware/efi/mok-variables/` and which is an EFI variable under
//! `efivars/`), the enrolments `mokutil --import` left pending for the next boot (`MokNew`), and
//! the names of the asymmetric keys in the kernel's keyrings (`/proc/keys`: the distribution's
//! built-in key, the MOK keys, the firmware's db).
//!
//! Files, not `mokutil --list-enrolled`: they read the same lists below `--root` (a fixture, a
//! collected bundle) without running a program. `/proc/keys` names each key (`<subject CN>:
//! <subject key id>`) but not its serial number, which the module's PKCS#7 signature names, so
//! only the MOK list (whole X.509 certificates) tells a changed DKMS key from the enrolled one
//! of the same name.

use serde::Serialize;

use crate::host::io::error::HostError;
use crate::host::io::root::Root;
use cms::cert::x509::der::Decode;
use cms::cert::x509::Certificate;

/// shim's vendor GUID, the suffix of its variables under `efivars/`.
const SHIM_GUID: &str = "605dab50-e046-4300-abb6-3dd810dd8b23";
/// `EFI_CERT_X509_GUID` (a5c059a1-94e4-4aa7-87b5-ab155c2bf072) as it is stored.
const CERT_X509: [u8; 16] = [
    0xa1, 0x59, 0xc0, 0xa5, 0xe4, 0x94, 0xa7, 0x4a, 0x87, 0xb5, 0xab, 0x15, 0x5c, 0x2b, 0xf0, 0x72,
];
const COMMON_NAME: &str = "2.5.4.3";

/// One enrolled certificate, named as a module signature names its signer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnrolledCert {
    pub subject: Option<String>,
    pub issuer: Option<String>,
    /// The serial number in `modinfo`'s colon-separated upper-case hex.
    pub serial: String,
}

/// A MOK list and the file it was read from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MokList {
    pub source: String,
    pub certs: Vec<EnrolledCert>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModuleKeys {
    /// The enrolled MOK list; `Ok(None)` where none is exposed (no shim, no EFI).
    pub enrolled: Result<Option<MokList>, String>,
    /// Certificates `mokutil --import` queued for the MOK manager at the next boot.
    pub pending: Vec<EnrolledCert>,
    /// Names (subject CN) of the asymmetric keys `/proc/keys` shows; `None` without the file.
    pub kernel_keys: Option<Vec<String>>,
}

impl ModuleKeys {
    /// What a node without EFI shows: no MOK list, no pending enrolment, no `/proc/keys`.
    pub fn none() -> Self {
        ModuleKeys {
            enrolled: Ok(None),
            pending: Vec::new(),
            kernel_keys: None,
        }
    }

    pub fn read(root: &Root) -> Result<Self, HostError> {
        let enrolled = read_mok_list(root, "MokListRT");
        let pending = match read_mok_list(root, "MokNew") {
            Ok(Some(l)) => l.certs,
            _ => Vec::new(),
        };
        let kernel_keys = root
            .read_text_lossy("proc/keys")?
            .map(|t| parse_proc_keys(&t));
        Ok(ModuleKeys {
            enrolled,
            pending,
            kernel_keys,
        })
    }
}

/// `name` from the kernel's mirror (raw signature lists), else from `efivars/` (after the
/// four bytes of attributes), with shim's overflow variables `<name>1`, `<name>2`, ….
fn read_mok_list(root: &Root, name: &str) -> Result<Option<MokList>, String> {
    let mirror = format!("sys/firmware/efi/mok-variables/{name}");
    let read = |rel: &str| root.read_bytes(rel).map_err(|e| e.to_string());
    if let Some(bytes) = read(&mirror)? {
        let certs = parse_signature_lists(&bytes).map_err(|e| format!("/{mirror}: {e}"))?;
        return Ok(Some(MokList {
            source: format!("/{mirror}"),
            certs,
        }));
    }
    let mut list: Option<MokList> = None;
    for i in 0..16 {
        let suffix = if i == 0 { String::new() } else { i.to_string() };
        let rel = format!("sys/firmware/efi/efivars/{name}{suffix}-{SHIM_GUID}");
        let Some(bytes) = read(&rel)? else { break };
        let body = bytes.get(4..).unwrap_or_default();
        let certs = parse_signature_lists(body).map_err(|e| format!("/{rel}: {e}"))?;
        let l = list.get_or_insert_with(|| MokList {
            source: format!("/{rel}"),
            ..MokList::default()
        });
        l.certs.extend(certs);
    }
    Ok(list)
}

/// The X.509 certificates of a sequence of `EFI_SIGNATURE_LIST`s (hash entries are skipped).
pub fn parse_signature_lists(mut bytes: &[u8]) -> Result<Vec<EnrolledCert>, String> {
    let mut certs = Vec::new();
    let u32_at = |b: &[u8], at: usize| {
        b.get(at..at + 4)
            .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize)
    };
    while !bytes.is_empty() {
        let (Some(list_size), Some(header_size), Some(sig_size)) =
            (u32_at(bytes, 16), u32_at(bytes, 20), u32_at(bytes, 24))
        else {
            return Err("a signature list header is truncated".into());
        };
        if list_size < 28 || list_size > bytes.len() || sig_size < 16 {
            return Err(format!(
                "a signature list claims {list_size} bytes with entries of {sig_size}, but {} remain",
                bytes.len()
            ));
        }
        let x509 = bytes[..16] == CERT_X509;
        let entries = bytes
            .get(28 + header_size..list_size)
            .ok_or("a signature list header overruns its list")?;
        if x509 {
            for entry in entries.chunks(sig_size) {
                let der = entry.get(16..).unwrap_or_default();
                certs.push(describe(der)?);
            }
        }
        bytes = &bytes[list_size..];
    }
    Ok(certs)
}

fn describe(der: &[u8]) -> Result<EnrolledCert, String> {
    let cert = Certificate::from_der(der)
        .map_err(|e| format!("an enrolled certificate is not valid DER: {e}"))?;
    let cn = |name: &cms::cert::x509::name::Name| {
        name.0
            .iter()
            .flat_map(|rdn| rdn.0.iter())
            .find(|atv| atv.oid.to_string() == COMMON_NAME)
            .and_then(|atv| std::str::from_utf8(atv.value.value()).ok())
            .map(str::to_string)
    };
    let tbs = &cert.tbs_certificate;
    Ok(EnrolledCert {
        subject: cn(&tbs.subject),
        issuer: cn(&tbs.issuer),
        serial: crate::kmod::signature::colon_hex(tbs.serial_number.as_bytes()),
    })
}

/// The names of the asymmetric keys in `/proc/keys` lines (`… asymmetri <CN>: <key id>: X509.rsa
/// … []`): the description up to its hexadecimal key id.
pub fn parse_proc_keys(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        if fields.nth(7) != Some("asymmetri") {
            continue;
        }
        let Some((_, desc)) = line.split_once(" asymmetri ") else {
            continue;
        };
        let parts: Vec<&str> = desc.split(": ").collect();
        let hex = |s: &str| s.len() >= 8 && s.chars().all(|c| c.is_ascii_hexdigit());
        if let Some(i) = parts.iter().position(|p| hex(p)).filter(|i| *i > 0) {
            let name = parts[..i].join(": ");
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_keys_names_the_asymmetric_keys() {
        let text = "\
0e3e5b2c I------     1 perm 1f0b0000     0     0 keyring   .builtin_trusted_keys: 1
1e6ea5ee I------     1 perm 1f030000     0     0 asymmetri Debian Secure Boot CA: 6ccece7e4c6c0d1f6149f3dd27dfcc5cbb419ea1: X509.rsa bb419ea1 []
2a1b3c4d I------     1 perm 1f010000     0     0 asymmetri DKMS module signing key: 4f2a9c10aa: X509.rsa 4f2a9c10 []
3a1b3c4d I------     1 perm 1f010000     0     0 asymmetri Debian Secure Boot CA: 6ccece7e4c6c0d1f6149f3dd27dfcc5cbb419ea1: X509.rsa bb419ea1 []
";
        assert_eq!(
            parse_proc_keys(text),
            vec!["Debian Secure Boot CA", "DKMS module signing key"]
        );
    }

    #[test]
    fn a_truncated_signature_list_is_an_error_naming_what_is_missing() {
        assert!(parse_signature_lists(&[0u8; 10])
            .unwrap_err()
            .contains("truncated"));
        let mut list = CERT_X509.to_vec();
        list.extend(4000u32.to_le_bytes());
        list.extend(0u32.to_le_bytes());
        list.extend(100u32.to_le_bytes());
        assert!(parse_signature_lists(&list)
            .unwrap_err()
            .contains("claims 4000 bytes"));
        assert_eq!(parse_signature_lists(&[]), Ok(Vec::new()));
    }
}
