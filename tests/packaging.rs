//! The package sources kept in the tree agree with what they are made from: the Debian
//! changelog with CHANGELOG.md. (The packages themselves are built and checked by
//! `packaging/build-packages.sh` and `packaging/test-packages.sh`, which CI runs.)

use std::path::Path;
use std::process::Command;

#[test]
fn the_debian_changelog_is_generated_from_changelog_md() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(repo.join("packaging/changelog.sh"))
        .arg("deb")
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kept = std::fs::read(repo.join("packaging/debian/changelog")).unwrap();
    assert!(
        out.stdout == kept,
        "packaging/debian/changelog is stale: bash packaging/changelog.sh deb > packaging/debian/changelog"
    );
    let text = String::from_utf8(kept).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        text.starts_with(&format!("nfs-gds ({version}-1) ")),
        "the newest entry is not version {version}: {text}"
    );
    // lintian: debian-changelog-line-too-long.
    assert!(
        text.lines()
            .filter(|l| l.starts_with("  "))
            .all(|l| l.chars().count() <= 80),
        "{text}"
    );
}
