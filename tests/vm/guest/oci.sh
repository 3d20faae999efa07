#!/bin/bash
# The container gate (`nfs-gds oci-hook`) under a real runtime: podman with crun and with runc,
# the hooks.d file from the installed package copied into /usr/share/containers/oci/hooks.d (the one
# step docs/container-gate.md gives), a test image built FROM scratch with the root's static busybox
# (nothing pulled), and the test bed's NFS server over soft-RoCE. Sourced by scenarios.sh; each
# scenario runs for one runtime (oci_RUNTIME_LETTER wrappers at the end).
#
#   (a) a container on the verified NFS/RDMA mount starts and reads the server's file
#   (b) the transport trap: a TCP mount of the server a [[mount]] rule declares for GDS is
#       refused, nothing runs in the container, and the reason reaches the user
#   (c) a container without NFS volumes starts (with and without the hook: a figure, not a goal)
#   (d) under warn it starts and the warning is in the system log
#   (e) an NFS volume not meant for GDS starts quietly
#   (f) the nfs-gds/gds annotation on a TCP volume refuses
#   (g) a node whose rpcrdma has no hooks refuses the RDMA volume under enforce (stock kernel)
#
# The stub guests have no cgroup2 on /sys/fs/cgroup, no tmpfs on /dev/shm and no syslog daemon:
# oci_prepare sets them up (busybox syslogd writing to OCI_SYSLOG). A scenario that cannot run
# fails with the reason (abort), never passes silently.

OCI_IMAGE=localhost/bb:1
OCI_HOOKS_DIR=/usr/share/containers/oci/hooks.d
OCI_PACKAGED_HOOK=/usr/share/nfs-gds/oci/nfs-gds-hook.json
OCI_SYSLOG=/var/log/nfs-gds-oci-syslog
OCI_COUNTS=/run/nfs-gds/oci-hook.counts

# Everything podman needs in a stub guest, once per boot (idempotent), and the gate turned on.
oci_prepare() {
    local rt
    command -v podman >/dev/null || abort "podman is not installed in the guest root"
    for rt in crun runc conmon; do
        command -v "$rt" >/dev/null || abort "$rt is not installed in the guest root"
    done
    [ -x /bin/busybox ] || abort "busybox-static (/bin/busybox) is not installed in the guest root"
    if ! awk '$2 == "/sys/fs/cgroup" && $3 == "cgroup2" { f=1 } END { exit !f }' /proc/mounts; then
        mount -t cgroup2 cgroup2 /sys/fs/cgroup || abort "cannot mount cgroup2 on /sys/fs/cgroup"
    fi
    if ! awk '$2 == "/dev/shm" && $3 == "tmpfs" { f=1 } END { exit !f }' /proc/mounts; then
        mkdir -p /dev/shm && mount -t tmpfs -o mode=1777,nosuid,nodev shm /dev/shm ||
            abort "cannot mount a tmpfs on /dev/shm"
    fi
    mkdir -p /etc/containers
    cat >/etc/containers/containers.conf <<'EOF'
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
    syslog_up
    if ! podman image exists "$OCI_IMAGE" 2>/dev/null; then
        local d
        d=$(mktemp -d)
        mkdir -p "$d/bin" "$d/data" "$d/proc" "$d/sys" "$d/dev" "$d/etc"
        cp /bin/busybox "$d/bin/busybox"
        for a in sh cat echo true ls; do ln -s busybox "$d/bin/$a"; done
        tar -C "$d" -c . | podman import - "$OCI_IMAGE" >/dev/null 2>"$SCN_DIR/import.err" ||
            abort "podman import of the busybox image failed: $(cat "$SCN_DIR/import.err")"
        rm -rf "$d"
    fi
    [ -f "$OCI_PACKAGED_HOOK" ] || abort "the package installed no $OCI_PACKAGED_HOOK"
    install -D -m 0644 "$OCI_PACKAGED_HOOK" "$OCI_HOOKS_DIR/nfs-gds-hook.json" ||
        abort "cannot copy the hooks.d file into $OCI_HOOKS_DIR"
    mkdir -p /mnt/tcp /mnt/rdma "$MNT"
}

# A system log for a guest without one: busybox syslogd writing to OCI_SYSLOG (once per boot).
syslog_up() {
    if [ ! -S /dev/log ]; then
        busybox syslogd -n -O "$OCI_SYSLOG" &
        local i
        for i in $(seq 50); do [ -S /dev/log ] && break; sleep 0.1; done
        [ -S /dev/log ] || abort "busybox syslogd did not create /dev/log"
    fi
}

# The gate off again (between scenarios and at the end).
oci_reset() { rm -f "$OCI_HOOKS_DIR/nfs-gds-hook.json" "$OCI_COUNTS"; }

# oci_run NAME RUNTIME [PODMAN-RUN-ARGS...] -- CMD... : `podman run` with RUNTIME, no network.
oci_run() {
    local name=$1 rt=$2
    shift 2
    local args=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
    shift
    run "$name" 180 podman --runtime "$rt" run --rm --network=none "${args[@]}" "$OCI_IMAGE" "$@"
}

# The counter the agent exports, as the hook left it.
oci_count() { jq -r ".$1 // 0" "$OCI_COUNTS" 2>/dev/null || echo 0; }

# expect_syslog ERE WHAT — the system log has a line of nfs-gds matching ERE.
expect_syslog() {
    sync
    grep -E 'nfs-gds\[' "$OCI_SYSLOG" 2>/dev/null | grep -Eq -- "$1" ||
        fail "$2 (no nfs-gds line matching /$1/ in $OCI_SYSLOG: $(grep -E 'nfs-gds\[' "$OCI_SYSLOG" 2>/dev/null | tail -n 3))"
}

# The reason of a refusal, where a user of RUNTIME reads it: runc puts the hook's stderr into
# podman's error; crun prints only the hook's exit code (seen with crun 1.8.1, also when the
# container sets crun's run.oci.hooks.stderr=/dev/stderr); the system log has it under both.
oci_expect_refusal() {
    local name=$1 rt=$2 id=$3
    expect_rc_not "$name" 0
    expect_output "$name" 'hook' "podman does not say that a hook stopped the container"
    ! output_of "$name" | grep -q OCI-RAN || fail "$name: the container's command ran"
    if [ "$rt" = runc ]; then
        expect_output "$name" "refusing container .*$id" "runc's error does not carry the hook's reason"
    fi
    expect_syslog "refusing container .*$id" "the refusal is not in the system log"
}

# ---------------------------------------------------------------- (a)–(f): hooked kernel

oci_a() {
    local rt=$1 c
    note "(a) $rt: a container on the verified NFS/RDMA mount starts and reads the server's file"
    require_hooked_kernel gpl
    oci_prepare
    c=$(server_file "oci-a-$rt.txt")
    run mount 120 mount -t nfs-gds "$SPEC" "$MNT"
    expect_rc mount 0
    expect_xprt "$MNT" rdma
    oci_run container "$rt" -v "$MNT:/data" -- cat "/data/oci-a-$rt.txt"
    expect_rc container 0
    [ "$(cat "$SCN_DIR/container.out")" = "$c" ] ||
        fail "the container read '$(cat "$SCN_DIR/container.out")', expected '$c'"
    [ "$(oci_count refusals)" = 0 ] || fail "the hook counted a refusal: $(cat "$OCI_COUNTS")"
}

oci_b() {
    local rt=$1
    note "(b) $rt: the transport trap: a TCP mount of the server a [[mount]] rule declares for GDS"
    require_hooked_kernel gpl
    oci_prepare
    printf '[[mount]]\nsource = "%s"\n' "$SPEC" | write_config
    plain_tcp_mount mount-tcp /mnt/tcp
    expect_xprt /mnt/tcp tcp
    oci_run container "$rt" -v /mnt/tcp:/data -- echo OCI-RAN
    oci_expect_refusal container "$rt" ''
    [ "$rt" = crun ] || expect_output container 'mount-transport' "runc's error does not name the transport check"
    expect_syslog '/data: 10\.0\.2\.15:/export .*mount-transport' "the log line does not name /data, the export and mount-transport"
    if [ "$rt" = crun ]; then
        # crun drops a failing hook's stderr: its error names the hook and the exit code, and
        # the reason is in the system log (asserted above).
        expect_output container 'executing hook .*nfs-gds.*exit code: 1' "crun's error does not name the hook and its exit code"
    fi
    [ "$(oci_count refusals)" -ge 1 ] || fail "the hook did not count the refusal: $(cat "$OCI_COUNTS" 2>&1)"
    run agent 120 nfs-gds agent --once --textfile-dir /run/oci-agent-prom --status-file /run/oci-agent.json --nfd-dir /run/oci-agent-nfd
    grep -Eq '^nfs_gds_oci_hook_refusals_total [1-9]' /run/oci-agent-prom/nfs-gds.prom ||
        fail "the agent does not export the refusal: $(grep oci_hook /run/oci-agent-prom/nfs-gds.prom 2>&1)"
    rm -rf /run/oci-agent-prom /run/oci-agent.json /run/oci-agent-nfd
}

oci_c() {
    local rt=$1 t0 t1 t2
    note "(c) $rt: a container without NFS volumes starts; its cost beside one without the hook"
    require_hooked_kernel gpl
    oci_prepare
    t0=$(date +%s%N)
    oci_run with-hook "$rt" -- echo OCI-RAN
    t1=$(date +%s%N)
    expect_rc with-hook 0
    expect_output with-hook OCI-RAN "the container did not run"
    oci_reset
    oci_run without-hook "$rt" -- echo OCI-RAN
    t2=$(date +%s%N)
    expect_rc without-hook 0
    note "figure (TCG, one run each): with the hook $(((t1 - t0) / 1000000)) ms, without $(((t2 - t1) / 1000000)) ms"
    printf 'with-hook-ms %s\nwithout-hook-ms %s\n' $(((t1 - t0) / 1000000)) $(((t2 - t1) / 1000000)) >"$SCN_DIR/figures"
}

oci_d() {
    local rt=$1
    note "(d) $rt: under warn the container starts, and the warning is in the system log"
    require_hooked_kernel gpl
    oci_prepare
    printf 'default = "warn"\n\n[[mount]]\nsource = "%s"\n' "$SPEC" | write_config
    plain_tcp_mount mount-tcp /mnt/tcp
    oci_run container "$rt" -v /mnt/tcp:/data -- echo OCI-RAN
    expect_rc container 0
    expect_output container OCI-RAN "the container did not run"
    expect_syslog 'warning: container .*/data: 10\.0\.2\.15:/export' "the warning is not in the system log"
    [ "$(oci_count warnings)" -ge 1 ] || fail "the hook did not count the warning: $(cat "$OCI_COUNTS" 2>&1)"
}

oci_e() {
    local rt=$1 before
    note "(e) $rt: an NFS volume not meant for GDS starts quietly"
    require_hooked_kernel gpl
    oci_prepare
    plain_tcp_mount mount-tcp /mnt/tcp
    before=$(grep -c 'nfs-gds\[' "$OCI_SYSLOG" 2>/dev/null || echo 0)
    oci_run container "$rt" -v /mnt/tcp:/data -- echo OCI-RAN
    expect_rc container 0
    expect_output container OCI-RAN "the container did not run"
    [ "$(grep -c 'nfs-gds\[' "$OCI_SYSLOG" 2>/dev/null || echo 0)" = "$before" ] ||
        fail "the hook logged about a volume not meant for GDS: $(grep 'nfs-gds\[' "$OCI_SYSLOG" | tail -n 1)"
    [ ! -e "$OCI_COUNTS" ] || fail "the hook counted something: $(cat "$OCI_COUNTS")"
}

oci_f() {
    local rt=$1
    note "(f) $rt: the nfs-gds/gds annotation on a TCP volume refuses"
    require_hooked_kernel gpl
    oci_prepare
    plain_tcp_mount mount-tcp /mnt/tcp
    oci_run container "$rt" --annotation nfs-gds/gds=true -v /mnt/tcp:/data -- echo OCI-RAN
    oci_expect_refusal container "$rt" ''
    expect_syslog '/data: 10\.0\.2\.15:/export' "the log line does not name /data and the export"
}

# ---------------------------------------------------------------- (g): stock kernel

oci_g() {
    local rt=$1
    note "(g) $rt: a node whose rpcrdma has no hooks refuses the RDMA volume under enforce"
    require_stock_kernel
    oci_prepare
    plain_rdma_mount mount-rdma /mnt/rdma
    expect_xprt /mnt/rdma rdma
    oci_run container "$rt" -v /mnt/rdma:/data -- echo OCI-RAN
    oci_expect_refusal container "$rt" ''
    expect_syslog 'rpcrdma-hooks|nvidia-fs-loaded' "the log line does not name the node check that failed"
}

# One scenario per runtime and letter; the gate is off again when it ends, however it ends.
for _rt in crun runc; do
    for _s in a b c d e f g; do
        eval "scn_oci_${_rt}_${_s}() { trap oci_reset EXIT; oci_${_s} ${_rt}; }"
    done
done
unset _rt _s
