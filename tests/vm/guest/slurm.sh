#!/bin/bash
# Slurm in the runtimes guest: Debian 12's slurmctld and slurmd (22.05) and munge, one node
# (this guest, nfs-gds-vm = 10.0.2.15), the daemons started by hand (no systemd):
# ProctrackType=proctrack/linuxproc, TaskPlugin=task/none, JobAcctGatherType=jobacct_gather/none,
# cgroup/v2 with IgnoreSystemd=yes (22.05's slurmd loads a cgroup plugin even so, and without
# systemd it needs /sys/fs/cgroup/system.slice with the controllers enabled), a static
# Feature=gds_nfs on the node, HealthCheckProgram every 5 s. The health check and the prolog are
# small wrappers around `nfs-gds slurm health` / `nfs-gds slurm prolog` that also note when they
# ran (and, for the prolog, its environment), so scenarios can wait for "the next health check".
# Sourced by runtimes-scenarios.sh.

SLURM_NODE=nfs-gds-vm
SLURM_CONF=/etc/slurm/slurm.conf
SLURM_LOGS=/var/log/slurm
SLURM_HEALTH=/usr/local/sbin/nfs-gds-vm-health
SLURM_PROLOG=/usr/local/sbin/nfs-gds-vm-prolog
SLURM_RUN=/run/nfs-gds-vm/slurm
SLURM_HEALTH_INTERVAL=5

# slurm.conf for the one node; EXTRA lines are appended (the helpers experiment).
slurm_write_conf() {
    local feature=${1-Feature=gds_nfs}
    shift || true
    mkdir -p /etc/slurm "$SLURM_LOGS" /var/lib/slurm/slurmctld /var/lib/slurm/slurmd
    cat >"$SLURM_CONF" <<EOF
ClusterName=nfsgdsvm
SlurmctldHost=$SLURM_NODE
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$SLURM_LOGS/slurmctld.log
SlurmdLogFile=$SLURM_LOGS/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=60
MessageTimeout=20
HealthCheckProgram=$SLURM_HEALTH
HealthCheckInterval=$SLURM_HEALTH_INTERVAL
HealthCheckNodeState=ANY
Prolog=$SLURM_PROLOG
NodeName=$SLURM_NODE NodeAddr=10.0.2.15 CPUs=2 RealMemory=512 $feature State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    for l in "$@"; do printf '%s\n' "$l" >>"$SLURM_CONF"; done
    cat >/etc/slurm/cgroup.conf <<'EOF'
CgroupPlugin=cgroup/v2
IgnoreSystemd=yes
EOF
}

# The wrappers slurmd runs. /run/nfs-gds-vm/slurm/health.off turns the health check into a
# no-op (the prolog scenario needs a node that turns bad between checks), prolog.off the prolog
# (the test bed's own scenario checks Slurm without nfs-gds).
slurm_write_wrappers() {
    mkdir -p "$SLURM_RUN"
    cat >"$SLURM_HEALTH" <<EOF
#!/bin/sh
[ -e $SLURM_RUN/health.off ] && exit 0
start=\$(date +%s%N)
/usr/sbin/nfs-gds slurm health >>$SLURM_RUN/health.log 2>&1
rc=\$?
echo "\$start \$(date +%s%N) \$rc" >>$SLURM_RUN/health.runs
exit \$rc
EOF
    cat >"$SLURM_PROLOG" <<EOF
#!/bin/sh
env >$SLURM_RUN/prolog.env.\$SLURM_JOB_ID
[ -e $SLURM_RUN/prolog.off ] && exit 0
/usr/sbin/nfs-gds slurm prolog >>$SLURM_RUN/prolog.log 2>&1
rc=\$?
echo "\$SLURM_JOB_ID \$rc" >>$SLURM_RUN/prolog.runs
exit \$rc
EOF
    chmod 0755 "$SLURM_HEALTH" "$SLURM_PROLOG"
}

slurm_pid_alive() { [ -s "/run/$1.pid" ] && kill -0 "$(cat "/run/$1.pid")" 2>/dev/null; }

# Start munged, slurmctld and slurmd (once per boot) and wait for the node to be usable.
slurm_daemons_up() {
    if ! pgrep -x munged >/dev/null; then
        mkdir -p /run/munge && chown munge:munge /run/munge
        runuser -u munge -- /usr/sbin/munged || { echo "munged did not start"; return 1; }
    fi
    munge -n | unmunge >/dev/null || { echo "munge does not work"; return 1; }
    # Without systemd, 22.05's cgroup/v2 plugin wants its own slice with the controllers on.
    awk '$2 == "/sys/fs/cgroup" && $3 == "cgroup2" { f=1 } END { exit !f }' /proc/mounts ||
        mount -t cgroup2 cgroup2 /sys/fs/cgroup || { echo "cannot mount cgroup2"; return 1; }
    mkdir -p /sys/fs/cgroup/system.slice
    local c
    for c in $(cat /sys/fs/cgroup/cgroup.controllers); do
        echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
    done
    slurm_pid_alive slurmctld || slurmctld </dev/null >>"$SLURM_LOGS/slurmctld.out" 2>&1 || { echo "slurmctld did not start"; return 1; }
    slurm_pid_alive slurmd || slurmd </dev/null >>"$SLURM_LOGS/slurmd.out" 2>&1 || { echo "slurmd did not start"; return 1; }
    local deadline=$((SECONDS + 90))
    while [ $SECONDS -lt $deadline ]; do
        case $(node_state) in
            IDLE* | MIXED* | ALLOCATED* | DRAIN* ) return 0 ;;
        esac
        slurm_pid_alive slurmctld || { echo "slurmctld exited:"; grep -E 'error|fatal' "$SLURM_LOGS/slurmctld.log" | tail -n 5; return 1; }
        sleep 1
    done
    echo "the node did not become usable: $(scontrol show node "$SLURM_NODE" 2>&1 | tr '\n' ' ')"
    tail -n 20 "$SLURM_LOGS/slurmd.log" "$SLURM_LOGS/slurmctld.log"
    return 1
}

slurm_daemons_down() {
    local d i
    for d in slurmd slurmctld; do
        slurm_pid_alive "$d" || continue
        kill "$(cat "/run/$d.pid")"
        for i in $(seq 60); do slurm_pid_alive "$d" || break; sleep 0.5; done
    done
}

slurm_prepare() {
    slurm_pid_alive slurmctld && slurm_pid_alive slurmd && return 0
    [ -f "$SLURM_CONF" ] || slurm_write_conf
    slurm_write_wrappers
    # Both commands also say what they did in the system log.
    syslog_up
    slurm_daemons_up || abort "Slurm did not come up (see $SLURM_LOGS)"
}

# The node's state and reason as slurmctld has them (each query bounded: a slurmctld that does
# not answer would otherwise hold scontrol for MessageTimeout, and the waits below for minutes).
node_state() { timeout 10 scontrol show node "$SLURM_NODE" 2>/dev/null | sed -n 's/.* State=\([^ ]*\).*/\1/p'; }
node_reason() { timeout 10 scontrol show node "$SLURM_NODE" 2>/dev/null | sed -n 's/^ *Reason=\(.*\) \[.*/\1/p'; }
job_field() { timeout 10 scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }

# Wait until at least N more health checks have finished (N defaults to 2).
wait_health_runs() {
    local n=${1:-2} before i
    before=$(wc -l <"$SLURM_RUN/health.runs" 2>/dev/null || echo 0)
    for i in $(seq $((SLURM_HEALTH_INTERVAL * (n + 4) * 2))); do
        [ "$(wc -l <"$SLURM_RUN/health.runs" 2>/dev/null || echo 0)" -ge $((before + n)) ] && return 0
        sleep 0.5
    done
    fail "fewer than $n health checks ran within $((SLURM_HEALTH_INTERVAL * (n + 4))) s"
    return 1
}

# wait_node ERE SECS — until the node's state matches ERE.
wait_node() {
    local re=$1 deadline=$((SECONDS + $2))
    while [ $SECONDS -lt $deadline ]; do
        [[ $(node_state) =~ $re ]] && return 0
        sleep 0.5
    done
    return 1
}

# wait_job JOB ERE SECS — until the job's state matches ERE.
wait_job() {
    local job=$1 re=$2 deadline=$((SECONDS + $3))
    while [ $SECONDS -lt $deadline ]; do
        [[ $(job_field "$job" JobState) =~ $re ]] && return 0
        sleep 0.5
    done
    return 1
}

# submit NAME ARGS... — sbatch --parsable, captured as NAME; prints the job id (the transcript
# goes to stderr, which is the scenario's log too).
submit() {
    local name=$1
    shift
    {
        run "$name" 60 sbatch --parsable "$@"
        expect_rc "$name" 0
    } >&2
    cut -d';' -f1 "$SCN_DIR/$name.out"
}

# Between scenarios: jobs cancelled, the node back in service, the health check on, state gone.
slurm_reset() {
    slurm_pid_alive slurmctld || return 0
    scancel --full --quiet -u root 2>/dev/null
    rm -f "$SLURM_RUN/health.off" "$SLURM_RUN/prolog.off"
    rm -rf /run/nfs-gds/slurm* 2>/dev/null
    if [[ $(node_state) =~ DRAIN|DOWN ]]; then
        scontrol update NodeName="$SLURM_NODE" State=RESUME 2>/dev/null
    fi
}
