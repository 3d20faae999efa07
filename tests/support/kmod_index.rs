//! Writes depmod's binary index format (`modules.*.bin`), so fixture trees can carry the files
//! modprobe reads: a trie with path compression, children written before their parent, offsets
//! tagged with the prefix/children/values flags, big-endian throughout.

use std::collections::BTreeMap;

const MAGIC: u32 = 0xB007_F457;
const VERSION: u32 = 0x0002_0001;
const PREFIX: u32 = 0x8000_0000;
const VALUES: u32 = 0x4000_0000;
const CHILDS: u32 = 0x2000_0000;

#[derive(Default)]
struct Node {
    children: BTreeMap<u8, Node>,
    values: Vec<(u32, String)>,
}

fn write_node(node: &Node, out: &mut Vec<u8>) -> u32 {
    let mut prefix = Vec::new();
    let mut n = node;
    while n.values.is_empty() && n.children.len() == 1 {
        let (&c, child) = n.children.iter().next().expect("one child");
        prefix.push(c);
        n = child;
    }
    let children: Vec<(u8, u32)> = n
        .children
        .iter()
        .map(|(&c, child)| (c, write_node(child, out)))
        .collect();
    let offset = out.len() as u32;
    let mut flags = 0;
    if !prefix.is_empty() {
        flags |= PREFIX;
        out.extend_from_slice(&prefix);
        out.push(0);
    }
    if let (Some(&(first, _)), Some(&(last, _))) = (children.first(), children.last()) {
        flags |= CHILDS;
        out.push(first);
        out.push(last);
        for c in first..=last {
            let off = children
                .iter()
                .find(|(k, _)| *k == c)
                .map_or(0, |(_, o)| *o);
            out.extend_from_slice(&off.to_be_bytes());
        }
    }
    if !n.values.is_empty() {
        flags |= VALUES;
        out.extend_from_slice(&(n.values.len() as u32).to_be_bytes());
        for (priority, value) in &n.values {
            out.extend_from_slice(&priority.to_be_bytes());
            out.extend_from_slice(value.as_bytes());
            out.push(0);
        }
    }
    flags | offset
}

/// An index of `(key, value)` pairs; a key's values get priorities in the order given.
pub fn write_index(entries: &[(&str, &str)]) -> Vec<u8> {
    let mut root = Node::default();
    for (key, value) in entries {
        let mut n = &mut root;
        for &b in key.as_bytes() {
            n = n.children.entry(b).or_default();
        }
        let priority = n.values.len() as u32;
        n.values.push((priority, value.to_string()));
    }
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC.to_be_bytes());
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes());
    let root_offset = write_node(&root, &mut out);
    out[8..12].copy_from_slice(&root_offset.to_be_bytes());
    out
}
