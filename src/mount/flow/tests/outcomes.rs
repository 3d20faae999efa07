//! What mount.nfs reported and what the helper makes of it, and the fake run that mounts nothing.

use super::*;

#[test]
fn a_mount_nfs_failure_is_passed_on() {
    let t = gds_node();
    let o = run(&t, &request("rw", false), "", no_new_mount(&t, 32));
    assert_eq!(o.code, 32);
    assert!(
        o.err.contains(
            "nfs-gds: fake-mount failed (exit status 32); nothing was mounted on /mnt/data"
        ),
        "{}",
        o.err
    );
    let o = run(&t, &request("rw", false), "", no_new_mount(&t, 1));
    assert_eq!(o.code, 1);
}

#[test]
fn success_without_a_mount_is_not_a_mount() {
    let t = gds_node();
    let o = run(&t, &request("rw", false), "", no_new_mount(&t, 0));
    assert_eq!(o.code, 32);
    assert!(
        o.err
            .contains("reported success, but nothing appeared at its staging point; nothing was mounted on /mnt/data"),
        "{}",
        o.err
    );
}

#[test]
fn a_verified_mount_keeps_a_nonzero_mount_nfs_status() {
    let t = gds_node();
    let o = run(
        &t,
        &request("rw", false),
        "",
        mounter(t.root(), mounted("rdma"), 16, false),
    );
    assert_eq!(o.code, 16);
}

#[test]
fn an_unreadable_mount_table_is_a_system_error() {
    let t = gds_node();
    std::fs::remove_file(t.root().join("proc/self/mountinfo")).unwrap();
    let o = run(&t, &request("rw", false), "", mounts(&t, "rdma"));
    assert_eq!(o.code, 2);
    assert!(
        o.err.contains("proc/self/mountinfo does not exist"),
        "{}",
        o.err
    );
    assert!(o.calls.is_empty());
}

#[test]
fn fake_runs_the_checks_prints_the_plan_and_mounts_nothing() {
    let t = gds_node();
    let system = Fake::new();
    let o = run_with(
        &t,
        &request("rw,gds_wait=30", true),
        "",
        mounts(&t, "rdma"),
        &system,
        true,
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert!(o.calls.is_empty());
    assert!(o.loads.is_empty(), "-f loads nothing");
    assert!(
        system.calls().is_empty(),
        "-f runs nothing: {:?}",
        system.calls()
    );
    assert!(system.sleeps().is_empty(), "-f does not wait");
    assert!(
        o.out
            .starts_with("nfs-gds mount 10.0.2.15:/export on /mnt/data: READY, WITH WARNINGS"),
        "{}",
        o.out
    );
    assert!(o.out.contains("  mount:   fake-mount 10.0.2.15:/export /run/nfs-gds/stage/RUN/mnt -o rw,vers=4.2,proto=rdma,port=20049\n"), "{}", o.out);
    assert!(o.out.contains("  wait:    up to 30 s"), "{}", o.out);
    assert!(
        o.out.contains(
            "  verify:  the mount at that staging point (RUN: this run's own directory); every xprt: line rdma; proto=rdma; port=20049"
        ),
        "{}",
        o.out
    );
    assert!(
        o.out
            .contains("  move:    onto /mnt/data if no enforced check fails\n"),
        "{}",
        o.out
    );
    assert!(o.out.contains("  refuse:  unmount it from the staging point if an enforced check fails; nothing ever appears on /mnt/data\n"), "{}", o.out);

    std::fs::remove_dir_all(t.root().join("sys/module/nvidia_fs")).unwrap();
    let o = run(&t, &request("rw", true), "", mounts(&t, "rdma"));
    assert_eq!(o.code, 32);
    assert!(o.calls.is_empty());
    assert!(o.err.contains("would REFUSE to mount"), "{}", o.err);
}
