#!/usr/bin/env bash
# Scale benchmark of one agent pass (`nfs-gds agent --once`) on a node with N NFS mounts in
# mountinfo and mountstats (kubelet PV mounts, all of one server over RDMA: the worst case for the
# transport trap, which looks at every mount of a mount's server), for N = 100, 1,000, 10,000.
# Reports the hyperfine mean and the peak RSS (GNU time) side by side for each N.
# Needs a release build (cargo build --release), hyperfine and GNU time.
# Usage: benches/agent-scale.sh [RUNS]   (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
bin=${NFS_GDS_BIN:-target/release/nfs-gds}
[ -x "$bin" ] || { echo "agent-scale: build first: cargo build --release" >&2; exit 2; }
for tool in hyperfine /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "agent-scale: $tool is not installed" >&2; exit 2; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

make_node() { # DIR N
    local root=$1 n=$2
    mkdir -p "$root"/proc/sys/kernel "$root"/proc/1 "$root"/out
    echo 6.1.0-50-amd64 > "$root"/proc/sys/kernel/osrelease
    awk -v n="$n" -v info="$root/proc/1/mountinfo" -v stats="$root/proc/1/mountstats" 'BEGIN {
        print "1 0 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw" > info
        print "device /dev/vda mounted on / with fstype ext4" > stats
        for (i = 0; i < n; i++) {
            mp = sprintf("/var/lib/kubelet/pods/%08x-0000-4000-8000-%012x/volumes/kubernetes.io~csi/pvc-%d/mount", i, i, i)
            src = sprintf("10.0.2.15:/datasets/pvc-%d", i)
            printf "%d 1 0:%d / %s rw,relatime shared:%d - nfs4 %s rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=rdma,port=20049,timeo=600,retrans=2,sec=sys,clientaddr=10.0.2.16,local_lock=none,addr=10.0.2.15\n", 100 + i, 1000 + i, mp, 100 + i, src > info
            printf "device %s mounted on %s with fstype nfs4 statvers=1.1\n", src, mp > stats
            print "\topts:\trw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,acregmin=3,acregmax=60,acdirmin=30,acdirmax=60,hard,proto=rdma,port=20049,timeo=600,retrans=2,sec=sys,clientaddr=10.0.2.16,local_lock=none" > stats
            print "\tage:\t3600" > stats
            print "\tRPC iostats version: 1.1  p/v: 100003/4 (nfs)" > stats
            print "\txprt:\trdma 0 0 1 0 0 121 121 0 1096 0 131 1 11 120676 2562 0 0 110132 5 0 0 0 0 66 131 0 0" > stats
            print "\tper-op statistics" > stats
            print "\t        NULL: 1 1 0 40 24 43 4 49 0" > stats
            print "\t        READ: 1000 1000 0 120000 1048576000 10 2000 2100 0" > stats
        }
    }'
}

printf '| mounts | mountinfo + mountstats | mean pass | peak RSS |\n|---|---|---|---|\n'
for n in 100 1000 10000; do
    root=$work/n$n
    make_node "$root" "$n"
    args=(--root "$root" agent --once --nfd-dir "$root/out/f" --textfile-dir "$root/out/t" --status-file "$root/out/status.json")
    # Exit 1 is expected (no GDS driver in the tree); the mounts are what is measured.
    hyperfine -N -i --warmup 2 --runs "$runs" --export-json "$work/h$n.json" "$bin ${args[*]}" >/dev/null
    mean=$(python3 -c "import json,sys; print('%.1f ms' % (json.load(open(sys.argv[1]))['results'][0]['mean']*1000))" "$work/h$n.json")
    /usr/bin/time -f '%M' -o "$work/rss" "$bin" "${args[@]}" >/dev/null 2>&1 || true
    rss=$(tail -1 "$work/rss")
    bytes=$(( $(stat -c %s "$root/proc/1/mountinfo") + $(stat -c %s "$root/proc/1/mountstats") ))
    judged=$(grep -c '"mountpoint"' "$root/out/status.json")
    [ "$judged" = "$n" ] || { echo "agent-scale: judged $judged mounts of $n" >&2; exit 1; }
    printf '| %s | %s KiB | %s | %s MB |\n' "$n" "$((bytes / 1024))" "$mean" "$(awk -v k="$rss" 'BEGIN{printf "%.1f", k/1024}')"
done
