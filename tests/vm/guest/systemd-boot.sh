# Configuration of the systemd guest, written before init.sh execs systemd (sourced by init.sh).
# shellcheck shell=bash
#
# Everything here is what an admin (or an image build) puts on a node; systemd then brings the
# test bed up by itself at boot:
#   - systemd-networkd: eth0 10.0.2.15/24 (static; user networking with restrict=on, nothing
#     leaves the VM); systemd-networkd-wait-online decides network-online.target;
#   - nfs-gds-vm-rxe.service: `rdma link add rxe0 type rxe netdev eth0`, ordered before
#     network-online.target, so soft-RoCE is up before anything that needs the network;
#   - nfs-server.service (Debian's own unit) with the RDMA listener from /etc/nfs.conf
#     ([nfsd] rdma=y rdma-port=20049), grace and lease 10 s;
#   - the GDS pieces: the GPL-hooked rpcrdma and the nvidia_fs stub under
#     /lib/modules/KVER/updates, loaded at boot by systemd-modules-load (modules-load.d);
#   - /etc/fstab with nfs-gds lines: two mounted during boot, three `noauto` ones the
#     scenarios start together, one that is refused, and one `nofail,x-systemd.automount`; when
#     NFS_GDS_VM_ONLY asks for sd-perf-boot-cost, 20 nfs-gds and 20 nfs4 lines more (cost.sh);
#   - nfs-gds-vm-scenarios.service: after multi-user.target, runs systemd-scenarios.sh, which
#     harvests the results and powers off.
# The NFS server runs on the same guest as the client. A remote server needs no ordering, but
# here the boot-time mounts must wait for it: x-systemd.after=nfs-server.service.

FSTAB_SPEC=$SERVER:$EXPORT
# shellcheck source=cost.sh
. "$PAYLOAD/guest/cost.sh"

# The fstab lines (also read by systemd-scenarios.sh, which asserts what they became).
write_systemd_fstab() {
    cat >/etc/fstab <<EOF
# nfs-gds VM tests (systemd guest)
# mounted during boot
$FSTAB_SPEC /mnt/boot1 nfs-gds _netdev,x-systemd.after=nfs-server.service 0 0
$FSTAB_SPEC /mnt/boot2 nfs-gds _netdev,hard,gds_wait=30,x-systemd.after=nfs-server.service,x-systemd.mount-timeout=4min 0 0
# started together by a scenario
$FSTAB_SPEC /mnt/par1 nfs-gds _netdev,noauto 0 0
$FSTAB_SPEC /mnt/par2 nfs-gds _netdev,noauto,gds_policy=enforce 0 0
$FSTAB_SPEC /mnt/par3 nfs-gds _netdev,noauto,hard 0 0
# refused once a scenario has unloaded nvidia_fs
$FSTAB_SPEC /mnt/refused nfs-gds _netdev,noauto 0 0
# mounted on first access
$FSTAB_SPEC /mnt/auto nfs-gds _netdev,nofail,x-systemd.automount,x-systemd.after=nfs-server.service,x-systemd.mount-timeout=4min 0 0
EOF
    # 40 more boot mounts only when the scenario that measures them is asked for (cost.sh).
    if opted_in sd-perf-boot-cost; then cost_boot_fstab >>/etc/fstab; fi
}

# (Runs as a setup step, in a condition, where set -e does not apply: each step says || return.)
configure_systemd_guest() {
    # Under TCG on a busy host everything runs 10–50 times slower than on hardware: give units
    # (and so the boot-time mounts) 5 minutes instead of 90 s, and wait-online as long.
    # systemd-modules-load.service sets its own 90 s, which rdma-core's module list plus ours
    # overran once (nvidia_fs never loaded, and the helper rightly refused the boot mounts).
    mkdir -p /etc/systemd/system.conf.d /etc/systemd/system/systemd-networkd-wait-online.service.d \
        /etc/systemd/system/systemd-modules-load.service.d
    # Devices have their own 90 s (DefaultDeviceTimeoutSec=, systemd 252): at load 17 udev once
    # took longer to announce eth0, and the rxe unit bound to it failed with the whole test bed.
    printf '[Manager]\nDefaultTimeoutStartSec=300s\nDefaultDeviceTimeoutSec=300s\n' >/etc/systemd/system.conf.d/tcg.conf
    printf '[Service]\nTimeoutSec=300s\n' >/etc/systemd/system/systemd-modules-load.service.d/tcg.conf
    printf '[Service]\nExecStart=\nExecStart=/lib/systemd/systemd-networkd-wait-online --timeout=300\n' \
        >/etc/systemd/system/systemd-networkd-wait-online.service.d/tcg.conf

    # Network.
    mkdir -p /etc/systemd/network
    cat >/etc/systemd/network/10-eth0.network <<EOF
[Match]
Name=eth0

[Network]
Address=$SERVER/24
LinkLocalAddressing=no
IPv6AcceptRA=no
EOF

    # Soft-RoCE, as a unit an admin would write.
    cat >/etc/systemd/system/nfs-gds-vm-rxe.service <<'EOF'
[Unit]
Description=Soft-RoCE device rxe0 on eth0
After=systemd-networkd.service sys-subsystem-net-devices-eth0.device
BindsTo=sys-subsystem-net-devices-eth0.device
Before=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=modprobe rdma_rxe
ExecStart=rdma link add rxe0 type rxe netdev eth0
ExecStart=sh -c 'for i in $(seq 1 30); do rdma link show rxe0/1 | grep -q "state ACTIVE" && exit 0; sleep 1; done; echo "rxe0/1 did not become ACTIVE"; exit 1'
ExecStop=rdma link delete rxe0

[Install]
WantedBy=network-online.target
EOF

    # Kernel NFS server with its RDMA listener.
    mkdir -p "$EXPORT"
    chmod 0777 "$EXPORT"
    echo "$EXPORT *(rw,sync,no_root_squash,insecure,no_subtree_check)" >/etc/exports
    cat >>/etc/nfs.conf <<EOF

# nfs-gds VM tests: NFS over RDMA on port $RDMA_PORT, short grace period
[nfsd]
threads=8
rdma=y
rdma-port=$RDMA_PORT
grace-time=10
lease-time=10
EOF

    # GDS: the hooked rpcrdma and the nvidia_fs stub, loaded at boot.
    install_module_build rpcrdma-gpl nvidia_fs || return 1
    printf 'rpcrdma\nnvidia_fs\n' >/etc/modules-load.d/gds.conf

    write_systemd_fstab
    mkdir -p /mnt/boot1 /mnt/boot2 /mnt/par1 /mnt/par2 /mnt/par3 /mnt/refused /mnt/auto /mnt/unit /mnt/rdma
    cost_boot_mkdirs || return 1

    # The scenarios, after multi-user.target; they harvest and power off themselves.
    cat >/etc/systemd/system/nfs-gds-vm-scenarios.service <<EOF
[Unit]
Description=nfs-gds VM scenarios (then power off)
# nfs-server.service has DefaultDependencies=no, so multi-user.target does not wait for it.
After=multi-user.target nfs-server.service

[Service]
Type=oneshot
ExecStart=/bin/bash $PAYLOAD/guest/systemd-scenarios.sh
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
EOF
    ln -sf /lib/systemd/system/multi-user.target /etc/systemd/system/default.target

    # One systemctl call each (offline, every call rereads all unit files: slow under TCG).
    systemctl enable systemd-networkd.service systemd-networkd-wait-online.service \
        nfs-gds-vm-rxe.service nfs-server.service nfs-gds-vm-scenarios.service || return 1
    # Timers that only slow a TCG boot down (and would try the network).
    systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer man-db.timer || true
}
