//! `stack-ownership` on fixture nodes with hand-written module indexes (the real-depmod trees of
//! every distribution are in `distro_trees`, in the `external-tools` group): who provides
//! rpcrdma, sunrpc and ib_core, the warning when two families install one of them or the loaded
//! one is another family's, and doctor's removal plan with each family's package manager.

use serde_json::Value;

use crate::support::*;

const RELEASE: &str = "6.8.0-45-generic";
const BUNDLE: &str = "extra/vastnfs/bundle/net/sunrpc/xprtrdma/rpcrdma.ko";

/// A node whose tree holds `files` (generated modules), with `dep` as its `modules.dep`.
fn node(os_release: &str, files: &[&str], dep: &str) -> Fixture {
    let mut f = Fixture::new(RELEASE);
    f.nvidia_fs("2.28.4", 1);
    f.write("etc/os-release", os_release);
    let tree = f.tree();
    for rel in files {
        let name = rel.rsplit('/').next().unwrap().trim_end_matches(".ko");
        let mut spec = ModuleSpec::provider(name, RELEASE, &[]);
        spec.build_id = Some(build_id_of(rel));
        f.write(format!("{tree}/{rel}"), build(&spec));
    }
    f.write(format!("{tree}/modules.dep"), dep);
    f
}

fn summary(doc: &Value) -> String {
    check_result(doc, "stack-ownership")["summary"]
        .as_str()
        .unwrap()
        .to_string()
}

fn plan(f: &Fixture) -> String {
    let out = run(f, &["doctor", "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("doctor --json");
    serde_json::to_string_pretty(&doc["plan"]).unwrap()
}

/// vastnfs's RPM bundle and NVIDIA's kmod mlnx-nfsrdma both install rpcrdma.
fn two_rpcrdma(os_release: &str) -> Fixture {
    node(
        os_release,
        &[BUNDLE, "extra/mlnx-nfsrdma/rpcrdma.ko", "kernel/net/sunrpc/sunrpc.ko"],
        &format!("{BUNDLE}: kernel/net/sunrpc/sunrpc.ko\nextra/mlnx-nfsrdma/rpcrdma.ko:\nkernel/net/sunrpc/sunrpc.ko:\n"),
    )
}

#[test]
fn two_families_installing_rpcrdma_warn_and_doctor_removes_the_one_not_loaded_next() {
    let f = two_rpcrdma("ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\n");
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "stack-ownership"), "warn", "{doc:#}");
    assert_eq!(
        check_result(&doc, "stack-ownership")["level"],
        "warn",
        "advisory by default"
    );
    assert!(
        summary(&doc).contains("rpcrdma is installed by NVIDIA's DOCA-OFED / MLNX_OFED and vastnfs together: depmod's search order picks extra/vastnfs/bundle/"),
        "{doc:#}"
    );
    let p = plan(&f);
    assert!(
        p.contains("Remove NVIDIA's DOCA-OFED / MLNX_OFED's rpcrdma (keeping vastnfs)"),
        "{p}"
    );
    assert!(
        p.contains("dnf remove 'kmod-mlnx-nfsrdma*' 'mlnx-nfsrdma*'"),
        "{p}"
    );
    assert!(p.contains("Refresh the module index"), "{p}");

    let p = plan(&two_rpcrdma("ID=\"sles\"\nID_LIKE=\"suse\"\n"));
    assert!(p.contains("zypper remove 'mlnx-nfsrdma*'"), "{p}");
    let p = plan(&two_rpcrdma("ID=ubuntu\nID_LIKE=debian\n"));
    assert!(p.contains("apt-get purge 'mlnx-nfsrdma*'"), "{p}");
}

#[test]
fn a_loaded_module_of_another_family_than_the_next_load_warns() {
    let dkms = "updates/dkms/ib_core.ko";
    let inbox = "kernel/drivers/infiniband/core/ib_core.ko";
    let f = node(
        "ID=ubuntu\nID_LIKE=debian\n",
        &[dkms, inbox],
        &format!("{dkms}:\nkernel/net/sunrpc/sunrpc.ko:\n"),
    );
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "stack-ownership"), "pass", "{doc:#}");
    assert!(
        summary(&doc).contains("ib_core: NVIDIA's DOCA-OFED / MLNX_OFED"),
        "{doc:#}"
    );

    // The inbox ib_core is what is loaded, by its build-id.
    f.write("sys/module/ib_core/initstate", "live\n");
    f.write(
        "sys/module/ib_core/notes/.note.gnu.build-id",
        module_gen::build_id_note(&build_id_of(inbox)),
    );
    let (_, doc) = check_json(&f);
    assert_eq!(status(&doc, "stack-ownership"), "warn", "{doc:#}");
    assert!(
        summary(&doc).contains("the loaded ib_core is the distribution's kernel's, but the next load takes NVIDIA's DOCA-OFED / MLNX_OFED's (updates/dkms/ib_core.ko)"),
        "{doc:#}"
    );
    let ev = evidence(&doc, "stack-ownership");
    assert!(
        ev.contains(&format!(
            "build-id {}",
            module_gen::hex(&build_id_of(inbox))
        )),
        "{ev}"
    );
}

/// `weak-modules` writes absolute links (`/lib/modules/<other>/extra/…`): below `--root` they
/// resolve inside the root, and the link's kernel and directory name the stack.
#[test]
fn an_absolute_weak_updates_link_is_followed_inside_the_root_and_named() {
    const RHEL: &str = "4.18.0-553.el8_10.x86_64";
    const BUILT: &str = "4.18.0-513.el8.x86_64";
    let mut f = Fixture::new(RHEL);
    f.nvidia_fs("2.28.4", 1);
    f.write("etc/os-release", "ID=\"rhel\"\nID_LIKE=\"fedora\"\n");
    let target = format!("/lib/modules/{BUILT}/extra/mlnx-nfsrdma/rpcrdma.ko");
    f.write(&target[1..], build(&ModuleSpec::rpcrdma(BUILT)));
    let link = f.path(format!("{}/weak-updates/mlnx-nfsrdma/rpcrdma.ko", f.tree()));
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    f.set_rpcrdma_dep_line("weak-updates/mlnx-nfsrdma/rpcrdma.ko: kernel/net/sunrpc/sunrpc.ko");

    let (_, doc) = check_json(&f);
    assert_eq!(
        status(&doc, "rpcrdma-hooks"),
        "pass",
        "read through the link: {doc:#}"
    );
    let ev = evidence(&doc, "stack-ownership");
    assert!(
        ev.contains(&format!(
            "weak-updates/mlnx-nfsrdma/rpcrdma.ko -> {target} (NVIDIA's DOCA-OFED / MLNX_OFED)"
        )),
        "{ev}"
    );
    let out = run(&f, &["doctor", "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("doctor --json");
    assert_eq!(doc["stack"]["provenance"], "weak-updates");
    assert!(
        doc.to_string().contains(&format!(
            "RHEL weak-modules link to {BUILT}'s extra/mlnx-nfsrdma"
        )),
        "{doc:#}"
    );
}
