#!/usr/bin/env bash
# Times `nfs-gds check` on two hostile kernel images that made the old scan quadratic: 16 MiB
# of false gzip magic numbers, and 2 MiB of small valid xz streams (each decompressing to just
# under 1 MiB, the least a kernel payload is taken to be), each installed as the
# node's /boot/vmlinuz-<release> (no boot header, so only magic-number candidates remain), and
# one well-formed x86 bzImage whose header names its xz payload. `check` runs cold
# (NFS_GDS_NO_CACHE=1). With OLD=/path/to/an/older/nfs-gds both binaries are timed side by side
# in the same hyperfine run, and the ratio of means is printed.
#
# The node has an rpcrdma module whose hooks are exported plain, so `rpcrdma-hook-export` has
# to ask the kernel image whether it enforces GPL-only exports.
#
# Usage: [CASES="small-xz ..."] OLD=... benches/image-scan.sh [RUNS]   (needs hyperfine, xz-utils, python3, kmod)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
for tool in hyperfine xz python3 depmod; do
    command -v "$tool" >/dev/null || {
        echo "image-scan: $tool is missing (apt-get install hyperfine xz-utils python3)" >&2
        exit 2
    }
done
cargo build --release --quiet --bin nfs-gds --example gen-module
new=$PWD/target/release/nfs-gds
gen=$PWD/target/release/examples/gen-module
release=6.1.0-bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

make_root() { # name image-file
    local root=$work/root-$1 tree=$work/root-$1/lib/modules/$release
    mkdir -p "$root/proc/sys/kernel" "$root/boot" "$tree/updates" "$root/proc/self" \
        "$root/sys/module/nvidia_fs" "$root/dev"
    echo "$release" >"$root/proc/sys/kernel/osrelease"
    echo "Linux version $release (bench@example) #1 SMP" >"$root/proc/version"
    printf 'nvidia_fs 270336 0 - Live 0x0000000000000000 (OE)\n' >"$root/proc/modules"
    echo 2.28.4 >"$root/sys/module/nvidia_fs/version"
    : >"$root/dev/nvidia-fs0"
    : >"$root/proc/self/mountinfo"
    "$gen" "$tree/updates/rpcrdma.ko" --release "$release" --hooks plain
    printf 'updates/rpcrdma.ko:\n' >"$tree/modules.dep"
    : >"$tree/modules.order"
    : >"$tree/modules.builtin"
    : >"$tree/modules.builtin.modinfo"
    depmod -b "$root" "$release"
    cp "$2" "$root/boot/vmlinuz-$release"
}

python3 - "$work" <<'PY'
import lzma, os, sys
w = sys.argv[1]
open(os.path.join(w, "false-gzip"), "wb").write(b"\x1f\x8b\x08\x00" * (4 << 20))
# Each stream decompresses to just under the 1 MiB a real payload must reach.
one = lzma.compress(bytes((1 << 20) - 1), format=lzma.FORMAT_XZ)
n = (2 << 20) // len(one) + 1
open(os.path.join(w, "small-xz"), "wb").write((one * n)[: 2 << 20])
# A bzImage: boot sector + 1 setup sector, then a stub, then an xz payload of 40 MiB.
payload = lzma.compress(bytes(range(251)) * ((40 << 20) // 251), format=lzma.FORMAT_XZ, preset=1)
img = bytearray(b"\x1f\x8b\x08\x00" * 256)
img[0:2] = b"MZ"
img[0x1F1] = 1
img[0x202:0x206] = b"HdrS"
img[0x206:0x208] = (0x020F).to_bytes(2, "little")
img[0x248:0x24C] = (4096).to_bytes(4, "little")
img[0x24C:0x250] = len(payload).to_bytes(4, "little")
img += b"\x1f\x8b\x08\x00" * 1024 + payload
open(os.path.join(w, "bzimage"), "wb").write(bytes(img))
PY

for case in ${CASES:-false-gzip small-xz bzimage}; do
    make_root "$case" "$work/$case"
    cmds=("$new --root $work/root-$case check")
    names=(-n "new $case")
    if [[ -n ${OLD:-} ]]; then
        cmds+=("$OLD --root $work/root-$case check")
        names+=(-n "old $case")
    fi
    NFS_GDS_NO_CACHE=1 hyperfine -N -i --runs "$runs" --export-json "$work/$case.json" \
        "${names[@]}" "${cmds[@]}" >&2 || true
    python3 - "$work/$case.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
line = ", ".join(f"{x['command']}: {x['mean']:.3f} s" for x in r)
if len(r) == 2:
    line += f"; old/new = {r[1]['mean'] / r[0]['mean']:.0f}x"
print(line)
PY
done
