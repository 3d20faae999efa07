//! The one integration-test binary: runs the real `nfs-gds` against fixture root trees.
