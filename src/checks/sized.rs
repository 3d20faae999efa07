//! Messages written into a string made with room for them. `format!` gives a message that
//! opens with a value (`{mount point}: …`) no room at all and grows it several times; the mount
//! checks run for every mount meant for RDMA on each agent pass, thousands on a large node.

use std::fmt::{Arguments, Write as _};

/// `args` written into a string with room for `room` bytes (more when it needs more).
pub fn sized(room: usize, args: Arguments) -> String {
    let mut text = String::with_capacity(room);
    // Writing into a String cannot fail.
    let _ = text.write_fmt(args);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_what_format_writes_whatever_the_room() {
        let at = "/var/lib/kubelet/pods/x/volumes/kubernetes.io~csi/pvc-1/mount";
        for room in [0, 8, 200] {
            let text = sized(room, format_args!("{at}: {} RDMA connection{}", 4, "s"));
            assert_eq!(text, format!("{at}: 4 RDMA connections"));
        }
    }
}
