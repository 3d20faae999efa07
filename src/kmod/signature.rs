//! The signature `sign-file` appends to a module: who signed it, with which key and digest.
//!
//! Layout, from the end of the (decompressed) module image backwards: the 28-byte magic
//! `~Module signature appended~\n`, a 12-byte `struct module_signature` (`algo`, `hash`,
//! `id_type`, `signer_len`, `key_id_len`, 3 bytes of padding, big-endian `sig_len`), then
//! `sig_len` bytes of signature data. Every current kernel writes `id_type` 2 (PKCS#7): the data
//! is a DER CMS `SignedData` without certificates, and the signer is named by its certificate's
//! issuer and serial number (or, with `sign-file -k`, its subject key identifier). Older
//! `id_type`s (PGP 0, X.509 1) put `signer_len` bytes of signer name and `key_id_len` bytes of key
//! id before the signature. What is reported follows `modinfo`: `signer` is the issuer's common
//! name, `sig_key` the serial number (or key identifier) in colon-separated hex, `sig_hashalgo`
//! the digest. Parsing the DER is left to RustCrypto's `cms` crate.
//!
//! Nothing here verifies the signature (the kernel does, against its own keyring): a module that
//! carries a trailer is "signed by X", not "signed validly".

use cms::cert::x509::der::{Decode, Encode};
use cms::content_info::ContentInfo;
use cms::signed_data::{SignedData, SignerIdentifier};
use serde::{Deserialize, Serialize};

/// The magic that ends a signed module.
pub const SIGNATURE_MAGIC: &[u8] = b"~Module signature appended~\n";
/// Size of `struct module_signature`.
pub const MODULE_SIGNATURE_SIZE: usize = 12;

/// `id_type` of `struct module_signature`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SignatureIdType {
    Pgp,
    X509,
    Pkcs7,
    Other(u8),
}

impl SignatureIdType {
    fn of(b: u8) -> Self {
        match b {
            0 => Self::Pgp,
            1 => Self::X509,
            2 => Self::Pkcs7,
            n => Self::Other(n),
        }
    }

    /// As `modinfo` prints `sig_id`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pgp => "PGP",
            Self::X509 => "X509",
            Self::Pkcs7 => "PKCS#7",
            Self::Other(_) => "unknown",
        }
    }
}

/// What a signature trailer says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleSignature {
    pub id_type: SignatureIdType,
    /// The signer's name (PKCS#7: the common name of the certificate's issuer).
    pub signer: Option<String>,
    /// The key identifier in `modinfo`'s colon-separated upper-case hex (PKCS#7: the
    /// certificate's serial number, or its subject key identifier).
    pub key_id: Option<String>,
    /// The digest algorithm (`sha256`, `sha512`, …).
    pub hash_algorithm: Option<String>,
    /// Bytes of signature data (the PKCS#7 blob, or the raw signature of older formats).
    pub signature_len: u32,
    /// Size of the module without its signature.
    pub signed_len: u64,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    #[error("the signature trailer is truncated: it claims {sig_len} bytes of signature but only {available} precede it")]
    Truncated { sig_len: u64, available: u64 },
    #[error("the PKCS#7 signature is not valid DER: {0}")]
    Der(String),
    #[error("the PKCS#7 signature holds no SignedData (content type {0})")]
    NotSignedData(String),
}

/// Colon-separated upper-case hex, as `modinfo` prints keys.
pub(crate) fn colon_hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The OID of a digest as `modinfo` names it.
fn digest_name(oid: &str) -> String {
    match oid {
        "1.2.840.113549.2.5" => "md5",
        "1.3.14.3.2.26" => "sha1",
        "2.16.840.1.101.3.4.2.4" => "sha224",
        "2.16.840.1.101.3.4.2.1" => "sha256",
        "2.16.840.1.101.3.4.2.2" => "sha384",
        "2.16.840.1.101.3.4.2.3" => "sha512",
        "2.16.840.1.101.3.4.2.8" => "sha3-256",
        "2.16.840.1.101.3.4.2.9" => "sha3-384",
        "2.16.840.1.101.3.4.2.10" => "sha3-512",
        "1.2.156.10197.1.401" => "sm3",
        other => return other.to_string(),
    }
    .to_string()
}

/// `hash` of the pre-PKCS#7 formats (`enum hash_algo`).
fn legacy_hash_name(h: u8) -> Option<String> {
    let names = [
        "md4", "md5", "sha1", "rmd160", "sha256", "sha384", "sha512", "sha224",
    ];
    names.get(usize::from(h)).map(|s| s.to_string())
}

const COMMON_NAME: &str = "2.5.4.3";

/// Who signed a PKCS#7 blob, as `modinfo` reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pkcs7Signer {
    pub signer: Option<String>,
    pub key_id: Option<String>,
    pub hash_algorithm: Option<String>,
}

/// The signer of a DER CMS `SignedData` wrapped in a `ContentInfo`.
pub fn parse_pkcs7(der: &[u8]) -> Result<Pkcs7Signer, SignatureError> {
    let der_err = |e: cms::cert::x509::der::Error| SignatureError::Der(e.to_string());
    let info = ContentInfo::from_der(der).map_err(der_err)?;
    if info.content_type != const_oid_signed_data() {
        return Err(SignatureError::NotSignedData(info.content_type.to_string()));
    }
    let signed: SignedData = info.content.decode_as().map_err(der_err)?;
    let Some(si) = signed.signer_infos.0.iter().next() else {
        return Ok(Pkcs7Signer::default());
    };
    let digest = Some(digest_name(&si.digest_alg.oid.to_string()));
    let (signer, key_id) = match &si.sid {
        SignerIdentifier::IssuerAndSerialNumber(isn) => {
            let cn = isn
                .issuer
                .0
                .iter()
                .flat_map(|rdn| rdn.0.iter())
                .find(|atv| atv.oid.to_string() == COMMON_NAME)
                .map(|atv| directory_string(&atv.value));
            (cn, Some(colon_hex(isn.serial_number.as_bytes())))
        }
        SignerIdentifier::SubjectKeyIdentifier(skid) => (None, Some(colon_hex(skid.0.as_bytes()))),
    };
    Ok(Pkcs7Signer {
        signer,
        key_id,
        hash_algorithm: digest,
    })
}

fn const_oid_signed_data() -> cms::cert::x509::der::oid::ObjectIdentifier {
    cms::cert::x509::der::oid::ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.2")
}

/// The text of a DirectoryString (UTF8String, PrintableString, IA5String, …): its content bytes.
fn directory_string(value: &cms::cert::x509::der::Any) -> String {
    let bytes = value.value();
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        // BMPString and friends: fall back to the DER, which at least shows something.
        Err(_) => value.to_der().map(|d| colon_hex(&d)).unwrap_or_default(),
    }
}

/// Reads the signature trailer of a module image. `Ok(None)`: the module is not signed.
pub fn parse_signature(image: &[u8]) -> Result<Option<ModuleSignature>, SignatureError> {
    let Some(before_magic) = image.strip_suffix(SIGNATURE_MAGIC) else {
        return Ok(None);
    };
    let available = before_magic.len().saturating_sub(MODULE_SIGNATURE_SIZE) as u64;
    let Some(header_at) = before_magic.len().checked_sub(MODULE_SIGNATURE_SIZE) else {
        return Err(SignatureError::Truncated {
            sig_len: 0,
            available: 0,
        });
    };
    let h = &before_magic[header_at..];
    let (hash, id_type, signer_len, key_id_len) = (h[1], h[2], h[3], h[4]);
    let sig_len = u32::from_be_bytes([h[8], h[9], h[10], h[11]]);
    let id_type = SignatureIdType::of(id_type);
    let prefix = if id_type == SignatureIdType::Pkcs7 {
        0
    } else {
        u64::from(signer_len) + u64::from(key_id_len)
    };
    let total = u64::from(sig_len) + prefix;
    if total > available {
        return Err(SignatureError::Truncated {
            sig_len: total,
            available,
        });
    }
    let start = (available - total) as usize;
    let data = &before_magic[start..header_at];
    let Pkcs7Signer {
        signer,
        key_id,
        hash_algorithm,
    } = match id_type {
        SignatureIdType::Pkcs7 => parse_pkcs7(data)?,
        _ => {
            let (name, rest) = data.split_at(usize::from(signer_len));
            let key = &rest[..usize::from(key_id_len)];
            Pkcs7Signer {
                signer: (!name.is_empty()).then(|| String::from_utf8_lossy(name).into_owned()),
                key_id: (!key.is_empty()).then(|| colon_hex(key)),
                hash_algorithm: legacy_hash_name(hash),
            }
        }
    };
    Ok(Some(ModuleSignature {
        id_type,
        signer,
        key_id,
        hash_algorithm,
        signature_len: sig_len,
        signed_len: start as u64,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trailer(id_type: u8, signer: &[u8], key: &[u8], sig: &[u8]) -> Vec<u8> {
        let mut v = b"\x7fELF-the-module".to_vec();
        v.extend_from_slice(signer);
        v.extend_from_slice(key);
        v.extend_from_slice(sig);
        v.extend_from_slice(&[1, 4, id_type, signer.len() as u8, key.len() as u8, 0, 0, 0]);
        v.extend_from_slice(&(sig.len() as u32).to_be_bytes());
        v.extend_from_slice(SIGNATURE_MAGIC);
        v
    }

    #[test]
    fn an_image_without_the_magic_is_unsigned() {
        assert_eq!(parse_signature(b"\x7fELF....").unwrap(), None);
        assert_eq!(parse_signature(b"").unwrap(), None);
    }

    #[test]
    fn the_legacy_layout_names_signer_and_key() {
        let s = parse_signature(&trailer(1, b"Build key", &[0xab, 0x01], b"SIG"))
            .unwrap()
            .unwrap();
        assert_eq!(s.id_type, SignatureIdType::X509);
        assert_eq!(s.signer.as_deref(), Some("Build key"));
        assert_eq!(s.key_id.as_deref(), Some("AB:01"));
        assert_eq!(s.hash_algorithm.as_deref(), Some("sha256"));
        assert_eq!(s.signed_len, 15);
    }

    #[test]
    fn a_trailer_claiming_more_than_the_file_is_an_error() {
        let mut v = trailer(2, b"", b"", b"0123");
        let n = v.len();
        let at = n - SIGNATURE_MAGIC.len() - 4;
        v[at..at + 4].copy_from_slice(&9999u32.to_be_bytes());
        assert!(matches!(
            parse_signature(&v),
            Err(SignatureError::Truncated { sig_len: 9999, .. })
        ));
        assert!(matches!(
            parse_signature(SIGNATURE_MAGIC),
            Err(SignatureError::Truncated { .. })
        ));
    }

    #[test]
    fn garbage_pkcs7_is_a_der_error() {
        assert!(matches!(
            parse_signature(&trailer(2, b"", b"", b"\x30\x03\x02\x01")),
            Err(SignatureError::Der(_))
        ));
    }
}
