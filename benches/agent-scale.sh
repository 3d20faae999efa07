#!/usr/bin/env bash
# Scale benchmark of one agent pass (`nfs-gds agent --once`) on a node with N NFS mounts in
# mountinfo and mountstats (run from the repository root: it reuses the VM capture) (kubelet PV mounts, all of one server over RDMA: the worst case for the
# transport trap, which looks at every mount of a mount's server), for N = 100, 1,000, 10,000.
# Reports hyperfine's mean wall time and mean CPU time (user + system: on a shared, loaded
# machine the wall time mostly measures waiting for a core) and the peak RSS (GNU time) side by
# side for each N.
# Needs a release build (cargo build --release), hyperfine and GNU time.
# With BASE (a git revision), both that revision and this tree are built (benches/lib) and each
# figure is shown as BASE → this tree, measured in the same run.
# Usage: benches/agent-scale.sh [RUNS] [BASE]   (RUNS defaults to 20)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
base_rev=${2:-}
for tool in hyperfine /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "agent-scale: $tool is not installed" >&2; exit 2; }
done

work=$(mktemp -d)
trap '[ -n "${NFS_GDS_KEEP:-}" ] || rm -rf "$work"' EXIT
if [ -n "$base_rev" ]; then
    # shellcheck source=lib/two-builds.sh
    . benches/lib/two-builds.sh
    build_base_and_head agent-scale
    bins=("$work/nfs-gds-base" "$work/nfs-gds-head")
else
    bin=${NFS_GDS_BIN:-target/release/nfs-gds}
    [ -x "$bin" ] || { echo "agent-scale: build first: cargo build --release" >&2; exit 2; }
    bins=("$bin")
fi

# shellcheck source=lib/node.sh
. benches/lib/node.sh

# One binary's figures for the node tree $root: "WALL_ms CPU_ms RSS_MB".
measure() { # BIN ROOT N
    local bin=$1 root=$2 n=$3 mean cpu rss judged
    local args=(--root "$root" agent --once --nfd-dir "$root/out/f" --textfile-dir "$root/out/t" --status-file "$root/out/status.json")
    # Exit 1 is expected (no GDS driver in the tree); the mounts are what is measured.
    hyperfine -N -i --warmup 2 --runs "$runs" --export-json "$work/h.json" "$bin ${args[*]}" >/dev/null 2>&1
    read -r mean cpu < <(python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; print('%.1f %.1f' % (r['mean']*1000, (r['user']+r['system'])*1000))" "$work/h.json")
    /usr/bin/time -f '%M' -o "$work/rss" "$bin" "${args[@]}" >/dev/null 2>&1 || true
    rss=$(awk -v k="$(tail -1 "$work/rss")" 'BEGIN{printf "%.1f", k/1024}')
    judged=$(grep -c '"mountpoint"' "$root/out/status.json")
    [ "$judged" = "$n" ] || { echo "agent-scale: $bin judged $judged mounts of $n" >&2; exit 1; }
    echo "$mean $cpu $rss"
}

printf '| mounts | mountinfo + mountstats | wall (mean) | CPU user+sys (mean) | peak RSS |\n|---|---|---|---|---|\n'
for n in 100 1000 10000; do
    root=$work/n$n
    make_node "$root" "$n"
    bytes=$(( $(stat -c %s "$root/proc/1/mountinfo") + $(stat -c %s "$root/proc/1/mountstats") ))
    wall=() cpu=() rss=()
    for bin in "${bins[@]}"; do
        read -r w c r < <(measure "$bin" "$root" "$n")
        wall+=("$w ms") cpu+=("$c ms") rss+=("$r MB")
    done
    join() { local IFS=$'\x1f'; local s="$*"; echo "${s//$'\x1f'/ → }"; }
    printf '| %s | %s KiB | %s | %s | %s |\n' "$n" "$((bytes / 1024))" "$(join "${wall[@]}")" "$(join "${cpu[@]}")" "$(join "${rss[@]}")"
done
