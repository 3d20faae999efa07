//! TCP mounts refused, before mounting or after, and the unmount that must follow a refusal.

use super::*;

#[test]
fn an_existing_tcp_mount_of_the_server_refuses_before_mounting() {
    let t = Tree::new();
    t.table(
        &format!("{BEFORE}{}", nfs_line(40, "/mnt/tcp", "tcp")),
        &format!("{BEFORE_STATS}{}", nfs_stats("/mnt/tcp", "tcp")),
    );
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), mounted("tcp"), 0, false),
    );
    assert_eq!(o.code, 32);
    assert!(o.calls.is_empty());
    assert!(o.err.contains("nfs-gds: FAIL transport-trap [enforce]: 10.0.2.15 already has an NFSv4 mount over tcp (/mnt/tcp)"), "{}", o.err);
    assert!(
        o.err
            .contains("10.0.2.15:/export on /mnt/tcp: NFSv4 over tcp (mount id 40)"),
        "{}",
        o.err
    );
    // NFSv3 is not subject to the trap.
    let o = run(
        &t,
        &request("rw,vers=3", false),
        "[checks]\nrpcrdma-hook-export = \"off\"\n",
        mounter(t.path(), mounted("rdma"), 0, false),
    );
    assert_eq!(o.code, 0, "{}", o.err);
}

#[test]
fn a_new_mount_over_tcp_is_unmounted_and_refused() {
    let t = Tree::new();
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), mounted("tcp"), 0, false),
    );
    assert_eq!(o.code, 32);
    assert_eq!(o.calls[1], "unmount /mnt/data (id 70, device 0:50)");
    assert!(
        o.err.contains("nfs-gds: REFUSED 10.0.2.15:/export on /mnt/data: the new mount (id 70) failed 2 checks under policy enforce; it was unmounted again"),
        "{}",
        o.err
    );
    assert!(
        o.err
            .contains("FAIL mount-transport [enforce]: /mnt/data runs over tcp, not RDMA"),
        "{}",
        o.err
    );
    assert!(o.err.contains("FAIL mount-options [enforce]"), "{}", o.err);
}

/// The kernel hands out the lowest free mount id: a mount unmounted elsewhere while mount.nfs
/// ran gives its id to the new mount, which must still be seen as new (and refused).
#[test]
fn a_new_mount_that_reuses_a_freed_id_is_still_new() {
    let t = Tree::new();
    let other = "40 1 0:50 / /mnt/other rw - nfs4 10.0.2.99:/e rw,vers=4.2,proto=rdma,port=20049\n";
    t.table(&format!("{BEFORE}{other}"), BEFORE_STATS);
    let after = (
        format!("{BEFORE}{}", nfs_line(40, "/mnt/data", "tcp")),
        format!("{BEFORE_STATS}{}", nfs_stats("/mnt/data", "tcp")),
    );
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), Some(after), 0, false),
    );
    assert_eq!(o.code, 32, "{}", o.err);
    assert_eq!(o.calls[1], "unmount /mnt/data (id 40, device 0:50)");
    assert!(
        o.err.contains(
            "the new mount (id 40) failed 2 checks under policy enforce; it was unmounted again"
        ),
        "{}",
        o.err
    );

    // The same with an RDMA mount: verified and kept, not "no mount appeared".
    t.table(&format!("{BEFORE}{other}"), BEFORE_STATS);
    let after = (
        format!("{BEFORE}{}", nfs_line(40, "/mnt/data", "rdma")),
        format!("{BEFORE_STATS}{}", nfs_stats("/mnt/data", "rdma")),
    );
    let o = run(
        &t,
        &request("rw", false),
        "[checks]\nrpcrdma-hook-export = \"off\"\n",
        mounter(t.path(), Some(after), 0, false),
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert_eq!(o.calls.len(), 1);
}

#[test]
fn a_newline_in_the_spec_cannot_forge_a_log_line() {
    let t = Tree::new();
    let args = HelperArgs {
        spec: "10.0.2.15:/export\nnfs-gds: mounted 10.0.2.15:/export on /mnt/data".into(),
        dir: "/mnt/data".into(),
        options: vec!["rw".into()],
        ..Default::default()
    };
    let req = MountRequest::new(&args, OptionDefaults::default(), Path::new("/")).unwrap();
    let o = run(&t, &req, "", mounter(t.path(), mounted("tcp"), 0, false));
    assert_eq!(o.code, 32);
    for line in o.err.lines() {
        assert!(!line.starts_with("nfs-gds: mounted"), "forged: {line}");
        assert!(line.starts_with("nfs-gds: "), "{line}");
    }
    assert!(o.err.contains("/export\\nnfs-gds: mounted"), "{}", o.err);
}

#[test]
fn a_mount_that_appears_on_another_path_is_named() {
    let t = Tree::new();
    let after = (
        format!("{BEFORE}{}", nfs_line(70, "/elsewhere", "tcp")),
        BEFORE_STATS.to_string(),
    );
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), Some(after), 0, false),
    );
    assert_eq!(o.code, 32);
    assert_eq!(o.calls.len(), 1, "never unmounted by nfs-gds");
    assert!(
        o.err
            .contains("but it appeared on /elsewhere (mount id 70) instead of /mnt/data"),
        "{}",
        o.err
    );
}

#[test]
fn a_failed_unmount_after_a_refusal_is_loud() {
    let t = Tree::new();
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.path(), mounted("tcp"), 0, true),
    );
    assert_eq!(o.code, 32);
    assert!(o.err.contains("; UNMOUNTING IT FAILED"), "{}", o.err);
    assert!(
        o.err.contains("nfs-gds: THE REFUSED MOUNT IS STILL MOUNTED on /mnt/data (mount id 70): umount2 of /mnt/data: Device or resource busy (os error 16); unmount it now: umount /mnt/data"),
        "{}",
        o.err
    );
}

#[test]
fn an_unmount_that_leaves_the_mount_in_place_is_a_failure() {
    let t = Tree::new();
    let root = t.path().to_owned();
    let after = mounted("tcp").unwrap();
    let m = RecordingMounter::new(
        move |_| {
            write_below(&root, "proc/self/mountinfo", &after.0);
            write_below(&root, "proc/self/mountstats", &after.1);
            Ok(MountStatus::Exited(0))
        },
        |_| Ok(()),
    );
    let o = run(&t, &request("rw", false), "", m);
    assert_eq!(o.code, 32);
    assert!(o.err.contains("STILL MOUNTED on /mnt/data (mount id 70): it is still in the mount table after unmounting"), "{}", o.err);
}

#[test]
fn warn_keeps_a_tcp_mount_and_says_so() {
    let t = Tree::new();
    let o = run(
        &t,
        &request("rw,gds_policy=warn", false),
        "",
        mounter(t.path(), mounted("tcp"), 0, false),
    );
    assert_eq!(o.code, 0);
    assert_eq!(o.calls.len(), 1, "no unmount under warn");
    assert!(o.err.contains("WARNING: mounted 10.0.2.15:/export on /mnt/data although 2 checks failed (policy warn)"), "{}", o.err);
}
