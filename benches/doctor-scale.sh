#!/usr/bin/env bash
# Scale benchmark of the two quadratic paths of the hardening round, base → this tree, release
# builds side by side in one run (run from the repository root):
#   - `doctor` on a node with N NFS mounts of one server over RDMA (benches/lib/node.sh), beside
#     this tree's `agent --once` on the same node (doctor's goal: within 2× the agent's pass);
#   - `check` on a module tree whose one `rpcrdma` line in modules.dep has D dependencies.
# Each figure is one run's wall time and CPU time (user + system; on a shared, loaded machine
# the wall time mostly measures waiting for a core), and peak RSS, from GNU time. A run that
# passes LIMIT seconds (default 150) is stopped and shown as "> LIMIT s".
# Needs GNU time. Usage: benches/doctor-scale.sh BASE [LIMIT]
set -euo pipefail
cd "$(dirname "$0")/.."
base_rev=${1:?usage: benches/doctor-scale.sh BASE [LIMIT]}
limit=${2:-150}
command -v /usr/bin/time >/dev/null || { echo "doctor-scale: GNU time is not installed" >&2; exit 2; }

work=$(mktemp -d)
trap '[ -n "${NFS_GDS_KEEP:-}" ] || rm -rf "$work"' EXIT
# shellcheck source=lib/two-builds.sh
. benches/lib/two-builds.sh
# shellcheck source=lib/node.sh
. benches/lib/node.sh
build_base_and_head doctor-scale

# "WALL CPU RSS" of one run of BIN ARGS..., or "> LIMIT s" when it ran past the limit.
measure() {
    local rc=0
    timeout "$limit" /usr/bin/time -f '%e %U %S %M' -o "$work/t" "$@" >/dev/null 2>&1 || rc=$?
    if [ "$rc" -eq 124 ]; then
        echo "> ${limit} s"
        return
    fi
    # GNU time puts "Command exited with non-zero status N" first when it did.
    tail -n 1 "$work/t" | awk '{printf "%.2f s wall, %.2f s CPU, %.0f MB", $1, $2 + $3, $4 / 1024}'
}

printf '| NFS mounts | doctor: base → this tree | agent --once (this tree) |\n|---|---|---|\n'
for n in 1000 10000; do
    root=$work/n$n
    make_node "$root" "$n"
    before=$(measure "$work/nfs-gds-base" --root "$root" doctor)
    after=$(measure "$work/nfs-gds-head" --root "$root" doctor)
    agent=$(measure "$work/nfs-gds-head" --root "$root" agent --once --nfd-dir "$root/out/f" \
        --textfile-dir "$root/out/t" --status-file "$root/out/status.json" --ready-file "$root/out/ready")
    printf '| %s | %s → %s | %s |\n' "$n" "$before" "$after" "$agent"
done

printf '\n| rpcrdma dependencies | modules.dep | check: base → this tree |\n|---|---|---|\n'
for d in 30000 100000; do
    root=$work/d$d
    rel=6.1.0-50-amd64
    mkdir -p "$root/proc/sys/kernel" "$root/lib/modules/$rel"
    echo "$rel" >"$root/proc/sys/kernel/osrelease"
    awk -v d="$d" 'BEGIN { printf "kernel/net/sunrpc/xprtrdma/rpcrdma.ko:"; for (i = 0; i < d; i++) printf " kernel/dep/d%d.ko", i; print "" }' \
        >"$root/lib/modules/$rel/modules.dep"
    size=$(stat -c %s "$root/lib/modules/$rel/modules.dep")
    before=$(measure "$work/nfs-gds-base" --root "$root" check)
    after=$(measure "$work/nfs-gds-head" --root "$root" check)
    printf '| %s | %s KiB | %s → %s |\n' "$d" "$((size / 1024))" "$before" "$after"
done
