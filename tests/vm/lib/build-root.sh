#!/usr/bin/env bash
# Build, or reuse from the cache, a Debian guest: a root directory (kept for chroot module
# builds), an ext4 image of it, and the kernel and initrd to boot it with. Two suites:
#   bookworm  Debian 12, kernel 6.1, plain .ko modules
#   trixie    Debian 13, kernel 6.12, .ko.xz modules, zstd-compressed kernel and initramfs; and
#             beside it the newest kernel trixie-backports offers (7.x: Debian's split kernel
#             packages, no symbol CRCs), with its headers and source: the second kernel the same
#             image boots (kernel2/)
# Both are merged-/usr roots with systemd-sysv, so the same image boots either with the test
# init stub as PID 1 (init=/sbin/nfs-gds-vm-init) or with systemd.
#
# Usage: build-root.sh SUITE   — prints the cache directory of the root on stdout:
#   rootfs/    the debootstrapped tree          root.img  ext4 image of rootfs (never written to)
#   vmlinuz    the guest kernel                 initrd.img  its Debian initramfs
#   kver       the kernel release (uname -r)    packages.txt  dpkg -l of the guest
#   kernel2/   where the suite has a second kernel: its kver, vmlinuz, initrd.img, linux-source
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
    bookworm) LINUX_SOURCE=linux-source-6.1 SECOND_KERNEL_FROM= ;;
    trixie) LINUX_SOURCE=linux-source-6.12 SECOND_KERNEL_FROM=trixie-backports ;;
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
kver2=

mirror=$(debian_mirror)
mirror_desc=${mirror:-"the default mirror of debootstrap"}
log "root: debootstrap $SUITE (minbase) into $rootfs from $mirror_desc"
t0=$SECONDS

# Everything that mounts (debootstrap's /proc and /sys, our chroot's /proc and /dev) runs in a
# private mount namespace: the mounts vanish with it, whatever happens.
unshare --mount --propagation private -- bash -euo pipefail -s -- \
    "$rootfs" "$SUITE" "$mirror" "$init_stub" "$SECOND_KERNEL_FROM" "${GUEST_PACKAGES[@]}" <<'INNER'
rootfs=$1 suite=$2 mirror=$3 init_stub=$4 second_from=$5
shift 5
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

# The second kernel: the flavour's meta packages as SECOND_FROM has them (linux-image-amd64 there
# depends on Debian's split image/modules/base packages), their headers, the matching source, and
# pahole (which Debian's 7.x kbuild calls for module BTF). The suite's own kernel stays installed.
if [ -n "$second_from" ]; then
    uri=$(awk '$1 == "deb" { print $2; exit }' "$rootfs/etc/apt/sources.list")
    echo "deb ${uri:-http://deb.debian.org/debian} $second_from main" >"$rootfs/etc/apt/sources.list.d/second-kernel.list"
    chroot "$rootfs" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
        LC_ALL=C HOME=/root sh -euc '
            apt-get update -q
            apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-confold \
                -t "$1" linux-image-amd64 linux-headers-amd64 linux-source pahole
            apt-get clean
            rm -rf /var/lib/apt/lists/*
        ' sh "$second_from" >>"$rootfs.apt.log" 2>&1 || {
        tail -n 40 "$rootfs.apt.log" >&2
        echo "installing the $second_from kernel in the guest root failed; full log: $rootfs.apt.log" >&2
        exit 1
    }
    rm -f "$rootfs/etc/apt/sources.list.d/second-kernel.list"
fi
rm -f "$rootfs/usr/sbin/policy-rc.d"

# Guest configuration that does not change between runs.
echo nfs-gds-vm >"$rootfs/etc/hostname"
printf '127.0.0.1 localhost\n10.0.2.15 nfs-gds-vm\n' >"$rootfs/etc/hosts"
printf '# managed by the test scenarios\n' >"$rootfs/etc/fstab"
install -m 0755 "$init_stub" "$rootfs/sbin/nfs-gds-vm-init"
mkdir -p "$rootfs/export" "$rootfs/mnt/gds" "$rootfs/mnt/tcp" "$rootfs/mnt/rdma"
INNER

# The suite's own kernel is the one whose source package the suite names; a second one, if any,
# is the other release.
kernels=$(cd "$rootfs/lib/modules" && ls)
want=$([ -n "$SECOND_KERNEL_FROM" ] && echo 2 || echo 1)
[ "$(printf '%s\n' "$kernels" | wc -l)" = "$want" ] || die "expected $want kernel(s) in the guest root, found: $kernels"
series=${LINUX_SOURCE#linux-source-}
kver=$(printf '%s\n' "$kernels" | grep -E "^${series//./\\.}\.[0-9]+" || true)
[ "$(printf '%s\n' "$kver" | grep -c .)" = 1 ] || die "no single $series kernel among: $kernels"
# Debian's split 7.x packages keep the image in the module directory (linux-binary-…); initramfs-
# tools still writes the initrd to /boot.
image_of() { # KVER
    local f
    for f in "$rootfs/boot/vmlinuz-$1" "$rootfs/usr/lib/modules/$1/vmlinuz"; do
        [ ! -f "$f" ] || { printf '%s\n' "$f"; return 0; }
    done
    die "guest kernel $1 is in neither $rootfs/boot nor $rootfs/usr/lib/modules/$1"
}
check_kernel() { # KVER SOURCE
    image_of "$1" >/dev/null
    [ -f "$rootfs/boot/initrd.img-$1" ] || die "the initrd of guest kernel $1 is missing in $rootfs/boot"
    [ -f "$rootfs/usr/src/$2.tar.xz" ] || die "$2 tarball missing in the guest root"
    [ -d "$rootfs/usr/src/linux-headers-$1" ] || die "kernel headers for $1 missing in the guest root"
}
check_kernel "$kver" "$LINUX_SOURCE"

printf '%s\n' "$kver" >"$tmp/kver"
printf '%s\n' "$SUITE" >"$tmp/suite"
printf '%s\n' "$LINUX_SOURCE" >"$tmp/linux-source"
cp "$(image_of "$kver")" "$tmp/vmlinuz"
cp "$rootfs/boot/initrd.img-$kver" "$tmp/initrd.img"
if [ -n "$SECOND_KERNEL_FROM" ]; then
    kver2=$(printf '%s\n' "$kernels" | grep -vxF "$kver")
    source2=linux-source-$(printf '%s\n' "$kver2" | cut -d. -f1,2)
    check_kernel "$kver2" "$source2"
    mkdir -p "$tmp/kernel2"
    printf '%s\n' "$kver2" >"$tmp/kernel2/kver"
    printf '%s\n' "$source2" >"$tmp/kernel2/linux-source"
    printf '%s\n' "$SECOND_KERNEL_FROM" >"$tmp/kernel2/from"
    cp "$(image_of "$kver2")" "$tmp/kernel2/vmlinuz"
    cp "$rootfs/boot/initrd.img-$kver2" "$tmp/kernel2/initrd.img"
fi
chroot "$rootfs" dpkg-query -W -f='${Package} ${Version}\n' >"$tmp/packages.txt"

log "root: making ext4 image ($IMAGE_SIZE, sparse)"
mkfs.ext4 -q -F -L nfs-gds-root -d "$rootfs" "$tmp/root.img" "$IMAGE_SIZE"

touch "$tmp/.complete"
remove_tree "$out"
mv "$tmp" "$out"
log "root: built in $((SECONDS - t0)) s (kernel $kver${kver2:+ and $kver2}) → $out"

# Older roots of this suite (other keys) are dead weight now.
for old in "$cache"/root-"$SUITE"-*; do
    [ "$old" = "$out" ] && continue
    [ -d "$old" ] || continue
    log "root: removing outdated cache $old"
    remove_tree "$old"
done
printf '%s\n' "$out" >&3
