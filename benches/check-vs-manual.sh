#!/usr/bin/env bash
# Times `nfs-gds check` against the manual procedure of the source article on the same node
# tree, for a real-sized (~800 KB) rpcrdma module stored plain, as .ko.zst and as .ko.xz:
#
#   grep rpcrdma <root>/proc/modules
#   modinfo -b <root> -k <release> rpcrdma | grep -i nvfs
#   readelf -Ws <module> | grep nvfs_dma      (after `xz -dc`/`zstd -dc` to a temporary file:
#                                               readelf cannot read compressed modules)
#
# nfs-gds runs cold (NFS_GDS_NO_CACHE=1) and warm (module facts cache filled; needs root), and
# for .ko.xz a lone `xz -dc` of the same file is timed as the floor a decompressing check cannot
# beat. Prints the ratio of medians for each, and the peak RSS of each nfs-gds run.
#
# Usage: benches/check-vs-manual.sh [RUNS]   (release build; needs hyperfine, kmod, binutils,
# xz-utils, zstd and GNU time: apt-get install hyperfine kmod binutils xz-utils zstd time)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-50}

for tool in hyperfine depmod modinfo readelf xz zstd /usr/bin/time awk; do
    command -v "$tool" >/dev/null || {
        echo "check-vs-manual: $tool is missing (apt-get install hyperfine kmod binutils xz-utils zstd time)" >&2
        exit 2
    }
done

cargo build --release --quiet --bin nfs-gds --example gen-module
bin=$PWD/target/release/nfs-gds
gen=$PWD/target/release/examples/gen-module
release=6.8.0-45-generic
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One node tree per packing: nvidia_fs and rpcrdma loaded, the DKMS module with GPL hooks.
make_root() { # packing suffix
    local root=$work/$1 rel_mod=updates/dkms/rpcrdma$2
    local tree=$root/lib/modules/$release
    mkdir -p "$root/proc/sys/kernel" "$root/sys/module/nvidia_fs" "$root/sys/module/rpcrdma/notes" \
        "$root/dev" "$tree/updates/dkms"
    echo "$release" >"$root/proc/sys/kernel/osrelease"
    echo "Linux version $release (buildd@example) #50-Ubuntu SMP PREEMPT_DYNAMIC" >"$root/proc/version"
    printf 'rpcrdma 430080 0 - Live 0x0000000000000000\nnvidia_fs 270336 0 - Live 0x0000000000000000 (OE)\n' \
        >"$root/proc/modules"
    printf '0000000000000000 t rpcrdma_register_nvfs_dma_ops\t[rpcrdma]\n0000000000000000 t rpcrdma_unregister_nvfs_dma_ops\t[rpcrdma]\n' \
        >"$root/proc/kallsyms"
    echo 2.28.4 >"$root/sys/module/nvidia_fs/version"
    : >"$root/dev/nvidia-fs0"
    "$gen" "$work/rpcrdma.ko" --release "$release" --pad 819200 --srcversion 0A1B2C3D4E5F60718293A4B
    case $1 in
        plain) cp "$work/rpcrdma.ko" "$tree/$rel_mod" ;;
        zst) zstd -q -T0 -c "$work/rpcrdma.ko" >"$tree/$rel_mod" ;;
        xz) xz --check=crc32 --lzma2=dict=1MiB -c "$work/rpcrdma.ko" >"$tree/$rel_mod" ;;
    esac
    echo 0A1B2C3D4E5F60718293A4B >"$root/sys/module/rpcrdma/srcversion"
    printf '%s:\n' "$rel_mod" >"$tree/modules.dep"
    : >"$tree/modules.order"
    : >"$tree/modules.builtin"
    : >"$tree/modules.builtin.modinfo"
    depmod -b "$root" "$release" # the binary indexes modinfo reads
    echo "$tree/$rel_mod"
}

median_of() { # csv-file command-label -> median seconds
    awk -F, -v c="$2" 'NR > 1 && $1 == c { print $4 }' "$1"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
ms() { awk -v s="$1" 'BEGIN { printf "%.2f ms", s * 1000 }'; }
rss() { # peak RSS in KB of one run
    /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1
}

printf '%-6s %-22s %10s %10s %8s\n' packing run median manual speedup
for packing in plain zst xz; do
    case $packing in plain) suffix=.ko ;; zst) suffix=.ko.zst ;; xz) suffix=.ko.xz ;; esac
    module=$(make_root $packing $suffix 2>/dev/null | tail -1)
    root=$work/$packing
    case $packing in
        plain) elf=$module; unpack=: ;;
        zst) elf=$work/unpacked.ko; unpack="zstd -q -d -f -o $elf $module" ;;
        xz) elf=$work/unpacked.ko; unpack="xz -dc $module > $elf" ;;
    esac
    manual="grep rpcrdma $root/proc/modules; modinfo -b $root -k $release rpcrdma | grep -i nvfs; $unpack; readelf -Ws $elf | grep nvfs_dma"
    check="$bin --root $root check"
    "$bin" --root "$root" check >/dev/null # fills the cache (as root)
    # The manual procedure is typed into a shell: hyperfine subtracts the shell's own start-up.
    # nfs-gds and xz are measured without a shell (-N).
    hyperfine --style none --warmup 5 --runs "$runs" -i --export-csv "$work/manual.csv" \
        -n manual "$manual" >/dev/null 2>&1
    NFS_GDS_NO_CACHE=1 hyperfine -N --style none --warmup 5 --runs "$runs" -i \
        --export-csv "$work/cold.csv" -n cold "$check" >/dev/null 2>&1
    hyperfine -N --style none --warmup 5 --runs "$runs" -i --export-csv "$work/warm.csv" \
        -n warm "$check" >/dev/null 2>&1
    m_manual=$(median_of "$work/manual.csv" manual)
    for run in cold warm; do
        m=$(median_of "$work/$run.csv" $run)
        printf '%-6s %-22s %10s %10s %7sx\n' $packing "nfs-gds check ($run)" "$(ms "$m")" "$(ms "$m_manual")" "$(ratio "$m_manual" "$m")"
    done
    if [ $packing = xz ]; then
        hyperfine -N --style none --warmup 5 --runs "$runs" --export-csv "$work/xz.csv" \
            -n xz-dc "xz -dc $module" >/dev/null 2>&1
        m_xz=$(median_of "$work/xz.csv" xz-dc)
        m_cold=$(median_of "$work/cold.csv" cold)
        printf '%-6s %-22s %10s   cold / xz-dc = %s (target <= 1.3)\n' xz "xz -dc alone" "$(ms "$m_xz")" "$(ratio "$m_cold" "$m_xz")"
    fi
    printf '%-6s peak RSS: cold %s KB, warm %s KB\n' $packing \
        "$(rss env NFS_GDS_NO_CACHE=1 "$bin" --root "$root" check)" "$(rss "$bin" --root "$root" check)"
done
