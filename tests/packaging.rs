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

/// The container gate's hooks.d file is a schema-1.0.0 hook that runs `nfs-gds oci-hook` in
/// `prestart`, and both packages ship it where no runtime reads it: installing the package
/// changes no container start until the administrator copies it into a hooks.d directory.
#[test]
fn the_hooks_file_ships_in_both_packages_where_no_runtime_reads_it() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let hook: serde_json::Value =
        serde_json::from_slice(&std::fs::read(repo.join("contrib/oci/nfs-gds-hook.json")).unwrap())
            .unwrap();
    assert_eq!(hook["version"], "1.0.0");
    assert_eq!(hook["hook"]["path"], "/usr/sbin/nfs-gds");
    assert_eq!(
        hook["hook"]["args"],
        serde_json::json!(["nfs-gds", "oci-hook"])
    );
    assert!(hook["hook"]["timeout"].as_u64().is_some_and(|t| t > 0));
    assert_eq!(hook["when"], serde_json::json!({"always": true}));
    assert_eq!(hook["stages"], serde_json::json!(["prestart"]));
    let dest = "usr/share/nfs-gds/oci/nfs-gds-hook.json";
    let cargo: toml::Value =
        toml::from_str(&std::fs::read_to_string(repo.join("Cargo.toml")).unwrap()).unwrap();
    let assets = cargo["package"]["metadata"]["deb"]["assets"]
        .as_array()
        .unwrap();
    let shipped: Vec<&str> = assets
        .iter()
        .filter_map(|a| a.as_array())
        .filter(|a| a[0].as_str() == Some("contrib/oci/nfs-gds-hook.json"))
        .map(|a| a[1].as_str().unwrap())
        .collect();
    assert_eq!(shipped, [dest]);
    let spec = std::fs::read_to_string(repo.join("packaging/rpm/nfs-gds.spec")).unwrap();
    assert!(
        spec.contains("$src/contrib/oci/nfs-gds-hook.json %{buildroot}%{_datadir}/nfs-gds/oci/nfs-gds-hook.json"),
        "the RPM does not ship the hooks.d file"
    );
    for text in [serde_json::to_string(assets).unwrap(), spec] {
        assert!(
            !text.contains("hooks.d"),
            "a package installs into a hooks.d directory"
        );
    }
}
