#!/bin/bash
# Guest main program, exec'd by the init stub as PID 1 from the unpacked payload.
#
# With NFS_GDS_VM_INIT=stub (config.env) it sets up the test bed itself (network, soft-RoCE,
# kernel NFS server with an RDMA listener, the nfs-gds package installed with apt), runs
# scenarios.sh, writes everything under $RESULTS as a tar stream onto the results disk (virtio
# serial nfs-gds-results) and powers off. With NFS_GDS_VM_INIT=systemd it installs the package,
# configures the guest as an admin would (systemd-boot.sh) and execs systemd, whose units bring
# up the test bed; a unit runs systemd-scenarios.sh after multi-user.target, harvests and powers
# off. Either way a watchdog harvests and powers off if the guest runs out of time, so the host
# always gets what there is instead of a hung VM.
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

# The project's package, as users install it: apt install ./nfs-gds_*.deb (its dependencies
# are in the root already, so apt needs no network). NFS_GDS_VM_BINARY (pkg/nfs-gds.override)
# then replaces the package's nfs-gds executables, to test a broken binary.
install_nfs_gds() {
    local debs deb f
    debs=("$PAYLOAD"/pkg/nfs-gds_*.deb)
    [ -f "${debs[0]}" ] || { echo "payload has no pkg/nfs-gds_*.deb"; return 1; }
    mkdir -p /var/cache/nfs-gds-vm
    cp "${debs[0]}" /var/cache/nfs-gds-vm/
    deb=/var/cache/nfs-gds-vm/$(basename "${debs[0]}")
    chmod 0644 "$deb"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$deb" || { echo "apt-get install $deb failed"; return 1; }
    dpkg-query -W -f='${Package} ${Version} ${Status}\n' nfs-gds
    if [ -f "$PAYLOAD/pkg/nfs-gds.override" ]; then
        for f in $(dpkg -L nfs-gds | grep -E '/s?bin/(nfs-gds|mount\.nfs-gds)$'); do
            [ -L "$f" ] && continue
            [ -f "$f" ] || continue
            echo "override: $f ← NFS_GDS_VM_BINARY"
            install -m 0755 "$PAYLOAD/pkg/nfs-gds.override" "$f"
        done
    fi
    rm -rf /etc/nfs-gds
    ls -l /usr/sbin/nfs-gds /sbin/mount.nfs-gds
    [ -x /sbin/mount.nfs-gds ] && [ -x /usr/sbin/nfs-gds ] || { echo "the package did not install /sbin/mount.nfs-gds and /usr/sbin/nfs-gds"; return 1; }
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
if [ "${NFS_GDS_VM_INIT:-stub}" = systemd ]; then
    # shellcheck source=systemd-boot.sh
    . "$PAYLOAD/guest/systemd-boot.sh"
    if setup_step "install nfs-gds (apt install ./nfs-gds_*.deb)" install_nfs_gds &&
        setup_step "configure the guest for systemd" configure_systemd_guest; then
        say "exec systemd as PID 1"
        exec /lib/systemd/systemd
    fi
    record_env
    harvest
    power_off
fi
if setup_step "network (eth0 $SERVER/24)" net_up &&
    setup_step "soft-RoCE (rdma_rxe on eth0)" rxe_up &&
    setup_step "kernel NFS server with rdma $RDMA_PORT listener" nfs_server_up &&
    setup_step "install nfs-gds (apt install ./nfs-gds_*.deb)" install_nfs_gds; then
    record_env
    say "running scenarios"
    NFS_GDS_VM_ONLY=$NFS_GDS_VM_ONLY NFS_GDS_VM_GUEST=$NFS_GDS_VM_GUEST bash "$PAYLOAD/guest/$NFS_GDS_VM_SCRIPT"
    say "scenarios done"
else
    record_env
fi

harvest
power_off
