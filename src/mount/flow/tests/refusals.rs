//! TCP mounts refused, before mounting or after, and the unmount that must follow a refusal.

use super::*;

#[test]
fn an_existing_tcp_mount_of_the_server_refuses_before_mounting() {
    let t = gds_node();
    let (info, stats) = with_mount(40, "/mnt/tcp", "tcp");
    t.table(&info, &stats);
    let o = run(&t, &request("rw", false), "", mounts(&t, "tcp"));
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
        mounts(&t, "rdma"),
    );
    assert_eq!(o.code, 0, "{}", o.err);
}

#[test]
fn a_new_mount_over_tcp_is_unmounted_and_refused() {
    let t = gds_node();
    let o = run(&t, &request("rw", false), "", mounts(&t, "tcp"));
    assert_eq!(o.code, 32);
    assert_eq!(
        o.calls[1],
        "unmount /run/nfs-gds/stage/RUN/mnt (id 70, device 0:50)"
    );
    assert_eq!(o.calls.len(), 2, "never moved: {:?}", o.calls);
    assert!(
        o.err.contains("nfs-gds: REFUSED 10.0.2.15:/export on /mnt/data: the new mount failed 2 checks under policy enforce; it was unmounted before it reached /mnt/data, where nothing was mounted"),
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

#[test]
fn a_newline_in_the_spec_cannot_forge_a_log_line() {
    let t = gds_node();
    let args = HelperArgs {
        spec: "10.0.2.15:/export\nnfs-gds: mounted 10.0.2.15:/export on /mnt/data".into(),
        dir: "/mnt/data".into(),
        options: vec!["rw".into()],
        ..Default::default()
    };
    let req = MountRequest::new(&args, OptionDefaults::default(), Path::new("/")).unwrap();
    let o = run(&t, &req, "", mounts(&t, "tcp"));
    assert_eq!(o.code, 32);
    for line in o.err.lines() {
        assert!(!line.starts_with("nfs-gds: mounted"), "forged: {line}");
        assert!(line.starts_with("nfs-gds: "), "{line}");
    }
    assert!(o.err.contains("/export\\nnfs-gds: mounted"), "{}", o.err);
}

#[test]
fn a_mount_that_appears_on_another_path_is_neither_judged_nor_unmounted() {
    let t = gds_node();
    let after = (
        format!("{BEFORE}{}", nfs_info(70, "/elsewhere", "tcp")),
        BEFORE_STATS.to_string(),
    );
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.root(), Some(after), 0, false),
    );
    assert_eq!(o.code, 32);
    assert_eq!(o.calls.len(), 1, "never unmounted by nfs-gds");
    assert!(
        o.err.contains(
            "reported success, but nothing appeared at its staging point; nothing was mounted on /mnt/data"
        ),
        "{}",
        o.err
    );
}

#[test]
fn a_failed_unmount_after_a_refusal_is_loud() {
    let t = gds_node();
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.root(), mounted("tcp"), 0, true),
    );
    assert_eq!(o.code, 32);
    assert!(
        o.err
            .contains("; it never reached /mnt/data, but UNMOUNTING IT FAILED"),
        "{}",
        o.err
    );
    assert!(
        o.err.contains(
            "the refused mount stays below /run/nfs-gds/stage (umount2 of /run/nfs-gds/stage/"
        ),
        "{}",
        o.err
    );
    assert!(
        o.err.contains("Device or resource busy (os error 16)); the next nfs-gds helper or agent run removes it, or unmount it by hand"),
        "{}",
        o.err
    );
}

#[test]
fn an_unmount_that_leaves_the_mount_in_place_is_a_failure() {
    let t = gds_node();
    let root = t.root().to_owned();
    let after = mounted("tcp").unwrap();
    let m = RecordingMounter::new(
        move |call| {
            let at = call.target.display().to_string();
            write_table(
                &root,
                &after.0.replace(STAGED, &at),
                &after.1.replace(STAGED, &at),
            );
            Ok(MountStatus::Exited(0))
        },
        |_| Ok(()),
    );
    let o = run(&t, &request("rw", false), "", m);
    assert_eq!(o.code, 32);
    assert!(
        o.err
            .contains("it never reached /mnt/data, but UNMOUNTING IT FAILED"),
        "{}",
        o.err
    );
    assert!(
        o.err
            .contains("(it is still in the mount table after unmounting)"),
        "{}",
        o.err
    );
}

#[test]
fn warn_keeps_a_tcp_mount_and_says_so() {
    let t = gds_node();
    let o = run(
        &t,
        &request("rw,gds_policy=warn", false),
        "",
        mounts(&t, "tcp"),
    );
    assert_eq!(o.code, 0);
    assert_eq!(o.calls, MOUNTED_AND_MOVED, "no unmount under warn");
    assert!(o.err.contains("WARNING: mounted 10.0.2.15:/export on /mnt/data although 2 checks failed (policy warn)"), "{}", o.err);
}
