//! The GNU build-id of an ELF note section (`.note.gnu.build-id` in a module file, or
//! `/sys/module/<m>/notes/.note.gnu.build-id` of a loaded one): what tells two builds apart.

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
