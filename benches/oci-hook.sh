#!/usr/bin/env bash
# What the container gate (`nfs-gds oci-hook`) costs per container start, side by side with the
# process floor (`nfs-gds --version`), on a node whose mount table has 2,000 kubelet mounts:
# 1,800 projected-token tmpfs mounts and 200 CSI NFS PVs of one server over RDMA (each with the
# VM capture's ~3 KB mountstats record), plus the node's own. The node is a fixture tree as the
# integration tests build it (a generated rpcrdma with GPL hooks and a build-id, loaded; nvidia_fs
# loaded), not a distribution's module tree (benches/real-node.sh measures `check` on those).
#
#   floor        nfs-gds --version
#   no NFS       a container whose binds (hosts, hostname, resolv.conf, its token, termination
#                log) lie on no NFS mount: the state, config.json and mountinfo, nothing more
#   two GDS      the same plus two of the RDMA PVs, meant for GDS (proto=rdma): the whole table,
#                what the node declares, the node facts from the warm facts cache (run as root:
#                the cache is root's), the judge — and the answer: start
#
# Goals (docs/performance.md): no NFS ≤ 1.5× the floor, two GDS volumes ≤ 3×. Each command runs without a
# shell (hyperfine -N), the state on stdin (--input). The machine this project runs on is shared
# and noisy, so instruction counts (callgrind, one run each) are printed beside the wall and CPU
# times.
# Needs a release build, hyperfine ≥ 1.16 (--input), valgrind, python3; run from anywhere.
# Usage: benches/oci-hook.sh [RUNS] [ROUNDS]   (RUNS per hyperfine run, default 30; ROUNDS 5)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-30}
rounds=${2:-5}
bin=$(realpath "${NFS_GDS_BIN:-target/release/nfs-gds}")
for tool in hyperfine valgrind python3 objcopy; do
    command -v "$tool" >/dev/null || { echo "oci-hook bench: $tool is not installed" >&2; exit 2; }
done
hyperfine --help | grep -q -- '--input' ||
    { echo "oci-hook bench: hyperfine $(hyperfine --version) has no --input: install 1.16 or later" >&2; exit 2; }
[ -x "$bin" ] || { echo "oci-hook bench: build first: cargo build --release" >&2; exit 2; }
[ "$(id -u)" = 0 ] || echo "oci-hook bench: not root: the facts cache is not used, 'warm' is cold" >&2

work=$(mktemp -d)
trap '[ -n "${NFS_GDS_KEEP:-}" ] || rm -rf "$work"' EXIT
root=$work/node
rel=6.1.0-50-amd64

cargo build --quiet --example gen-module
gen=target/debug/examples/gen-module

# The node: what the helper's fixture `Fixture::ready` has.
mkdir -p "$root"/proc/sys/kernel "$root"/proc/self "$root"/sys/module/nvidia_fs "$root"/dev \
    "$root/lib/modules/$rel/updates/dkms" "$root"/sys/module/rpcrdma/notes \
    "$root"/sys/module/module/parameters "$root"/sys/kernel/security
echo "$rel" >"$root"/proc/sys/kernel/osrelease
echo "Linux version $rel (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC Debian 6.1.176-1 (2026-05-02)" >"$root"/proc/version
printf 'nvidia_fs 262144 0 - Live 0x0 (OE)\nrpcrdma 364544 0 - Live 0x0\nsunrpc 692224 1 rpcrdma, Live 0x0\n' >"$root"/proc/modules
printf '0000000000000000 t rpcrdma_register_nvfs_dma_ops\t[rpcrdma]\n0000000000000000 t rpcrdma_unregister_nvfs_dma_ops\t[rpcrdma]\n' >"$root"/proc/kallsyms
echo 2.28.4 >"$root"/sys/module/nvidia_fs/version
: >"$root"/dev/nvidia-fs0
echo N >"$root"/sys/module/module/parameters/sig_enforce
echo '[none] integrity confidentiality' >"$root"/sys/kernel/security/lockdown
printf 'updates/dkms/rpcrdma.ko: kernel/net/sunrpc/sunrpc.ko\nkernel/net/sunrpc/sunrpc.ko:\n' >"$root/lib/modules/$rel/modules.dep"
"$gen" "$root/lib/modules/$rel/updates/dkms/rpcrdma.ko" --release "$rel" --build-id oci-bench
objcopy -O binary --only-section=.note.gnu.build-id "$root/lib/modules/$rel/updates/dkms/rpcrdma.ko" \
    "$root/sys/module/rpcrdma/notes/.note.gnu.build-id"
echo live >"$root"/sys/module/rpcrdma/initstate

# 2,000 kubelet mounts.
awk '/mounted on \/mnt\/rdma /{p=1; next} /^device/{p=0} p' tests/fixtures/mountstats.txt >"$work/record"
awk -v info="$root/proc/self/mountinfo" -v stats="$root/proc/self/mountstats" -v tpl="$work/record" 'BEGIN {
    while ((getline l < tpl) > 0) body = body l "\n"
    print "1 0 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw" > info
    print "device /dev/vda mounted on / with fstype ext4" > stats
    print "21 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw" > info
    print "device proc mounted on /proc with fstype proc" > stats
    for (i = 0; i < 2000; i++) {
        pod = sprintf("/var/lib/kubelet/pods/%08x-0000-4000-8000-%012x/volumes", i, i)
        if (i % 10 == 0) {
            mp = sprintf("%s/kubernetes.io~csi/pvc-%d/mount", pod, i)
            src = sprintf("10.0.2.15:/datasets/pvc-%d", i)
            printf "%d 1 0:%d / %s rw,relatime shared:%d - nfs4 %s rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=rdma,port=20049,timeo=600,retrans=2,sec=sys,clientaddr=10.0.2.16,local_lock=none,addr=10.0.2.15\n", 100 + i, 1000 + i, mp, 100 + i, src > info
            printf "device %s mounted on %s with fstype nfs4 statvers=1.1\n%s", src, mp, body > stats
        } else {
            mp = sprintf("%s/kubernetes.io~projected/kube-api-access-%05d", pod, i)
            printf "%d 1 0:%d / %s rw,relatime shared:%d - tmpfs tmpfs rw,size=4194304k\n", 100 + i, 1000 + i, mp, 100 + i > info
            printf "device tmpfs mounted on %s with fstype tmpfs\n", mp > stats
        }
    }
}'

pod=/var/lib/kubelet/pods/00000001-0000-4000-8000-000000000001
bundle() { # NAME EXTRA-MOUNTS-JSON
    local dir=$root/run/containers/$1
    mkdir -p "$dir"
    cat >"$dir/config.json" <<EOF
{"ociVersion":"1.0.2","process":{"args":["python3","train.py"],"env":["PATH=/usr/bin"]},"root":{"path":"rootfs"},
 "mounts":[{"destination":"/proc","type":"proc","source":"proc"},
  {"destination":"/dev","type":"tmpfs","source":"tmpfs","options":["nosuid","strictatime","mode=755"]},
  {"destination":"/dev/shm","type":"bind","source":"/run/containers/storage/overlay-containers/x/userdata/shm","options":["rbind","nosuid"]},
  {"destination":"/etc/hosts","type":"bind","source":"$pod/etc-hosts","options":["rbind","ro"]},
  {"destination":"/etc/hostname","type":"bind","source":"/run/containers/storage/overlay-containers/x/userdata/hostname","options":["rbind","ro"]},
  {"destination":"/etc/resolv.conf","type":"bind","source":"/run/containers/storage/overlay-containers/x/userdata/resolv.conf","options":["rbind","ro"]},
  {"destination":"/dev/termination-log","type":"bind","source":"$pod/containers/train/0a1b","options":["rbind"]},
  {"destination":"/var/run/secrets/kubernetes.io/serviceaccount","type":"bind","source":"$pod/volumes/kubernetes.io~projected/kube-api-access-00001","options":["rbind","ro"]}
  $2],
 "annotations":{"io.kubernetes.pod.name":"train-0","io.kubernetes.pod.namespace":"ml"}}
EOF
    printf '{"ociVersion":"1.0.2","id":"%s","status":"creating","pid":4242,"bundle":"/run/containers/%s","annotations":{"io.kubernetes.pod.name":"train-0"}}\n' "$1" "$1" >"$work/$1.state"
}
pvc() { echo "/var/lib/kubelet/pods/$(printf '%08x-0000-4000-8000-%012x' "$1" "$1")/volumes/kubernetes.io~csi/pvc-$1/mount"; }
bundle nonfs ''
bundle gds ",{\"destination\":\"/data\",\"type\":\"bind\",\"source\":\"$(pvc 0)\",\"options\":[\"rbind\"]},{\"destination\":\"/ckpt\",\"type\":\"bind\",\"source\":\"$(pvc 10)/step-9\",\"options\":[\"rbind\"]}"

hook() { echo "$bin --root $root oci-hook < $work/$1.state"; }  # for the checks below
# The paths measured are the ones meant: each starts, silently; and the GDS one did judge.
for b in nonfs gds; do
    out=$(sh -c "$(hook "$b")" 2>&1) || { echo "oci-hook bench: the $b container is refused: $out" >&2; exit 1; }
    [ -z "$out" ] || { echo "oci-hook bench: the $b container is not quiet: $out" >&2; exit 1; }
done
# That the GDS container's volumes are judged: a policy expecting another port refuses it.
printf '[options]\nport = 2050\n' >"$work/other-port.toml"
if sh -c "$bin --root $root --config $work/other-port.toml oci-hook < $work/gds.state" >/dev/null 2>&1; then
    echo "oci-hook bench: the GDS container's volumes were not judged" >&2
    exit 1
fi
nfs=$(grep -c ' - nfs4 ' "$root/proc/self/mountinfo")
lines=$(wc -l <"$root/proc/self/mountinfo")
echo "mount table: $lines mountinfo lines ($nfs NFS), $(($(stat -c %s "$root/proc/self/mountinfo") / 1024)) KiB mountinfo, $(($(stat -c %s "$root/proc/self/mountstats") / 1024)) KiB mountstats"

# Interleaved rounds: the three commands one after the other, ROUNDS times, each a hyperfine
# run of its own (its state on stdin, no shell: --input and -N need hyperfine 1.16 or later);
# each figure is the median over rounds, so load drifts hit the three alike.
measure() { # NAME STDIN CMD...
    local name=$1 input=$2
    shift 2
    hyperfine -N --input "$input" --warmup 3 --runs "$runs" --export-json "$work/h-$name-$round.json" \
        -n "$name" "$*" >"$work/hyperfine-$name-$round.txt" 2>&1 ||
        { cat "$work/hyperfine-$name-$round.txt" >&2; exit 1; }
}
for round in $(seq "$rounds"); do
    measure floor /dev/null "$bin" --version
    measure nonfs "$work/nonfs.state" "$bin" --root "$root" oci-hook
    measure gds "$work/gds.state" "$bin" --root "$root" oci-hook
done
ir() { # NAME: instructions of one run under callgrind
    local out=$work/cg.$1
    case $1 in
        floor) valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" --version >/dev/null 2>&1 ;;
        *) valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" --root "$root" oci-hook <"$work/$1.state" >/dev/null 2>&1 ;;
    esac
    awk '/^(summary|totals):/ { print $2; exit }' "$out"
}
python3 - "$work" "$rounds" "$(ir floor)" "$(ir nonfs)" "$(ir gds)" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
ir = dict(zip(["floor", "nonfs", "gds"], (int(x) for x in sys.argv[3:6])))
def med(name, f):
    return statistics.median(f(json.load(open(f"{work}/h-{name}-{r}.json"))["results"][0]) for r in range(1, rounds + 1))
rows = {}
for name in ["floor", "nonfs", "gds"]:
    rows[name] = (med(name, lambda r: r["median"]), med(name, lambda r: r["user"] + r["system"]))
label = {"floor": "nfs-gds --version (floor)", "nonfs": "oci-hook, no NFS volume", "gds": "oci-hook, two GDS volumes (warm cache)"}
print(f"{rounds} rounds of {sys.argv[0] and ''}hyperfine runs; medians over rounds")
print("| command | wall (median) | CPU user+sys (mean) | instructions (callgrind) | × floor: wall / CPU / instructions |")
print("|---|---|---|---|---|")
fw, fc = rows["floor"]
for name, (w, c) in rows.items():
    print("| %s | %.2f ms | %.2f ms | %.2f M | %.2f / %.2f / %.1f |" % (
        label[name], w * 1000, c * 1000, ir[name] / 1e6, w / fw, c / fc, ir[name] / ir["floor"]))
PY
