//! The package sources kept in the tree agree with what they are made from: the Debian
//! changelog with CHANGELOG.md. (The packages themselves are built and checked by
//! `packaging/build-packages.sh` and `packaging/test-packages.sh`, which CI runs.)

use std::path::Path;
use std::process::Command;

use crate::support::generated::check_file;

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
    let text = String::from_utf8(out.stdout).unwrap();
    check_file("packaging/debian/changelog", "packaging::", &text);
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

/// `packaging/build-packages.sh` checks every prerequisite before it installs anything: on a
/// machine without rpmbuild and without python3 (for zig from PyPI) it names both, with the
/// Debian package to install, and has not called `cargo install` (cargo-deb, cargo-zigbuild),
/// nor created the output folder.
#[test]
fn build_packages_names_every_missing_prerequisite_before_installing_anything() {
    use std::os::unix::fs::{symlink, PermissionsExt};
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    // What any shell script needs, from this machine; no rpmbuild, python3 or zig.
    for tool in [
        "dirname", "mkdir", "cat", "sed", "cmp", "uname", "tr", "head",
    ] {
        if let Ok(found) = which::which(tool) {
            symlink(found, bin.join(tool)).unwrap();
        }
    }
    // cargo, cc and readelf stand-ins; cargo records every call and knows no subcommand, so
    // the script would install cargo-deb and cargo-zigbuild.
    let calls = tmp.path().join("cargo-calls");
    let bash = which::which("bash").expect("bash");
    for (name, body) in [
        (
            "cargo",
            format!("echo \"$*\" >> '{}'\nexit 101", calls.display()),
        ),
        ("cc", "exit 0".to_string()),
        ("readelf", "exit 0".to_string()),
    ] {
        let p = bin.join(name);
        std::fs::write(&p, format!("#!{}\n{body}\n", bash.display())).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = tmp.path().join("dist");
    let o = Command::new(&bash)
        .arg(repo.join("packaging/build-packages.sh"))
        .arg(&out)
        .env("PATH", &bin)
        .env("HOME", tmp.path())
        // Not this checkout's target/zig-venv, which an earlier package build may have filled.
        .env("NFS_GDS_ZIG_VENV", tmp.path().join("zig-venv"))
        .output()
        .expect("bash runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    for want in [
        "rpmbuild (Debian: apt-get install rpm)",
        "python3 with venv, for zig from PyPI (Debian: apt-get install python3-venv)",
        "nothing was installed",
    ] {
        assert!(err.contains(want), "no {want:?} in:\n{err}");
    }
    let called = std::fs::read_to_string(&calls).unwrap_or_default();
    assert!(
        !called.contains("install"),
        "cargo install ran before the check:\n{called}"
    );
    assert!(!out.exists(), "the output folder was created");
}

/// A plain `cargo deb` builds against the build machine's glibc, so its Depends is what
/// dpkg-shlibdeps finds (`$auto`), never the 2.17 only the zig-linked build earns; that one is
/// the `glibc217` variant, which `build-packages.sh` selects for its `.2.17` build.
#[test]
fn only_the_glibc_2_17_build_claims_glibc_2_17_in_its_depends() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest: toml::Table = std::fs::read_to_string(repo.join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let deb = &manifest["package"]["metadata"]["deb"];
    let plain = deb["depends"].as_str().unwrap();
    assert!(plain.contains("$auto"), "plain cargo deb: Depends: {plain}");
    assert!(
        !plain.contains("libc6"),
        "plain cargo deb: Depends: {plain}"
    );
    let variant = &deb["variants"]["glibc217"];
    assert_eq!(variant["name"].as_str(), Some("nfs-gds"));
    assert!(variant["depends"]
        .as_str()
        .unwrap()
        .contains("libc6 (>= 2.17)"));
    let script = std::fs::read_to_string(repo.join("packaging/build-packages.sh")).unwrap();
    assert!(script.contains("--target \"$triple.2.17\""), "{script}");
    assert!(
        script.contains("cargo deb --no-build --variant glibc217"),
        "{script}"
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

/// The packages install the manual pages `nfs-gds generate-man` writes, never a copy kept in
/// the tree: packaging/generated-assets.sh writes every page into target/generated/man with the
/// binary that is packaged, before every `cargo deb` (build-packages.sh's and the VM suite's),
/// and the .deb's assets and the RPM's spec take section 8 from there.
#[test]
fn the_packages_install_the_generated_manual_pages() {
    use clap::ValueEnum;
    use nfs_gds::cli::reference::man::Page;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(repo.join(p)).unwrap();
    let script = read("packaging/generated-assets.sh");
    let written: Vec<&str> = script
        .lines()
        .find_map(|l| l.trim().strip_prefix("for page in "))
        .expect("a loop over the pages")
        .trim_end_matches("; do")
        .split_whitespace()
        .collect();
    let pages: Vec<&str> = Page::value_variants()
        .iter()
        .map(|p| p.file_name())
        .collect();
    assert_eq!(written, pages);
    assert!(script.contains(r#""$binary" generate-man "$page" >"$generated/man/$page""#));
    assert!(script.contains("generated=target/generated\n"));
    // Every script that packages writes them first, with the binary it packages: a fresh clone
    // has no target/generated, and cargo deb refuses a missing asset.
    for (caller, deb) in [
        ("packaging/build-packages.sh", "cargo deb --no-build"),
        ("tests/vm/run", "cargo deb --locked --no-build"),
    ] {
        let text = read(caller);
        let generate = text.find("bash packaging/generated-assets.sh \"");
        let packaged = text.find(deb);
        assert!(
            generate.is_some() && packaged.is_some() && generate < packaged,
            "{caller} does not write the generated assets before `{deb}`"
        );
    }
    let manifest = read("Cargo.toml");
    assert!(manifest.contains(r#"["target/generated/man/*.8", "usr/share/man/man8/", "644"]"#));
    assert!(!manifest.contains("packaging/man/*.8"));
    let spec = read("packaging/rpm/nfs-gds.spec");
    assert!(spec.contains("%{_mandir}/man8 $src/target/generated/man/*.8\n"));
    assert!(!spec.contains("packaging/man/*.8"));
}

/// The packages install the completions `nfs-gds completions SHELL` writes, for bash, zsh and
/// fish, at each family's path: generated-assets.sh writes them with the binary packaged, and
/// no copy is kept in the tree.
#[test]
fn the_packages_install_the_generated_completions() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(repo.join(p)).unwrap();
    let script = read("packaging/generated-assets.sh");
    let manifest = read("Cargo.toml");
    let spec = read("packaging/rpm/nfs-gds.spec");
    for (shell, file, deb, rpm) in [
        (
            "bash",
            "nfs-gds.bash",
            "usr/share/bash-completion/completions/nfs-gds",
            "%{_datadir}/bash-completion/completions/nfs-gds",
        ),
        (
            "zsh",
            "_nfs-gds",
            "usr/share/zsh/vendor-completions/_nfs-gds",
            "%{zsh_completions}/_nfs-gds",
        ),
        (
            "fish",
            "nfs-gds.fish",
            "usr/share/fish/vendor_completions.d/nfs-gds.fish",
            "%{_datadir}/fish/vendor_completions.d/nfs-gds.fish",
        ),
    ] {
        let written = format!("\"$binary\" completions {shell} >\"$generated/completions/{file}\"");
        assert!(
            script.contains(&written),
            "generated-assets.sh lacks {written}"
        );
        let asset = format!("[\"target/generated/completions/{file}\", \"{deb}\", \"644\"]");
        assert!(manifest.contains(&asset), "Cargo.toml lacks {asset}");
        let install = format!("$src/target/generated/completions/{file} %{{buildroot}}{rpm}\n");
        assert!(spec.contains(&install), "the spec lacks {install}");
        assert!(
            spec.contains(&format!("\n{rpm}\n")),
            "the spec's %files lack {rpm}"
        );
    }
    assert!(!repo.join("packaging/completions").exists());
}

/// Whether `file` (relative to the crate) is matched by an asset's source, which may end in a
/// `*` file pattern (`docs/*.md`).
fn source_matches(source: &str, file: &str) -> bool {
    match source.split_once('*') {
        Some((prefix, suffix)) => {
            file.starts_with(prefix)
                && file.ends_with(suffix)
                && !file[prefix.len()..file.len() - suffix.len()].contains('/')
        }
        None => source == file,
    }
}

/// Where each package puts `file` (relative to the crate) below `/usr/share/doc/nfs-gds/`, or
/// `None` when it does not ship it: the .deb's assets, and the RPM's `install -t $doc[/DIR]` lines.
fn shipped_docs(file: &str) -> (Option<String>, Option<String>) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = "usr/share/doc/nfs-gds/";
    let cargo: toml::Value =
        toml::from_str(&std::fs::read_to_string(repo.join("Cargo.toml")).unwrap()).unwrap();
    let deb = cargo["package"]["metadata"]["deb"]["assets"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_array())
        .find(|a| source_matches(a[0].as_str().unwrap(), file))
        .and_then(|a| a[1].as_str().unwrap().strip_prefix(doc).map(str::to_string))
        .map(|dest| match dest.strip_suffix('/') {
            Some(dir) => format!("{dir}/{}", file.rsplit('/').next().unwrap()),
            None if dest.is_empty() => file.to_string(),
            None => dest,
        });
    let spec = std::fs::read_to_string(repo.join("packaging/rpm/nfs-gds.spec")).unwrap();
    let rpm = spec.lines().find_map(|line| {
        let rest = line.strip_prefix("install -D -m 0644 -t $doc")?;
        let (dir, sources) = rest.split_once(' ')?;
        let dir = dir.trim_start_matches('/');
        sources
            .split_whitespace()
            .filter_map(|s| s.strip_prefix("$src/"))
            .any(|s| source_matches(s, file))
            .then(|| {
                let name = file.rsplit('/').next().unwrap();
                if dir.is_empty() {
                    name.to_string()
                } else {
                    format!("{dir}/{name}")
                }
            })
    });
    (deb, rpm)
}

/// Both packages ship the README and the guide with the files they link to, each at its place in
/// the tree, so that the links of `/usr/share/doc/nfs-gds/README.md` work where it is installed.
#[test]
fn both_packages_ship_the_readme_the_guide_and_what_they_link_to() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut wanted: Vec<String> = crate::guide_links::documents()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    for doc in crate::guide_links::documents() {
        let text = std::fs::read_to_string(repo.join(&doc)).unwrap();
        for target in crate::guide_links::relative_links(&text) {
            let file = target.split('#').next().unwrap();
            if file.ends_with(".md") {
                let joined = doc.parent().unwrap().join(file);
                let mut parts: Vec<String> = Vec::new();
                for c in joined.components() {
                    match c {
                        std::path::Component::ParentDir => {
                            parts.pop();
                        }
                        other => parts.push(other.as_os_str().to_string_lossy().into_owned()),
                    }
                }
                wanted.push(parts.join("/"));
            }
        }
    }
    wanted.sort();
    wanted.dedup();
    assert!(wanted.len() >= 11, "{wanted:?}");
    for file in &wanted {
        let (deb, rpm) = shipped_docs(file);
        assert_eq!(deb.as_deref(), Some(file.as_str()), ".deb: {file}");
        assert_eq!(rpm.as_deref(), Some(file.as_str()), ".rpm: {file}");
    }
    assert_eq!(shipped_docs("CONTRIBUTING.md"), (None, None));
}

/// `packaging/test-packages.sh` checks its tools before the packages: on a machine without
/// lintian it says that lintian is not installed, not that lintian reported errors.
#[test]
fn test_packages_names_a_missing_tool_not_a_finding() {
    use std::os::unix::fs::symlink;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    // What the script needs before its first tool, and no lintian or rpmlint.
    for tool in ["dirname", "sed", "head"] {
        if let Ok(found) = which::which(tool) {
            symlink(found, bin.join(tool)).unwrap();
        }
    }
    let dist = tmp.path().join("dist");
    std::fs::create_dir(&dist).unwrap();
    std::fs::write(dist.join("nfs-gds_1_amd64.deb"), "").unwrap();
    std::fs::write(dist.join("nfs-gds-1.x86_64.rpm"), "").unwrap();
    let o = Command::new(which::which("bash").expect("bash"))
        .arg(repo.join("packaging/test-packages.sh"))
        .arg(&dist)
        .env("PATH", &bin)
        .output()
        .expect("bash runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    for want in [
        "missing prerequisites; nothing was checked",
        "lintian is not installed (Debian: apt-get install lintian)",
        "rpmlint is not installed (Debian: apt-get install rpmlint)",
    ] {
        assert!(err.contains(want), "no {want:?} in:\n{err}");
    }
    assert!(!err.contains("reported errors"), "{err}");
}

/// The Slurm programs (slurm.conf names a program without arguments) and the NHC check ship in
/// both packages, the programs executable, where nothing runs them until slurm.conf names them.
#[test]
fn the_slurm_programs_and_the_nhc_check_ship_in_both_packages() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cargo: toml::Value =
        toml::from_str(&std::fs::read_to_string(repo.join("Cargo.toml")).unwrap()).unwrap();
    let assets = cargo["package"]["metadata"]["deb"]["assets"]
        .as_array()
        .unwrap();
    let spec = std::fs::read_to_string(repo.join("packaging/rpm/nfs-gds.spec")).unwrap();
    for (src, deb, rpm, mode) in [
        (
            "contrib/slurm/health-check",
            "usr/libexec/nfs-gds/slurm-health-check",
            "install -D -m 0755 $src/contrib/slurm/health-check %{buildroot}%{_libexecdir}/nfs-gds/slurm-health-check",
            "755",
        ),
        (
            "contrib/slurm/prolog",
            "usr/libexec/nfs-gds/slurm-prolog",
            "install -D -m 0755 $src/contrib/slurm/prolog %{buildroot}%{_libexecdir}/nfs-gds/slurm-prolog",
            "755",
        ),
        (
            "contrib/slurm/nfs-gds.nhc",
            "usr/share/doc/nfs-gds/examples/slurm/nfs-gds.nhc",
            "install -D -m 0644 -t $doc/examples/slurm $src/contrib/slurm/nfs-gds.nhc",
            "644",
        ),
    ] {
        let shipped: Vec<(&str, &str)> = assets
            .iter()
            .filter_map(|a| a.as_array())
            .filter(|a| a[0].as_str() == Some(src))
            .map(|a| (a[1].as_str().unwrap(), a[2].as_str().unwrap()))
            .collect();
        assert_eq!(shipped, [(deb, mode)], "{src}");
        assert!(spec.contains(rpm), "the RPM does not ship {src}");
    }
    assert!(spec.contains("%{_libexecdir}/nfs-gds\n"));
    for program in ["health-check", "prolog"] {
        let text = std::fs::read_to_string(repo.join("contrib/slurm").join(program)).unwrap();
        let last = text.lines().last().unwrap();
        assert_eq!(
            last,
            format!(
                "exec /usr/sbin/nfs-gds slurm {}",
                program.replace("-check", "")
            )
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(repo.join("contrib/slurm").join(program))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111, "{program} is not executable");
    }
}
