//! Resolution through depmod's binary indexes, as modprobe does it: the `.bin` files win over the
//! text ones, alias patterns match as `fnmatch`, indexes are read only when a lookup needs them,
//! and a corrupt index is an error that names it.

use nfs_gds::host::modules::{ModuleTree, Resolution};
use nfs_gds::host::{HostError, Root};

use crate::support::kmod_index::write_index;
use crate::support::*;

const RELEASE: &str = "6.1.0-50-amd64";
const DKMS_FILE: &str = "updates/dkms/rpcrdma.ko";

/// A tree whose binary indexes say rpcrdma is the DKMS build while the stale text files still
/// name the inbox one.
fn binary_tree() -> Fixture {
    let f = Fixture::new(RELEASE);
    let t = f.tree();
    f.write(
        format!("{t}/{DKMS_FILE}"),
        build(&ModuleSpec::rpcrdma(RELEASE)),
    );
    f.write(
        format!("{t}/modules.dep"),
        format!("{INBOX}.ko: kernel/net/sunrpc/sunrpc.ko\n"),
    );
    f.write(
        format!("{t}/modules.dep.bin"),
        write_index(&[
            (
                "rpcrdma",
                &format!("{DKMS_FILE}: kernel/net/sunrpc/sunrpc.ko"),
            ),
            ("sunrpc", "kernel/net/sunrpc/sunrpc.ko:"),
            (
                "mlx5_core",
                "kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko:",
            ),
        ]),
    );
    f.write(
        format!("{t}/modules.alias.bin"),
        write_index(&[
            ("rpcrdma6", "rpcrdma"),
            ("xprtrdma", "rpcrdma"),
            ("svcrdma", "rpcrdma"),
            ("pci:v000015B3d0000101Dsv*sd*bc*sc*i*", "mlx5_core"),
            ("pci:v000015B3d*sv*sd*bc02sc00i*", "mlx5_core"),
        ]),
    );
    f.write(
        format!("{t}/modules.builtin.bin"),
        write_index(&[("ext4", "")]),
    );
    f.write(format!("{t}/modules.builtin"), "");
    f
}

fn tree(f: &Fixture) -> (Root, ModuleTree) {
    let root = Root::new(f.root());
    let tree = ModuleTree::read(&root, RELEASE).expect("tree");
    (root, tree)
}

#[test]
fn the_binary_indexes_win_over_stale_text_files() {
    let f = binary_tree();
    let (root, tree) = tree(&f);
    for name in ["rpcrdma", "xprtrdma", "rpcrdma6"] {
        match tree.resolve(&root, name).unwrap() {
            Resolution::File {
                module,
                rel_path,
                exists,
                deps,
                ..
            } => {
                assert_eq!(module, "rpcrdma");
                assert_eq!(rel_path, DKMS_FILE, "{name}");
                assert!(exists);
                assert_eq!(deps, vec!["kernel/net/sunrpc/sunrpc.ko"]);
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    assert_eq!(
        tree.resolve(&root, "ext4").unwrap(),
        Resolution::BuiltIn {
            module: "ext4".into()
        }
    );
    assert_eq!(
        tree.resolve(&root, "no-such-module").unwrap(),
        Resolution::NotFound {
            module: "no_such_module".into()
        }
    );
}

#[test]
fn alias_patterns_match_as_fnmatch_does() {
    let f = binary_tree();
    let (_, tree) = tree(&f);
    assert_eq!(
        tree.alias_targets("pci:v000015B3d0000101Dsv000015B3sd00000008bc02sc00i00")
            .unwrap(),
        vec!["mlx5_core", "mlx5_core"]
    );
    assert_eq!(
        tree.alias_targets("pci:v000015B3d00001017sv0sd0bc02sc00i00")
            .unwrap(),
        vec!["mlx5_core"]
    );
    assert!(tree
        .alias_targets("pci:v000015B3d00001017sv0sd0bc03sc00i00")
        .unwrap()
        .is_empty());
}

#[test]
fn a_name_modules_dep_answers_never_reads_the_alias_index() {
    let f = binary_tree();
    f.write(
        format!("{}/modules.alias.bin", f.tree()),
        b"garbage, not an index",
    );
    let (root, tree) = tree(&f);
    assert!(matches!(
        tree.resolve(&root, "rpcrdma").unwrap(),
        Resolution::File { .. }
    ));
    // An alias does need it, and then the corruption is an error naming the file.
    match tree.resolve(&root, "xprtrdma") {
        Err(HostError::Corrupt { path, reason }) => {
            assert!(path.ends_with("modules.alias.bin"), "{}", path.display());
            assert!(reason.contains("not a kmod index"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_truncated_dep_index_is_an_error_not_a_panic() {
    let f = binary_tree();
    let whole = write_index(&[("rpcrdma", "updates/dkms/rpcrdma.ko:")]);
    for cut in [4, 12, 13, whole.len() - 3] {
        f.write(format!("{}/modules.dep.bin", f.tree()), &whole[..cut]);
        let (root, tree) = tree(&f);
        let err = tree.resolve(&root, "rpcrdma").unwrap_err();
        assert!(
            err.to_string().contains("modules.dep.bin"),
            "cut {cut}: {err}"
        );
    }
}

#[test]
fn check_reads_the_binary_index_of_a_tree_without_text_files() {
    let f = binary_tree();
    f.remove(format!("{}/modules.dep", f.tree()));
    f.remove(format!("{}/modules.alias", f.tree()));
    let out = run(&f, &["inspect-module", "xprtrdma", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(DKMS_FILE),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
