#!/usr/bin/env bash
# What reading every host file through the checked reader costs: `nfs-gds check` and
# `nfs-gds doctor` of this tree against the same commands built from BASE (a git revision from
# before the reader), side by side in one hyperfine run, on one node tree below --root (so every
# read goes through openat2 RESOLVE_IN_ROOT, fstat and the /proc/self/fd reopen): a 800 KB
# rpcrdma.ko.zst from DKMS, nvidia_fs loaded, 200 mounts in mountinfo and mountstats, a
# 100 000-line kallsyms. The module facts cache is off, so each run reads and parses everything.
#
# Usage: benches/reader-overhead.sh BASE [RUNS]   (release builds; needs hyperfine, zstd, git)
set -euo pipefail
cd "$(dirname "$0")/.."
base_rev=${1:?usage: benches/reader-overhead.sh BASE [RUNS]}
runs=${2:-30}

for tool in hyperfine zstd git awk; do
    command -v "$tool" >/dev/null || {
        echo "reader-overhead: $tool is missing (apt-get install hyperfine zstd git)" >&2
        exit 2
    }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# shellcheck source=lib/two-builds.sh
. benches/lib/two-builds.sh
build_base_and_head reader-overhead
head=$work/nfs-gds-head
cargo build --release --quiet --example gen-module
gen=$PWD/target/release/examples/gen-module

release=6.8.0-45-generic
root=$work/root
tree=$root/lib/modules/$release
mkdir -p "$root/proc/sys/kernel" "$root/proc/self" "$root/sys/module/nvidia_fs" \
    "$root/sys/module/rpcrdma/notes" "$root/dev" "$root/etc" "$tree/updates/dkms"
echo "$release" >"$root/proc/sys/kernel/osrelease"
echo "Linux version $release (buildd@example) #50-Ubuntu SMP PREEMPT_DYNAMIC" >"$root/proc/version"
printf 'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="24.04"\n' \
    >"$root/etc/os-release"
printf 'rpcrdma 430080 0 - Live 0x0000000000000000\nnvidia_fs 270336 0 - Live 0x0000000000000000 (OE)\n' \
    >"$root/proc/modules"
awk 'BEGIN { for (i = 0; i < 100000; i++) printf "ffffffff%08x t sym_%d\t[mod%d]\n", i, i, i % 50 }' \
    >"$root/proc/kallsyms"
printf '0000000000000000 t rpcrdma_register_nvfs_dma_ops\t[rpcrdma]\n0000000000000000 t rpcrdma_unregister_nvfs_dma_ops\t[rpcrdma]\n' \
    >>"$root/proc/kallsyms"
awk 'BEGIN {
    print "25 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw"
    for (i = 0; i < 200; i++)
        printf "%d 25 0:%d / /mnt/d%d rw,relatime shared:%d - nfs4 10.0.2.15:/e%d rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15\n", 40 + i, 50 + i, i, 2 + i, i
}' >"$root/proc/self/mountinfo"
awk 'BEGIN {
    for (i = 0; i < 200; i++) {
        printf "device 10.0.2.15:/e%d mounted on /mnt/d%d with fstype nfs4 statvers=1.1\n", i, i
        printf "\topts:\trw,vers=4.2,proto=rdma,port=20049\n\txprt:\trdma 0 0 1 0 0 1 1 0 1 0 0 0 0 0\n"
    }
}' >"$root/proc/self/mountstats"
echo 2.28.4 >"$root/sys/module/nvidia_fs/version"
: >"$root/dev/nvidia-fs0"
"$gen" "$work/rpcrdma.ko" --release "$release" --pad 819200 --srcversion 0A1B2C3D4E5F60718293A4B
zstd -q -c "$work/rpcrdma.ko" >"$tree/updates/dkms/rpcrdma.ko.zst"
echo 0A1B2C3D4E5F60718293A4B >"$root/sys/module/rpcrdma/srcversion"
printf 'updates/dkms/rpcrdma.ko.zst:\n' >"$tree/modules.dep"
: >"$tree/modules.builtin"

median_of() { # csv-file command-label -> median wall seconds
    awk -F, -v c="$2" 'NR > 1 && $1 == c { print $4 }' "$1"
}
cpu_of() { # csv-file command-label -> mean user + system seconds
    awk -F, -v c="$2" 'NR > 1 && $1 == c { print $5 + $6 }' "$1"
}
# Wall time moves with the machine's load; CPU time (user + system) much less.
printf '%-8s %12s %12s %7s %12s %12s %7s\n' command "base wall" "reader wall" ratio \
    "base cpu" "reader cpu" ratio
for cmd in check doctor; do
    NFS_GDS_NO_CACHE=1 hyperfine -N --style none --warmup 5 --runs "$runs" -i \
        --export-csv "$work/$cmd.csv" \
        -n base "$work/nfs-gds-base --root $root $cmd" \
        -n reader "$head --root $root $cmd" >/dev/null 2>&1
    awk -v c="$cmd" -v bw="$(median_of "$work/$cmd.csv" base)" \
        -v rw="$(median_of "$work/$cmd.csv" reader)" -v bc="$(cpu_of "$work/$cmd.csv" base)" \
        -v rc="$(cpu_of "$work/$cmd.csv" reader)" 'BEGIN {
            printf "%-8s %9.2f ms %9.2f ms %6.2fx %9.2f ms %9.2f ms %6.2fx\n",
                c, bw * 1000, rw * 1000, rw / bw, bc * 1000, rc * 1000, rc / bc
        }'
done
