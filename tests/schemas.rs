//! The JSON schemas published in `schemas/` describe what the commands really write: `check
//! --json`, `doctor --json` and the agent's status file, on a ready node, a node without hooks,
//! and a node whose RDMA mounts fail, are validated against them; so is `lint --json` on
//! manifests with findings of every severity, `verify --json` on a mount that passes and one that
//! fails (and `watch --json`, in its own tests).

use std::path::Path;

use serde_json::Value;

use crate::support::json_schema::violations;
use crate::support::*;

fn schema(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(name);
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

fn nodes() -> Vec<Fixture> {
    let ready = ready_node();
    ready.write(
        "etc/cufile.json",
        "{\"properties\": {\"allow_compat_mode\": true}}\n",
    );
    let spec = ModuleSpec {
        hooks: None,
        ..ModuleSpec::rpcrdma("6.8.0-45-generic")
    };
    let no_hooks = node_with(&spec, DKMS, Packing::Plain);
    no_hooks.write(
        "proc/self/mountinfo",
        "1 0 254:0 / / rw - ext4 /dev/vda rw\n",
    );
    let mounts = ready_node();
    crate::agent::host_mounts(&mounts);
    mounts.write(
        "etc/nfs-gds/nfs-gds.toml",
        "[[mount]]\nsource = \"10.0.2.15:/datasets\"\n",
    );
    vec![ready, no_hooks, mounts]
}

/// `doc` is what the schema `schema_name` of `schemas/` describes.
pub(crate) fn assert_valid(schema_name: &str, doc: &Value) {
    let v = violations(&schema(schema_name), doc);
    assert!(v.is_empty(), "{schema_name}: {v:#?}\n{doc:#}");
}

#[test]
fn check_doctor_and_agent_output_match_their_schemas() {
    for f in nodes() {
        let o = run(&f, &["check", "--json"]);
        assert_valid(
            "check.schema.json",
            &serde_json::from_slice(&o.stdout).unwrap(),
        );
        let o = run(&f, &["doctor", "--json"]);
        assert_valid(
            "doctor.schema.json",
            &serde_json::from_slice(&o.stdout).unwrap(),
        );
        f.write("run/nfs-gds/.keep", "");
        let o = run(&f, &["agent", "--once"]);
        assert!(o.status.code().is_some_and(|c| c < 2), "{}", stderr(&o));
        let status = std::fs::read(f.path("run/nfs-gds/status.json")).unwrap();
        assert_valid(
            "agent-status.schema.json",
            &serde_json::from_slice(&status).unwrap(),
        );
    }
}

#[test]
fn lint_output_matches_its_schema() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in [
        "tests/fixtures/lint/volumes-wrong.yaml",
        "deploy/examples/lint/pv-rdma.yaml",
    ] {
        let o = nfs_gds()
            .args(["lint", "--json"])
            .arg(dir.join(file))
            .output()
            .unwrap();
        assert!(o.status.code().is_some_and(|c| c < 2), "{}", stderr(&o));
        let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(!doc["findings"].as_array().unwrap().is_empty(), "{doc}");
        assert_valid("lint.schema.json", &doc);
    }
}

#[test]
fn verify_output_matches_its_schema_and_shares_checks_check_object() {
    use crate::mount_fixture::*;
    for proto in ["rdma", "tcp"] {
        let f = Fixture::ready();
        let (info, stats) = with_mount(70, "/mnt/gds", proto);
        f.table(&info, &stats);
        for dir in ["/mnt/gds", "/mnt/gds/data"] {
            let o = f
                .nfs_gds()
                .args(["verify", dir, "--json"])
                .output()
                .unwrap();
            assert!(o.status.code().is_some_and(|c| c < 2), "{}", stderr(&o));
            let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_valid("verify.schema.json", &doc);
            assert_eq!(doc["subject"], "/mnt/gds", "{doc:#}");
        }
    }
    // One description of a check's result, in both schemas.
    assert_eq!(
        schema("verify.schema.json")["$defs"],
        schema("check.schema.json")["$defs"]
    );
}
