//! What the kernel says about a loaded (or built-in) module under `/sys/module/<name>/`.
//!
//! The identity of the loaded build is its GNU build-id (`notes/.note.gnu.build-id`), which names
//! the exact binary; `srcversion` only hashes the sources and stock modules often lack it.

use serde::Serialize;

use super::{read_first_line, HostError, Root};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SysModule {
    /// `/sys/module/<name>` exists (loaded, or built in with parameters).
    pub present: bool,
    /// `initstate`: `live`, `coming`, `going`. Built-in modules have none.
    pub initstate: Option<String>,
    pub version: Option<String>,
    pub srcversion: Option<String>,
    /// Lower-case hex of the GNU build-id note.
    pub build_id: Option<String>,
}

impl SysModule {
    pub fn read(root: &Root, name: &str) -> Result<Self, HostError> {
        let dir = format!("sys/module/{name}");
        if !root.exists(&dir) {
            return Ok(SysModule::default());
        }
        let build_id = root
            .read_bytes(format!("{dir}/notes/.note.gnu.build-id"))?
            .and_then(|b| parse_gnu_build_id_note(&b));
        Ok(SysModule {
            present: true,
            initstate: read_first_line(root, &format!("{dir}/initstate"))?,
            version: read_first_line(root, &format!("{dir}/version"))?,
            srcversion: read_first_line(root, &format!("{dir}/srcversion"))?,
            build_id,
        })
    }
}

/// The descriptor of the first `NT_GNU_BUILD_ID` (type 3, owner `GNU`) note in a raw ELF note
/// section, as lower-case hex. Notes are little- or big-endian like the machine; both are tried.
pub fn parse_gnu_build_id_note(bytes: &[u8]) -> Option<String> {
    parse_with(bytes, u32::from_le_bytes).or_else(|| parse_with(bytes, u32::from_be_bytes))
}

fn parse_with(bytes: &[u8], read: fn([u8; 4]) -> u32) -> Option<String> {
    let word = |off: usize| -> Option<u32> {
        bytes
            .get(off..off + 4)
            .map(|b| read([b[0], b[1], b[2], b[3]]))
    };
    let align4 = |n: usize| (n + 3) & !3;
    let mut off = 0;
    while off + 12 <= bytes.len() {
        let namesz = word(off)? as usize;
        let descsz = word(off + 4)? as usize;
        let ntype = word(off + 8)?;
        let name_start = off + 12;
        let desc_start = name_start.checked_add(align4(namesz))?;
        let desc_end = desc_start.checked_add(descsz)?;
        if desc_end > bytes.len() {
            return None;
        }
        let name = &bytes[name_start..name_start + namesz];
        if ntype == 3 && name == b"GNU\0" && descsz > 0 {
            return Some(hex(&bytes[desc_start..desc_end]));
        }
        off = desc_start.checked_add(align4(descsz))?;
    }
    None
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn note(id: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&4u32.to_le_bytes());
        v.extend_from_slice(&(id.len() as u32).to_le_bytes());
        v.extend_from_slice(&3u32.to_le_bytes());
        v.extend_from_slice(b"GNU\0");
        v.extend_from_slice(id);
        v
    }

    #[test]
    fn build_id_note_decodes() {
        let id = [0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04];
        assert_eq!(
            parse_gnu_build_id_note(&note(&id)).as_deref(),
            Some("deadbeef01020304")
        );
    }

    #[test]
    fn truncated_or_foreign_notes_give_nothing() {
        let id = [1u8; 20];
        let n = note(&id);
        assert_eq!(parse_gnu_build_id_note(&n[..n.len() - 1]), None);
        assert_eq!(parse_gnu_build_id_note(&[]), None);
        let mut other = n;
        other[8] = 1; // NT_GNU_ABI_TAG
        assert_eq!(parse_gnu_build_id_note(&other), None);
    }
}
