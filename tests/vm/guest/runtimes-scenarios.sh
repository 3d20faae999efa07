#!/bin/bash
# The gate and the drain where real runtimes and schedulers call them: containerd with NRI
# (`nfs-gds nri`, cri.sh) and Slurm (`nfs-gds slurm health` / `prolog`, slurm.sh), in the runtimes
# guest (Debian 12, kernel 6.1, the test bed of scenarios.sh: soft-RoCE, knfsd over RDMA, the
# package installed with apt). One root, one boot for both.
#
#   runtimes-scenarios.sh --list   print the scenario names
#   runtimes-scenarios.sh          run them (inside that guest only)
#
# First the stock kernel (inbox rpcrdma without hooks, no nvidia_fs): the test beds themselves
# (infra-*), and what must hold on a node that is not a GDS node. Then the GPL-hooked rpcrdma and
# the nvidia_fs stub (a ready node) for everything else.
set -u

# shellcheck disable=SC2034  # run by run_plan in lib.sh
PLAN=(
    "scenario infra-containerd-cri           scn_infra_containerd"
    "scenario infra-slurm                    scn_infra_slurm"
    "scenario nri-c-no-nfs-created           scn_nri_c"
    "scenario slurm-f-no-gds-never-drained   scn_slurm_f"
    "step     switch-to-gpl-hooks            step_switch_gpl"
    "scenario nri-a-rdma-volume-created      scn_nri_a"
    "scenario nri-b-transport-trap-refused   scn_nri_b"
    "scenario nri-d-warn-created-logged      scn_nri_d"
    "scenario nri-e-not-meant-quiet          scn_nri_e"
    "scenario nri-f-annotation-refuses       scn_nri_f"
    "scenario nri-g-gds-device-refuses       scn_nri_g"
    "scenario nri-h-privileged-created       scn_nri_h"
    "scenario nri-i-csi-source-refused       scn_nri_i"
    "scenario nri-j-plugin-killed-fail-open  scn_nri_j"
    "scenario nri-k-containerd-restarted     scn_nri_k"
    "scenario nri-l-create-latency           scn_nri_l"
    "scenario slurm-a-gds-job-runs           scn_slurm_a"
    "scenario slurm-b-trap-drains            scn_slurm_b"
    "scenario slurm-c-fixed-resumed          scn_slurm_c"
    "scenario slurm-d-admin-drain-kept       scn_slurm_d"
    "scenario slurm-e-prolog-requeues        scn_slurm_e"
    "scenario slurm-g-costs                  scn_slurm_g"
    "optin    slurm-helpers-experiment       scn_slurm_helpers"
)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=oci.sh
. "$here/oci.sh"
# shellcheck source=cri.sh
. "$here/cri.sh"
# shellcheck source=slurm.sh
. "$here/slurm.sh"
[ "${1:-}" = --list ] && { list_plan; exit 0; }

step_switch_gpl() { switch_rpcrdma rpcrdma-gpl; }

# The PV as kubelet mounts it (k8s mount-utils): mount -t nfs -o OPTIONS SOURCE TARGET.
kubelet_mount() {
    local name=$1 opts=$2 target=$3
    mkdir -p "$target"
    run "$name" 120 mount -t nfs -o "$opts" "$SPEC" "$target"
    expect_rc "$name" 0
}

# ---------------------------------------------------------------- test beds

scn_infra_containerd() {
    note "containerd (Debian unstable) up with its NRI socket; a host-network pod created through"
    note "the CRI reads a file of the NFS/RDMA export mounted as kubelet mounts a PV"
    containerd_prepare
    note "$(cat "$PAYLOAD/root-info/containerd.txt")"
    [ -S "$NRI_SOCKET" ] || fail "no NRI socket at $NRI_SOCKET"
    if command -v systemd-run >/dev/null && [ -d /run/systemd/system ]; then
        note "systemd runs: kubelet's systemd-run --scope form could be used"
    else
        note "kubelet's 'systemd-run --scope -- mount …' form cannot run here: systemd is not PID 1 in this guest"
    fi
    local c
    c=$(server_file infra-cri.txt)
    kubelet_mount pv "vers=4.2,proto=rdma,port=$RDMA_PORT" /mnt/rdma
    expect_xprt /mnt/rdma rdma
    nri_reads_file pod /mnt/rdma infra-cri.txt
    expect_rc pod 0
    [ "$(cat "$SCN_DIR/pod.out")" = "$c" ] || fail "the container read '$(cat "$SCN_DIR/pod.out")', expected '$c'"
    expect_output pod 'create-ms: ' "the client did not time CreateContainer"
    cri no-nfs run --name no-nfs -- echo CRI-RAN
    expect_rc no-nfs 0
    expect_output no-nfs CRI-RAN "a pod without volumes did not run"
}

scn_infra_slurm() {
    note "munge, slurmctld and slurmd up (one node); a job with --constraint=gds_nfs reads a file of"
    note "the NFS/RDMA export; the health check runs every ${SLURM_HEALTH_INTERVAL} s"
    slurm_prepare
    # This scenario checks Slurm itself: the health check and the prolog do nothing at first.
    touch "$SLURM_RUN/health.off" "$SLURM_RUN/prolog.off"
    local c
    c=$(server_file infra-slurm.txt)
    plain_rdma_mount pv /mnt/rdma
    run srun 120 srun --constraint=gds_nfs -t 1 cat /mnt/rdma/infra-slurm.txt
    expect_rc srun 0
    [ "$(cat "$SCN_DIR/srun.out")" = "$c" ] || fail "the job read '$(cat "$SCN_DIR/srun.out")', expected '$c'"
    run sinfo 30 sinfo -N -o '%N %T %f'
    expect_output sinfo "$SLURM_NODE (idle|mixed|allocated) gds_nfs" "the node is not in service with feature gds_nfs"
    rm -f "$SLURM_RUN/health.off"
    local before
    before=$(wc -l <"$SLURM_RUN/health.runs" 2>/dev/null || echo 0)
    sleep $((SLURM_HEALTH_INTERVAL * 3))
    [ "$(wc -l <"$SLURM_RUN/health.runs" 2>/dev/null || echo 0)" -gt "$before" ] ||
        fail "slurmd did not run the HealthCheckProgram within $((SLURM_HEALTH_INTERVAL * 3)) s"
    run prolog-env 10 cat "$(ls "$SLURM_RUN"/prolog.env.* 2>/dev/null | head -n 1)"
    expect_output prolog-env '^SLURM_JOB_CONSTRAINTS=gds_nfs$' "the prolog's environment has no SLURM_JOB_CONSTRAINTS=gds_nfs"
}

# shellcheck source=runtimes-nri.sh
. "$here/runtimes-nri.sh"
# shellcheck source=runtimes-slurm.sh
. "$here/runtimes-slurm.sh"

# The daemons' own logs, for whoever reads a failure (after each scenario: the guest's watchdog
# harvests whatever is there).
copy_runtime_logs() {
    mkdir -p "$RESULTS/runtime-logs"
    cp "$CONTAINERD_LOG" "$NRI_LOG" "$OCI_SYSLOG" "$SLURM_LOGS"/* "$SLURM_RUN"/*.log "$SLURM_RUN"/*.runs "$SLURM_RUN"/prolog.env.* \
        "$RESULTS/runtime-logs/" 2>/dev/null
}

reset_runtimes() {
    copy_runtime_logs
    cri_reset
    slurm_reset
    reset_guest_state
}
run_plan reset_runtimes
