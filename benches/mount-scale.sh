#!/usr/bin/env bash
# Every command on a node with N NFS mounts (default 50,000; kubelet PV mounts of one server over
# RDMA, benches/lib/node.sh: mountstats about 3.3 KB a mount, 165 MB at 50,000), past the
# 64 MiB the mount tables were once capped at: `check`, the helper under `-f` (its pre-checks
# judge the server's mounts), `agent --once` and `doctor`. Each figure is one run's wall time
# and CPU time (user + system; on a shared, loaded machine the wall time mostly measures waiting
# for a core) and peak RSS, from GNU time, after one warm-up run; a command that exits 2 (it could
# not do its job, such as read a table) fails the benchmark.
# Needs a release build (cargo build --release) and GNU time.
# Usage: benches/mount-scale.sh [N...]   (run from anywhere; NFS_GDS_BIN overrides the binary)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "mount-scale: GNU time is not installed" >&2; exit 2; }
bin=${NFS_GDS_BIN:-target/release/nfs-gds}
[ -x "$bin" ] || { echo "mount-scale: build first: cargo build --release" >&2; exit 2; }
[ "$#" -gt 0 ] || set -- 50000

work=$(mktemp -d)
trap '[ -n "${NFS_GDS_KEEP:-}" ] || rm -rf "$work"' EXIT
# shellcheck source=lib/node.sh
. benches/lib/node.sh

# "WALL CPU RSS" of one run of the command line after `--`, run with its exit code checked.
measure() {
    local rc=0
    /usr/bin/time -f '%e %U %S %M' -o "$work/t" "$@" >/dev/null 2>"$work/err" || rc=$?
    if [ "$rc" -eq 2 ] || [ "$rc" -gt 100 ]; then
        echo "mount-scale: $* exited $rc:" >&2
        cat "$work/err" >&2
        exit 1
    fi
    tail -n 1 "$work/t" | awk '{printf "%.2f s wall, %.2f s CPU, %.0f MB", $1, $2 + $3, $4 / 1024}'
}

printf '| NFS mounts | mountstats | check | mount.nfs-gds -f | agent --once | doctor |\n|---|---|---|---|---|---|\n'
for n in "$@"; do
    root=$work/n$n
    make_node "$root" "$n"
    # The helper's mount point and a mount.nfs for it to plan with (-f runs nothing).
    mkdir -p "$root/mnt/gds" "$root/usr/sbin"
    printf '#!/bin/sh\nexit 0\n' > "$root/usr/sbin/mount.nfs"
    chmod +x "$root/usr/sbin/mount.nfs"
    mb=$(( $(stat -c %s "$root/proc/self/mountstats") / 1000000 ))
    agent=(--root "$root" agent --once --nfd-dir "$root/out/f" --textfile-dir "$root/out/t" --status-file "$root/out/status.json")
    row=()
    for cmd in \
        "--root $root check" \
        "--root $root mount 10.0.2.15:/export /mnt/gds -f" \
        "${agent[*]}" \
        "--root $root doctor"; do
        # shellcheck disable=SC2086
        "$bin" $cmd >/dev/null 2>&1 || true
        # shellcheck disable=SC2086
        row+=("$(NFS_GDS_NO_CACHE=1 measure "$bin" $cmd)")
    done
    judged=$(grep -c '"mountpoint"' "$root/out/status.json")
    [ "$judged" = "$n" ] || { echo "mount-scale: the agent judged $judged mounts of $n" >&2; exit 1; }
    printf '| %s | %s MB | %s | %s | %s | %s |\n' "$n" "$mb" "${row[@]}"
done
