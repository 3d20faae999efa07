#!/usr/bin/env bash
# `nfs-gds check` of this tree against the same command built from BASE (a git revision),
# side by side in one run, on the real node trees of benches/real-node.sh (one Debian 12 kernel
# package, its whole module tree recompressed as shipped for each packing, its /boot/config and
# image, a real-sized kallsyms; rpcrdma not loaded and loaded). For each tree: the instruction
# count of a cold check (NFS_GDS_NO_CACHE=1) and of a warm one (each side's own facts cache,
# filled first) of each side, from callgrind, which the machine's noise does not move; the CPU
# time of the four commands in one interleaved hyperfine run; and whether both sides' `check
# --json` give the same verdict and the same status for every check both have, so a speed-up
# that changed an answer is caught (the script then names each check whose status differs, base
# → head, and exits 1; a check added since BASE is named, not counted as a change); and, where
# strace is installed, the system calls of one warm check of each side (strace -f -c: every call
# the process and its threads made).
# Every tree is measured without and with the kernel's headers package (its Module.symvers and
# the `build` link; rows "+ headers").
#
# Usage: benches/real-node-base.sh BASE [RUNS]   (RUNS per command, default 15)
# KERNELS="linux-image-6.1.0-N-amd64" picks the kernel (default: the newest of the apt
# sources); the trees are cached as benches/real-node.sh caches them. Needs what it needs, plus
# git and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
base_rev=${1:?usage: benches/real-node-base.sh BASE [RUNS]}
runs=${2:-15}

# shellcheck source=lib/valgrind.sh
. benches/lib/valgrind.sh
for tool in hyperfine "$valgrind" depmod readelf objcopy nm xz zstd apt-get apt-cache dpkg-deb git python3; do
    command -v "$tool" >/dev/null || {
        echo "real-node-base: $tool is missing (apt-get install hyperfine valgrind kmod binutils xz-utils zstd git python3)" >&2
        exit 2
    }
done

check_valgrind real-node-base
cache=${NFS_GDS_BENCH_CACHE:-$HOME/.cache/nfs-gds-bench}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$cache"
cargo build --release --quiet --example gen-module
# shellcheck disable=SC2034 # used by lib/real-trees.sh
gen=$PWD/target/release/examples/gen-module
# shellcheck source=lib/two-builds.sh
. benches/lib/two-builds.sh
build_base_and_head real-node-base
# shellcheck source=lib/real-trees.sh
. benches/lib/real-trees.sh
# shellcheck source=lib/node.sh
. benches/lib/node.sh

release=$(fetch_kernel "$(pick_kernels | head -n 1)")
real_kallsyms
echo "kernel $release (Debian $(cat "$cache/$release/pkg/deb-version")); kallsyms: $(cat "$cache/kallsyms.source")"
echo "base $base_rev against this tree; instructions in millions (callgrind), CPU in ms (hyperfine mean, user + system)"
echo
echo "| tree | cold, base | cold, head | fewer | warm, base | warm, head | fewer | CPU cold base / head | CPU warm base / head | syscalls warm base / head | answers |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"

# The instructions one run of COMMAND... executes, in millions.
instructions() {
    "$valgrind" --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
        awk '/Collected/ { gsub(",", "", $4); printf "%.1f\n", $4 / 1e6 }'
}

# The system calls one run of COMMAND... makes ("-" without strace).
syscalls() {
    command -v strace >/dev/null || { echo -; return; }
    strace -f -c -o "$work/strace.txt" "$@" >/dev/null 2>&1 || true
    awk '$NF == "total" { print $4 }' "$work/strace.txt"
}

# Compares two `check --json` documents, base then head. Prints "same", or "same, head adds:
# ID…" when head has checks base had not (checks added since BASE are not a changed answer), or
# "DIFFERENT" and exits 1 when the verdict, or the status of a check both sides have, differs,
# or head lacks a check base had; each difference goes to stderr, "id: base → head" ("-" where
# a side has none), prefixed with $2.
compare_answers() {
    python3 -c 'import json, sys
base, head = (json.load(open(p)) for p in sys.argv[1:3])
b = {c["id"]: c["status"] for c in base["checks"]}
h = {c["id"]: c["status"] for c in head["checks"]}
changed = ["%s: %s → %s" % (i, b[i], h.get(i, "-")) for i in sorted(b) if b[i] != h.get(i)]
if base.get("verdict") != head.get("verdict"):
    changed.insert(0, "verdict: %s → %s" % (base.get("verdict"), head.get("verdict")))
added = sorted(set(h) - set(b))
for line in changed:
    print("%s: %s" % (sys.argv[3], line), file=sys.stderr)
if changed:
    print("DIFFERENT")
    sys.exit(1)
print("same, head adds: " + ", ".join(added) if added else "same")' "$1" "$2" "$3"
}

differ=0
fetch_headers "$release"
for packing in plain zst xz; do
    for state in cold loaded; do
        for headers in without with; do
            tag=$packing-$state-$headers label="$packing, $state"
            [ "$headers" = without ] || label="$label + headers"
            root=$work/$tag
            make_root "$root" "$packing" "$state" gpl "$release"
            declare -A cold=() warm=() calls=()
            for side in base head; do
                bin=$work/nfs-gds-$side
                export NFS_GDS_CACHE_DIR=$work/cache-$side-$tag
                "$bin" --root "$root" check --json >"$work/$side.json" 2>/dev/null || true
                cold[$side]=$(NFS_GDS_NO_CACHE=1 instructions "$bin" --root "$root" check)
                warm[$side]=$(instructions "$bin" --root "$root" check)
                calls[$side]=$(syscalls "$bin" --root "$root" check)
            done
            unset NFS_GDS_CACHE_DIR
            same=$(compare_answers "$work/base.json" "$work/head.json" "real-node-base: $label") || differ=1
            hyperfine -N -i -w 2 -r "$runs" --export-json "$work/h.json" \
                "env NFS_GDS_NO_CACHE=1 $work/nfs-gds-base --root $root check" \
                "env NFS_GDS_NO_CACHE=1 $work/nfs-gds-head --root $root check" \
                "env NFS_GDS_CACHE_DIR=$work/cache-base-$tag $work/nfs-gds-base --root $root check" \
                "env NFS_GDS_CACHE_DIR=$work/cache-head-$tag $work/nfs-gds-head --root $root check" \
                >/dev/null 2>&1
            read -r cb ch wb wh < <(python3 -c 'import json, sys
print(" ".join("%.1f" % ((r["user"] + r["system"]) * 1000) for r in json.load(open(sys.argv[1]))["results"]))' "$work/h.json")
            awk -v t="$label" -v cb="${cold[base]}" -v ch="${cold[head]}" -v wb="${warm[base]}" \
                -v wh="${warm[head]}" -v c="$cb / $ch" -v w="$wb / $wh" -v s="$same" \
                -v k="${calls[base]} / ${calls[head]}" 'BEGIN {
                printf "| %s | %s | %s | %.1f× | %s | %s | %.1f× | %s | %s | %s | %s |\n", t, cb, ch, cb / ch, wb, wh, wb / wh, c, w, k, s }'
        done
    done
done
if [ "$differ" = 1 ]; then
    echo "real-node-base: base and this tree gave different answers on the trees marked DIFFERENT" >&2
    exit 1
fi
