//! modprobe's configuration on fixture nodes: a `blacklist` stops the kernel's alias request
//! (`xprtrdma`, before 5.11) but not `modprobe rpcrdma`; an `install` line replaces the load; a
//! configuration `alias` redirects what `rpcrdma-module` resolves.

use crate::support::*;

/// A ready node of `release`: nvidia_fs and a hooked DKMS rpcrdma.
fn ready(release: &str) -> Fixture {
    node_with(&ModuleSpec::rpcrdma(release), DKMS, Packing::Zstd)
}

fn text(doc: &serde_json::Value, id: &str, key: &str) -> String {
    check_result(doc, id)[key]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn without_configuration_nothing_changes() {
    let f = ready("6.8.0-45-generic");
    let (code, doc) = check_json(&f);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(status(&doc, "modprobe-config"), "pass");
}

#[test]
fn a_blacklist_stops_the_legacy_kernel_request() {
    let f = ready("5.10.0-30-amd64");
    f.write(
        "etc/modprobe.d/blacklist-rdma.conf",
        "# no NFS over RDMA here\nblacklist rpcrdma\n",
    );
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(status(&doc, "modprobe-config"), "fail");
    let s = text(&doc, "modprobe-config", "summary");
    assert!(
        s.contains("`modprobe xprtrdma`") && s.contains("blacklisted"),
        "{s}"
    );
    let ev = evidence(&doc, "modprobe-config");
    assert!(
        ev.contains("/etc/modprobe.d/blacklist-rdma.conf:2: `blacklist rpcrdma`: stops `xprtrdma`"),
        "{ev}"
    );
    assert!(ev.contains("does not stop `rpcrdma`"), "{ev}");

    let out = run(&f, &["doctor", "--json"]);
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("doctor --json");
    let plan = plan["plan"].to_string();
    assert!(
        plan.contains("sed -i '2s/^/# /' /etc/modprobe.d/blacklist-rdma.conf"),
        "{plan}"
    );
}

#[test]
fn a_blacklist_only_warns_where_the_kernel_requests_the_module_name() {
    let f = ready("6.8.0-45-generic");
    f.write("etc/modprobe.d/blacklist-rdma.conf", "blacklist rpcrdma\n");
    let (code, doc) = check_json(&f);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(status(&doc, "modprobe-config"), "warn");
    assert!(evidence(&doc, "modprobe-config")
        .contains("/etc/modprobe.d/blacklist-rdma.conf:1: `blacklist rpcrdma`: does not stop"));
}

#[test]
fn an_install_line_that_disables_rpcrdma_fails() {
    let f = ready("6.8.0-45-generic");
    f.write(
        "etc/modprobe.d/disable-rdma.conf",
        "options sunrpc tcp_slot_table_entries=128\ninstall rpcrdma /bin/false\n",
    );
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(status(&doc, "modprobe-config"), "fail");
    assert!(text(&doc, "modprobe-config", "summary").contains("replaced by `/bin/false`"));
    assert!(evidence(&doc, "modprobe-config")
        .contains("/etc/modprobe.d/disable-rdma.conf:2: `install rpcrdma /bin/false`"));
    // Options of a dependency are reported, the verdict comes from the install line.
    assert!(evidence(&doc, "modprobe-config").contains("sets parameters of sunrpc"));
}

#[test]
fn an_install_line_that_stops_the_next_load_only_warns_while_rpcrdma_is_loaded() {
    let spec = ModuleSpec::rpcrdma("6.8.0-45-generic");
    let mut f = node_with(&spec, DKMS, Packing::Zstd);
    f.load_rpcrdma(
        &Loaded {
            build_id: spec.build_id,
            ..Loaded::default()
        },
        KallsymsHooks::Lower,
    );
    f.write(
        "etc/modprobe.d/disable-rdma.conf",
        "install rpcrdma /bin/true\n",
    );
    let (code, doc) = check_json(&f);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(status(&doc, "modprobe-config"), "warn");
    assert!(text(&doc, "modprobe-config", "summary").contains("rpcrdma is loaded"));
}

#[test]
fn an_install_line_that_still_loads_rpcrdma_warns() {
    let f = ready("6.8.0-45-generic");
    f.write(
        "etc/modprobe.d/rdma.conf",
        "install rpcrdma /sbin/modprobe --ignore-install rpcrdma && logger rpcrdma loaded\n",
    );
    let (code, doc) = check_json(&f);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(status(&doc, "modprobe-config"), "warn");
    assert!(evidence(&doc, "modprobe-config").contains("still loads it"));
}

#[test]
fn a_configuration_alias_redirects_the_resolution() {
    // The tree's rpcrdma has no hooks; the alias points modprobe at a hooked module.
    let mut f = Fixture::new("6.8.0-45-generic");
    f.nvidia_fs("2.28.4", 1);
    f.install_rpcrdma(
        INBOX,
        ".ko",
        &build(&ModuleSpec::rpcrdma("6.8.0-45-generic").hooks(None)),
    );
    let hooked = ModuleSpec {
        name: "gds_rpcrdma".into(),
        ..ModuleSpec::rpcrdma("6.8.0-45-generic")
    };
    f.write(format!("{}/extra/gds_rpcrdma.ko", f.tree()), build(&hooked));
    let dep = format!("{}/modules.dep", f.tree());
    let old = std::fs::read_to_string(f.path(&dep)).unwrap();
    f.write(
        &dep,
        format!("{old}extra/gds_rpcrdma.ko: kernel/net/sunrpc/sunrpc.ko\n"),
    );
    f.write("etc/modprobe.d/gds.conf", "alias rpcrdma gds_rpcrdma\n");
    let (code, doc) = check_json(&f);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(status(&doc, "rpcrdma-hooks"), "pass");
    let ev = evidence(&doc, "rpcrdma-module");
    assert!(ev.contains("extra/gds_rpcrdma.ko"), "{ev}");
    assert!(
        ev.contains("modprobe.d alias: `modprobe rpcrdma` loads gds_rpcrdma, as /etc/modprobe.d/gds.conf:1 says"),
        "{ev}"
    );
    assert_eq!(status(&doc, "modprobe-config"), "warn");
    assert!(text(&doc, "modprobe-config", "summary").contains("load gds_rpcrdma"));
}
