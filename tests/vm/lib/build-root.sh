#!/usr/bin/env bash
# Build, or reuse from the cache, a Debian guest: a root directory (kept for chroot module
# builds), an ext4 image of it, and the kernel and initrd to boot it with. Two suites:
#   bookworm  Debian 12, kernel 6.1, plain .ko modules
#   trixie    Debian 13, kernel 6.12, .ko.xz modules, zstd-compressed kernel and initramfs
# Both are merged-/usr roots with systemd-sysv, so the same image boots either with the test
# init stub as PID 1 (init=/sbin/nfs-gds-vm-init) or with systemd.
#
# Usage: build-root.sh SUITE   — prints the cache directory of the root on stdout:
#   rootfs/    the debootstrapped tree          root.img  ext4 image of rootfs (never written to)
#   vmlinuz    the guest kernel                 initrd.img  its Debian initramfs
#   kver       the kernel release (uname -r)    packages.txt  dpkg -l of the guest
# The cache key is a hash of this script, the suite and the guest init stub, so editing the
# package list or the stub rebuilds the root.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
vmdir=$(dirname "$here")
# shellcheck source=common.sh
. "$here/common.sh"

# Only the resulting path goes to stdout (fd 3); everything else, ours and the tools', to stderr.
exec 3>&1 1>&2

# Everything the guest needs: kernel, NFS server and client, soft-RoCE userspace, and what it takes
# to build test modules against the guest kernel (headers, compiler, the kernel's own source).
# jq and binutils let the scenarios read JSON and ELF symbol tables; strace shows which mount
# calls the helper makes (the staging scenarios); xz-utils compresses test
# modules the way the distribution ships its own. systemd-sysv makes systemd the guest's init
# for the systemd scenarios (the other guests boot the init stub instead). podman with both
# runtimes (crun, runc) and a static busybox run the container-start scenarios: the test image
# is built FROM scratch with that busybox, so nothing is pulled from a registry.
SUITE=${1:?usage: build-root.sh bookworm|trixie}
case $SUITE in
    bookworm) LINUX_SOURCE=linux-source-6.1 ;;
    trixie) LINUX_SOURCE=linux-source-6.12 ;;
    *) die "unknown guest suite '$SUITE' (bookworm or trixie)" ;;
esac
GUEST_PACKAGES=(
    linux-image-amd64 nfs-kernel-server nfs-common rpcbind
    rdma-core ibverbs-utils ibverbs-providers rdmacm-utils
    iproute2 kmod util-linux procps systemd-sysv dbus
    linux-headers-amd64 gcc make "$LINUX_SOURCE" xz-utils
    jq binutils strace
    podman crun runc conmon busybox-static
)
IMAGE_SIZE=3G

init_stub="$vmdir/guest/init-stub"
key=$(hash_of "$here/build-root.sh" "$SUITE" "$init_stub")
cache=$(cache_dir)
out="$cache/root-$SUITE-$key"

if [ -f "$out/.complete" ]; then
    log "root: cached ($out)"
    printf '%s\n' "$out" >&3
    exit 0
fi

[ "$(id -u)" = 0 ] || die "building the guest root needs root (debootstrap, chroot)"
mkdir -p "$cache"

# Remove a half-built tree. --one-file-system never crosses into a mount point, should an
# interrupted debootstrap have left one behind (it mounts only inside our private namespace, so
# normally none survives).
remove_tree() {
    local d=$1
    [ -e "$d" ] || return 0
    if awk -v d="$d/" 'index($2 "/", d) == 1 { found=1 } END { exit !found }' /proc/mounts; then
        die "$d still has mounts under it (see /proc/mounts); unmount them, then remove it"
    fi
    rm -rf --one-file-system "$d"
}

tmp="$out.tmp"
remove_tree "$tmp"
mkdir -p "$tmp"
rootfs="$tmp/rootfs"

mirror=$(debian_mirror)
mirror_desc=${mirror:-"the default mirror of debootstrap"}
log "root: debootstrap $SUITE (minbase) into $rootfs from $mirror_desc"
t0=$SECONDS

# Everything that mounts (debootstrap's /proc and /sys, our chroot's /proc and /dev) runs in a
# private mount namespace: the mounts vanish with it, whatever happens.
unshare --mount --propagation private -- bash -euo pipefail -s -- \
    "$rootfs" "$SUITE" "$mirror" "$init_stub" "${GUEST_PACKAGES[@]}" <<'INNER'
rootfs=$1 suite=$2 mirror=$3 init_stub=$4
shift 4
packages=("$@")

debootstrap --variant=minbase "$suite" "$rootfs" ${mirror:+"$mirror"} >"$rootfs.debootstrap.log" 2>&1 || {
    tail -n 40 "$rootfs.debootstrap.log" >&2
    echo "debootstrap failed; full log: $rootfs.debootstrap.log" >&2
    exit 1
}

mount -t proc proc "$rootfs/proc"
mount --rbind /dev "$rootfs/dev"
mount -t sysfs sysfs "$rootfs/sys"
cp /etc/resolv.conf "$rootfs/etc/resolv.conf" 2>/dev/null || true

# No daemon may start inside the chroot while packages install.
printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
chmod 755 "$rootfs/usr/sbin/policy-rc.d"

chroot "$rootfs" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    LC_ALL=C HOME=/root sh -euc '
        apt-get update -q
        apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-confold "$@"
        apt-get clean
        rm -rf /var/lib/apt/lists/*
    ' sh "${packages[@]}" >"$rootfs.apt.log" 2>&1 || {
    tail -n 40 "$rootfs.apt.log" >&2
    echo "apt-get install in the guest root failed; full log: $rootfs.apt.log" >&2
    exit 1
}
rm -f "$rootfs/usr/sbin/policy-rc.d"

# Guest configuration that does not change between runs.
echo nfs-gds-vm >"$rootfs/etc/hostname"
printf '127.0.0.1 localhost\n10.0.2.15 nfs-gds-vm\n' >"$rootfs/etc/hosts"
printf '# managed by the test scenarios\n' >"$rootfs/etc/fstab"
install -m 0755 "$init_stub" "$rootfs/sbin/nfs-gds-vm-init"
mkdir -p "$rootfs/export" "$rootfs/mnt/gds" "$rootfs/mnt/tcp" "$rootfs/mnt/rdma"
INNER

kver=$(cd "$rootfs/lib/modules" && ls)
[ "$(printf '%s\n' "$kver" | wc -l)" = 1 ] || die "expected exactly one kernel in the guest root, found: $kver"
[ -f "$rootfs/boot/vmlinuz-$kver" ] && [ -f "$rootfs/boot/initrd.img-$kver" ] \
    || die "guest kernel or initrd missing in $rootfs/boot"
[ -f "$rootfs/usr/src/$LINUX_SOURCE.tar.xz" ] || die "$LINUX_SOURCE tarball missing in the guest root"
[ -d "$rootfs/usr/src/linux-headers-$kver" ] || die "kernel headers for $kver missing in the guest root"

printf '%s\n' "$kver" >"$tmp/kver"
printf '%s\n' "$SUITE" >"$tmp/suite"
printf '%s\n' "$LINUX_SOURCE" >"$tmp/linux-source"
cp "$rootfs/boot/vmlinuz-$kver" "$tmp/vmlinuz"
cp "$rootfs/boot/initrd.img-$kver" "$tmp/initrd.img"
chroot "$rootfs" dpkg-query -W -f='${Package} ${Version}\n' >"$tmp/packages.txt"

log "root: making ext4 image ($IMAGE_SIZE, sparse)"
mkfs.ext4 -q -F -L nfs-gds-root -d "$rootfs" "$tmp/root.img" "$IMAGE_SIZE"

touch "$tmp/.complete"
remove_tree "$out"
mv "$tmp" "$out"
log "root: built in $((SECONDS - t0)) s (kernel $kver) → $out"

# Older roots of this suite (other keys) are dead weight now.
for old in "$cache"/root-"$SUITE"-*; do
    [ "$old" = "$out" ] && continue
    [ -d "$old" ] || continue
    log "root: removing outdated cache $old"
    remove_tree "$old"
done
printf '%s\n' "$out" >&3
