#!/usr/bin/env bash
# Times the host readers behind the all-kernels and next-boot questions on a node tree with
# three installed kernels, each with a module index of real Debian size (4,022 modules.dep
# lines, 26,184 modules.alias lines), a GRUB menu, a DKMS tree and modprobe.d files:
#
#   nfs-gds --version                       the process floor
#   boot-facts --root R --running-only      every reader, for the running kernel only
#   boot-facts --root R                     every reader, for all three kernels
#
# Prints the ratio of medians (all kernels / running only, and each / the floor) and the peak
# RSS of the all-kernels run. The index is synthetic (same line counts and shapes as Debian
# 12's linux-image-amd64), since the real one is not shipped with the source.
#
# Usage: benches/all-kernels.sh [RUNS]   (needs hyperfine and GNU time)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-50}

for tool in hyperfine /usr/bin/time awk; do
    command -v "$tool" >/dev/null || {
        echo "all-kernels: $tool is missing (apt-get install hyperfine time)" >&2
        exit 2
    }
done

cargo build --release --quiet --bin nfs-gds --example boot-facts
bin=$PWD/target/release/nfs-gds
facts=$PWD/target/release/examples/boot-facts
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
releases=(6.1.0-50-amd64 6.1.0-52-amd64 6.12.117+deb13-amd64)

mkdir -p "$root/proc/sys/kernel" "$root/boot/grub" "$root/etc/modprobe.d" "$root/usr/lib/modprobe.d"
echo "${releases[0]}" >"$root/proc/sys/kernel/osrelease"
echo "Linux version ${releases[0]} (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC Debian 6.1.176-1 (2026-05-02)" >"$root/proc/version"
echo "BOOT_IMAGE=/boot/vmlinuz-${releases[0]} root=UUID=1b2c ro quiet" >"$root/proc/cmdline"
echo "blacklist rpcrdma" >"$root/etc/modprobe.d/50-rdma.conf"
printf 'options rpcrdma max_requests=64\nsoftdep rpcrdma pre: ib_core\n' >"$root/usr/lib/modprobe.d/60-nfs.conf"

for rel in "${releases[@]}"; do
    tree=$root/lib/modules/$rel
    mkdir -p "$tree/kernel/net/sunrpc/xprtrdma"
    : >"$root/boot/vmlinuz-$rel"
    printf 'CONFIG_MODULE_SIG=y\n# CONFIG_MODULE_SIG_FORCE is not set\nCONFIG_LOCK_DOWN_IN_EFI_SECURE_BOOT=y\n' >"$root/boot/config-$rel"
    : >"$tree/kernel/net/sunrpc/xprtrdma/rpcrdma.ko"
    awk 'BEGIN {
        for (i = 0; i < 4021; i++) printf "kernel/drivers/misc/m%04d.ko: kernel/drivers/base/b%04d.ko\n", i, i % 97
        print "kernel/net/sunrpc/xprtrdma/rpcrdma.ko: kernel/drivers/infiniband/core/rdma_cm.ko kernel/drivers/infiniband/core/ib_core.ko kernel/net/sunrpc/sunrpc.ko"
    }' >"$tree/modules.dep"
    awk 'BEGIN {
        print "# Aliases extracted from modules themselves."
        for (i = 0; i < 26181; i++) printf "alias pci:v%08Xd*sv*sd*bc*sc*i* m%04d\n", i, i % 4021
        print "alias xprtrdma rpcrdma"; print "alias rpcrdma6 rpcrdma"; print "alias svcrdma rpcrdma"
    }' >"$tree/modules.alias"
    printf 'kernel/fs/ext4/ext4.ko\n' >"$tree/modules.builtin"
done
mkdir -p "$root/var/lib/dkms/mlnx-nfsrdma/24.10/${releases[0]}/x86_64/module"
ln -s "24.10/${releases[0]}/x86_64" "$root/var/lib/dkms/mlnx-nfsrdma/kernel-${releases[0]}-x86_64"
{
    echo 'set default="${saved_entry}"'
    for rel in "${releases[@]}"; do
        printf "menuentry 'Debian GNU/Linux, with Linux %s' \$menuentry_id_option 'gnulinux-%s-advanced-1b2c' {\n\tlinux\t/boot/vmlinuz-%s root=UUID=1b2c ro quiet\n}\n" "$rel" "$rel" "$rel"
    done
} >"$root/boot/grub/grub.cfg"
printf '# GRUB Environment Block\nsaved_entry=gnulinux-%s-advanced-1b2c\n' "${releases[2]}" >"$root/boot/grub/grubenv"

"$facts" --root "$root" >/dev/null # fails loudly if the tree is unreadable
json=$work/hyperfine.json
hyperfine --warmup 5 --runs "$runs" -N --export-json "$json" \
    -n version "$bin --version" \
    -n running-only "$facts --root $root --running-only" \
    -n all-kernels "$facts --root $root"

median() { awk -v n="$1" 'BEGIN { RS = "\"command\"" } $0 ~ "\"" n "\"" { match($0, /"median": *[0-9.e-]+/); s = substr($0, RSTART, RLENGTH); sub(/.*: */, "", s); print s }' "$json"; }
v=$(median version); one=$(median running-only); all=$(median all-kernels)
awk -v v="$v" -v one="$one" -v all="$all" 'BEGIN {
    printf "median ms: --version %.2f, running only %.2f, all three kernels %.2f\n", v * 1000, one * 1000, all * 1000
    printf "all kernels / running only: %.2fx (target <= 3x)\n", all / one
    printf "running only / --version: %.2fx; all kernels / --version: %.2fx\n", one / v, all / v
}'
rss=$(/usr/bin/time -f %M "$facts" --root "$root" 2>&1 >/dev/null | tail -1)
echo "peak RSS, all kernels: ${rss} KB"
