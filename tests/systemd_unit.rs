//! The agent's systemd unit: `systemd-analyze verify` accepts it without a single warning, and
//! `systemd-analyze security --offline=yes` rates it at most 2.5 (needs the `systemd` package;
//! `.ci/run` installs it).

use std::path::{Path, PathBuf};
use std::process::Command;

const UNIT: &str = "packaging/systemd/nfs-gds-agent.service";
const MAX_EXPOSURE: f64 = 2.5;

fn unit() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(UNIT)
}

fn systemd_analyze(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new("systemd-analyze")
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run systemd-analyze ({e}): install the systemd package (apt-get install systemd)")
        })
}

#[test]
fn the_agent_unit_verifies_without_warnings() {
    // verify insists that ExecStart's binary exists: point it at the one just built.
    let text = std::fs::read_to_string(unit()).unwrap();
    assert!(text.contains("ExecStart=/usr/sbin/nfs-gds agent"), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("nfs-gds-agent.service");
    std::fs::write(
        &copy,
        text.replace("/usr/sbin/nfs-gds", env!("CARGO_BIN_EXE_nfs-gds")),
    )
    .unwrap();
    let o = systemd_analyze(&["verify".as_ref(), copy.as_os_str()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert_eq!(stderr, "", "systemd-analyze verify warned");
}

#[test]
fn the_agent_unit_is_hardened_to_an_exposure_of_at_most_2_5() {
    let o = systemd_analyze(&[
        "security".as_ref(),
        "--offline=yes".as_ref(),
        "--threshold=25".as_ref(),
        unit().as_os_str(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let level: f64 = stdout
        .lines()
        .find_map(|l| l.split_once("Overall exposure level for nfs-gds-agent.service: "))
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no exposure level in: {stdout}"));
    assert!(
        level <= MAX_EXPOSURE,
        "exposure {level} > {MAX_EXPOSURE}:\n{stdout}"
    );
    assert!(o.status.success(), "{stdout}");
    // What docs/fleets.md and the unit's comments promise.
    let text = std::fs::read_to_string(unit()).unwrap();
    for line in [
        "CacheDirectory=nfs-gds",
        "RuntimeDirectory=nfs-gds",
        "CapabilityBoundingSet=\n",
        "PrivateNetwork=yes",
        "RestrictAddressFamilies=AF_UNIX",
        "SystemCallFilter=@system-service",
        "ProtectKernelTunables=yes",
    ] {
        assert!(text.contains(line), "{line}");
    }
}
