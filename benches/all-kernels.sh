#!/usr/bin/env bash
# Times the host readers behind the all-kernels and next-boot questions on a node tree with
# three installed kernels, each with a module index of real Debian size (4,022 modules.dep
# lines, 26,184 modules.alias lines), a GRUB menu, a DKMS tree and modprobe.d files:
#
#   nfs-gds --version                       the process floor
#   boot-facts --root R --running-only      every reader, for the running kernel only
#   boot-facts --root R                     every reader, for all three kernels
#   nfs-gds check on the one-kernel tree    the same node with only the running kernel installed
#   nfs-gds check on the three-kernel tree  next-boot judges the newest kernel's own rpcrdma
#
# Each kernel has a generated ~800 KB rpcrdma stored as .ko.xz (the running one a DKMS build
# with the hooks, the others the inbox module without them); `check` is timed warm (module
# facts cache filled, as the agent and the helper run it; needs root) and cold.
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

cargo build --release --quiet --bin nfs-gds --example boot-facts --example gen-module
gen=$PWD/target/release/examples/gen-module
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
    if [ "$rel" = "${releases[0]}" ]; then
        mod=updates/dkms/rpcrdma.ko.xz hooks=gpl
    else
        mod=kernel/net/sunrpc/xprtrdma/rpcrdma.ko.xz hooks=none
    fi
    mkdir -p "$tree/$(dirname "$mod")"
    "$gen" "$work/rpcrdma-$rel.ko" --release "$rel" --hooks "$hooks" --pad 819200 >/dev/null
    xz --check=crc32 --lzma2=dict=1MiB -c "$work/rpcrdma-$rel.ko" >"$tree/$mod"
    awk -v mod="$mod" 'BEGIN {
        for (i = 0; i < 4021; i++) printf "kernel/drivers/misc/m%04d.ko: kernel/drivers/base/b%04d.ko\n", i, i % 97
        print mod ": kernel/drivers/infiniband/core/rdma_cm.ko kernel/drivers/infiniband/core/ib_core.ko kernel/net/sunrpc/sunrpc.ko"
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

mkdir -p "$root/sys/module/nvidia_fs" "$root/dev"
echo 2.28.4 >"$root/sys/module/nvidia_fs/version"
echo 'nvidia_fs 270336 0 - Live 0x0000000000000000 (OE)' >"$root/proc/modules"
: >"$root/proc/kallsyms"
: >"$root/dev/nvidia-fs0"
# The same node with only the running kernel installed.
one=$work/one
cp -a "$root" "$one"
for rel in "${releases[@]:1}"; do rm -rf "$one/boot/vmlinuz-$rel" "$one/lib/modules/$rel"; done
printf '# GRUB Environment Block\nsaved_entry=gnulinux-%s-advanced-1b2c\n' "${releases[0]}" >"$one/boot/grub/grubenv"

"$facts" --root "$root" >/dev/null # fails loudly if the tree is unreadable
"$bin" --root "$one" check >/dev/null || true # fills the module facts cache (as root)
"$bin" --root "$root" check >/dev/null || true
"$bin" --root "$root" check --json | grep -q '"id": "next-boot"' || { echo "all-kernels: check has no next-boot" >&2; exit 2; }
json=$work/hyperfine.json
hyperfine --warmup 5 --runs "$runs" -N --export-json "$json" \
    -n version "$bin --version" \
    -n running-only "$facts --root $root --running-only" \
    -n all-kernels "$facts --root $root" \
    -n check-one-warm "$bin --root $one check" \
    -n check-all-warm "$bin --root $root check" \
    -n check-one-cold "env NFS_GDS_NO_CACHE=1 $bin --root $one check" \
    -n check-all-cold "env NFS_GDS_NO_CACHE=1 $bin --root $root check"

median() { awk -v n="$1" 'BEGIN { RS = "\"command\"" } $0 ~ "\"" n "\"" { match($0, /"median": *[0-9.e-]+/); s = substr($0, RSTART, RLENGTH); sub(/.*: */, "", s); print s }' "$json"; }
v=$(median version); one=$(median running-only); all=$(median all-kernels)
cw1=$(median check-one-warm); cw3=$(median check-all-warm); cc1=$(median check-one-cold); cc3=$(median check-all-cold)
awk -v v="$v" -v one="$one" -v all="$all" 'BEGIN {
    printf "median ms: --version %.2f, running only %.2f, all three kernels %.2f\n", v * 1000, one * 1000, all * 1000
    printf "all kernels / running only: %.2fx (target <= 3x)\n", all / one
    printf "running only / --version: %.2fx; all kernels / --version: %.2fx\n", one / v, all / v
}'
awk -v a="$cw1" -v b="$cw3" -v c="$cc1" -v d="$cc3" 'BEGIN {
    printf "check median ms: warm one kernel %.2f, warm three kernels %.2f, cold one %.2f, cold three %.2f\n", a * 1000, b * 1000, c * 1000, d * 1000
    printf "check three kernels / one kernel: warm %.2fx (target <= 3x), cold %.2fx\n", b / a, d / c
}'
rss=$(/usr/bin/time -f %M "$facts" --root "$root" 2>&1 >/dev/null | tail -1)
echo "peak RSS, all kernels: ${rss} KB"
echo "peak RSS, check on three kernels (cold): $(/usr/bin/time -f %M env NFS_GDS_NO_CACHE=1 "$bin" --root "$root" check 2>&1 >/dev/null | tail -1) KB"
