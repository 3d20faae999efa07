#!/usr/bin/env bash
# Times `nfs-gds check` against the manual procedure of the source article on the same node
# tree, for a real-sized (~800 KB) rpcrdma module stored plain, as .ko.zst and as .ko.xz, in a
# module tree with a real index: the modules of a Debian 12 linux-image package (downloaded once
# with `apt-get download` into $NFS_GDS_BENCH_CACHE, default ~/.cache/nfs-gds-bench), the
# generated rpcrdma placed in updates/dkms/, and `depmod -b` run over it (4,000 modules.dep
# lines, 26,000 aliases, text and .bin):
#
#   grep rpcrdma <root>/proc/modules
#   modinfo -b <root> -k <release> rpcrdma | grep -i nvfs
#   readelf -Ws <module> | grep nvfs_dma      (after `xz -dc`/`zstd -dc` to a temporary file:
#                                               readelf cannot read compressed modules)
#
# nfs-gds runs cold (NFS_GDS_NO_CACHE=1) and warm (module facts cache filled; needs root), and
# is set against `nfs-gds --version` (the process floor) and, for .ko.xz, a lone `xz -dc` of the
# same file (the floor a decompressing check cannot beat), all in the same run. With
# NFS_GDS_BASELINE=<another nfs-gds binary> that binary's cold check is timed beside it (before
# and after a change). Prints medians, the ratios, and the peak RSS of each nfs-gds run.
#
# Usage: benches/check-vs-manual.sh [RUNS]   (release build; needs apt (a Debian 12 source),
# dpkg, hyperfine, kmod, binutils, xz-utils, zstd and GNU time:
# apt-get install hyperfine kmod binutils xz-utils zstd time)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-50}

for tool in hyperfine depmod modinfo readelf xz zstd /usr/bin/time awk apt-get apt-cache dpkg-deb; do
    command -v "$tool" >/dev/null || {
        echo "check-vs-manual: $tool is missing (apt-get install hyperfine kmod binutils xz-utils zstd time)" >&2
        exit 2
    }
done

cargo build --release --quiet --bin nfs-gds --example gen-module
bin=$PWD/target/release/nfs-gds
gen=$PWD/target/release/examples/gen-module
baseline=${NFS_GDS_BASELINE:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The real module tree, extracted once.
cache=${NFS_GDS_BENCH_CACHE:-$HOME/.cache/nfs-gds-bench}
mkdir -p "$cache"
if ! ls "$cache"/linux-image-*.deb >/dev/null 2>&1; then
    package=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' | sort -V | tail -1 | cut -d' ' -f1)
    [ -n "$package" ] || { echo "check-vs-manual: no Debian 12 linux-image package in the apt sources" >&2; exit 2; }
    (cd "$cache" && apt-get download -q "$package")
fi
deb=$(ls "$cache"/linux-image-*.deb | sort -V | tail -1)
if [ ! -d "$cache/extracted/lib/modules" ]; then
    rm -rf "$cache/extracted"
    dpkg-deb -x "$deb" "$cache/extracted"
fi
release=$(ls "$cache/extracted/lib/modules" | head -1)

# One node tree per packing: nvidia_fs and rpcrdma loaded, the DKMS module with GPL hooks, the
# distribution's modules beside it (hard links into the cache).
make_root() { # packing suffix
    local root=$work/$1 rel_mod=updates/dkms/rpcrdma$2
    local tree=$root/lib/modules/$release
    mkdir -p "$root/proc/sys/kernel" "$root/sys/module/nvidia_fs" "$root/sys/module/rpcrdma/notes" \
        "$root/dev" "$tree/updates/dkms"
    cp -al "$cache/extracted/lib/modules/$release/kernel" "$tree/kernel"
    cp "$cache/extracted/lib/modules/$release"/modules.{order,builtin,builtin.modinfo} "$tree/"
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
    depmod -b "$root" "$release" # the real index: text and the .bin files modprobe reads
    echo "$tree/$rel_mod"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
ms() { awk -v s="$1" 'BEGIN { printf "%.2f ms", s * 1000 }'; }
rss() { # peak RSS in KB of one run
    /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1
}

# Machines this runs on are often shared: the commands of one packing are timed in interleaved
# rounds (each round runs every command a few times), so load drifts hit them all alike; each
# figure is the median over rounds, of the wall-clock median and of the CPU time (user + system,
# which load disturbs far less than wall time).
rounds=$(( (runs + 4) / 5 ))
sample() { # label [env assignments…] -- command… ; appends one CSV row per round
    local label=$1 shell=-N
    shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    [ "$label" = manual ] && shell=
    env "${envs[@]}" hyperfine $shell --style none --warmup 1 --runs 5 -i --export-csv "$work/one.csv" \
        -n "$label" "$*" >/dev/null 2>&1
    tail -n +2 "$work/one.csv" >>"$work/all.csv"
}
median_col() { # label column(wall|cpu) -> median seconds over rounds
    awk -F, -v c="$1" -v k="$2" '$1 == c { print (k == "wall" ? $4 : $5 + $6) }' "$work/all.csv" |
        sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
row() { # packing title label [reference-label…]: wall and CPU medians, ratios to the references
    local packing=$1 title=$2 label=$3
    shift 3
    local w c line
    w=$(median_col "$label" wall) c=$(median_col "$label" cpu)
    line=$(printf '%-6s %-24s %9s %9s' "$packing" "$title" "$(ms "$w")" "$(ms "$c")")
    for ref in "$@"; do
        line+=$(printf '  /%s %s (cpu %s)' "$ref" "$(ratio "$w" "$(median_col "$ref" wall)")" \
            "$(ratio "$c" "$(median_col "$ref" cpu)")")
    done
    echo "$line"
}

"$bin" --version >/dev/null
printf '%-6s %-24s %9s %9s  %s\n' packing run wall cpu "ratios: wall (cpu)"
for packing in plain zst xz; do
    case $packing in plain) suffix=.ko ;; zst) suffix=.ko.zst ;; xz) suffix=.ko.xz ;; esac
    module=$(make_root $packing $suffix 2>/dev/null | tail -1)
    root=$work/$packing
    [ $packing = plain ] && printf 'module tree: %s, %s modules.dep lines, %s modules.alias lines, with .bin indexes\n' \
        "$release" "$(wc -l <"$root/lib/modules/$release/modules.dep")" \
        "$(wc -l <"$root/lib/modules/$release/modules.alias")"
    case $packing in
        plain) elf=$module; unpack=: ;;
        zst) elf=$work/unpacked.ko; unpack="zstd -q -d -f -o $elf $module" ;;
        xz) elf=$work/unpacked.ko; unpack="xz -dc $module > $elf" ;;
    esac
    manual="grep rpcrdma $root/proc/modules; modinfo -b $root -k $release rpcrdma | grep -i nvfs; $unpack; readelf -Ws $elf | grep nvfs_dma"
    "$bin" --root "$root" check >/dev/null # fills the cache (as root)
    : >"$work/all.csv"
    for _ in $(seq "$rounds"); do
        # The manual procedure is typed into a shell: hyperfine subtracts the shell's start-up.
        sample manual -- "$manual"
        sample version -- "$bin" --version
        sample cold NFS_GDS_NO_CACHE=1 -- "$bin" --root "$root" check
        sample warm -- "$bin" --root "$root" check
        [ -n "$baseline" ] && sample baseline NFS_GDS_NO_CACHE=1 -- "$baseline" --root "$root" check
        [ $packing = xz ] && sample xz-dc -- xz -dc "$module"
    done
    row $packing "nfs-gds --version" version
    row $packing "manual procedure" manual
    floor=version
    [ $packing = xz ] && { row xz "xz -dc alone" xz-dc; floor=xz-dc; }
    row $packing "nfs-gds check (cold)" cold $floor manual
    row $packing "nfs-gds check (warm)" warm version manual
    [ -n "$baseline" ] && row $packing "baseline check (cold)" baseline $floor manual cold
    printf '%-6s peak RSS: cold %s KB, warm %s KB%s\n' $packing \
        "$(rss env NFS_GDS_NO_CACHE=1 "$bin" --root "$root" check)" "$(rss "$bin" --root "$root" check)" \
        "${baseline:+, baseline cold $(rss env NFS_GDS_NO_CACHE=1 "$baseline" --root "$root" check) KB}"
    rm -rf "$root"
done
