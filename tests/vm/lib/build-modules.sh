#!/usr/bin/env bash
# Build, or reuse from the cache, the test kernel modules against the guest kernel, with kbuild in
# a chroot of the guest root:
#   rpcrdma-gpl.ko    the kernel's own net/sunrpc/xprtrdma (from the guest's linux-source-X.Y) plus
#                     modules/rpcrdma-nvfs/nfs_gds_nvfs_hooks.c, hooks exported EXPORT_SYMBOL_GPL
#   rpcrdma-plain.ko  the same with plain EXPORT_SYMBOL
#   rpcrdma-badcrc.ko the GPL build with one ib_core import's CRC altered (an ABI mismatch), on
#                     a kernel with symbol CRCs; on one without (Debian's 7.x), the BTF variants:
#   rpcrdma-nobtf.ko          the GPL build without its .BTF/.BTF.base
#   rpcrdma-btf-split.ko      its BTF made again against this kernel's vmlinux, plain split BTF
#   rpcrdma-otherbtf.ko       its BTF made against another kernel's vmlinux (the suite's own
#                             kernel's), with a distilled base (.BTF.base), as kbuild makes it
#   rpcrdma-otherbtf-split.ko the same as plain split BTF
#                     (kbuild itself gives every build BTF from the headers' BTF-only vmlinux:
#                     Debian 13's headers ship one and its kbuild depends on pahole)
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
# Usage: build-modules.sh ROOT_CACHE_DIR [kernel2]   — prints the module cache directory on
# stdout. With "kernel2", the modules are built for the root's second kernel (ROOT/kernel2).
# The cache key covers the root (its own key), this script, the module sources and the
# nvidia-fs-dkms package.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
vmdir=$(dirname "$here")
# shellcheck source=common.sh
. "$here/common.sh"

# Only the resulting path goes to stdout (fd 3); everything else, ours and the tools', to stderr.
exec 3>&1 1>&2

root=${1:?usage: build-modules.sh ROOT_CACHE_DIR [kernel2]}
which=${2:-}
[ -f "$root/.complete" ] || die "no complete guest root at $root"
rootfs="$root/rootfs"
case $which in
    '') kdesc=$root prefix=modules other_kver= ;;
    kernel2)
        kdesc=$root/kernel2 prefix=modules2
        [ -f "$kdesc/kver" ] || die "the guest root $root has no second kernel"
        # "Another build" of the BTF variants: the suite's own kernel.
        other_kver=$(cat "$root/kver")
        ;;
    *) die "build-modules.sh: unknown kernel '$which' (kernel2 or nothing)" ;;
esac
kver=$(cat "$kdesc/kver")
linux_source=$(cat "$kdesc/linux-source")

nvfs_deb=$(bash "$here/fetch-nvidia-fs.sh" "$(cat "$root/suite")") || die "could not fetch nvidia-fs-dkms for $(cat "$root/suite")"
srcs=("$here/build-modules.sh" "$vmdir"/modules/*/* "$nvfs_deb")
key=$(hash_of "$(basename "$root")" "$kver" "${srcs[@]}")
cache=$(cache_dir)
out="$cache/$prefix-$(cat "$root/suite")-$key"

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
kver=$1 srcname=$2 other_kver=${3:-}
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
    make -C "$kdir" M="$PWD/$d" -j"$(nproc)" V=1 modules >"build-$variant.log" 2>&1 \
        || { tail -n 30 "build-$variant.log"; exit 1; }
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

# A kernel without symbol CRCs decides a load by vermagic and, with MODULE_ALLOW_BTF_MISMATCH
# off, by whether the module's BTF validates against its own. The variants are made by kbuild's
# own BTF step (relinking the GPL build's objects): against this kernel's vmlinux, and against
# another kernel's bind-mounted over it (this mount namespace is private: the cached root is not
# changed), each as kbuild makes it for an out-of-tree module (a distilled base, .BTF.base) and
# as plain split BTF (the flags that ask for the distilled base emptied: MODULE_PAHOLE_FLAGS up to
# 6.x, RESOLVE_BTFIDS_FLAGS from 7.x).
btf_variants() {
    local d=build-gpl/net/sunrpc/xprtrdma theirs=/lib/modules/$other_kver/build/vmlinux
    local mine; mine=$(readlink -f "$kdir")/vmlinux
    echo "== $kver carries no symbol CRCs: BTF variants of the GPL build"
    has_section .BTF out/rpcrdma-gpl.ko || { echo "kbuild gave the GPL build no .BTF (is pahole installed?)" >&2; exit 1; }
    [ -n "$other_kver" ] && [ -f "$theirs" ] || { echo "no other kernel's vmlinux ($theirs) for the BTF variants" >&2; exit 1; }
    relink() { # NAME other|this distilled|split
        local split_flags=()
        [ "$3" = distilled ] || split_flags=(MODULE_PAHOLE_FLAGS= RESOLVE_BTFIDS_FLAGS=)
        [ "$2" = this ] || mount --bind "$theirs" "$mine"
        rm -f "$d/rpcrdma.ko"
        make -C "$kdir" M="$PWD/$d" V=1 "${split_flags[@]}" modules >"build-$1.log" 2>&1 || { tail -n 30 "build-$1.log"; exit 1; }
        [ "$2" = this ] || umount "$mine"
        cp "$d/rpcrdma.ko" "out/$1.ko"
        has_section .BTF "out/$1.ko" || { echo "$1: no .BTF" >&2; exit 1; }
        if has_section .BTF.base "out/$1.ko"; then
            [ "$3" = distilled ] || { echo "$1: a .BTF.base though none was asked for" >&2; exit 1; }
        else
            [ "$3" = split ] || { echo "$1: kbuild made no .BTF.base" >&2; exit 1; }
        fi
        echo "$1: BTF against $([ "$2" = this ] && echo "$kver's" || echo "$other_kver's") vmlinux ($3)"
        printf '%s %s %s\n' "$1" "$([ "$2" = this ] && echo "$kver" || echo "$other_kver")" "$3" >>out/btf-variants
    }
    has_section .BTF.base out/rpcrdma-gpl.ko && echo "rpcrdma-gpl: kbuild gave it a distilled base" \
        || echo "rpcrdma-gpl: kbuild gave it plain split BTF"
    objcopy --remove-section=.BTF --remove-section=.BTF.base out/rpcrdma-gpl.ko out/rpcrdma-nobtf.ko
    printf 'rpcrdma-nobtf none none\n' >out/btf-variants
    relink rpcrdma-btf-split this split
    relink rpcrdma-otherbtf other distilled
    relink rpcrdma-otherbtf-split other split
    strip --strip-debug out/rpcrdma-*.ko
}

# Distro modules ship without DWARF; so do these (symbols and the build-id note stay).
strip --strip-debug out/*.ko

has_section() { readelf -W -S "$2" | sed 's/^ *\[ *[0-9]*\]//' | awk -v n="$1" '$1 == n { f=1 } END { exit !f }'; }
if has_section __versions out/rpcrdma-gpl.ko; then
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

else
    btf_variants
fi

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
        rootfs=$1 build_rel=$2 kver=$3 srcname=$4 other_kver=$5
        mount -t proc proc "$rootfs/proc"
        mount --rbind /dev "$rootfs/dev"
        chroot "$rootfs" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C HOME=/root \
            bash "/$build_rel/build.sh" "$kver" "$srcname" "$other_kver"
    ' sh "$rootfs" "$build_rel" "$kver" "$linux_source" "$other_kver" >"$tmp/build.log" 2>&1; then
    tail -n 40 "$tmp/build.log" >&2
    die "module build failed; full log: $tmp/build.log"
fi

suffix=$(cat "$build/out/suffix")
if [ -f "$build/out/badcrc-symbol" ]; then
    variants=(rpcrdma-badcrc)
    cp "$build/out/badcrc-symbol" "$tmp/badcrc-symbol"
else
    variants=(rpcrdma-nobtf rpcrdma-btf-split rpcrdma-otherbtf rpcrdma-otherbtf-split)
    cp "$build/out/btf-variants" "$tmp/"
fi
for m in rpcrdma-gpl rpcrdma-plain "${variants[@]}" nvidia_fs nvidia_p2p_stub; do
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
printf '%s\n' "$kver" >"$tmp/kver"
rm -rf --one-file-system "$build"

touch "$tmp/.complete"
rm -rf "$out"
mv "$tmp" "$out"
for old in "$cache/$prefix-$(cat "$root/suite")"-*; do
    [ "$old" = "$out" ] || [ ! -d "$old" ] || rm -rf "$old"
done
log "modules: built in $((SECONDS - t0)) s → $out"
printf '%s\n' "$out" >&3
