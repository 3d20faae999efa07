# Sourced by the scale benchmarks: make_node DIR N writes a node tree with N NFS mounts in
# mountinfo and mountstats (kubelet PV mounts, all of one server over RDMA: the worst case for the
# transport trap, which looks at every mount of a mount's server), as /proc/1 (the agent's table)
# and /proc/self (doctor's). Needs $work (a scratch directory) and the repository root as the
# working directory (it reuses the VM capture's mountstats record).
make_node() { # DIR N
    local root=$1 n=$2
    mkdir -p "$root"/proc/sys/kernel "$root"/proc/1 "$root"/out
    echo 6.1.0-50-amd64 > "$root"/proc/sys/kernel/osrelease
    # Each mountstats record is the VM capture's RDMA record (opts, xprt, ~80 lines of per-op
    # counters: ~3 KB), renamed; mountinfo lines are shaped like the kernel's.
    awk '/mounted on \/mnt\/rdma /{p=1; next} /^device/{p=0} p' tests/fixtures/mountstats.txt > "$work/record"
    awk -v n="$n" -v info="$root/proc/1/mountinfo" -v stats="$root/proc/1/mountstats" -v tpl="$work/record" 'BEGIN {
        while ((getline l < tpl) > 0) body = body l "\n"
        print "1 0 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw" > info
        print "device /dev/vda mounted on / with fstype ext4" > stats
        for (i = 0; i < n; i++) {
            mp = sprintf("/var/lib/kubelet/pods/%08x-0000-4000-8000-%012x/volumes/kubernetes.io~csi/pvc-%d/mount", i, i, i)
            src = sprintf("10.0.2.15:/datasets/pvc-%d", i)
            printf "%d 1 0:%d / %s rw,relatime shared:%d - nfs4 %s rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=rdma,port=20049,timeo=600,retrans=2,sec=sys,clientaddr=10.0.2.16,local_lock=none,addr=10.0.2.15\n", 100 + i, 1000 + i, mp, 100 + i, src > info
            printf "device %s mounted on %s with fstype nfs4 statvers=1.1\n%s", src, mp, body > stats
        }
    }'
    mkdir -p "$root"/proc/self
    cp "$root"/proc/1/mountinfo "$root"/proc/1/mountstats "$root"/proc/self/
    # A node with NFS mounts has the nfs module's parameters in sysfs (loaded or built in); those
    # of Debian 12's 6.1, which has no LOCALIO (so no `localio_enabled`). Without them whether the
    # kernel has LOCALIO is unknown, every mount is judged `mount-localio: unknown`, and a pass
    # keeps every mount's check results: a cost no real node pays.
    mkdir -p "$root"/sys/module/nfs/parameters
    for p in callback_nr_threads callback_tcpport enable_ino64 max_session_cb_slots max_session_slots \
        nfs4_disable_idmapping nfs4_unique_id nfs_access_max_cachesize nfs_idmap_cache_timeout \
        nfs_mountpoint_expiry_timeout recover_lost_locks send_implementation_id; do
        : > "$root/sys/module/nfs/parameters/$p"
    done
}

