//! Machine Owner Keys as shim exposes them: self-signed X.509 certificates (structurally valid,
//! not verifiable: nothing checks their signatures) in `EFI_SIGNATURE_LIST`s, the contents of
//! `MokListRT` and `MokNew`.

use cms::cert::x509::attr::AttributeTypeAndValue;
use cms::cert::x509::certificate::{Certificate, TbsCertificate, Version};
use cms::cert::x509::der::asn1::{BitString, SetOfVec, UtcTime, Utf8StringRef};
use cms::cert::x509::der::{oid::ObjectIdentifier, Any, Encode};
use cms::cert::x509::name::{Name, RdnSequence, RelativeDistinguishedName};
use cms::cert::x509::serial_number::SerialNumber;
use cms::cert::x509::spki::{AlgorithmIdentifierOwned, SubjectPublicKeyInfoOwned};
use cms::cert::x509::time::{Time, Validity};

/// `EFI_CERT_X509_GUID` as stored.
const CERT_X509: [u8; 16] = [
    0xa1, 0x59, 0xc0, 0xa5, 0xe4, 0x94, 0xa7, 0x4a, 0x87, 0xb5, 0xab, 0x15, 0x5c, 0x2b, 0xf0, 0x72,
];
/// `EFI_CERT_SHA256_GUID` as stored: shim lists hashes too.
const CERT_SHA256: [u8; 16] = [
    0x26, 0x16, 0xc4, 0xc1, 0x4c, 0x50, 0x92, 0x40, 0xac, 0xa9, 0x41, 0xf9, 0x36, 0x93, 0x43, 0x28,
];
pub const SHIM_GUID: &str = "605dab50-e046-4300-abb6-3dd810dd8b23";

/// A self-signed certificate `CN=<cn>` with `serial`, DER.
pub fn certificate(cn: &str, serial: &[u8]) -> Vec<u8> {
    let oid = ObjectIdentifier::new_unwrap;
    let name: Name = RdnSequence(vec![RelativeDistinguishedName(
        SetOfVec::try_from(vec![AttributeTypeAndValue {
            oid: oid("2.5.4.3"),
            value: Any::from(Utf8StringRef::new(cn).expect("UTF-8 name")),
        }])
        .expect("one attribute"),
    )]);
    let rsa = AlgorithmIdentifierOwned {
        oid: oid("1.2.840.113549.1.1.11"),
        parameters: None,
    };
    let when = |secs| {
        Time::UtcTime(UtcTime::from_unix_duration(std::time::Duration::from_secs(secs)).unwrap())
    };
    let tbs = TbsCertificate {
        version: Version::V3,
        serial_number: SerialNumber::new(serial).expect("serial"),
        signature: rsa.clone(),
        issuer: name.clone(),
        validity: Validity {
            not_before: when(1_700_000_000),
            not_after: when(2_000_000_000),
        },
        subject: name,
        subject_public_key_info: SubjectPublicKeyInfoOwned {
            algorithm: AlgorithmIdentifierOwned {
                oid: oid("1.2.840.113549.1.1.1"),
                parameters: None,
            },
            subject_public_key: BitString::from_bytes(&[0x30; 140]).unwrap(),
        },
        issuer_unique_id: None,
        subject_unique_id: None,
        extensions: None,
    };
    Certificate {
        tbs_certificate: tbs,
        signature_algorithm: rsa,
        signature: BitString::from_bytes(&[0xa5; 256]).unwrap(),
    }
    .to_der()
    .expect("certificate encodes")
}

fn list(kind: [u8; 16], entries: &[Vec<u8>]) -> Vec<u8> {
    let size = 16 + entries[0].len();
    let mut out = kind.to_vec();
    out.extend(((28 + size * entries.len()) as u32).to_le_bytes());
    out.extend(0u32.to_le_bytes());
    out.extend((size as u32).to_le_bytes());
    for e in entries {
        out.extend([0x11; 16]); // the owner's GUID
        out.extend(e);
    }
    out
}

/// The signature lists of a MOK variable: a SHA-256 hash list, then one X.509 list per
/// certificate (their sizes differ), as shim keeps them.
pub fn signature_lists(certs: &[Vec<u8>]) -> Vec<u8> {
    let mut out = list(CERT_SHA256, &[vec![0x42; 32]]);
    for c in certs {
        out.extend(list(CERT_X509, std::slice::from_ref(c)));
    }
    out
}

/// An `efivars` file of shim's variable: four bytes of attributes, then the lists.
pub fn efivar(certs: &[Vec<u8>]) -> Vec<u8> {
    let mut out = vec![0x06, 0, 0, 0];
    out.extend(signature_lists(certs));
    out
}
