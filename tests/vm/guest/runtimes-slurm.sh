#!/bin/bash
# The Slurm cases (a)–(g) and the node_features/helpers experiment in the runtimes guest
# (sourced by runtimes-scenarios.sh; the helpers are in slurm.sh). slurmd runs
# `nfs-gds slurm health` as HealthCheckProgram every few seconds and `nfs-gds slurm prolog` as
# Prolog; a "GDS job" is one submitted with --constraint=gds_nfs.

DRAIN_RE='^nfs-gds: [a-z-]+ [^ ]+'

# The node ready for GDS: the export mounted through the helper over RDMA on the hooked kernel.
gds_mount() {
    run mount 120 mount -t nfs-gds "$SPEC" "$MNT"
    expect_rc mount 0
    expect_xprt "$MNT" rdma
}

expect_node() {
    local re=$1 what=$2
    [[ $(node_state) =~ $re ]] || fail "$what: the node is $(node_state) (reason '$(node_reason)'), expected /$re/"
}

expect_drained_by_nfs_gds() {
    wait_node 'DRAIN' $((SLURM_HEALTH_INTERVAL * 6)) || fail "the node was not drained within $((SLURM_HEALTH_INTERVAL * 6)) s (state $(node_state))"
    local r
    r=$(node_reason)
    note "drain reason: '$r'"
    [[ $r =~ $DRAIN_RE ]] || fail "the drain reason '$r' does not match /$DRAIN_RE/"
    [ "${#r}" -le 128 ] || fail "the drain reason is ${#r} bytes, more than 128"
}

# How many node queries (REQUEST_NODE_INFO, REQUEST_NODE_INFO_SINGLE: scontrol show node, sinfo)
# slurmctld has answered, from sdiag's RPC statistics.
node_info_rpcs() {
    sdiag | grep -E '^\s*REQUEST_NODE_INFO(_SINGLE)?\s' | grep -oE 'count:[0-9]+' | cut -d: -f2 | awk '{ n += $1 } END { print n + 0 }'
}

scn_slurm_a() {
    note "(a) a ready node with a verified RDMA mount: a GDS job runs and reads the server's file;"
    note "the health checks of a healthy node make no slurmctld node query"
    require_hooked_kernel gpl
    slurm_prepare
    local c job before after
    c=$(server_file slurm-a.txt)
    gds_mount
    wait_health_runs 1
    expect_node '^(IDLE|MIXED|ALLOCATED)' "ready node"
    job=$(submit sbatch --constraint=gds_nfs -o "$SLURM_RUN/a-%j.out" --wrap "cat $MNT/slurm-a.txt")
    wait_job "$job" 'COMPLETED|FAILED|CANCELLED' 60 || fail "job $job did not finish within 60 s ($(job_field "$job" JobState), $(job_field "$job" Reason))"
    [ "$(job_field "$job" JobState)" = COMPLETED ] || fail "job $job: $(job_field "$job" JobState) ($(job_field "$job" Reason))"
    [ "$(cat "$SLURM_RUN/a-$job.out" 2>&1)" = "$c" ] || fail "the job wrote '$(cat "$SLURM_RUN/a-$job.out" 2>&1)', expected '$c'"
    # sdiag counts slurmctld's RPCs by type; scontrol show node is REQUEST_NODE_INFO(_SINGLE).
    before=$(node_info_rpcs)
    wait_health_runs 3
    after=$(node_info_rpcs)
    note "node-info RPCs during 3 health checks of a healthy node: $((after - before))"
    echo "node-info-rpcs-in-3-healthy-checks $((after - before))" >"$SCN_DIR/figures"
    [ "$((after - before))" = 0 ] || fail "the health checks of a healthy node queried slurmctld $((after - before)) times"
}

scn_slurm_b() {
    note "(b) the transport trap on the declared export: the next health check drains the node"
    note "with an nfs-gds: reason, and a pending GDS job does not start"
    require_hooked_kernel gpl
    slurm_prepare
    local job
    printf '[[mount]]\nsource = "%s"\n' "$SPEC" | write_config
    plain_tcp_mount mount-tcp /mnt/tcp
    expect_xprt /mnt/tcp tcp
    expect_drained_by_nfs_gds
    job=$(submit sbatch --constraint=gds_nfs -o "$SLURM_RUN/b-%j.out" --wrap "echo SLURM-RAN")
    wait_health_runs 2
    [ "$(job_field "$job" JobState)" = PENDING ] || fail "job $job is $(job_field "$job" JobState), expected PENDING on a drained node"
    [ ! -e "$SLURM_RUN/b-$job.out" ] || fail "job $job ran on the drained node"
}

scn_slurm_c() {
    note "(c) fixed again: the node is resumed, and the pending GDS job runs"
    require_hooked_kernel gpl
    slurm_prepare
    local job
    printf '[[mount]]\nsource = "%s"\n' "$SPEC" | write_config
    plain_tcp_mount mount-tcp /mnt/tcp
    expect_drained_by_nfs_gds
    job=$(submit sbatch --constraint=gds_nfs -o "$SLURM_RUN/c-%j.out" --wrap "echo SLURM-RAN")
    run umount-tcp 60 umount /mnt/tcp
    expect_rc umount-tcp 0
    gds_mount
    wait_node '^(IDLE|MIXED|ALLOCATED)' $((SLURM_HEALTH_INTERVAL * 6)) ||
        fail "the node was not resumed within $((SLURM_HEALTH_INTERVAL * 6)) s ($(node_state), reason '$(node_reason)')"
    wait_job "$job" 'COMPLETED|FAILED|CANCELLED' 60 || fail "job $job did not finish within 60 s of the resume ($(job_field "$job" JobState))"
    [ "$(cat "$SLURM_RUN/c-$job.out" 2>&1)" = SLURM-RAN ] || fail "job $job did not run: $(cat "$SLURM_RUN/c-$job.out" 2>&1)"
}

scn_slurm_d() {
    note "(d) a node an admin drained with another reason stays drained, with that reason,"
    note "whether nfs-gds finds it ready or not"
    require_hooked_kernel gpl
    slurm_prepare
    local reason='maintenance: swap the NIC'
    gds_mount
    run admin-drain 30 scontrol update NodeName="$SLURM_NODE" State=DRAIN Reason="$reason"
    expect_rc admin-drain 0
    wait_health_runs 2
    expect_node DRAIN "ready node drained by the admin"
    [ "$(node_reason)" = "$reason" ] || fail "the admin's reason became '$(node_reason)' (ready node)"
    printf '[[mount]]\nsource = "%s"\n' "$SPEC" | write_config
    plain_tcp_mount mount-tcp /mnt/tcp
    wait_health_runs 2
    expect_node DRAIN "not-ready node drained by the admin"
    [ "$(node_reason)" = "$reason" ] || fail "the admin's reason became '$(node_reason)' (node not ready)"
}

scn_slurm_e() {
    note "(e) a node that turned bad between health checks: the GDS job's prolog fails, Slurm drains"
    note "the node and requeues the job (held); the job never runs"
    require_hooked_kernel gpl
    slurm_prepare
    local job runs
    gds_mount
    wait_health_runs 1
    expect_node '^(IDLE|MIXED|ALLOCATED)' "ready node"
    touch "$SLURM_RUN/health.off"
    printf '[[mount]]\nsource = "%s"\n' "$SPEC" | write_config
    # The GDS mount goes first: a TCP mount of the export beside it would share its RDMA
    # client (NFSv4 trunking gives a new mount the existing client's transport), and the node
    # would still be ready. Seen in this guest: /mnt/tcp then runs over rdma.
    run umount-gds 60 umount /mnt/gds
    expect_rc umount-gds 0
    plain_tcp_mount mount-tcp /mnt/tcp
    expect_xprt /mnt/tcp tcp
    # What the prolog says on this node, run by hand as slurmd runs it for a GDS job.
    run prolog-by-hand 60 env SLURM_JOB_ID=0 SLURM_JOB_CONSTRAINTS=gds_nfs SLURMD_NODENAME="$SLURM_NODE" nfs-gds slurm prolog
    expect_rc prolog-by-hand 1
    job=$(submit sbatch --constraint=gds_nfs -o "$SLURM_RUN/e-%j.out" --wrap "echo SLURM-RAN")
    wait_node DRAIN 60 || fail "the node was not drained after the prolog ran ($(node_state))"
    run prolog-log 10 cat "$SLURM_RUN/prolog.log"
    grep -q '^SLURM_JOB_CONSTRAINTS=gds_nfs$' "$SLURM_RUN/prolog.env.$job" ||
        fail "the prolog of batch job $job got no SLURM_JOB_CONSTRAINTS=gds_nfs ($(grep -E '^SLURM_(JOB_CONSTRAINTS|SCRIPT_CONTEXT)' "$SLURM_RUN/prolog.env.$job" 2>&1 | tr '\n' ' '))"
    runs=$(awk -v j="$job" '$1 == j' "$SLURM_RUN/prolog.runs" 2>/dev/null)
    note "prolog runs of job $job: ${runs:-none}"
    [ -n "$runs" ] && awk -v j="$job" '$1 == j && $2 != 0 { f=1 } END { exit !f }' "$SLURM_RUN/prolog.runs" ||
        fail "the prolog of job $job did not fail ($runs)"
    note "node reason: '$(node_reason)'"
    wait_job "$job" 'PENDING' 30 || fail "job $job is $(job_field "$job" JobState), expected requeued (PENDING)"
    note "job $job: $(job_field "$job" JobState), reason $(job_field "$job" Reason), restarts $(job_field "$job" Restarts)"
    [[ $(job_field "$job" Reason) =~ Held|held|launch ]] || fail "job $job is not held after the failed prolog (reason $(job_field "$job" Reason))"
    [ ! -e "$SLURM_RUN/e-$job.out" ] || ! grep -q SLURM-RAN "$SLURM_RUN/e-$job.out" || fail "job $job ran on the bad node"
}

scn_slurm_f() {
    note "(f) a node without nvidia_fs and without GDS mounts (an NFS mount not meant for GDS) is never drained"
    require_stock_kernel
    slurm_prepare
    plain_tcp_mount mount-tcp /mnt/tcp
    wait_health_runs 3
    expect_node '^(IDLE|MIXED|ALLOCATED)' "a node that is not a GDS node"
    run health 60 nfs-gds slurm health
    expect_rc health 0
    note "last health check: $(tail -n 1 "$SLURM_RUN/health.runs")"
    awk '$3 != 0 { bad=1 } END { exit bad }' "$SLURM_RUN/health.runs" || fail "a health check exited non-zero on a node that is not a GDS node"
}

# TIMES-MS N CMD... — the median wall time of N runs of CMD, in ms.
median_ms() {
    local n=$1 i t0 t1
    shift
    for i in $(seq "$n"); do
        t0=$(date +%s%N)
        "$@" >/dev/null 2>&1
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000000))
    done | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

scn_slurm_g() {
    note "(g) the costs: slurm health (ready node), slurm prolog of a non-GDS job against"
    note "2x nfs-gds --version, and of a GDS job with a warm cache against 100 ms (medians of 11, TCG)"
    require_hooked_kernel gpl
    slurm_prepare
    touch "$SLURM_RUN/health.off"
    gds_mount
    local version health plain gds
    version=$(median_ms 11 nfs-gds --version)
    health=$(median_ms 11 nfs-gds slurm health)
    plain=$(median_ms 11 env SLURM_JOB_ID=1 SLURM_JOB_CONSTRAINTS= SLURMD_NODENAME="$SLURM_NODE" nfs-gds slurm prolog)
    env SLURM_JOB_ID=1 SLURM_JOB_CONSTRAINTS=gds_nfs SLURMD_NODENAME="$SLURM_NODE" nfs-gds slurm prolog >/dev/null 2>&1
    gds=$(median_ms 11 env SLURM_JOB_ID=1 SLURM_JOB_CONSTRAINTS=gds_nfs SLURMD_NODENAME="$SLURM_NODE" nfs-gds slurm prolog)
    printf 'version-ms %s\nhealth-ms %s\nprolog-non-gds-ms %s\nprolog-gds-warm-ms %s\n' "$version" "$health" "$plain" "$gds" >"$SCN_DIR/figures"
    note "figures: $(tr '\n' ' ' <"$SCN_DIR/figures")"
    [ "$plain" -le $((2 * version)) ] || fail "the prolog of a non-GDS job took $plain ms, more than 2x nfs-gds --version ($version ms)"
    # The goal is 100 ms; under TCG a bare `nfs-gds --version` alone takes 80-100 ms, so the
    # figure is recorded against it (the goal's MISS or MEET is read from `figures`) and a GDS
    # prolog is held to 4x --version here, which catches a cold read of the node.
    [ "$gds" -le 100 ] || note "GOAL MISSED under TCG: the prolog of a GDS job took $gds ms with a warm cache (goal 100 ms; --version $version ms)"
    [ "$gds" -le $((4 * version)) ] || fail "the prolog of a GDS job took $gds ms with a warm cache, more than 4x nfs-gds --version ($version ms)"
}

# What Slurm does with a --constraint=gds_nfs job when gds_nfs is a changeable feature of
# node_features/helpers and the node does not report it active. LINE is helpers.conf's feature
# line. The helper reports no active feature and logs every call; RebootProgram logs and does
# nothing. Recorded in `findings`, not judged.
helpers_round() {
    local tag=$1 line=$2 job
    printf '#!/bin/sh\necho "$(date +%%s) $*" >>%s/feature-%s.calls\nexit 0\n' "$SLURM_RUN" "$tag" >/usr/local/sbin/nfs-gds-vm-feature
    printf '#!/bin/sh\necho "$(date +%%s) reboot $*" >>%s/reboot-%s.calls\n' "$SLURM_RUN" "$tag" >/usr/local/sbin/nfs-gds-vm-reboot
    chmod 0755 /usr/local/sbin/nfs-gds-vm-feature /usr/local/sbin/nfs-gds-vm-reboot
    printf '%s\n' "$line" >/etc/slurm/helpers.conf
    slurm_daemons_down
    slurm_write_conf "" NodeFeaturesPlugins=node_features/helpers RebootProgram=/usr/local/sbin/nfs-gds-vm-reboot
    echo "== $tag (helpers.conf: $line)" >>"$SCN_DIR/findings"
    if ! slurm_daemons_up >"$SCN_DIR/up-$tag.log" 2>&1; then
        echo "Slurm does not start: $(grep -E 'error|fatal' "$SLURM_LOGS/slurmctld.log" | tail -n 3 | tr '\n' ' ')" >>"$SCN_DIR/findings"
        return 0
    fi
    run "features-$tag" 30 sinfo -N -o '%N %T %f %b'
    job=$(submit "sbatch-$tag" --constraint=gds_nfs -o "$SLURM_RUN/h-$tag-%j.out" --wrap "echo SLURM-RAN")
    sleep 20
    run "job-$tag" 30 scontrol show job "$job"
    run "node-$tag" 30 scontrol show node "$SLURM_NODE"
    {
        echo "sinfo: $(tail -n +2 "$SCN_DIR/features-$tag.out" | tr '\n' ' ')"
        echo "job: $(job_field "$job" JobState) reason $(job_field "$job" Reason)"
        echo "node: $(node_state) reason '$(node_reason)'; $(grep -oE '(Available|Active)Features=[^ ]*' "$SCN_DIR/node-$tag.out" | tr '\n' ' ')"
        echo "helper calls: $(tr '\n' ';' <"$SLURM_RUN/feature-$tag.calls" 2>/dev/null)"
        echo "RebootProgram calls: $(tr '\n' ';' <"$SLURM_RUN/reboot-$tag.calls" 2>/dev/null)"
        echo "job output: $(cat "$SLURM_RUN/h-$tag-$job.out" 2>/dev/null)"
    } >>"$SCN_DIR/findings"
    scancel "$job" 2>/dev/null
}

scn_slurm_helpers() {
    note "node_features/helpers: a --constraint=gds_nfs job on a node whose helper reports the"
    note "feature inactive, with Flags=rebootless and without (an experiment: the findings are recorded)"
    slurm_prepare
    touch "$SLURM_RUN/health.off" "$SLURM_RUN/prolog.off"
    [ -f /usr/lib/x86_64-linux-gnu/slurm-wlm/node_features_helpers.so ] || abort "this Slurm has no node_features/helpers plugin"
    # Slurm 22.05's helpers.conf knows Feature, Helper, MutuallyExclusive and AllowUserBoot;
    # NodeName= and Flags=rebootless came later: the first round shows what 22.05 does with it.
    helpers_round rebootless "Feature=gds_nfs Helper=/usr/local/sbin/nfs-gds-vm-feature Flags=rebootless"
    helpers_round reboot "Feature=gds_nfs Helper=/usr/local/sbin/nfs-gds-vm-feature"
    sed 's/^/    /' "$SCN_DIR/findings"
    slurm_daemons_down
    rm -f /etc/slurm/helpers.conf
    slurm_write_conf
    slurm_daemons_up >/dev/null 2>&1 || fail "Slurm did not come back with the static feature"
}
