#!/bin/bash
# Guest main program, exec'd by the init stub as PID 1 from the unpacked payload.
#
# Sets up the test bed (network, soft-RoCE, kernel NFS server with an RDMA listener, nfs-gds
# installed as /sbin/mount.nfs-gds and /usr/sbin/nfs-gds), runs scenarios.sh, writes everything
# under $RESULTS as a tar stream onto the results disk (virtio serial nfs-gds-results) and powers
# off. A watchdog does the same if the guest runs out of time, so the host always gets what there
# is instead of a hung VM.
set -u

PAYLOAD=/run/nfs-gds-payload
RESULTS=/run/nfs-gds-results
export PAYLOAD RESULTS
mkdir -p "$RESULTS/env"
# shellcheck source=lib.sh
. "$PAYLOAD/guest/lib.sh"
# shellcheck source=/dev/null
. "$PAYLOAD/config.env"

exec >>"$RESULTS/guest.log" 2>&1

disk_by_serial() {
    local b
    for b in /sys/block/vd*; do
        [ "$(cat "$b/serial" 2>/dev/null)" = "$1" ] && { echo "/dev/${b##*/}"; return 0; }
    done
    return 1
}

# Write the results as a tar stream onto the results disk. Only the first caller writes
# (main or watchdog); a second one waits for it instead of powering off under it.
harvest() {
    if ! mkdir "$RESULTS/.harvest-lock" 2>/dev/null; then
        sleep 30
        return 0
    fi
    dmesg >"$RESULTS/dmesg.txt" 2>&1
    cat /proc/mounts >"$RESULTS/env/mounts-at-end.txt"
    lsmod >"$RESULTS/env/lsmod-at-end.txt" 2>&1
    local dev
    dev=$(disk_by_serial nfs-gds-results) || { say "no results disk (virtio serial nfs-gds-results)"; return 1; }
    say "writing results to $dev"
    tar -cf "$dev" -C "$RESULTS" --exclude=.harvest-lock . || say "writing results to $dev failed"
    sync
    blockdev --flushbufs "$dev" 2>/dev/null || true
}

power_off() {
    sync
    echo o >/proc/sysrq-trigger
    sleep 60
}

# Steps of the set-up; the first one that fails is recorded in setup-failed and ends the run.
setup_step() {
    local what=$1
    shift
    say "setup: $what"
    if ! "$@" >>"$RESULTS/setup.log" 2>&1; then
        echo "$what failed (see guest/setup.log)" >"$RESULTS/setup-failed"
        say "setup FAILED: $what"
        tail -n 20 "$RESULTS/setup.log" | sed 's/^/    /'
        return 1
    fi
}

net_up() {
    ip link set lo up
    local _
    for _ in $(seq 1 20); do [ -e /sys/class/net/eth0 ] && break; modprobe virtio_net 2>/dev/null; sleep 1; done
    [ -e /sys/class/net/eth0 ] || { echo "no eth0"; return 1; }
    ip addr add "$SERVER/24" dev eth0
    ip link set eth0 up
    for _ in $(seq 1 20); do [ "$(cat /sys/class/net/eth0/operstate)" = up ] && return 0; sleep 1; done
    echo "eth0 did not come up"
    return 1
}

rxe_up() {
    modprobe rdma_rxe
    rdma link add rxe0 type rxe netdev eth0
    local _
    for _ in $(seq 1 30); do
        rdma link show rxe0/1 | grep -q 'state ACTIVE' && { rdma link show; return 0; }
        sleep 1
    done
    rdma link show
    echo "rxe0/1 did not become ACTIVE"
    return 1
}

nfs_server_up() {
    mkdir -p "$EXPORT"
    chmod 0777 "$EXPORT"
    echo "$EXPORT *(rw,sync,no_root_squash,insecure,no_subtree_check)" >/etc/exports
    modprobe nfsd
    mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
    echo 10 >/proc/fs/nfsd/nfsv4gracetime
    echo 10 >/proc/fs/nfsd/nfsv4leasetime
    mkdir -p /run/rpcbind /var/lib/nfs/v4recovery
    rpcbind
    exportfs -ra
    rpc.mountd
    modprobe rpcrdma
    start_nfsd
    cat /proc/fs/nfsd/portlist
}

install_nfs_gds() {
    [ -f "$PAYLOAD/bin/nfs-gds" ] || { echo "payload has no bin/nfs-gds"; return 1; }
    install -m 0755 "$PAYLOAD/bin/nfs-gds" /usr/sbin/nfs-gds
    install -m 0755 "$PAYLOAD/bin/nfs-gds" /sbin/mount.nfs-gds
    rm -rf /etc/nfs-gds
    ls -l /usr/sbin/nfs-gds /sbin/mount.nfs-gds
}

record_env() {
    local e=$RESULTS/env
    uname -a >"$e/uname.txt"
    cat /proc/cmdline >"$e/cmdline.txt"
    lsmod >"$e/lsmod-at-start.txt"
    modinfo rpcrdma >"$e/modinfo-rpcrdma.txt" 2>&1
    rdma link show >"$e/rdma-link.txt" 2>&1
    cat /proc/fs/nfsd/portlist >"$e/nfsd-portlist.txt" 2>&1
    dpkg-query -W -f='${Package} ${Version}\n' >"$e/packages.txt" 2>&1
    cp "$PAYLOAD/config.env" "$e/config.env"
    cp "$PAYLOAD/manifest.txt" "$e/payload-manifest.txt" 2>/dev/null
}

say "guest up: kernel $(uname -r), guest time limit ${NFS_GDS_GUEST_TIMEOUT}s"
(
    sleep "$NFS_GDS_GUEST_TIMEOUT"
    say "watchdog: the guest ran out of time (${NFS_GDS_GUEST_TIMEOUT}s); harvesting what there is"
    echo "guest watchdog fired after ${NFS_GDS_GUEST_TIMEOUT}s" >"$RESULTS/watchdog-fired"
    harvest
    power_off
) &

hostname nfs-gds-vm
if setup_step "network (eth0 $SERVER/24)" net_up &&
    setup_step "soft-RoCE (rdma_rxe on eth0)" rxe_up &&
    setup_step "kernel NFS server with rdma $RDMA_PORT listener" nfs_server_up &&
    setup_step "install nfs-gds" install_nfs_gds; then
    record_env
    say "running scenarios"
    NFS_GDS_VM_ONLY=$NFS_GDS_VM_ONLY bash "$PAYLOAD/guest/scenarios.sh"
    say "scenarios done"
else
    record_env
fi

harvest
power_off
