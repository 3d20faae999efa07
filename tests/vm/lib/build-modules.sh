#!/usr/bin/env bash
# Build, or reuse from the cache, the test kernel modules against the guest kernel, with kbuild in
# a chroot of the guest root:
#   rpcrdma-gpl.ko    the kernel's own net/sunrpc/xprtrdma (from the guest's linux-source-X.Y) plus
#                     modules/rpcrdma-nvfs/nfs_gds_nvfs_hooks.c, hooks exported EXPORT_SYMBOL_GPL
#   rpcrdma-plain.ko  the same with plain EXPORT_SYMBOL
#   rpcrdma-badcrc.ko the GPL build with one ib_core import's CRC altered (an ABI mismatch)
#   nvidia_fs.ko      the stand-in in modules/nvidia_fs
# Both rpcrdma builds are named "rpcrdma" inside (modinfo name), as a distro or DKMS build is.
# Each is stored the way the guest's distribution ships its modules: plain .ko on Debian 12,
# .ko.xz on Debian 13 (xz with a CRC32 check, as kbuild's modules_install compresses them);
# the file "suffix" says which.
#
# Usage: build-modules.sh ROOT_CACHE_DIR   — prints the module cache directory on stdout.
# The cache key covers the root (its own key), this script and the module sources.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
vmdir=$(dirname "$here")
# shellcheck source=common.sh
. "$here/common.sh"

# Only the resulting path goes to stdout (fd 3); everything else, ours and the tools', to stderr.
exec 3>&1 1>&2

root=${1:?usage: build-modules.sh ROOT_CACHE_DIR}
[ -f "$root/.complete" ] || die "no complete guest root at $root"
rootfs="$root/rootfs"
kver=$(cat "$root/kver")
linux_source=$(cat "$root/linux-source")

srcs=("$here/build-modules.sh" "$vmdir"/modules/*/*)
key=$(hash_of "$(basename "$root")" "${srcs[@]}")
cache=$(cache_dir)
out="$cache/modules-$(cat "$root/suite")-$key"

if [ -f "$out/.complete" ]; then
    log "modules: cached ($out)"
    printf '%s\n' "$out" >&3
    exit 0
fi
[ "$(id -u)" = 0 ] || die "building the test modules needs root (chroot)"

t0=$SECONDS
tmp="$out.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"

# The build tree lives inside the guest root (so the chroot sees it) and is removed afterwards;
# the root image was made before, so this does not change what the guest boots.
build_rel=var/tmp/nfs-gds-modules
build="$rootfs/$build_rel"
rm -rf --one-file-system "$build"
mkdir -p "$build"
cp -r "$vmdir/modules/rpcrdma-nvfs" "$vmdir/modules/nvidia_fs" "$build/"

cat >"$build/build.sh" <<'INNER'
#!/bin/bash
# Runs inside the chroot of the guest root.
set -euo pipefail
kver=$1 srcname=$2
kdir=/lib/modules/$kver/build
cd /var/tmp/nfs-gds-modules

echo "== extracting net/sunrpc from /usr/src/$srcname.tar.xz"
tar -xf "/usr/src/$srcname.tar.xz" "$srcname/net/sunrpc"
src=$srcname/net/sunrpc
grep -q '^rpcrdma-y' "$src/xprtrdma/Makefile" || { echo "unexpected xprtrdma Makefile" >&2; exit 1; }

for variant in gpl plain; do
    echo "== rpcrdma ($variant export)"
    # Keep the tree layout (net/sunrpc/xprtrdma) so relative includes resolve as in-tree.
    rm -rf "build-$variant"
    mkdir -p "build-$variant/net"
    cp -r "$src" "build-$variant/net/"
    d="build-$variant/net/sunrpc/xprtrdma"
    cp rpcrdma-nvfs/nfs_gds_nvfs_hooks.c "$d/"
    {
        echo
        echo '# nfs-gds VM tests: the nvfs hook entry points'
        echo 'rpcrdma-y += nfs_gds_nvfs_hooks.o'
        if [ "$variant" = gpl ]; then
            echo 'CFLAGS_nfs_gds_nvfs_hooks.o += -DNFS_GDS_NVFS_EXPORT_GPL'
        fi
    } >>"$d/Makefile"
    make -s -C "$kdir" M="$PWD/$d" -j"$(nproc)" modules
    cp "$d/rpcrdma.ko" "out/rpcrdma-$variant.ko"
done

echo "== nvidia_fs stub"
make -s -C "$kdir" M="$PWD/nvidia_fs" modules
cp nvidia_fs/nvidia_fs.ko out/nvidia_fs.ko

# Distro modules ship without DWARF; so do these (symbols and the build-id note stay).
strip --strip-debug out/*.ko

# An ABI mismatch: the GPL build with the CRC of one ib_core import inverted in its __versions
# table, as if built against a Module.symvers that does not match the running kernel. Entries
# are struct modversion_info: an 8-byte CRC, then the NUL-padded name (64 bytes in all).
echo "== rpcrdma with a mismatching symbol CRC"
cp out/rpcrdma-gpl.ko out/rpcrdma-badcrc.ko
read -r off size < <(readelf -W -S out/rpcrdma-badcrc.ko | sed 's/^ *\[ *[0-9]*\]//' | awk '$1 == "__versions" { print $4, $5 }')
[ -n "${off:-}" ] || { echo "rpcrdma-gpl.ko has no __versions section" >&2; exit 1; }
perl -e '
    my ($file, $off, $size) = ($ARGV[0], hex($ARGV[1]), hex($ARGV[2]));
    open(my $fh, "+<:raw", $file) or die "$file: $!";
    for (my $at = $off; $at + 64 <= $off + $size; $at += 64) {
        seek($fh, $at, 0); read($fh, my $entry, 64) == 64 or die "short read";
        my ($crc, $name) = unpack("Q< Z56", $entry);
        next unless $name =~ /^ib_/;
        seek($fh, $at, 0); print $fh pack("Q<", $crc ^ 0xffffffff);
        printf "%s: CRC 0x%08x -> 0x%08x\n", $name, $crc, $crc ^ 0xffffffff;
        open(my $o, ">", "out/badcrc-symbol") or die; print $o "$name\n"; exit 0;
    }
    die "no ib_ import in __versions\n";
' out/rpcrdma-badcrc.ko "$off" "$size"

# Compressed as the distribution ships its own modules (the stock rpcrdma tells which).
stock=$(modinfo -n rpcrdma -k "$kver")
case $stock in
    *.ko) suffix=.ko ;;
    *.ko.xz) suffix=.ko.xz; for m in out/*.ko; do xz --check=crc32 --lzma2=dict=1MiB "$m"; done ;;
    *) echo "stock rpcrdma $stock: compression not handled here" >&2; exit 1 ;;
esac
echo "$suffix" >out/suffix

echo "== results"
for m in out/*"$suffix"; do
    echo "$m: $(modinfo -F name "$m") vermagic=$(modinfo -F vermagic "$m")"
done
INNER
mkdir -p "$build/out"

log "modules: building rpcrdma (gpl, plain) and nvidia_fs against $kver in a chroot"
if ! unshare --mount --propagation private -- bash -euo pipefail -c '
        rootfs=$1 build_rel=$2 kver=$3 srcname=$4
        mount -t proc proc "$rootfs/proc"
        mount --rbind /dev "$rootfs/dev"
        chroot "$rootfs" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C HOME=/root \
            bash "/$build_rel/build.sh" "$kver" "$srcname"
    ' sh "$rootfs" "$build_rel" "$kver" "$linux_source" >"$tmp/build.log" 2>&1; then
    tail -n 40 "$tmp/build.log" >&2
    die "module build failed; full log: $tmp/build.log"
fi

suffix=$(cat "$build/out/suffix")
for m in rpcrdma-gpl rpcrdma-plain rpcrdma-badcrc nvidia_fs; do
    [ -s "$build/out/$m$suffix" ] || die "module build produced no $m$suffix (log: $tmp/build.log)"
    cp "$build/out/$m$suffix" "$tmp/$m$suffix"
done
printf '%s\n' "$suffix" >"$tmp/suffix"
cp "$build/out/badcrc-symbol" "$tmp/badcrc-symbol"
printf '%s\n' "$kver" >"$tmp/kver"
rm -rf --one-file-system "$build"

touch "$tmp/.complete"
rm -rf "$out"
mv "$tmp" "$out"
for old in "$cache"/modules-"$(cat "$root/suite")"-*; do
    [ "$old" = "$out" ] || [ ! -d "$old" ] || rm -rf "$old"
done
log "modules: built in $((SECONDS - t0)) s → $out"
printf '%s\n' "$out" >&3
