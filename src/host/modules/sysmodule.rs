//! What the kernel says about a loaded (or built-in) module under `/sys/module/<name>/`.
//!
//! The identity of the loaded build is its GNU build-id (`notes/.note.gnu.build-id`), which names
//! the exact binary; `srcversion` only hashes the sources and stock modules often lack it.

use crate::kmod::build_id::parse_gnu_build_id_note;
use serde::Serialize;

use crate::host::io::error::HostError;
use crate::host::io::root::{read_first_line, Root};

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
