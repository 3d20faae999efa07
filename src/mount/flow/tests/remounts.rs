//! Mounts that exist already: verified, remounted or gone from the top, and never unmounted.

use super::*;

#[test]
fn already_mounted_is_verified_and_never_unmounted() {
    let t = gds_node();
    already_mounted(&t, "rdma");
    let o = run(
        &t,
        &request("rw", false),
        "[checks]\nrpcrdma-hook-export = \"off\"\n",
        no_new_mount(&t, 0),
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert!(o.err.contains("nfs-gds: /mnt/data was already mounted (mount id 70, 10.0.2.15:/export) and mount.nfs left it as it was; verifying that mount"), "{}", o.err);

    already_mounted(&t, "tcp");
    // The pre-existing tcp mount is itself the trap: refused before mounting.
    let o = run(&t, &request("rw", false), "", no_new_mount(&t, 0));
    assert_eq!(o.code, 32);
    assert!(o.calls.is_empty());
    // With the trap check off, mount.nfs is run, reports success, and the tcp mount stays.
    let o = run(
        &t,
        &request("rw", false),
        "[checks]\ntransport-trap = \"off\"\n",
        no_new_mount(&t, 0),
    );
    assert_eq!(o.code, 32);
    assert_eq!(
        o.calls.len(),
        1,
        "never unmount a mount that was there before: {:?}",
        o.calls
    );
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
fn undo_leaves_alone_a_mount_that_is_no_longer_on_top() {
    let t = gds_node();
    let stacked = format!(
        "{BEFORE}{}71 70 0:51 / /mnt/data rw - nfs4 other:/x rw,proto=rdma\n",
        nfs_info(70, "/mnt/data", "tcp")
    );
    t.table(&stacked, "");
    let unmounts = Rc::new(Cell::new(0));
    let counter = unmounts.clone();
    let mut m = RecordingMounter::new(
        |_| Ok(MountStatus::Exited(0)),
        move |_| {
            counter.set(counter.get() + 1);
            Ok(())
        },
    );
    let root = Root::new(t.root());
    let clock = Fake::new();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut h = Helper {
        root: &root,
        mounter: &mut m,
        system: &clock,
        modprobe: None,
        out: &mut out,
        err: &mut err,
    };
    let table = read_mount_table(&root).unwrap();
    let undo = h.undo(&MountIdentity::of(&table.by_id(70).unwrap().info));
    assert_eq!(
        undo,
        Undo::NotAttempted("another mount (id 71) is now on top of it".into())
    );
    assert_eq!(
        h.undo(&MountIdentity {
            mount_id: 99,
            parent_id: 1,
            device: "0:99".into(),
            mount_point: "/nowhere".into(),
            unique_id: None,
        }),
        Undo::NotAttempted("it is no longer mounted".into())
    );
    assert_eq!(unmounts.get(), 0);
}

/// A remount judges the existing mount as `verify` and the agent do: on the port the helper
/// recorded for it (not the request's), with the asks of its record and fstab line.
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
