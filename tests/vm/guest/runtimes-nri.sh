#!/bin/bash
# The NRI gate's cases (a)–(l) in the runtimes guest (sourced by runtimes-scenarios.sh; the
# helpers are in cri.sh). Every case starts the plugin as its systemd unit would (`nfs-gds nri`
# on /var/run/nri/nri.sock) and requires that containerd logged its registration, so a case
# never passes with the gate absent. The volumes are the test bed's export mounted as kubelet
# mounts a PV; "a TCP volume" is `mount -t nfs -o vers=4.2,proto=tcp`.

NRI_CSI_DIR=/var/lib/kubelet/pods/6b1f0c3e-0000-4000-8000-000000000001/volumes/kubernetes.io~csi/pv-gds/mount
GDS_ANNOTATION=nfs-gds/gds=true

nri_prepare() {
    containerd_prepare
    nri_start
}

# The system log's nfs-gds lines so far (to tell what a case added).
nfs_gds_log_lines() { grep -c 'nfs-gds\[' "$OCI_SYSLOG" 2>/dev/null || echo 0; }

# The transport trap on a declared server: [[mount]] declares the export, mounted over TCP.
trap_volume() {
    printf '[[mount]]\nsource = "%s"\n' "$SPEC" | write_config
    kubelet_mount pv-tcp "vers=4.2,proto=tcp" /mnt/tcp
    expect_xprt /mnt/tcp tcp
}

scn_nri_a() {
    note "(a) a GDS pod on the verified NFS/RDMA volume is created and reads the server's file"
    require_hooked_kernel gpl
    nri_prepare
    local c
    c=$(server_file nri-a.txt)
    kubelet_mount pv "vers=4.2,proto=rdma,port=$RDMA_PORT" /mnt/rdma
    expect_xprt /mnt/rdma rdma
    nri_reads_file pod /mnt/rdma nri-a.txt --annotation "$GDS_ANNOTATION"
    expect_rc pod 0
    [ "$(cat "$SCN_DIR/pod.out")" = "$c" ] || fail "the container read '$(cat "$SCN_DIR/pod.out")', expected '$c'"
}

scn_nri_b() {
    note "(b) the transport trap on a [[mount]]-declared server: CreateContainer fails with the reason"
    require_hooked_kernel gpl
    nri_prepare
    trap_volume
    cri pod run --name trapped --bind /mnt/tcp:/data -- echo NRI-RAN
    expect_cri_refusal pod 'mount-transport|transport-trap'
    expect_output pod '/data' "the CRI error does not name the container path"
    expect_output pod '10\.0\.2\.15:/export' "the CRI error does not name the export"
    expect_output pod 'trapped' "the CRI error does not name the pod"
    expect_syslog 'trapped.*/data|/data.*trapped' "the refusal is not in the system log"
}

scn_nri_c() {
    note "(c) a pod without NFS volumes is created (on a node that is not ready for GDS)"
    require_stock_kernel
    nri_prepare
    cri pod run --name no-nfs --annotation "$GDS_ANNOTATION" -- echo NRI-RAN
    expect_rc pod 0
    expect_output pod NRI-RAN "the container did not run"
}

scn_nri_d() {
    note "(d) under warn the pod is created, the warning logged"
    require_hooked_kernel gpl
    nri_prepare
    printf 'default = "warn"\n\n[[mount]]\nsource = "%s"\n' "$SPEC" | write_config
    kubelet_mount pv-tcp "vers=4.2,proto=tcp" /mnt/tcp
    cri pod run --name warned --bind /mnt/tcp:/data -- echo NRI-RAN
    expect_rc pod 0
    expect_output pod NRI-RAN "the container did not run"
    expect_syslog 'warn.*/data.*10\.0\.2\.15:/export' "the warning is not in the system log"
}

scn_nri_e() {
    note "(e) an NFS volume not meant for GDS: created, nothing logged"
    require_hooked_kernel gpl
    nri_prepare
    kubelet_mount pv-tcp "vers=4.2,proto=tcp" /mnt/tcp
    local before
    before=$(nfs_gds_log_lines)
    cri pod run --name plain --bind /mnt/tcp:/data -- echo NRI-RAN
    expect_rc pod 0
    expect_output pod NRI-RAN "the container did not run"
    [ "$(nfs_gds_log_lines)" = "$before" ] || fail "nfs-gds logged about a volume not meant for GDS: $(grep 'nfs-gds\[' "$OCI_SYSLOG" | tail -n 1)"
}

scn_nri_f() {
    note "(f) the pod annotation $GDS_ANNOTATION on a TCP volume refuses"
    require_hooked_kernel gpl
    nri_prepare
    kubelet_mount pv-tcp "vers=4.2,proto=tcp" /mnt/tcp
    cri pod run --name annotated --annotation "$GDS_ANNOTATION" --bind /mnt/tcp:/data -- echo NRI-RAN
    expect_cri_refusal pod 'mount-transport'
    expect_output pod '/data' "the CRI error does not name the container path"
}

scn_nri_g() {
    note "(g) the GDS CDI device (/dev/nvidia-fs0) on a TCP volume refuses"
    require_hooked_kernel gpl
    nri_prepare
    [ -c /dev/nvidia-fs0 ] || abort "precondition: no /dev/nvidia-fs0 (the nvidia_fs stub makes it)"
    kubelet_mount pv-tcp "vers=4.2,proto=tcp" /mnt/tcp
    cri pod run --name gds-device --device /dev/nvidia-fs0:/dev/nvidia-fs0 --bind /mnt/tcp:/data -- echo NRI-RAN
    expect_cri_refusal pod 'mount-transport'
}

scn_nri_h() {
    note "(h) a privileged pod (every host device, /dev/nvidia-fs* too) with a TCP volume and no GDS request: created"
    require_hooked_kernel gpl
    nri_prepare
    kubelet_mount pv-tcp "vers=4.2,proto=tcp" /mnt/tcp
    cri pod run --name privileged --privileged --bind /mnt/tcp:/data -- sh -c 'ls /dev/nvidia-fs0 && echo NRI-RAN'
    expect_rc pod 0
    expect_output pod NRI-RAN "the container did not run"
    expect_output pod '/dev/nvidia-fs0' "the privileged container does not see /dev/nvidia-fs0 (the case needs it)"
}

scn_nri_i() {
    note "(i) a CSI-style volume source over TCP in a marked pod is refused"
    require_hooked_kernel gpl
    nri_prepare
    kubelet_mount pv-csi "vers=4.2,proto=tcp" "$NRI_CSI_DIR"
    cri pod run --name csi --annotation "$GDS_ANNOTATION" --bind "$NRI_CSI_DIR:/data" -- echo NRI-RAN
    expect_cri_refusal pod 'mount-transport'
}

scn_nri_j() {
    note "(j) the plugin killed (-9): the pod is created (NRI 0.8 fails open) and the agent reports the gate down"
    require_hooked_kernel gpl
    nri_prepare
    run agent-up 120 nfs-gds agent --once --textfile-dir /run/nri-agent-prom --status-file /run/nri-agent.json --nfd-dir /run/nri-agent-nfd
    grep -Eq '^nfs_gds_nri_connected 1$' /run/nri-agent-prom/nfs-gds.prom ||
        fail "with the plugin up the agent does not export nfs_gds_nri_connected 1: $(grep nri /run/nri-agent-prom/nfs-gds.prom 2>&1)"
    trap_volume
    kill -9 "$(cat "$NRI_PIDFILE")"
    sleep 1
    cri pod run --name open --bind /mnt/tcp:/data -- echo NRI-RAN
    expect_rc pod 0
    expect_output pod NRI-RAN "with the plugin gone the container did not run (NRI 0.8 fails open)"
    run agent-down 120 nfs-gds agent --once --textfile-dir /run/nri-agent-prom --status-file /run/nri-agent.json --nfd-dir /run/nri-agent-nfd
    grep -Eq '^nfs_gds_nri_connected 0$' /run/nri-agent-prom/nfs-gds.prom ||
        fail "after kill -9 the agent does not export nfs_gds_nri_connected 0: $(grep nri /run/nri-agent-prom/nfs-gds.prom 2>&1)"
    rm -rf /run/nri-agent-prom /run/nri-agent.json /run/nri-agent-nfd
    nri_stop
}

# containerd restarted; wait for nfs-gds to register again and time it (the fail-open window).
restart_containerd_timed() {
    local what=$1 since t0 t1
    containerd_stop
    since=$(date +%s)
    t0=$(date +%s%N)
    containerd_start >"$SCN_DIR/containerd-$what.log" 2>&1 || { fail "containerd did not come back ($what)"; return 1; }
    nri_wait_registered "$since" || { fail "the plugin did not register again after containerd restarted ($what)"; return 1; }
    t1=$(date +%s%N)
    note "figure: $what: containerd started → nfs-gds registered in $(((t1 - t0) / 1000000)) ms"
    echo "$what-registered-after-ms $(((t1 - t0) / 1000000))" >>"$SCN_DIR/figures"
}

scn_nri_k() {
    note "(k) containerd restarted: the plugin is back and the transport trap is refused again,"
    note "for the plugin as a service (reconnects with backoff) and pre-registered (containerd starts it)"
    require_hooked_kernel gpl
    nri_prepare
    trap_volume
    restart_containerd_timed service
    cri pod-service run --name trapped --bind /mnt/tcp:/data -- echo NRI-RAN
    expect_cri_refusal pod-service 'mount-transport|transport-trap'
    nri_stop
    mkdir -p "$(dirname "$NRI_PREREG")"
    printf '#!/bin/sh\nexec env %s /usr/sbin/nfs-gds nri "$@" 2>>%s\n' "${NRI_ENV[*]}" "$NRI_LOG" >"$NRI_PREREG"
    chmod 0755 "$NRI_PREREG"
    restart_containerd_timed pre-registered
    cri pod-prereg run --name trapped --bind /mnt/tcp:/data -- echo NRI-RAN
    expect_cri_refusal pod-prereg 'mount-transport|transport-trap'
    rm -f "$NRI_PREREG"
    containerd_stop
    containerd_start >/dev/null 2>&1 || fail "containerd did not come back without the pre-registered plugin"
}

scn_nri_l() {
    note "(l) CreateContainer's latency with and without the plugin (a GDS pod, one RDMA volume; a figure)"
    require_hooked_kernel gpl
    nri_prepare
    kubelet_mount pv "vers=4.2,proto=rdma,port=$RDMA_PORT" /mnt/rdma
    cri with-plugin bench --count 10 --name bench --annotation "$GDS_ANNOTATION" --bind /mnt/rdma:/data
    expect_rc with-plugin 0
    nri_stop
    cri without-plugin bench --count 10 --name bench --annotation "$GDS_ANNOTATION" --bind /mnt/rdma:/data
    expect_rc without-plugin 0
    printf 'with-plugin-median-ms %s\nwithout-plugin-median-ms %s\n' \
        "$(sed -n 's/^median-ms: //p' "$SCN_DIR/with-plugin.out")" "$(sed -n 's/^median-ms: //p' "$SCN_DIR/without-plugin.out")" >"$SCN_DIR/figures"
    note "figures (TCG): $(tr '\n' ' ' <"$SCN_DIR/figures")"
}
