//! The one integration-test binary: runs the real `nfs-gds` against fixture root trees.

mod mount_fixture;
mod mount_helper;
mod verify_cmd;
