#!/bin/bash
# containerd and the NRI gate (`nfs-gds nri`) in the runtimes guest: Debian unstable's containerd
# (NRI on by default) beside Debian 12's runc, started by hand (no systemd), cgroup2 on
# /sys/fs/cgroup; images written here as docker archives from the root's static busybox and
# imported with `ctr -n k8s.io images import` (nothing pulled); cri-client.py stands in for
# kubelet: host-network pods (no CNI) with an empty hostname. The PV is mounted as kubelet mounts
# it: `mount -t nfs -o OPTIONS SERVER:SHARE TARGET` (kubelet's systemd-run --scope form needs
# systemd as PID 1, which this guest does not run). Sourced by runtimes-scenarios.sh.
#
# When the root has no containerd (root-info/containerd.unavailable: Debian unstable's package no
# longer installs on Debian 12) every containerd scenario ends SKIPPED with that reason.

CRI_CLIENT=(python3 "$PAYLOAD/guest/cri-client.py")
CRI_IMAGE=localhost/bb:1
CONTAINERD_LOG=/var/log/containerd.log
NRI_SOCKET=/var/run/nri/nri.sock
NRI_LOG=/var/log/nfs-gds-nri.log
NRI_PREREG=/opt/nri/plugins/10-nfs-gds
# Scenarios run in subshells: the daemons they start are found again by these files.
VM_RUN=/run/nfs-gds-vm
CONTAINERD_PIDFILE=$VM_RUN/containerd.pid
NRI_PIDFILE=$VM_RUN/nri.pid

# pid_alive FILE — the process FILE names is running.
pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# stop_pid FILE — TERM the process FILE names, wait up to 30 s for it to go, forget it.
stop_pid() {
    local i
    if pid_alive "$1"; then
        kill "$(cat "$1")" 2>/dev/null
        for i in $(seq 60); do pid_alive "$1" || break; sleep 0.5; done
    fi
    rm -f "$1"
}

# containerd's scenarios need it: skip (loudly, never pass) when the root could not install it.
require_containerd() {
    if [ -f "$PAYLOAD/root-info/containerd.unavailable" ]; then
        skip "no containerd in the guest root: $(cat "$PAYLOAD/root-info/containerd.unavailable")"
    fi
    command -v containerd >/dev/null || skip "no containerd in the guest root (containerd is not on PATH)"
}

# A docker archive (docker save's layout) of one layer holding the static busybox, tagged REF,
# whose default command is CMD...; imported into containerd's k8s.io namespace.
import_busybox_image() {
    local ref=$1 d diff
    shift
    d=$(mktemp -d)
    mkdir -p "$d/root/bin" "$d/root/data" "$d/root/proc" "$d/root/sys" "$d/root/dev" "$d/root/etc" "$d/root/tmp"
    cp /bin/busybox "$d/root/bin/busybox"
    for a in sh cat echo true ls sleep; do ln -s busybox "$d/root/bin/$a"; done
    tar -C "$d/root" -cf "$d/layer.tar" .
    diff=$(sha256sum "$d/layer.tar" | cut -d' ' -f1)
    python3 -c 'import json, sys
print(json.dumps({"architecture": "amd64", "os": "linux", "config": {"Cmd": sys.argv[2:], "Env": ["PATH=/bin"]},
                  "rootfs": {"type": "layers", "diff_ids": [sys.argv[1]]}}))' "sha256:$diff" "$@" >"$d/config.json"
    jq -n --arg ref "$ref" '[{Config: "config.json", RepoTags: [$ref], Layers: ["layer.tar"]}]' >"$d/manifest.json"
    tar -C "$d" -cf "$d/image.tar" manifest.json config.json layer.tar
    ctr -n k8s.io images import --platform linux/amd64 "$d/image.tar" || { rm -rf "$d"; return 1; }
    rm -rf "$d"
}

containerd_running() { pid_alive "$CONTAINERD_PIDFILE"; }

# Start containerd and wait for its CRI socket and the NRI socket.
containerd_start() {
    mkdir -p "$VM_RUN"
    containerd </dev/null >>"$CONTAINERD_LOG" 2>&1 &
    echo $! >"$CONTAINERD_PIDFILE"
    local i
    for i in $(seq 120); do
        [ -S /run/containerd/containerd.sock ] && [ -S "$NRI_SOCKET" ] && ctr version >/dev/null 2>&1 && return 0
        containerd_running || { tail -n 20 "$CONTAINERD_LOG"; echo "containerd exited"; return 1; }
        sleep 0.5
    done
    tail -n 20 "$CONTAINERD_LOG"
    echo "containerd did not bring up its sockets ($NRI_SOCKET) within 60 s"
    return 1
}

containerd_stop() { stop_pid "$CONTAINERD_PIDFILE"; }

# Everything containerd needs in the stub guest, once per boot.
containerd_prepare() {
    require_containerd
    containerd_running && return 0
    awk '$2 == "/sys/fs/cgroup" && $3 == "cgroup2" { f=1 } END { exit !f }' /proc/mounts ||
        mount -t cgroup2 cgroup2 /sys/fs/cgroup || abort "cannot mount cgroup2 on /sys/fs/cgroup"
    modprobe overlay || abort "modprobe overlay failed"
    syslog_up
    mkdir -p /etc/containerd
    containerd config default >/etc/containerd/config.toml || abort "containerd config default failed"
    grep -A3 "nri.v1.nri'\]" /etc/containerd/config.toml | grep -q 'disable = false' ||
        abort "containerd's default configuration does not enable NRI: $(grep -A3 'nri' /etc/containerd/config.toml | head -n 5)"
    local pause
    pause=$(sed -n "s/^ *sandbox = '\(.*\)'/\1/p" /etc/containerd/config.toml | head -n 1)
    [ -n "$pause" ] || abort "no sandbox image in containerd's default configuration"
    note "containerd $(containerd --version | awk '{print $3}'), sandbox image $pause"
    containerd_start || abort "containerd did not start (see $CONTAINERD_LOG)"
    ctr -n k8s.io images ls -q | grep -qx "$CRI_IMAGE" ||
        import_busybox_image "$CRI_IMAGE" sh || abort "importing $CRI_IMAGE failed"
    # The pod's own process, as pause is: waits, and leaves at once on SIGTERM.
    ctr -n k8s.io images ls -q | grep -qx "$pause" ||
        import_busybox_image "$pause" sh -c 'trap "exit 0" TERM; while :; do sleep 1; done' ||
        abort "importing the sandbox image $pause failed"
}

# cri NAME [cri-client.py ARGS...] — kubelet's calls for one pod, captured as NAME.
cri() {
    local name=$1
    shift
    run "$name" 240 "${CRI_CLIENT[@]}" "$@"
}

# The CRI error of a refused create names the gate and carries REASON (an ERE).
expect_cri_refusal() {
    local name=$1 reason=$2
    expect_rc "$name" 4
    expect_output "$name" 'CRI CreateContainer failed' "the CRI client does not report a failed CreateContainer"
    expect_output "$name" 'nfs-gds' "the CRI error does not name nfs-gds"
    expect_output "$name" "$reason" "the CRI error does not carry the reason"
    ! output_of "$name" | grep -q NRI-RAN || fail "$name: the container's command ran"
}

# ---------------------------------------------------------------- the plugin

# NFS_GDS_VM_NRI_ALLOW_ALL=1 on the host: the plugin runs with every check off, so it registers
# and answers OK to every container (how each case was seen failing against such a plugin).
NRI_ENV=()
if [ -n "$(. "$PAYLOAD/config.env" 2>/dev/null; echo "${NFS_GDS_VM_NRI_ALLOW_ALL:-}")" ]; then
    NRI_ENV=(NFS_GDS_CONFIG=/etc/nfs-gds-vm-allow-all.toml)
    printf 'default = "off"\n' >/etc/nfs-gds-vm-allow-all.toml 2>/dev/null
fi

# The plugin as its systemd unit runs it, connecting to the NRI socket (a background process
# here: no systemd in this guest).
nri_start() {
    nri_running && return 0
    local since
    since=$(date +%s)
    env "${NRI_ENV[@]}" nfs-gds nri --socket "$NRI_SOCKET" </dev/null >>"$NRI_LOG" 2>&1 &
    echo $! >"$NRI_PIDFILE"
    nri_wait_registered "$since" || { tail -n 20 "$NRI_LOG"; abort "the plugin did not register with containerd"; }
}

nri_running() { pid_alive "$NRI_PIDFILE"; }
nri_stop() { stop_pid "$NRI_PIDFILE"; }

# The plugin records each registration the runtime answered in /run/nfs-gds/nri.registered;
# wait until it has one at or after SINCE (seconds since the epoch), for up to 90 s (the plugin
# connects again after 1 s, doubling up to 30 s).
NRI_REGISTERED=/run/nfs-gds/nri.registered
nri_wait_registered() {
    local since=$1 i at
    for i in $(seq 180); do
        at=$(jq -r '.at_secs // 0' "$NRI_REGISTERED" 2>/dev/null || echo 0)
        [ "${at:-0}" -ge "$since" ] && return 0
        sleep 0.5
    done
    return 1
}

# A pod (host network) with the volume at /data reading FILE: its CRI log is the file's content.
nri_reads_file() {
    local name=$1 vol=$2 file=$3
    shift 3
    cri "$name" run --name "$name" --bind "$vol:/data" "$@" -- cat "/data/$file"
}

nri_counts() { cat /run/nfs-gds/nri.counts /run/nfs-gds/oci-hook.counts 2>/dev/null; }

# Between scenarios: containerd up again if a scenario stopped it (k restarts it).
cri_reset() {
    [ -f "$PAYLOAD/root-info/containerd.unavailable" ] && return 0
    [ -f "$CONTAINERD_PIDFILE" ] || return 0
    containerd_running || containerd_start >/dev/null 2>&1 || say "warning: containerd did not come back"
}
