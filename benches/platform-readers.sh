#!/usr/bin/env bash
# What the platform readers (PCI bus, IOMMU groups, nvidia-fs topology, cufile.json lint,
# container evidence) add to `nfs-gds check` and `nfs-gds doctor`: this tree against the same
# commands built from BASE (a revision from before them), side by side in one hyperfine run, on
# one node tree below --root laid out like an 8-GPU server: 8 NVIDIA GPUs (each with its audio
# function) and 8 ConnectX NICs with IOMMU groups, 300 other PCI functions, nvidia-fs's bridges
# and peer_distance (64 rows), a shipped-size cufile.json, a fib_trie of 20 addresses, and the
# kernel's /proc/bus/pci/devices.
#
# Usage: benches/platform-readers.sh BASE [RUNS]   (release builds; needs hyperfine and git)
set -euo pipefail
cd "$(dirname "$0")/.."
base_rev=${1:?usage: benches/platform-readers.sh BASE [RUNS]}
runs=${2:-30}

for tool in hyperfine git awk; do
    command -v "$tool" >/dev/null || {
        echo "platform-readers: $tool is missing (apt-get install hyperfine git)" >&2
        exit 2
    }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# shellcheck source=lib/two-builds.sh
. benches/lib/two-builds.sh
build_base_and_head platform-readers
head=$work/nfs-gds-head

release=6.8.0-45-generic
root=$work/root
tree=$root/lib/modules/$release
mkdir -p "$root/proc/sys/kernel" "$root/proc/self" "$root/proc/net" "$root/proc/1" \
    "$root/sys/module/nvidia_fs" "$root/sys/module/nvidia" "$root/proc/driver/nvidia" \
    "$root/proc/driver/nvidia-fs" "$root/dev" "$root/etc" "$tree"
echo "$release" >"$root/proc/sys/kernel/osrelease"
echo "Linux version $release (buildd@example) #50-Ubuntu SMP PREEMPT_DYNAMIC" >"$root/proc/version"
printf 'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="24.04"\n' \
    >"$root/etc/os-release"
printf 'nvidia_fs 270336 0 - Live 0x0000000000000000 (OE)\nnvidia 1 0 - Live 0x0 (OE)\n' \
    >"$root/proc/modules"
printf 'kernel/net/sunrpc/sunrpc.ko:\n' >"$tree/modules.dep"
: >"$tree/modules.builtin"
: >"$root/proc/kallsyms"
echo "1 0 254:0 / / rw - ext4 /dev/vda rw" >"$root/proc/self/mountinfo"
echo 2.28.4 >"$root/sys/module/nvidia_fs/version"
: >"$root/dev/nvidia-fs0"
echo 570.86.15 >"$root/sys/module/nvidia/version"
echo "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build" \
    >"$root/proc/driver/nvidia/version"
echo "BOOT_IMAGE=/vmlinuz-$release ro intel_iommu=on iommu=pt" >"$root/proc/cmdline"
echo "0::/init.scope" >"$root/proc/1/cgroup"

dev() { # address vendor class
    local d=$root/sys/bus/pci/devices/$1
    mkdir -p "$d/iommu_group"
    echo "$2" >"$d/vendor"
    echo "$3" >"$d/class"
    echo identity >"$d/iommu_group/type"
}
for i in $(seq 0 7); do
    bus=$(printf '%02x' $((0x18 + i * 0x10)))
    dev "0000:$bus:00.0" 0x10de 0x030200
    dev "0000:$bus:00.1" 0x10de 0x040300
    nic=$(printf '%02x' $((0x19 + i * 0x10)))
    dev "0000:$nic:00.0" 0x15b3 0x020700
    mkdir -p "$root/sys/class/infiniband/mlx5_$i/device"
    printf 'DRIVER=mlx5_core\nPCI_SLOT_NAME=0000:%s:00.0\n' "$nic" \
        >"$root/sys/class/infiniband/mlx5_$i/device/uevent"
done
for i in $(seq 0 299); do
    dev "$(printf '0001:%02x:%02x.%d' $((i / 32)) $((i % 32)) 0)" 0x8086 0x060400
done
# /proc/bus/pci/devices as the kernel writes it: BBDF, then vendor and device.
mkdir -p "$root/proc/bus/pci"
for d in "$root"/sys/bus/pci/devices/*; do
    addr=${d##*/}
    bus=${addr:5:2} slot=${addr:8:2} func=${addr:11:1}
    printf '%s%02x\t%s0000\t0\n' "$bus" $(((0x$slot << 3) | func)) "$(sed 's/^0x//' "$d/vendor")"
done >"$root/proc/bus/pci/devices"
printf '0000:17:00.0\n0000:27:00.0\n' >"$root/proc/driver/nvidia-fs/bridges"
{
    printf 'gpu\t\tpeer\t\tpeerrank\tp2pdist\tlink\tgen\tnuma\tnp2p\tclass\n'
    for g in $(seq 0 7); do
        for p in $(seq 0 7); do
            printf '0000:%02x:00.0 \t0000:%02x:00.0 \t0x00000000\t0x%04x\t0x10\t0x04\t0x00\t0\tnetwork\n' \
                $((0x18 + g * 0x10)) $((0x19 + p * 0x10)) $((g == p ? 3 : 0x81))
        done
    done
} >"$root/proc/driver/nvidia-fs/peer_distance"
{
    echo 'Local:'
    for i in $(seq 1 20); do printf '     |-- 10.0.%d.5\n        /32 host LOCAL\n' "$i"; done
} >"$root/proc/net/fib_trie"
awk 'BEGIN {
    print "{\n  // as shipped\n  \"logging\": { \"level\": \"ERROR\" },\n  \"properties\": {"
    print "    \"max_direct_io_size_kb\": 16384, \"allow_compat_mode\": false,"
    print "    \"rdma_dev_addr_list\": [\"10.0.1.5\", \"10.0.2.5\"]\n  },"
    print "  \"fs\": { \"nfs\": { \"mount_table\": {"
    for (i = 0; i < 50; i++) printf "    \"/mnt/d%d\": { \"rdma_dev_addr_list\": [\"10.0.1.5\"] }%s\n", i, i < 49 ? "," : ""
    print "  } } }\n}"
}' >"$root/etc/cufile.json"

median_of() { awk -F, -v c="$2" 'NR > 1 && $1 == c { print $4 }' "$1"; }
cpu_of() { awk -F, -v c="$2" 'NR > 1 && $1 == c { print $5 + $6 }' "$1"; }
printf '%-8s %12s %12s %7s %12s %12s %7s\n' command "base wall" "head wall" ratio \
    "base cpu" "head cpu" ratio
for cmd in check doctor; do
    hyperfine -N --style none --warmup 5 --runs "$runs" -i \
        --export-csv "$work/$cmd.csv" \
        -n base "$work/nfs-gds-base --root $root $cmd" \
        -n head "$head --root $root $cmd" >/dev/null 2>&1
    awk -v c="$cmd" -v bw="$(median_of "$work/$cmd.csv" base)" \
        -v rw="$(median_of "$work/$cmd.csv" head)" -v bc="$(cpu_of "$work/$cmd.csv" base)" \
        -v rc="$(cpu_of "$work/$cmd.csv" head)" 'BEGIN {
            printf "%-8s %9.2f ms %9.2f ms %6.2fx %9.2f ms %9.2f ms %6.2fx\n",
                c, bw * 1000, rw * 1000, rw / bw, bc * 1000, rc * 1000, rc / bc
        }'
done
"$head" --root "$root" check | head -1
