//! Mounts that exist already: verified, remounted or gone from the top, and never unmounted.

use super::*;

/// A mounter for a node whose DIR already carries 10.0.2.15:/export over `proto` (mount id 70):
/// mount.nfs makes a second mount of the same superblock at the staging point (id 71), and
/// unmounting that one leaves the table as it was.
fn second_copy(t: &Tree, proto: &'static str) -> RecordingMounter {
    second_copy_beside(t, proto, "", "")
}

/// [`second_copy`] on a table that also has `info` (and its `stats`).
fn second_copy_beside(t: &Tree, proto: &'static str, info: &str, stats: &str) -> RecordingMounter {
    let first = format!("{BEFORE}{info}{}", nfs_info(70, "/mnt/data", proto));
    let first_stats = format!("{BEFORE_STATS}{stats}{}", nfs_stats("/mnt/data", proto));
    t.table(&first, &first_stats);
    let (r1, r2) = (t.root().to_owned(), t.root().to_owned());
    let (f1, s1) = (first.clone(), first_stats.clone());
    RecordingMounter::new(
        move |call| {
            let at = call.target.display().to_string();
            write_table(
                &r1,
                &format!("{f1}{}", nfs_info(71, &at, proto)),
                &format!("{s1}{}", nfs_stats(&at, proto)),
            );
            Ok(MountStatus::Exited(0))
        },
        move |_| {
            write_table(&r2, &first, &first_stats);
            Ok(())
        },
    )
}

/// DIR already carries the export over RDMA while the server has a TCP mount elsewhere, with the
/// trap at `warn`: the mount kept is judged as `verify` judges it, the trap's warning (that a
/// new mount of the server could inherit TCP) included.
#[test]
fn an_existing_mount_is_judged_as_verify_judges_it() {
    let t = gds_node();
    let info = nfs_info(72, "/elsewhere", "tcp").replace(" 0:50 ", " 0:60 ");
    let stats = nfs_stats("/elsewhere", "tcp");
    let o = run(
        &t,
        &request("rw", false),
        "[checks]\nrpcrdma-hook-export = \"off\"\ntransport-trap = \"warn\"\n",
        second_copy_beside(&t, "rdma", &info, &stats),
    );
    assert_eq!(o.code, 0, "{}", o.err);
    let kept = o
        .err
        .split("verifying that mount")
        .nth(1)
        .expect("the existing mount is verified");
    assert!(
        kept.contains("WARN transport-trap [warn]: this mount runs over RDMA, but 10.0.2.15 also has NFSv4 mounts over other transports"),
        "the kept mount's own judgement says the trap, as verify does: {}",
        o.err
    );
}

#[test]
fn already_mounted_is_verified_and_never_unmounted() {
    let t = gds_node();
    let o = run(
        &t,
        &request("rw", false),
        "[checks]\nrpcrdma-hook-export = \"off\"\n",
        second_copy(&t, "rdma"),
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert!(o.err.contains("nfs-gds: /mnt/data was already mounted (mount id 70, 10.0.2.15:/export) and nfs-gds stacks no second copy of it; verifying that mount"), "{}", o.err);
    assert_eq!(
        o.calls[1], "unmount /run/nfs-gds/stage/RUN/mnt (id 71, device 0:50)",
        "only the staged copy is unmounted"
    );
    assert_eq!(o.calls.len(), 2, "nothing moved: {:?}", o.calls);

    // The pre-existing tcp mount is itself the trap: refused before mounting.
    let o = run(&t, &request("rw", false), "", second_copy(&t, "tcp"));
    assert_eq!(o.code, 32);
    assert!(o.calls.is_empty());
    // With the trap check off, mount.nfs is run and the tcp mount on DIR stays.
    let o = run(
        &t,
        &request("rw", false),
        "[checks]\ntransport-trap = \"off\"\n",
        second_copy(&t, "tcp"),
    );
    assert_eq!(o.code, 32);
    assert_eq!(
        o.calls.len(),
        2,
        "never unmount a mount that was there before: {:?}",
        o.calls
    );
    assert!(o.calls[1].contains("(id 71,"), "{:?}", o.calls);
    assert!(o.err.contains("REFUSED /mnt/data: the mount on it (id 70) failed 2 checks under policy enforce; it was there before nfs-gds ran, so nfs-gds leaves it mounted: unmount it (`umount /mnt/data`) and mount again"), "{}", o.err);
}

#[test]
fn remount_verifies_the_existing_mount_and_never_unmounts_it() {
    let t = gds_node();
    already_mounted(&t, "rdma");
    let o = run(&t, &request("remount,ro", false), "", no_new_mount(&t, 0));
    assert_eq!(o.code, 0, "{}", o.err);
    assert_eq!(
        o.calls,
        ["fake-mount 10.0.2.15:/export /mnt/data -o remount,ro"]
    );
    assert!(o.err.is_empty(), "no pre-checks on a remount: {}", o.err);

    already_mounted(&t, "tcp");
    let o = run(&t, &request("remount,ro", false), "", no_new_mount(&t, 0));
    assert_eq!(o.code, 32);
    assert_eq!(o.calls.len(), 1, "no unmount: {:?}", o.calls);
    assert!(
        o.err.contains(
            "the remount was applied to a mount nfs-gds did not make, so nfs-gds leaves it mounted"
        ),
        "{}",
        o.err
    );

    let o = run(&t, &request("remount,ro", false), "", no_new_mount(&t, 32));
    assert_eq!(o.code, 32);
    assert!(
        o.err
            .contains("the remount of /mnt/data failed (exit status 32)"),
        "{}",
        o.err
    );

    let o = run(&t, &request("remount,ro", true), "", no_new_mount(&t, 0));
    assert_eq!(o.code, 0);
    assert!(o.calls.is_empty());
    assert!(o.out.contains("  remount: fake-mount"), "{}", o.out);
}

#[test]
fn a_remount_judges_the_mount_on_its_recorded_port_and_declared_asks() {
    let t = gds_node();
    let (info, stats) = with_mount(70, "/mnt/data", "rdma");
    t.table(
        &info.replace("port=20049", "port=20050"),
        &stats.replace("port=20049", "port=20050"),
    );
    // Unrecorded, 20050 is not the port the request expects.
    let o = run(&t, &request("remount,ro", false), "", no_new_mount(&t, 0));
    assert_eq!(o.code, 32, "{}", o.err);
    assert!(o.err.contains("mount-options"), "{}", o.err);
    // Recorded on 20050 by the helper that made it: that is the port it must be on.
    t.write(
        "run/nfs-gds/mounts/70-0.50.json",
        r#"{"source":"10.0.2.15:/export","target":"/mnt/data","device":"0:50","mount_id":70,"port":20050}"#,
    );
    let o = run(&t, &request("remount,ro", false), "", no_new_mount(&t, 0));
    assert_eq!(o.code, 0, "{}", o.err);
    // The fstab line's nconnect=4 is what the mount asked for: the kernel made one connection,
    // so the remount warns as verify does.
    t.write(
        "etc/fstab",
        "10.0.2.15:/export /mnt/data nfs-gds _netdev,nconnect=4 0 0\n",
    );
    let o = run(&t, &request("remount,ro", false), "", no_new_mount(&t, 0));
    assert_eq!(o.code, 0, "{}", o.err);
    assert!(o.err.contains("mount-connections"), "{}", o.err);
}
