#!/usr/bin/env bash
# Build, or reuse from the cache, the test kernel modules against the guest kernel, with kbuild in
# a chroot of the guest root:
#   rpcrdma-gpl.ko    the kernel's own net/sunrpc/xprtrdma (from the guest's linux-source-X.Y) plus
#                     modules/rpcrdma-nvfs/nfs_gds_nvfs_hooks.c, hooks exported EXPORT_SYMBOL_GPL
#   rpcrdma-plain.ko  the same with plain EXPORT_SYMBOL
#   rpcrdma-badcrc.ko the GPL build with one ib_core import's CRC altered (an ABI mismatch)
#   nvidia_fs.ko      the stand-in in modules/nvidia_fs
#   nvidia-fs.ko      NVIDIA's own nvidia-fs, from the suite's non-free nvidia-fs-dkms package
#                     (lib/fetch-nvidia-fs.sh), built as its dkms.conf builds it, over
#   nvidia_p2p_stub.ko  modules/nvidia-p2p: the nvidia_p2p_* entry points it needs, without a GPU
# A release of nvidia-fs that does not build for the guest kernel does not stop the others: the
# reason goes to "nvidia-fs.failed", and its log is kept as nvidia-fs.build.log either way.
# Both rpcrdma builds are named "rpcrdma" inside (modinfo name), as a distro or DKMS build is.
# Each is stored the way the guest's distribution ships its modules: plain .ko on Debian 12,
# .ko.xz on Debian 13 (xz with a CRC32 check, as kbuild's modules_install compresses them);
# the file "suffix" says which.
#
# Usage: build-modules.sh ROOT_CACHE_DIR   — prints the module cache directory on stdout.
# The cache key covers the root (its own key), this script, the module sources and the
# nvidia-fs-dkms package.
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

nvfs_deb=$(bash "$here/fetch-nvidia-fs.sh" "$(cat "$root/suite")") || die "could not fetch nvidia-fs-dkms for $(cat "$root/suite")"
srcs=("$here/build-modules.sh" "$vmdir"/modules/*/* "$nvfs_deb")
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
cp -r "$vmdir/modules/rpcrdma-nvfs" "$vmdir/modules/nvidia_fs" "$vmdir/modules/nvidia-p2p" "$build/"
dpkg-deb -x "$nvfs_deb" "$build/nvidia-fs-pkg"
dpkg-deb --field "$nvfs_deb" Version >"$build/nvidia-fs-pkg/package-version"

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

echo "== nvidia_p2p provider"
make -s -C "$kdir" M="$PWD/nvidia-p2p" modules
cp nvidia-p2p/nvidia_p2p_stub.ko out/nvidia_p2p_stub.ko

# NVIDIA's nvidia-fs as dkms.conf builds it ('make KVER=… IGNORE_CC_MISMATCH=1': its configure,
# then kbuild), with two differences that stand in for the NVIDIA driver: NVIDIA_SRC_DIR names
# the provider's nv-p2p.h, and the provider's Module.symvers gives the nvidia_p2p_* CRCs that
# the nv_symbols step would scrape from an installed nvidia.ko (skipped with -o).
nvsrc=$(echo nvidia-fs-pkg/usr/src/nvidia-fs-*) p2p=$PWD/nvidia-p2p
echo "== NVIDIA nvidia-fs $(cat nvidia-fs-pkg/package-version) from $nvsrc (log: nvidia-fs.build.log)"
cp nvidia-fs-pkg/package-version out/nvidia-fs.package-version
if (cd "$nvsrc" && make KVER="$kver" IGNORE_CC_MISMATCH=1 NVIDIA_SRC_DIR="$p2p" \
        KBUILD_EXTRA_SYMBOLS="$p2p/Module.symvers" -o nv_symbols) >out/nvidia-fs.build.log 2>&1 \
    && [ -f "$nvsrc/nvidia-fs.ko" ]; then
    cp "$nvsrc/nvidia-fs.ko" out/nvidia-fs.ko
    echo "nvidia-fs.ko: $(modinfo -F name out/nvidia-fs.ko) $(modinfo -F version out/nvidia-fs.ko) depends=$(modinfo -F depends out/nvidia-fs.ko)"
else
    echo "nvidia-fs $(cat nvidia-fs-pkg/package-version) did not build for $kver: $(grep -m1 -E 'error|Error' out/nvidia-fs.build.log || tail -n 1 out/nvidia-fs.build.log)" | tee out/nvidia-fs.failed
    tail -n 30 out/nvidia-fs.build.log
fi

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

log "modules: building rpcrdma (gpl, plain), the nvidia_fs stand-in, NVIDIA's nvidia-fs and its p2p provider against $kver in a chroot"
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
for m in rpcrdma-gpl rpcrdma-plain rpcrdma-badcrc nvidia_fs nvidia_p2p_stub; do
    [ -s "$build/out/$m$suffix" ] || die "module build produced no $m$suffix (log: $tmp/build.log)"
    cp "$build/out/$m$suffix" "$tmp/$m$suffix"
done
# NVIDIA's nvidia-fs: the module, or why there is none; its build log and version either way.
cp "$build/out/nvidia-fs.build.log" "$build/out/nvidia-fs.package-version" "$tmp/"
if [ -s "$build/out/nvidia-fs$suffix" ]; then
    cp "$build/out/nvidia-fs$suffix" "$tmp/"
else
    cp "$build/out/nvidia-fs.failed" "$tmp/" 2>/dev/null || echo "nvidia-fs: no module and no reason (see build.log)" >"$tmp/nvidia-fs.failed"
    warn "modules: $(cat "$tmp/nvidia-fs.failed") — log: $out/nvidia-fs.build.log"
fi
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
