#!/bin/bash
# The nfs-gds end-to-end scenarios, run inside the test VM against a real kernel NFS server over
# soft-RoCE (rdma_rxe) on 10.0.2.15, export /export, RDMA port 20049. The same plan runs on
# Debian 12 (6.1, .ko modules) and Debian 13 (6.12, .ko.xz modules) guests.
#
#   scenarios.sh --list   print the scenario names in run order (the host uses this to know what
#                         must come back; a scenario without a result counts as failed)
#   scenarios.sh          run them (inside the guest only: it loads modules and mounts)
#
# The order follows the kernel state: first the stock kernel (inbox rpcrdma, no nvidia_fs), then a
# rpcrdma with GPL-exported nvfs hooks plus the nvidia_fs stub, then one with plain exports, then
# both again with NVIDIA's own nvidia-fs (Debian's nvidia-fs-dkms) in place of the stub: the
# scenarios that look at nvidia_fs run for each (NVFS_UNDER_TEST, set by the steps). The
# "infra-*" scenarios check the test bed itself with plain mount(8), independent of nfs-gds, so a
# failing nfs-gds scenario can be told apart from a broken test bed.
#
# Product contract under test (exit codes: 0 mounted/ready, 1 usage/not ready, 2 error,
# 32 mount failure or refusal; check ids and JSON fields as in docs/).
set -u

# shellcheck disable=SC2034  # run by run_plan in lib.sh
PLAN=(
    "scenario infra-stock                  scn_infra_stock"
    "scenario io-nconnect-table            scn_io_nconnect"
    "scenario s1-stock-enforce-refuses     scn_s1"
    "scenario s2-warn-mounts-over-rdma     scn_s2"
    "scenario s3-fstab                     scn_s3"
    "scenario s4-transport-trap            scn_s4"
    "scenario s4b-agent-catches-trapped-pv scn_s4b"
    "scenario s4c-agent-reads-host-table   scn_s4c"
    "scenario s7a-cli-matches-kernel-stock scn_s7a"
    "scenario s6-stale-module-detected     scn_s6"
    "scenario s8-abi-mismatch-predicted    scn_s8"
    "scenario s11-crcless-load-predicted   scn_s11   trixie7"
    "scenario oci-crun-g-no-hooks-refuses  scn_oci_crun_g"
    "scenario oci-runc-g-no-hooks-refuses  scn_oci_runc_g"
    "step     switch-to-gpl-hooks          step_switch_gpl"
    "scenario infra-gpl-hooked-rpcrdma     scn_infra_gpl"
    "scenario s5a-happy-path-enforce       scn_s5a"
    "scenario s4d-trap-on-shared-superblock scn_s4d"
    "scenario s10-staging-point            scn_s10"
    "scenario oci-crun-a-rdma-volume-starts scn_oci_crun_a"
    "scenario oci-runc-a-rdma-volume-starts scn_oci_runc_a"
    "scenario oci-crun-b-transport-trap-refused scn_oci_crun_b"
    "scenario oci-runc-b-transport-trap-refused scn_oci_runc_b"
    "scenario oci-crun-c-no-nfs-starts     scn_oci_crun_c"
    "scenario oci-runc-c-no-nfs-starts     scn_oci_runc_c"
    "scenario oci-crun-d-warn-logged       scn_oci_crun_d"
    "scenario oci-runc-d-warn-logged       scn_oci_runc_d"
    "scenario oci-crun-e-not-meant-quiet   scn_oci_crun_e"
    "scenario oci-runc-e-not-meant-quiet   scn_oci_runc_e"
    "scenario oci-crun-f-annotation-refuses scn_oci_crun_f"
    "scenario oci-runc-f-annotation-refuses scn_oci_runc_f"
    "scenario s7b-cli-matches-kernel-hooked scn_s7b"
    "scenario perf-mount-cost              scn_perf_mount_cost"
    "scenario s9-next-boot-without-hooks   scn_s9    bookworm"
    "step     switch-to-plain-hooks        step_switch_plain"
    "scenario infra-plain-hooked-rpcrdma   scn_infra_plain"
    "scenario s5b-plain-export-refused     scn_s5b"
    "step     switch-to-driver-container   step_switch_container"
    "scenario infra-driver-container       scn_infra_container"
    "step     switch-to-gpl-hooks-nvidia   step_switch_gpl_nvidia"
    "scenario infra-gpl-hooked-rpcrdma-nvidia scn_infra_gpl"
    "scenario s7b-cli-matches-kernel-hooked-nvidia scn_s7b"
    "scenario nvfs-proc-formats-nvidia     scn_nvfs_proc"
    "step     switch-to-plain-hooks-nvidia step_switch_plain_nvidia"
    "scenario infra-plain-hooked-rpcrdma-nvidia scn_infra_plain"
    "scenario s5b-plain-export-refused-nvidia scn_s5b"
)

# The Debian 13 root booted with its second kernel (trixie-backports' 7.x: no symbol CRCs, the
# cursor-based frwr_map) runs the part of the plan that meets the kernel: the refusal and the happy
# path, the ABI/BTF load prediction (s11 in place of the CRC case s8), the trap on a shared
# superblock and the staging point, the container gate (crun), and the GPL/plain export pair,
# which 7.x keeps in one table with a flag byte each (__kflagstab). Not NVIDIA's block: trixie's
# nvidia-fs-dkms 2.19.7 does not build for 7.3 ('struct page' has no member named 'index'; the
# test bed keeps the compiler's log as nvidia-fs.build.log).
# shellcheck disable=SC2034  # read by for_this_guest in lib.sh
GUEST_SUBSET_trixie7="infra-stock s1-stock-enforce-refuses s7a-cli-matches-kernel-stock
    s11-crcless-load-predicted infra-gpl-hooked-rpcrdma s5a-happy-path-enforce
    s4d-trap-on-shared-superblock s10-staging-point oci-crun-a-rdma-volume-starts
    oci-crun-b-transport-trap-refused s7b-cli-matches-kernel-hooked infra-plain-hooked-rpcrdma
    s5b-plain-export-refused"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=cost.sh
. "$here/cost.sh"
# shellcheck source=oci.sh
. "$here/oci.sh"
# shellcheck source=staging.sh
. "$here/staging.sh"
[ "${1:-}" = --list ] && { list_plan; exit 0; }

# ---------------------------------------------------------------- stock kernel

scn_infra_stock() {
    note "test bed on the stock kernel: RDMA link, nfsd RDMA listener, plain mount(8) over RDMA and TCP"
    rdma link show | grep -q 'rxe0/1 state ACTIVE' || fail "rxe0/1 is not ACTIVE: $(rdma link show 2>&1)"
    grep -qx "rdma $RDMA_PORT" /proc/fs/nfsd/portlist || fail "nfsd has no 'rdma $RDMA_PORT' listener"
    require_stock_kernel
    local c
    c=$(server_file infra-stock.txt)
    plain_rdma_mount mount-rdma /mnt/rdma
    expect_xprt /mnt/rdma rdma
    expect_mount_opt /mnt/rdma proto=rdma
    expect_file_content /mnt/rdma/infra-stock.txt "$c"
    echo "written by the client" >/mnt/rdma/infra-stock-client.txt || fail "cannot write through the RDMA mount"
    sync
    grep -q "written by the client" "$EXPORT/infra-stock-client.txt" 2>/dev/null || fail "a write through the RDMA mount did not reach the export"
    run umount-rdma 60 umount /mnt/rdma
    expect_rc umount-rdma 0
    plain_tcp_mount mount-tcp /mnt/tcp
    expect_xprt /mnt/tcp tcp
    run umount-tcp 60 umount /mnt/tcp
    expect_rc umount-tcp 0
    [ -x /sbin/mount.nfs-gds ] && [ -x /usr/sbin/nfs-gds ] || fail "nfs-gds is not installed as /sbin/mount.nfs-gds and /usr/sbin/nfs-gds"
}

# One plain mount(8) of the export over RDMA with OPTS on /mnt/nconnect: how many `xprt: rdma`
# lines the kernel made, a row of the table, and what verify's mount-connections says of it,
# from /proc alone and then with an `nfs-gds` fstab line asking the same.
nconnect_row() {
    local name=$1 fstype=$2 opts=$3 asked=$4 got rel shown
    run "mount-$name" 120 mount -t "$fstype" -o "$opts,proto=rdma,port=$RDMA_PORT" "$SPEC" /mnt/nconnect
    expect_rc "mount-$name" 0
    got=$(mount_xprts /mnt/nconnect | grep -c '^rdma$')
    # What the kernel itself shows of the ask: a client that ignores nconnect (NFSv4.x over RDMA
    # before b326df4a8ec6) keeps none, so /proc/mounts then has no nconnect= at all.
    shown=$(awk '$2 == "/mnt/nconnect" { print $4 }' /proc/mounts | tr , '\n' | sed -n 's/^nconnect=//p')
    rel=$(uname -r)
    printf '| %s | `%s` | %s | %s | %s |\n' "$rel" "$opts" "$asked" "${shown:-none}" "$got" | tee -a "$SCN_DIR/nconnect-table.md"
    run "verify-$name" 60 nfs-gds verify /mnt/nconnect --json
    expect_json "verify-$name"
    if [ "$got" -ge "$asked" ]; then
        expect_status "verify-$name" mount-connections pass
    elif [ -z "$shown" ]; then
        # The kernel dropped the ask: from /proc alone there is nothing to hold the mount to.
        note "$rel keeps no nconnect= for $opts over RDMA: $got connection(s), and /proc shows no ask"
        expect_status "verify-$name" mount-connections pass
        expect_summary "verify-$name" mount-connections "no nconnect asked"
    else
        expect_status "verify-$name" mount-connections warn
        case $opts in
            vers=4*) expect_summary "verify-$name" mount-connections b326df4a8ec6 ;;
        esac
    fi
    # An fstab line for the mount point says what was asked, whatever /proc kept.
    printf '%s\n%s /mnt/nconnect nfs-gds _netdev,%s 0 0\n' "$BASELINE_FSTAB" "$SPEC" "$opts" >/etc/fstab
    run "verify-fstab-$name" 60 nfs-gds verify /mnt/nconnect --json
    printf '%s\n' "$BASELINE_FSTAB" >/etc/fstab
    expect_json "verify-fstab-$name"
    if [ "$got" -ge "$asked" ]; then
        expect_status "verify-fstab-$name" mount-connections pass
    else
        expect_status "verify-fstab-$name" mount-connections warn
        expect_summary "verify-fstab-$name" mount-connections "nconnect=$asked asked (fstab line 2), $got RDMA connection"
        [ -n "$shown" ] || expect_summary "verify-fstab-$name" mount-connections "the kernel dropped the ask"
    fi
    expect_status "verify-$name" mount-pnfs pass skip
    run "doctor-$name" 180 nfs-gds doctor
    expect_output "doctor-$name" rxe0 "doctor's I/O path does not name the soft-RoCE device on the route to $SERVER"
    umount /mnt/nconnect || fail "cannot unmount /mnt/nconnect"
}

# The same ask through the helper (`mount -t nfs-gds`, policy warn on this stock kernel): it
# judges the mount against the nconnect= it passed, and its record keeps that for `verify`.
# WANT is what this guest's kernel must give for it: warn (Debian 12's 6.1 makes one
# connection for vers=4.2) or pass (Debian 13's 6.12 makes four).
nconnect_helper_row() {
    local name=$1 opts=$2 asked=$3 want=$4 got
    run "helper-$name" 120 mount -t nfs-gds -o "$opts,gds_policy=warn" "$SPEC" /mnt/nconnect
    expect_rc "helper-$name" 0
    expect_xprt /mnt/nconnect rdma
    got=$(mount_xprts /mnt/nconnect | grep -c '^rdma$')
    note "mount -t nfs-gds -o $opts: $got RDMA connection(s)"
    run "verify-helper-$name" 60 nfs-gds verify /mnt/nconnect --json
    expect_json "verify-helper-$name"
    expect_status "verify-helper-$name" mount-connections "$want"
    if [ "$want" = warn ]; then
        expect_output "helper-$name" "mount-connections.*nconnect=$asked asked \(mount options\), $got RDMA connection" \
            "the helper does not warn that the mount got fewer connections than it asked"
        expect_summary "verify-helper-$name" mount-connections "nconnect=$asked asked (the helper's record of the mount)"
        case $opts in
            vers=4*) expect_summary "verify-helper-$name" mount-connections b326df4a8ec6 ;;
        esac
    elif output_of "helper-$name" | grep -q mount-connections; then
        fail "helper-$name: the helper warns about mount-connections on a mount with every connection it asked"
    fi
    umount /mnt/nconnect || fail "cannot unmount /mnt/nconnect"
}

scn_io_nconnect() {
    note "the observed nconnect table: RDMA connections the kernel makes for vers=4.2 and vers=3"
    note "with nconnect=4 (docs/checks.md: before b326df4a8ec6, NFSv4.x over RDMA makes one whatever nconnect says)"
    require_stock_kernel
    mkdir -p /mnt/nconnect
    printf '| kernel | options | nconnect asked | nconnect in /proc/mounts | xprt: rdma lines |\n|---|---|---|---|---|\n' >"$SCN_DIR/nconnect-table.md"
    nconnect_row v42-n4 nfs4 vers=4.2,nconnect=4 4
    nconnect_row v3-n4 nfs vers=3,nconnect=4 4
    nconnect_row v42-n1 nfs4 vers=4.2 1
    note "table (in $SCN_DIR/nconnect-table.md):"
    sed 's/^/    | /' "$SCN_DIR/nconnect-table.md"
    case ${NFS_GDS_VM_GUEST:-} in
        bookworm) nconnect_helper_row v42-n4 vers=4.2,nconnect=4 4 warn ;;
        trixie) nconnect_helper_row v42-n4 vers=4.2,nconnect=4 4 pass ;;
        *) note "no expectation for vers=4.2,nconnect=4 through the helper on guest '${NFS_GDS_VM_GUEST:-}'" ;;
    esac
    nconnect_helper_row v3-n4 vers=3,nconnect=4 4 pass
}

scn_s1() {
    note "stock kernel, default policy (enforce): the helper refuses before mounting"
    require_stock_kernel
    run mount 120 mount -t nfs-gds "$SPEC" "$MNT"
    expect_rc mount 32
    expect_not_mounted "$MNT"
    expect_names mount nvidia-fs-loaded
    expect_names mount rpcrdma-hooks
    expect_output mount 'nfs-gds doctor' "the refusal does not point to 'nfs-gds doctor'"
}

scn_s2() {
    note "gds_policy=warn: mounts over RDMA anyway, warns, data is readable"
    require_stock_kernel
    local c
    c=$(server_file s2.txt)
    run mount 120 mount -t nfs-gds -o gds_policy=warn "$SPEC" "$MNT"
    expect_rc mount 0
    expect_mounted "$MNT"
    expect_names mount nvidia-fs-loaded
    expect_names mount rpcrdma-hooks
    expect_xprt "$MNT" rdma
    expect_mount_opt "$MNT" proto=rdma
    expect_mount_opt "$MNT" port=$RDMA_PORT
    expect_no_mount_opt_like "$MNT" '^gds'
    expect_file_content "$MNT/s2.txt" "$c"
    run umount 60 umount "$MNT"
    expect_rc umount 0
    expect_not_mounted "$MNT"
}

scn_s3() {
    note "fstab: mount DIR, mount -a (noauto skipped), mount -f -v, umount"
    require_stock_kernel
    mkdir -p /mnt/gds-noauto
    cat >/etc/fstab <<EOF
$BASELINE_FSTAB
$SPEC $MNT nfs-gds _netdev,gds_policy=warn 0 0
$SPEC /mnt/gds-noauto nfs-gds _netdev,noauto,gds_policy=warn 0 0
EOF
    note "/etc/fstab:" && sed 's/^/    | /' /etc/fstab
    local c
    c=$(server_file s3.txt)

    run mount-fake 120 mount -f -v "$MNT"
    expect_rc mount-fake 0
    expect_not_mounted "$MNT"

    run mount-dir 120 mount "$MNT"
    expect_rc mount-dir 0
    expect_mounted "$MNT"
    expect_xprt "$MNT" rdma
    expect_file_content "$MNT/s3.txt" "$c"
    run umount-dir 60 umount "$MNT"
    expect_rc umount-dir 0
    expect_not_mounted "$MNT"

    run mount-all 180 mount -a
    expect_rc mount-all 0
    expect_mounted "$MNT"
    expect_not_mounted /mnt/gds-noauto
    expect_xprt "$MNT" rdma
    run umount-all 60 umount "$MNT"
    expect_rc umount-all 0
    expect_not_mounted "$MNT"
}

scn_s4() {
    note "transport trap: an existing TCP mount of the same server decides the transport"
    require_stock_kernel
    local c
    c=$(server_file s4.txt)
    plain_tcp_mount mount-tcp /mnt/tcp
    expect_xprt /mnt/tcp tcp
    is_mounted /mnt/tcp || abort "precondition: the TCP mount failed"

    note "A: transport-trap enforced (everything else warn) → refused before mounting"
    write_config <<'EOF'
default = "warn"

[checks]
transport-trap = "enforce"
EOF
    run mount-trap 120 mount -t nfs-gds "$SPEC" "$MNT"
    expect_rc mount-trap 32
    expect_not_mounted "$MNT"
    expect_names mount-trap transport-trap
    expect_mounted /mnt/tcp

    note "B: transport-trap off, mount-transport enforced → mounts, sees xprt tcp, unmounts its own mount"
    write_config <<'EOF'
default = "warn"

[checks]
transport-trap = "off"
mount-transport = "enforce"
EOF
    run mount-post 120 mount -t nfs-gds "$SPEC" "$MNT"
    expect_rc mount-post 32
    expect_names mount-post mount-transport
    expect_output mount-post '(^|[^a-z])tcp([^a-z]|$)' "the refusal does not say that the mount got tcp"
    expect_not_mounted "$MNT"
    expect_mounted /mnt/tcp
    expect_xprt /mnt/tcp tcp
    expect_file_content /mnt/tcp/s4.txt "$c"
    run umount-tcp 60 umount /mnt/tcp
    expect_rc umount-tcp 0
}

scn_s4b() {
    note "a kubelet PV mount asked for RDMA that the transport trap gave TCP: what the kernel shows"
    note "for it, and that the agent still catches it through the policy and the helper's record"
    require_stock_kernel
    local pod=0c5e1d2a-7b3f-4e8a-9d61-5a4c3b2a1f00 kmp opts out=/run/nfs-gds-agent-test
    kmp=/var/lib/kubelet/pods/$pod/volumes/kubernetes.io~nfs/gds-data
    rm -rf "$out" && mkdir -p "$kmp" "$out"
    plain_tcp_mount mount-tcp /mnt/tcp
    is_mounted /mnt/tcp || abort "precondition: the TCP mount failed"
    # What kubelet runs for an nfs: volume with mountOptions [vers=4.2, proto=rdma, port=20049].
    run mount-kubelet 120 mount -t nfs4 -o "vers=4.2,proto=rdma,port=$RDMA_PORT" "$SPEC" "$kmp"
    expect_rc mount-kubelet 0
    expect_xprt "$kmp" tcp
    opts=$(mount_opts "$kmp")
    note "kernel $KVER shows the trapped mount in /proc/mounts with: $opts"
    printf '%s\n' "$opts" >"$SCN_DIR/trapped-mount-options"

    note "A: no policy, no record: only the options could tell"
    run agent-options 120 nfs-gds agent --once --status-file "$out/a.json" --nfd-dir "$out/fa" --textfile-dir "$out/ta"
    expect_rc agent-options 1
    case ,$opts, in
        *,proto=rdma,*)
            note "the options still say proto=rdma: the options alone catch it"
            expect_agent_mount "$out/a.json" "$kmp" meant_by=options protocol=tcp verdict=not-ready ;;
        *)
            note "the options lost the intent (no proto=rdma): the options alone cannot catch it"
            expect_no_agent_mount "$out/a.json" "$kmp" ;;
    esac

    note "B: a [[mount]] table of the policy names the export"
    printf '[[mount]]\nsource = "%s"\n' "$SPEC" | write_config
    run agent-policy 120 nfs-gds agent --once --status-file "$out/b.json" --nfd-dir "$out/fb" --textfile-dir "$out/tb"
    expect_rc agent-policy 1
    expect_agent_mount "$out/b.json" "$kmp" meant_by=policy protocol=tcp verdict=not-ready pod_uid=$pod volume=gds-data export="$SPEC" mountaddr=$SERVER
    grep -hF "mountpoint=\"$kmp\"" "$out"/tb/*.prom 2>/dev/null | grep -q '^nfs_gds_mount_ready{.*} 0$' \
        || fail "nfs_gds_mount_ready for $kmp is not 0: '$(grep -hF "$kmp" "$out"/tb/*.prom 2>/dev/null)'"
    grep -hq '^nfs-gds.feature.node.kubernetes.io/rdma-mounts-not-ready=[1-9]' "$out"/fb/* 2>/dev/null \
        || fail "the NFD labels do not count a not-ready RDMA mount: '$(grep -h rdma-mounts "$out"/fb/* 2>/dev/null)'"
    rm -rf /etc/nfs-gds

    note "C: the helper made the mount (it got TCP; gds_policy=warn keeps it) and recorded it"
    run mount-helper 120 mount -t nfs-gds -o gds_policy=warn "$SPEC" "$MNT"
    expect_rc mount-helper 0
    expect_xprt "$MNT" tcp
    grep -lsF "\"$MNT\"" /run/nfs-gds/mounts/* >/dev/null || fail "the helper left no record naming $MNT in /run/nfs-gds/mounts"
    run agent-record 120 nfs-gds agent --once --status-file "$out/c.json" --nfd-dir "$out/fc" --textfile-dir "$out/tc"
    expect_rc agent-record 1
    expect_agent_mount "$out/c.json" "$MNT" meant_by=recorded protocol=tcp verdict=not-ready
    cp "$out"/*.json "$SCN_DIR/" 2>/dev/null
    umount_all_nfs >/dev/null || fail "cannot unmount the NFS mounts"
    rm -rf /var/lib/kubelet "$out"
}

scn_s4c() {
    note "the agent in a container (own mount and PID namespaces, the host's /proc under --root,"
    note "as a hostPath) reads the host's mount table; with only its own /proc it sees its own"
    require_stock_kernel
    local h=/run/nfs-gds-hostview
    rm -rf "$h" && mkdir -p "$h/proc" "$h/out" /mnt/inner
    plain_rdma_mount mount-host /mnt/rdma
    mount --bind /proc "$h/proc" || abort "cannot bind /proc to $h/proc"
    # Inside: the host's /mnt/rdma is unmounted from the container's namespace only, and the
    # container makes its own /mnt/inner; then one pass per view.
    run container 240 unshare --mount --pid --fork --mount-proc --propagation private \
        env H="$h" SPEC="$SPEC" PORT="$RDMA_PORT" bash -c '
            umount -l /mnt/rdma || exit 10
            mount -t nfs4 -o "vers=4.2,proto=rdma,port=$PORT" "$SPEC" /mnt/inner || exit 11
            echo "container PID $$; own NFS mounts: $(awk "\$3 ~ /^nfs/ {print \$2}" /proc/self/mounts | tr "\n" " ")"
            nfs-gds --root "$H" agent --once --status-file "$H/out/host.json" --nfd-dir "$H/out/fh" --textfile-dir "$H/out/th"
            echo "host view: exit $?"
            nfs-gds agent --once --status-file "$H/out/own.json" --nfd-dir "$H/out/fo" --textfile-dir "$H/out/to" --ready-file "$H/out/own-ready"
            echo "own view: exit $?"
            umount /mnt/inner
            exit 0'
    expect_rc container 0
    expect_output container 'host view: exit 1' "the host-view pass did not run to a verdict"
    expect_output container 'own view: exit 1' "the own-view pass did not run to a verdict"
    expect_mounted /mnt/rdma
    cp "$h/out/host.json" "$h/out/own.json" "$SCN_DIR/" 2>/dev/null
    [ "$(jq -r .mount_table "$h/out/host.json" 2>/dev/null)" = "$h/proc/1/mountinfo" ] \
        || fail "host view: read '$(jq -r .mount_table "$h/out/host.json" 2>&1)', expected $h/proc/1/mountinfo"
    expect_agent_mount "$h/out/host.json" /mnt/rdma meant_by=options protocol=rdma
    expect_no_agent_mount "$h/out/host.json" /mnt/inner
    [ "$(jq -r .mount_table "$h/out/own.json" 2>/dev/null)" = /proc/1/mountinfo ] \
        || fail "own view: read '$(jq -r .mount_table "$h/out/own.json" 2>&1)', expected /proc/1/mountinfo (the container's PID 1)"
    expect_agent_mount "$h/out/own.json" /mnt/inner meant_by=options
    expect_no_agent_mount "$h/out/own.json" /mnt/rdma
    umount "$h/proc"
    rm -rf "$h" /mnt/inner
}

# Compare `nfs-gds check --json` (captured as NAME) with what the kernel says.
compare_check_with_kernel() {
    local name=$1 file
    if [ -d /sys/module/nvidia_fs ]; then
        expect_status "$name" nvidia-fs-loaded pass
    else
        expect_status "$name" nvidia-fs-loaded fail
    fi
    if ls /dev/nvidia-fs[0-9]* >/dev/null 2>&1; then
        expect_status "$name" nvidia-fs-devices pass
    else
        expect_status_not "$name" nvidia-fs-devices pass
    fi
    # The loaded rpcrdma decides the mount; the file is judged by rpcrdma-hooks when it is what
    # is (or would first be) loaded, and by rpcrdma-next-load when another build is loaded.
    local file file_hooked=0 loaded_hooked=0 other_build=0
    file=$(modinfo -n rpcrdma 2>/dev/null)
    if [ -f "$file" ] && elf_defines "$file" $HOOK_REG && elf_defines "$file" $HOOK_DREG; then
        file_hooked=1
    fi
    if [ -d /sys/module/rpcrdma ]; then
        if kallsyms_has $HOOK_REG >/dev/null && kallsyms_has $HOOK_DREG >/dev/null; then
            loaded_hooked=1
        fi
        [ "$(loaded_build_id rpcrdma)" = "$(file_build_id "$file")" ] || other_build=1
    fi
    if [ -f "$file" ]; then
        expect_status "$name" rpcrdma-module pass
        if [ $other_build = 1 ]; then
            expect_status "$name" rpcrdma-hooks skip
            if [ $file_hooked = 1 ]; then
                expect_status "$name" rpcrdma-next-load pass
            else
                expect_status "$name" rpcrdma-next-load fail
            fi
        elif [ $file_hooked = 1 ]; then
            expect_status "$name" rpcrdma-hooks pass
        else
            expect_status "$name" rpcrdma-hooks fail
        fi
    fi
    if [ -d /sys/module/rpcrdma ]; then
        if [ $loaded_hooked = 1 ]; then
            expect_status "$name" rpcrdma-loaded pass
        else
            expect_status "$name" rpcrdma-loaded fail
        fi
        if [ $other_build = 0 ]; then
            expect_status "$name" rpcrdma-fresh pass
        elif [ $loaded_hooked = 0 ] && [ $file_hooked = 1 ]; then
            expect_status "$name" rpcrdma-fresh fail
        else
            expect_status "$name" rpcrdma-fresh skip
        fi
    fi
}

scn_s7a() {
    note "check / inspect-module / verify agree with the stock kernel"
    require_stock_kernel
    note "kernel: rpcrdma file $(modinfo -n rpcrdma), loaded build-id $(loaded_build_id rpcrdma), file build-id $(file_build_id "$STOCK_RPCRDMA")"
    note "kernel: kallsyms $HOOK_REG: $(kallsyms_has $HOOK_REG || echo absent)"

    run check 60 nfs-gds check --json
    expect_rc check 1
    expect_json check
    expect_verdict check not-ready
    compare_check_with_kernel check

    run inspect-name 60 nfs-gds inspect-module rpcrdma --json
    expect_rc_not inspect-name 2
    expect_json inspect-name
    expect_status inspect-name rpcrdma-hooks fail
    run inspect-path 60 nfs-gds inspect-module "$STOCK_RPCRDMA" --json
    expect_rc_not inspect-path 2
    expect_json inspect-path
    expect_status inspect-path rpcrdma-hooks fail

    note "verify: a TCP mount"
    plain_tcp_mount mount-tcp /mnt/tcp
    run verify-tcp 60 nfs-gds verify /mnt/tcp --json
    expect_rc verify-tcp 1
    expect_json verify-tcp
    expect_verdict verify-tcp not-ready
    expect_status verify-tcp mount-transport fail
    expect_status verify-tcp mount-options fail

    note "verify: an RDMA mount requested while the TCP mount exists (the trap: it really is TCP)"
    run mount-trapped 120 mount -t nfs4 -o "vers=4.2,proto=rdma,port=$RDMA_PORT" "$SPEC" /mnt/rdma
    expect_xprt /mnt/rdma tcp
    run verify-trapped 60 nfs-gds verify /mnt/rdma --json
    expect_rc verify-trapped 1
    expect_status verify-trapped mount-transport fail
    run umount-both 60 umount /mnt/rdma /mnt/tcp
    expect_rc umount-both 0

    note "verify: a real RDMA mount"
    plain_rdma_mount mount-rdma /mnt/rdma
    expect_xprt /mnt/rdma rdma
    run verify-rdma 60 nfs-gds verify /mnt/rdma --json
    expect_rc_not verify-rdma 2
    expect_json verify-rdma
    expect_status verify-rdma mount-transport pass
    expect_status verify-rdma mount-options pass
    run umount-rdma 60 umount /mnt/rdma
}

scn_s6() {
    note "stale module: a hooked build installed under updates/ while the stock one stays loaded"
    require_stock_kernel
    install_module_build rpcrdma-gpl || abort "cannot install the hooked build"
    local file loaded ondisk
    file=$(modinfo -n rpcrdma)
    loaded=$(loaded_build_id rpcrdma)
    ondisk=$(file_build_id "$file")
    note "kernel: modprobe resolves rpcrdma to $file; loaded build-id $loaded, file build-id $ondisk"
    same_file "$file" "$UPDATES_RPCRDMA" || abort "precondition: depmod did not make $UPDATES_RPCRDMA win"
    [ "$loaded" != "$ondisk" ] || abort "precondition: loaded and on-disk build-ids are equal"

    run check 60 nfs-gds check --json
    expect_rc check 1
    expect_json check
    # A rebuild waiting for a reload: the loaded build has no hooks, the file has them.
    expect_status check rpcrdma-fresh fail
    expect_status check rpcrdma-next-load pass
    expect_status check rpcrdma-loaded fail
    compare_check_with_kernel check
}

scn_s8() {
    note "an rpcrdma whose import CRCs do not match the running ib_core: nfs-gds says modprobe will"
    note "refuse it, naming the symbol, before modprobe is tried; then the kernel really refuses it"
    install_module_build none-rpcrdma || abort "cannot remove the build s6 left under updates/"
    require_stock_kernel
    local sym
    sym=$(cat "$PAYLOAD/modules/badcrc-symbol")
    note "the build's __versions entry for $sym was altered"
    stage_rpcrdma rpcrdma-badcrc || abort "cannot put the altered build in place (see above)"
    # Before the load: the file has the hooks, so only the CRC comparison can tell.
    run check 60 nfs-gds check --json
    expect_rc check 1
    expect_json check
    expect_status check rpcrdma-hooks pass
    expect_status check rpcrdma-abi fail
    expect_summary check rpcrdma-abi "disagrees about version of symbol $sym"
    run inspect 60 nfs-gds inspect-module rpcrdma --json
    expect_rc inspect 0
    expect_json inspect
    run modprobe-badcrc 60 modprobe rpcrdma
    expect_rc_not modprobe-badcrc 0
    [ ! -d /sys/module/rpcrdma ] || fail "the altered rpcrdma was loaded"
    dmesg | grep -q "rpcrdma: disagrees about version of symbol $sym" \
        || fail "the kernel did not log 'rpcrdma: disagrees about version of symbol $sym'"
    dmesg | grep -E "rpcrdma: (disagrees|Unknown symbol)" | tail -n 3 | sed 's/^/    dmesg | /'
    note "back to the inbox module: its CRCs agree"
    install_module_build none-rpcrdma || abort "cannot remove the altered build"
    run check-stock 60 nfs-gds check --json
    expect_json check-stock
    expect_status check-stock rpcrdma-abi pass
    run modprobe-stock 60 modprobe rpcrdma
    expect_rc modprobe-stock 0
    start_nfsd || abort "cannot restart nfsd"
    require_stock_kernel
}

# One build of rpcrdma on a kernel without symbol CRCs: what nfs-gds predicts before the load
# (rpcrdma-abi), then what the kernel does. A row of the side-by-side table; sets S11_STATUS and
# S11_LOADED. NAME: a build in the payload; WHAT: its description for the table. nfsd is stopped
# and rpcrdma unloaded; every build goes to the same path under updates/, so depmod's indexes made
# for the first one (s11 stages it) hold for all.
s11_row() {
    local name=$1 what=$2 status summary btf loaded why t0=$SECONDS
    install_module_files "$name" || { fail "cannot put $name in place"; return 1; }
    run "check-$name" 60 nfs-gds check --json
    expect_json "check-$name"
    status=$(json_status "check-$name" rpcrdma-abi)
    summary=$(json_summary "check-$name" rpcrdma-abi)
    run "inspect-$name" 60 nfs-gds inspect-module rpcrdma --json
    expect_json "inspect-$name"
    btf=$(jq -r '.load.btf | if . == null then "none" elif .Ok then (if .Ok.distilled != null then "distilled base" else "split" end) else "unreadable" end' \
        "$SCN_DIR/inspect-$name.out" 2>/dev/null)
    case $name in
        rpcrdma-otherrelease) ;;
        *) [ "$(jq -r .load.versioned_imports "$SCN_DIR/inspect-$name.out" 2>/dev/null)" = 0 ] \
            || fail "inspect-$name: a build for $KVER should carry no symbol CRCs" ;;
    esac
    dmesg -C
    run "modprobe-$name" 60 modprobe rpcrdma
    if [ "$(rc_of "modprobe-$name")" = 0 ] && [ -d /sys/module/rpcrdma ]; then
        loaded=yes why="loaded"
    else
        loaded=no
        why=$(dmesg | grep -m1 -E 'rpcrdma|BTF' | sed 's/^\[[^]]*\] *//')
        why="refused: ${why:-$(output_of "modprobe-$name" | tail -n 1)}"
    fi
    dmesg | sed 's/^/    dmesg | /' | grep -E 'rpcrdma|BTF|btf' | head -n 5
    unload_rpcrdma >/dev/null || true
    printf '| %s | %s | %s | %s | %s | %s |\n' "$KVER" "$what" "$btf" "$status" "$why" "${summary//|/\\|}" \
        | tee -a "$SCN_DIR/crcless-table.md"
    S11_STATUS=$status S11_LOADED=$loaded
    note "$name: $((SECONDS - t0)) s"
}

scn_s11() {
    note "a kernel without symbol CRCs: for each build of rpcrdma, nfs-gds's rpcrdma-abi before the"
    note "load, then the kernel's own action (vermagic, and BTF validation when it enforces it)"
    require_stock_kernel
    local cfg=/boot/config-$KVER
    [ -f "$cfg" ] || cfg=/lib/modules/$KVER/config # Debian's split 7.x packages keep it there
    grep -q '^CONFIG_MODVERSIONS=y' "$cfg" && fail "$KVER has CONFIG_MODVERSIONS=y: this scenario needs a kernel without it"
    note "$(grep -E '^# CONFIG_(MODVERSIONS|MODULE_ALLOW_BTF_MISMATCH) is not set|^CONFIG_(MODVERSIONS|MODULE_ALLOW_BTF_MISMATCH|DEBUG_INFO_BTF_MODULES)=' "$cfg" | tr '\n' ' ')"
    note "the builds (name, the kernel whose vmlinux their BTF was made against, base): $(tr '\n' ';' <"$PAYLOAD/modules/btf-variants")"
    printf '| kernel | build | BTF | rpcrdma-abi | kernel | nfs-gds says |\n|---|---|---|---|---|---|\n' >"$SCN_DIR/crcless-table.md"
    stage_rpcrdma rpcrdma-gpl || abort "cannot stage the test builds (see above)"
    local row name what
    for row in \
        "rpcrdma-gpl|this build, BTF as kbuild makes it" \
        "rpcrdma-nobtf|this build, no BTF" \
        "rpcrdma-btf-split|this build, split BTF without a distilled base" \
        "rpcrdma-otherbtf|BTF made against another kernel's vmlinux, distilled base" \
        "rpcrdma-otherbtf-split|BTF made against another kernel's vmlinux, plain split" \
        "rpcrdma-otherrelease|a build for another release (the suite's own kernel)"; do
        name=${row%%|*} what=${row#*|}
        s11_row "$name" "$what" || continue
        case $S11_STATUS/$S11_LOADED in
            pass/yes | fail/no | warn/* | unknown/*) ;;
            pass/no) fail "$name: nfs-gds predicted the load (pass), the kernel refused it" ;;
            fail/yes) fail "$name: nfs-gds predicted a refusal (fail), the kernel loaded it" ;;
            *) fail "$name: rpcrdma-abi is '$S11_STATUS' (loaded: $S11_LOADED)" ;;
        esac
    done
    note "the side-by-side table:"
    sed 's/^/    /' "$SCN_DIR/crcless-table.md"
    # The builds whose outcome the kernel decides by vermagic alone must be predicted exactly.
    grep -q '| this build, no BTF | none | pass | loaded |' "$SCN_DIR/crcless-table.md" \
        || fail "this kernel's build without BTF: not predicted pass and loaded"
    grep -q '| a build for another release (the suite.s own kernel) | [^|]* | fail | refused' "$SCN_DIR/crcless-table.md" \
        || fail "the other release's build: not predicted fail and refused"
    note "back to the inbox module"
    install_module_build none-rpcrdma || abort "cannot remove the test build"
    run modprobe-stock 60 modprobe rpcrdma
    expect_rc modprobe-stock 0
    start_nfsd || abort "cannot restart nfsd"
    require_stock_kernel
}

# ---------------------------------------------------------------- hooked rpcrdma

step_switch_gpl() { switch_rpcrdma rpcrdma-gpl; }
step_switch_plain() { switch_rpcrdma rpcrdma-plain; }
step_switch_gpl_nvidia() { NVFS_UNDER_TEST=nvidia-fs && switch_rpcrdma rpcrdma-gpl nvidia-fs; }
step_switch_plain_nvidia() { NVFS_UNDER_TEST=nvidia-fs && switch_rpcrdma rpcrdma-plain nvidia-fs; }

# Open /dev/nvidia-fs0 (as a GDS process would), print /proc/driver/nvidia-fs/modules while open.
modules_while_open() {
    local out
    exec 7</dev/nvidia-fs0 || { echo "cannot open /dev/nvidia-fs0"; return 1; }
    out=$(cat /proc/driver/nvidia-fs/modules)
    exec 7<&-
    printf '%s\n' "$out"
}

scn_infra_gpl() {
    note "test bed with the GPL-hooked rpcrdma build: it works as rpcrdma and registers with $(nvfs_name) $(nvfs_expected_version)"
    require_hooked_kernel gpl
    note "kallsyms (type, module): $HOOK_REG $(kallsyms_has $HOOK_REG); $HOOK_DREG $(kallsyms_has $HOOK_DREG)"
    local c mods
    c=$(server_file infra-gpl.txt)
    plain_rdma_mount mount-rdma /mnt/rdma
    expect_xprt /mnt/rdma rdma
    expect_file_content /mnt/rdma/infra-gpl.txt "$c"
    run umount-rdma 60 umount /mnt/rdma
    expect_rc umount-rdma 0
    [ -e /dev/nvidia-fs0 ] || fail "$(nvfs_name) made no /dev/nvidia-fs0"
    if [ "$NVFS_UNDER_TEST" = nvidia-fs ]; then
        # NVIDIA's driver makes its 16 device nodes whether or not there is a GPU.
        local n
        n=$(find /dev -maxdepth 1 -name 'nvidia-fs[0-9]*' | wc -l)
        [ "$n" = 16 ] || fail "$(nvfs_name) made $n /dev/nvidia-fsN nodes, not 16"
        note "kernel log of the load: $(dmesg | grep -iE 'nvidia.fs|nvfs' | tail -n 6 | tr '\n' ';')"
    fi
    mods=$(modules_while_open)
    note "/proc/driver/nvidia-fs/modules while /dev/nvidia-fs0 is open: $(echo "$mods" | tr '\n' ';')"
    echo "$mods" | grep -q '^rpcrdma:' || fail "rpcrdma did not register with nvidia_fs on open (GPL export)"
    ! grep -q '^rpcrdma:' /proc/driver/nvidia-fs/modules || fail "rpcrdma still registered after the last close"
}

scn_s5a() {
    note "happy path: GPL-hooked rpcrdma + nvidia_fs, default policy (enforce), no config → mounts over RDMA"
    require_hooked_kernel gpl
    local c
    c=$(server_file s5a.txt)
    run mount 120 mount -t nfs-gds "$SPEC" "$MNT"
    expect_rc mount 0
    expect_mounted "$MNT"
    expect_xprt "$MNT" rdma
    expect_mount_opt "$MNT" proto=rdma
    expect_mount_opt "$MNT" port=$RDMA_PORT
    expect_file_content "$MNT/s5a.txt" "$c"
    run umount 60 umount "$MNT"
    expect_rc umount 0
}

# A mount that shares an NFS superblock is shown under the name the superblock was first mounted
# with. The helper must still know its own mount: refuse and unmount it when the transport trap
# gave it TCP, keep and record it when it runs over RDMA; and a [[mount]] rule written with the
# address must cover mounts the kernel shows under the server's name.
trap_on_shared_superblock() {
    local first=$1 label=$2 c
    c=$(server_file s4d.txt)
    run "mount-first-$label" 120 mount -t nfs4 -o proto=tcp,vers=4.2 "$first" /mnt/lo
    expect_rc "mount-first-$label" 0
    expect_xprt /mnt/lo tcp
    watched_run "mount-trap-$label" 120 "$MNT" mount -t nfs-gds "$SPEC" "$MNT"
    expect_rc "mount-trap-$label" 32
    expect_names "mount-trap-$label" mount-transport
    expect_output "mount-trap-$label" 'unmounted before it reached' "the refusal does not say that the refused mount was unmounted before it reached DIR"
    if output_of "mount-trap-$label" | grep -q 'nothing appeared'; then
        fail "mount-trap-$label: says nothing appeared, though a mount did"
    fi
    # Not for a moment: no change event showed a mount on DIR, and no mount call named it.
    expect_never_on "mount-trap-$label" "$MNT"
    expect_stage_empty "mount-trap-$label"
    expect_not_mounted "$MNT"
    expect_mounted /mnt/lo
    expect_xprt /mnt/lo tcp
    expect_file_content /mnt/lo/s4d.txt "$c"
    run "umount-first-$label" 60 umount /mnt/lo
    expect_rc "umount-first-$label" 0
}

scn_s4d() {
    note "the transport trap on a shared superblock: the helper's mount is shown under the first mount's name"
    require_hooked_kernel gpl
    mkdir -p /mnt/lo /mnt/a /mnt/pv
    local out=/run/nfs-gds-agent-test
    rm -rf "$out" && mkdir -p "$out"

    note "A: 127.0.0.1:$EXPORT (this machine, another address) over TCP first, then nfs-gds of $SPEC"
    trap_on_shared_superblock "127.0.0.1:$EXPORT" addr

    note "B: the hostname form: nfs-gds-vm:$EXPORT/ (/etc/hosts: $SERVER) over TCP first; the pre-mount"
    note "   transport-trap check would refuse it by name already, so it is off to reach the mount"
    printf '[checks]\ntransport-trap = "off"\n' | write_config
    trap_on_shared_superblock "nfs-gds-vm:$EXPORT/" name
    rm -rf /etc/nfs-gds

    note "C: nfs-gds-vm:$EXPORT through nfs-gds over RDMA, then $SPEC through nfs-gds: both RDMA, both"
    note "   recorded; a [[mount]] rule written with the address covers a plain mount shown by the name"
    printf '[[mount]]\nsource = "%s"\ndefault = "enforce"\n' "$SPEC" | write_config
    run mount-name 120 mount -t nfs-gds "nfs-gds-vm:$EXPORT" /mnt/a
    expect_rc mount-name 0
    run mount-addr 120 mount -t nfs-gds "$SPEC" "$MNT"
    expect_rc mount-addr 0
    expect_xprt "$MNT" rdma
    note "kernel shows: $(awk -v t="$MNT" '$2 == t' /proc/mounts)"
    grep -lsF "\"spec\": \"$SPEC\"" /run/nfs-gds/mounts/*.json >/dev/null \
        || fail "no record of $MNT names the spec $SPEC: $(cat /run/nfs-gds/mounts/*.json 2>&1)"
    run mount-pv 120 mount -t nfs4 -o "vers=4.2,proto=rdma,port=$RDMA_PORT" "nfs-gds-vm:$EXPORT" /mnt/pv
    expect_rc mount-pv 0
    run verify-addr 60 nfs-gds verify "$MNT" --json
    expect_rc verify-addr 0
    run policy-pv 60 nfs-gds policy show --target /mnt/pv --source "nfs-gds-vm:$EXPORT"
    expect_rc policy-pv 0
    expect_output policy-pv 'table 1 applies' "the rule written with the address does not cover the name"
    run agent 120 nfs-gds agent --once --status-file "$out/s.json" --nfd-dir "$out/f" --textfile-dir "$out/t"
    expect_agent_mount "$out/s.json" /mnt/a meant_by=recorded protocol=rdma
    expect_agent_mount "$out/s.json" "$MNT" meant_by=recorded protocol=rdma
    expect_agent_mount "$out/s.json" /mnt/pv meant_by=policy protocol=rdma
    cp "$out"/s.json "$SCN_DIR/" 2>/dev/null
    umount_all_nfs >/dev/null || fail "cannot unmount the NFS mounts"
    rm -rf "$out"
}

scn_s7b() {
    note "check / inspect-module / verify agree with the kernel once the GPL-hooked build runs"
    require_hooked_kernel gpl
    run check 60 nfs-gds check --json --probe
    expect_rc check 0
    expect_json check
    expect_verdict check ready ready-with-warnings
    compare_check_with_kernel check
    expect_status check rpcrdma-hook-export pass
    expect_status check nvfs-registration pass

    run inspect-name 60 nfs-gds inspect-module rpcrdma --json
    expect_rc_not inspect-name 2
    expect_json inspect-name
    expect_status inspect-name rpcrdma-hooks pass
    expect_status inspect-name rpcrdma-hook-export pass

    note "inspect-module of the plain-export build (a file, not installed): hooks present, export refused by this kernel"
    run inspect-plain 60 nfs-gds inspect-module "$PAYLOAD/modules/rpcrdma-plain$MODSUFFIX" --json
    expect_rc_not inspect-plain 2
    expect_json inspect-plain
    expect_status inspect-plain rpcrdma-hooks pass
    expect_status inspect-plain rpcrdma-hook-export fail

    plain_rdma_mount mount-rdma /mnt/rdma
    run verify 60 nfs-gds verify /mnt/rdma --json
    expect_rc verify 0
    expect_json verify
    expect_verdict verify ready ready-with-warnings
    expect_status verify mount-transport pass
    expect_status verify mount-options pass
    run umount 60 umount /mnt/rdma
}

scn_infra_plain() {
    note "test bed with the plain-export build: it works as rpcrdma, but this kernel refuses symbol_get"
    require_hooked_kernel plain
    note "kallsyms (type, module): $HOOK_REG $(kallsyms_has $HOOK_REG); $HOOK_DREG $(kallsyms_has $HOOK_DREG)"
    local c mods
    c=$(server_file infra-plain.txt)
    plain_rdma_mount mount-rdma /mnt/rdma
    expect_xprt /mnt/rdma rdma
    expect_file_content /mnt/rdma/infra-plain.txt "$c"
    run umount-rdma 60 umount /mnt/rdma
    # Counted before and after: an earlier block may have logged the same refusal.
    local refusals
    refusals=$(dmesg | grep -c "failing symbol_get of non-GPLONLY symbol $HOOK_REG")
    mods=$(modules_while_open)
    note "/proc/driver/nvidia-fs/modules while /dev/nvidia-fs0 is open ($(nvfs_name)): $(echo "$mods" | tr '\n' ';')"
    ! echo "$mods" | grep -q '^rpcrdma:' || fail "rpcrdma registered although its hooks are plain EXPORT_SYMBOL"
    [ "$(dmesg | grep -c "failing symbol_get of non-GPLONLY symbol $HOOK_REG")" -gt "$refusals" ] \
        || fail "opening /dev/nvidia-fs0 did not make the kernel log 'failing symbol_get of non-GPLONLY symbol $HOOK_REG'"
    note "kernel log: $(dmesg | grep -E 'symbol_get|nvfs|nvidia-fs' | tail -n 4 | tr '\n' ';')"
}

scn_s5b() {
    note "plain EXPORT_SYMBOL hooks on a kernel whose symbol_get takes only GPL exports → refused"
    require_hooked_kernel plain
    run mount 120 mount -t nfs-gds "$SPEC" "$MNT"
    expect_rc mount 32
    expect_not_mounted "$MNT"
    expect_names mount rpcrdma-hook-export
    run check 60 nfs-gds check --json --probe
    expect_rc check 1
    expect_status check rpcrdma-hook-export fail
    expect_status check nvfs-registration fail
}

# ---------------------------------------------------------------- NVIDIA's /proc files

# What NVIDIA's own nvidia-fs writes under /proc/driver/nvidia-fs (kept in the scenario's results
# as proc/*.txt, the source of the parsers' fixtures), and that nfs-gds reads each file the way the
# kernel wrote it: the version line, the device count, the registration while a handle is open,
# the stats layout (the agent's nvidia-fs series), and what check and doctor say of this node.
scn_nvfs_proc() {
    note "$(nvfs_name) $(nvfs_expected_version): its /proc/driver/nvidia-fs files and what nfs-gds makes of them"
    require_hooked_kernel gpl
    local d=$SCN_DIR/proc f want n out=/run/nfs-gds-nvfs-proc
    mkdir -p "$d" "$out"
    for f in /proc/driver/nvidia-fs/*; do cat "$f" >"$d/$(basename "$f").txt" 2>&1; done
    modules_while_open >"$d/modules-while-open.txt"
    cat /proc/driver/nvidia-fs/modules >"$d/modules-after-close.txt"
    for f in /sys/module/nvidia_fs/parameters/*; do echo "$(basename "$f")=$(cat "$f")"; done >"$d/parameters.txt"
    dmesg | grep -iE 'nvidia.fs|nvfs' >"$d/dmesg.txt"
    note "files: $(cd "$d" && ls | tr '\n' ' ')"

    want=$(nvfs_expected_version)
    grep -qx "version: ${want%.*}" "$d/version.txt" || fail "/proc/driver/nvidia-fs/version is '$(cat "$d/version.txt")', not 'version: ${want%.*}'"
    n=$(find /dev -maxdepth 1 -name 'nvidia-fs[0-9]*' | wc -l)
    grep -qx "$n" "$d/devcount.txt" || fail "devcount says '$(cat "$d/devcount.txt")', /dev has $n nvidia-fsN nodes"
    grep -q '^rpcrdma:' "$d/modules-while-open.txt" || fail "modules did not list rpcrdma while /dev/nvidia-fs0 was open"
    ! grep -q '^rpcrdma:' "$d/modules-after-close.txt" || fail "modules still lists rpcrdma after the last close"
    grep -q "NVFS Driver(version: $want)" "$d/stats.txt" || fail "stats does not name 'NVFS Driver(version: $want)'"

    run agent 120 nfs-gds agent --once --status-file "$out/status.json" --nfd-dir "$out/nfd" --textfile-dir "$out/prom"
    expect_rc_not agent 2
    cp "$out"/prom/*.prom "$d/../agent.prom" 2>/dev/null || true
    grep -hqx 'nfs_gds_nvfs_stats_readable 1' "$out"/prom/*.prom 2>/dev/null \
        || fail "the agent did not understand this stats file: '$(grep -h '^nfs_gds_nvfs_stats_readable' "$out"/prom/*.prom 2>/dev/null)'"
    grep -hqx 'nfs_gds_nvfs_io_stats_enabled 0' "$out"/prom/*.prom 2>/dev/null \
        || fail "the agent does not say the IO counters are off (rw_stats_enabled=$(cat /sys/module/nvidia_fs/parameters/rw_stats_enabled 2>&1))"

    run check 60 nfs-gds check --json --probe
    expect_json check
    expect_status check nvidia-fs-loaded pass
    expect_status check nvidia-fs-devices pass
    expect_status check nvfs-registration pass
    # Each /proc table nvidia-fs publishes is understood (skip when a release has none).
    expect_status_not check pcie-acs unknown
    expect_status_not check pcie-path unknown
    expect_output check "$want" "check names the nvidia-fs version $want"
    run doctor 180 nfs-gds doctor --probe
    expect_rc_not doctor 2
    expect_output doctor "$want" "doctor names the nvidia-fs version $want"
}

# ---------------------------------------------------------------- driver container

# What a GPU Operator driver container does: the hooked rpcrdma and nvidia_fs insmod'ed from the
# container's own files, outside /lib/modules, while the host's module tree keeps the inbox
# rpcrdma (modprobe and modinfo still resolve to it).
CONTAINER_DIR=/opt/driver-container/lib/modules
step_switch_container() {
    umount_all_nfs || { echo "NFS mounts remain"; return 1; }
    stop_nfsd || return 1
    unload_rpcrdma || return 1
    rm -f /lib/modules/"$KVER"/updates/rpcrdma.ko* /lib/modules/"$KVER"/updates/nvidia_fs.ko*
    depmod -a "$KVER" || return 1
    mkdir -p "$CONTAINER_DIR"
    install -m 0644 "$PAYLOAD/modules/rpcrdma-gpl$MODSUFFIX" "$CONTAINER_DIR/rpcrdma$MODSUFFIX"
    install -m 0644 "$PAYLOAD/modules/nvidia_fs$MODSUFFIX" "$CONTAINER_DIR/nvidia_fs$MODSUFFIX"
    # insmod resolves no dependencies: load the inbox ones first, as the container's script does.
    local deps
    deps=$(modinfo -F depends "$CONTAINER_DIR/rpcrdma$MODSUFFIX" | tr ',' ' ')
    echo "rpcrdma depends on: $deps"
    # shellcheck disable=SC2086  # a list of module names
    modprobe -a $deps || { echo "modprobe of the dependencies failed"; return 1; }
    insmod "$CONTAINER_DIR/rpcrdma$MODSUFFIX" || { echo "insmod rpcrdma from the container failed"; return 1; }
    insmod "$CONTAINER_DIR/nvidia_fs$MODSUFFIX" || { echo "insmod nvidia_fs from the container failed"; return 1; }
    for _ in $(seq 1 10); do [ -e /dev/nvidia-fs0 ] && break; sleep 1; done
    start_nfsd || return 1
    echo "loaded rpcrdma build-id $(loaded_build_id rpcrdma); modprobe resolves $(modinfo -n rpcrdma)"
}

scn_infra_container() {
    note "driver container: the hooked rpcrdma insmod-ed from outside the host's module tree, which keeps the inbox one"
    local file loaded c mods
    file=$(modinfo -n rpcrdma 2>/dev/null)
    loaded=$(loaded_build_id rpcrdma)
    note "kernel: modprobe resolves rpcrdma to $file (build-id $(file_build_id "$file")); loaded build-id $loaded"
    note "kernel: container file $CONTAINER_DIR/rpcrdma$MODSUFFIX build-id $(file_build_id "$CONTAINER_DIR/rpcrdma$MODSUFFIX")"
    same_file "$file" "$STOCK_RPCRDMA" || fail "the host tree does not resolve rpcrdma to the inbox module ($file)"
    [ "$loaded" = "$(file_build_id "$CONTAINER_DIR/rpcrdma$MODSUFFIX")" ] || fail "the loaded rpcrdma is not the container's build"
    [ "$loaded" != "$(file_build_id "$STOCK_RPCRDMA")" ] || fail "the loaded rpcrdma has the inbox module's build-id"
    kallsyms_has $HOOK_REG >/dev/null || fail "the loaded rpcrdma has no $HOOK_REG in /proc/kallsyms"
    [ -d /sys/module/nvidia_fs ] || fail "nvidia_fs is not loaded"
    mods=$(modules_while_open)
    echo "$mods" | grep -q '^rpcrdma:' || fail "the container's rpcrdma did not register with nvidia_fs on open"
    c=$(server_file infra-container.txt)
    plain_rdma_mount mount-rdma /mnt/rdma
    expect_xprt /mnt/rdma rdma
    expect_file_content /mnt/rdma/infra-container.txt "$c"
    run umount-rdma 60 umount /mnt/rdma
    # The loaded module carries the mount: check is ready (with a warning about the next load)
    # and the helper mounts under enforce, saying where the loaded build came from.
    run check 60 nfs-gds check --json
    expect_rc check 0
    expect_json check
    expect_verdict check ready-with-warnings
    expect_status check rpcrdma-loaded pass
    expect_status check rpcrdma-hooks skip
    expect_status check rpcrdma-next-load fail
    expect_output check "came from outside the tree" "check names the build's origin"
    run mount-gds 120 mount -t nfs-gds "$SPEC" "$MNT"
    expect_rc mount-gds 0
    expect_mounted "$MNT"
    expect_xprt "$MNT" rdma
    expect_output mount-gds "rpcrdma-next-load" "the helper warns about the next load"
    is_mounted "$MNT" && umount "$MNT"
    return 0
}

scn_s9() {
    note "next boot: a newer kernel package installed beside the running one, without the hooked"
    note "rpcrdma (an upgrade DKMS built nothing for); check, doctor and the helper name that kernel"
    require_hooked_kernel gpl
    local debs deb pkg next
    debs=("$PAYLOAD"/kernels/linux-image-*.deb)
    [ -f "${debs[0]}" ] || abort "the payload has no second kernel package (the host could not download one)"
    deb=/var/cache/nfs-gds-vm/$(basename "${debs[0]}")
    mkdir -p /var/cache/nfs-gds-vm && cp "${debs[0]}" "$deb" && chmod 0644 "$deb"
    pkg=$(dpkg-deb --field "$deb" Package)
    next=${pkg#linux-image-}
    note "installing $pkg ($next) as apt upgrade would; INITRD=No skips its initramfs, which no check reads"
    run install-kernel 600 env INITRD=No DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$deb"
    expect_rc install-kernel 0
    [ -d "/lib/modules/$next/kernel/net/sunrpc/xprtrdma" ] || abort "the package installed no module tree for $next"
    ls /boot/vmlinuz-* | sed 's/^/    boot | /'
    [ ! -e "/lib/modules/$next/updates" ] || fail "the new kernel's tree has an updates/ directory: not the case under test"

    run check 60 nfs-gds check --json
    expect_rc check 0
    expect_json check
    expect_verdict check ready-with-warnings
    expect_status check next-boot fail
    expect_summary check next-boot "$next"
    run doctor 180 nfs-gds doctor
    expect_output doctor "$next" "doctor does not name the next kernel $next"
    run mount-gds 120 mount -t nfs-gds "$SPEC" "$MNT"
    expect_rc mount-gds 0
    expect_mounted "$MNT"
    expect_xprt "$MNT" rdma
    expect_output mount-gds "next-boot" "the helper does not warn about the next boot"
    is_mounted "$MNT" && umount "$MNT"

    note "removing $pkg: the next boot starts the running kernel again"
    run purge-kernel 300 env INITRD=No DEBIAN_FRONTEND=noninteractive apt-get purge -y "$pkg"
    expect_rc purge-kernel 0
    rm -rf "/lib/modules/$next"
    run check-after 60 nfs-gds check --json
    expect_json check-after
    expect_status check-after next-boot pass
}

# ---------------------------------------------------------------- runner

run_plan reset_guest_state
