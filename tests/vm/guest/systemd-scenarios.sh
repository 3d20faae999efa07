#!/bin/bash
# The systemd scenarios: the guest booted with systemd as PID 1 and was configured by
# systemd-boot.sh (soft-RoCE and knfsd brought up by units, the GPL-hooked rpcrdma and the
# nvidia_fs stub loaded by systemd-modules-load, nfs-gds lines in /etc/fstab). Runs as
# nfs-gds-vm-scenarios.service after multi-user.target, then harvests the results and powers off.
#
#   systemd-scenarios.sh --list   print the scenario names in run order
#   systemd-scenarios.sh          run them (inside the systemd guest only)
#
# What a user reaches through systemd: fstab lines turned into mount units by
# systemd-fstab-generator, mounted during boot or started later (several at once, or on first
# access through an automount), hand-written .mount units with Type=nfs-gds, reload (remount),
# umount and stop, and a refused mount as systemd reports it (unit failed, the helper's verdict
# in the unit's journal). A successful mount through the helper is silent, as mount(8) is; that
# it went through the helper shows in /proc/mounts: the fstab lines say neither proto=rdma nor
# port=20049, the helper appends both, and a gds_ option would make the kernel refuse the mount
# had it reached mount.nfs unstripped.
set -u

# shellcheck disable=SC2034  # run by run_plan in lib.sh
PLAN=(
    "scenario sd-infra-boot                sd_infra_boot"
    "optin    sd-perf-boot-cost            sd_perf_boot_cost"
    "scenario sd1-fstab-mounted-at-boot    sd1_fstab_boot"
    "scenario sd2-start-several-at-once    sd2_start_several"
    "scenario sd3-refused-unit-failed      sd3_refused"
    "scenario sd4-automount-first-access   sd4_automount"
    "scenario sd5-mount-unit-and-reload    sd5_mount_unit"
    "scenario sd7-agent-unit-hardened      sd7_agent_unit"
    "scenario sd8-mount-timeout-leaves-nothing sd8_mount_timeout"
    "scenario sd6-umount-and-stop          sd6_umount_stop"
)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=cost.sh
. "$here/cost.sh"
[ "${1:-}" = --list ] && { list_plan; exit 0; }

SPEC=$SERVER:$EXPORT

unit_of() { systemd-escape -p --suffix=mount "$1"; }

# A unit property (systemctl show -p NAME --value).
prop() { systemctl show -p "$2" --value "$1" 2>/dev/null; }

expect_unit_state() {
    local unit=$1 want=$2 got
    got=$(systemctl is-active "$unit" 2>/dev/null)
    [ "$got" = "$want" ] && return 0
    fail "$unit is '$got', expected '$want' (Result=$(prop "$unit" Result))"
    systemctl status --no-pager -l "$unit" 2>&1 | sed 's/^/    status | /'
    systemctl list-jobs --no-pager 2>&1 | sed 's/^/    jobs | /'
}

# wait_unit_state UNIT STATE SECS — for states systemd reaches a moment after the kernel's.
wait_unit_state() {
    local unit=$1 want=$2 secs=$3 _
    for _ in $(seq 1 "$secs"); do
        [ "$(systemctl is-active "$unit" 2>/dev/null)" = "$want" ] && return 0
        sleep 1
    done
    return 1
}

# The unit's journal of this boot (message text only), captured as NAME.
capture_journal() {
    local name=$1 unit=$2
    run "$name" 60 journalctl -b --no-pager -o cat -u "$unit"
}

# Was UNIT activated before TARGET was reached (monotonic timestamps of this boot)?
expect_active_before() {
    local unit=$1 target=$2 u t
    u=$(prop "$unit" ActiveEnterTimestampMonotonic)
    t=$(prop "$target" ActiveEnterTimestampMonotonic)
    note "ActiveEnterTimestampMonotonic: $unit $u, $target $t"
    [ "${u:-0}" -gt 0 ] && [ "${t:-0}" -gt 0 ] && [ "$u" -le "$t" ] \
        || fail "$unit was not active before $target was reached ($u vs $t µs)"
}

# The mount on DIR went through the helper and runs over RDMA.
expect_helper_rdma_mount() {
    local dir=$1
    expect_mounted "$dir"
    expect_xprt "$dir" rdma
    expect_mount_opt "$dir" proto=rdma
    expect_mount_opt "$dir" port=$RDMA_PORT
    expect_no_mount_opt_like "$dir" '^gds'
}

# ---------------------------------------------------------------- the test bed

sd_infra_boot() {
    note "systemd is PID 1 and its units brought up soft-RoCE, the network and knfsd over RDMA"
    local comm
    comm=$(cat /proc/1/comm)
    [ "$comm" = systemd ] || fail "PID 1 is '$comm', not systemd"
    [ -d /run/systemd/system ] || fail "/run/systemd/system is missing: systemd is not the running init"
    local u
    for u in systemd-networkd.service nfs-gds-vm-rxe.service network-online.target nfs-server.service systemd-modules-load.service; do
        expect_unit_state "$u" active
    done
    expect_active_before nfs-gds-vm-rxe.service network-online.target
    rdma link show | grep -q 'rxe0/1 state ACTIVE' || fail "rxe0/1 is not ACTIVE: $(rdma link show 2>&1)"
    grep -qx "rdma $RDMA_PORT" /proc/fs/nfsd/portlist || fail "nfsd (nfs-server.service with /etc/nfs.conf) has no 'rdma $RDMA_PORT' listener: $(tr '\n' ' ' </proc/fs/nfsd/portlist)"
    note "modules loaded by systemd-modules-load from /etc/modules-load.d/gds.conf"
    [ -d /sys/module/nvidia_fs ] || fail "nvidia_fs (stub) is not loaded"
    same_file "$(modinfo -n rpcrdma 2>/dev/null)" "$UPDATES_RPCRDMA" || fail "modprobe does not resolve rpcrdma to $UPDATES_RPCRDMA"
    [ "$(loaded_build_id rpcrdma)" = "$(file_build_id "$UPDATES_RPCRDMA")" ] || fail "the loaded rpcrdma is not the hooked build"
    kallsyms_has $HOOK_REG >/dev/null || fail "the loaded rpcrdma has no $HOOK_REG"
    note "the package, installed with apt"
    run dpkg-status 30 dpkg-query -W -f='${Status} ${Version}' nfs-gds
    expect_output dpkg-status '^install ok installed' "nfs-gds is not installed as a package"
    [ -x /sbin/mount.nfs-gds ] || fail "/sbin/mount.nfs-gds is missing"
    run agent-unit 30 systemctl cat nfs-gds-agent.service
    expect_rc agent-unit 0
    note "a plain mount(8) over RDMA, without nfs-gds"
    local c
    c=$(server_file sd-infra.txt)
    run mount-rdma 120 mount -t nfs4 -o "vers=4.2,proto=rdma,port=$RDMA_PORT" "$SPEC" /mnt/rdma
    expect_rc mount-rdma 0
    expect_xprt /mnt/rdma rdma
    expect_file_content /mnt/rdma/sd-infra.txt "$c"
    run umount-rdma 60 umount /mnt/rdma
    expect_rc umount-rdma 0
    run failed-units 30 systemctl list-units --failed --plain --no-legend --no-pager
    note "failed units at this point (mount units are judged by the scenarios): $(tr '\n' ';' <"$SCN_DIR/failed-units.out")"
    ! grep -Ev '\.mount ' "$SCN_DIR/failed-units.out" | grep -q . || fail "units other than mounts failed during boot: $(grep -Ev '\.mount ' "$SCN_DIR/failed-units.out" | awk '{print $1}' | tr '\n' ' ')"
}

# ---------------------------------------------------------------- fstab

sd1_fstab_boot() {
    note "fstab lines of type nfs-gds with _netdev were mounted during boot through the helper"
    local dir unit
    for dir in /mnt/boot1 /mnt/boot2; do
        unit=$(unit_of "$dir")
        note "$dir: $unit"
        expect_unit_state "$unit" active
        [ "$(prop "$unit" SourcePath)" = /etc/fstab ] || fail "$unit does not come from /etc/fstab (SourcePath '$(prop "$unit" SourcePath)')"
        case $(prop "$unit" FragmentPath) in
            /run/systemd/generator/*) ;;
            *) fail "$unit was not made by systemd-fstab-generator (FragmentPath '$(prop "$unit" FragmentPath)')" ;;
        esac
        prop "$unit" After | tr ' ' '\n' | grep -qx network-online.target || fail "$unit is not ordered after network-online.target (After: $(prop "$unit" After))"
        expect_active_before "$unit" multi-user.target
        expect_helper_rdma_mount "$dir"
        capture_journal "journal-${dir##*/}" "$unit"
        expect_output "journal-${dir##*/}" "Mounted|Mounting" "the unit's journal shows no mount"
    done
    local c
    c=$(server_file sd1.txt)
    expect_file_content /mnt/boot1/sd1.txt "$c"
    expect_file_content /mnt/boot2/sd1.txt "$c"
}

sd2_start_several() {
    note "systemctl start of three fstab mount units at once (their helpers run in parallel)"
    local units=() dir c
    for dir in /mnt/par1 /mnt/par2 /mnt/par3; do
        units+=("$(unit_of "$dir")")
        expect_not_mounted "$dir"
    done
    c=$(server_file sd2.txt)
    run start 300 systemctl start "${units[@]}"
    expect_rc start 0
    for dir in /mnt/par1 /mnt/par2 /mnt/par3; do
        expect_unit_state "$(unit_of "$dir")" active
        expect_helper_rdma_mount "$dir"
        expect_file_content "$dir/sd2.txt" "$c"
    done
    expect_mount_opt /mnt/par3 hard
    run stop 120 systemctl stop "${units[@]}"
    expect_rc stop 0
    for dir in /mnt/par1 /mnt/par2 /mnt/par3; do
        expect_not_mounted "$dir"
        expect_unit_state "$(unit_of "$dir")" inactive
    done
}

sd3_refused() {
    note "with nvidia_fs unloaded, a refused mount leaves its unit failed, the verdict in its journal"
    local unit
    unit=$(unit_of /mnt/refused)
    run rmmod 60 modprobe -r nvidia_fs
    expect_rc rmmod 0
    [ ! -d /sys/module/nvidia_fs ] || abort "precondition: nvidia_fs is still loaded"
    run start 300 systemctl start "$unit"
    expect_rc_not start 0
    expect_not_mounted /mnt/refused
    run is-failed 30 systemctl is-failed "$unit"
    expect_output is-failed '^failed$' "the unit is not failed"
    note "Result=$(prop "$unit" Result) ExecMainStatus=$(prop "$unit" ExecMainStatus)"
    capture_journal journal "$unit"
    expect_output journal 'nfs-gds: REFUSED' "the unit's journal has no REFUSED verdict from the helper"
    expect_names journal nvidia-fs-loaded
    expect_output journal 'nfs-gds doctor' "the unit's journal does not point to 'nfs-gds doctor'"
    expect_output journal 'status=32' "systemd did not record the helper's exit status 32"
    run modprobe 60 modprobe nvidia_fs
    expect_rc modprobe 0
    systemctl reset-failed "$unit" 2>/dev/null || true
}

sd4_automount() {
    note "nofail,x-systemd.automount: nothing mounted at boot, the first access mounts through the helper"
    local auto mnt c
    auto=$(systemd-escape -p --suffix=automount /mnt/auto)
    mnt=$(unit_of /mnt/auto)
    expect_unit_state "$auto" active
    expect_unit_state "$mnt" inactive
    awk '$2 == "/mnt/auto" && $3 == "autofs" { found=1 } END { exit !found }' /proc/mounts || fail "no autofs on /mnt/auto"
    ! awk '$2 == "/mnt/auto" && $3 ~ /^nfs/ { found=1 } END { exit !found }' /proc/mounts || fail "/mnt/auto was NFS-mounted before the first access"
    c=$(server_file sd4.txt)
    run first-access 300 cat /mnt/auto/sd4.txt
    expect_rc first-access 0
    expect_output first-access "^$c\$" "the first access did not read the file through the mount"
    expect_unit_state "$mnt" active
    awk '$2 == "/mnt/auto" && $3 == "nfs4" { found=1 } END { exit !found }' /proc/mounts || fail "/mnt/auto has no nfs4 mount after the first access"
    expect_xprt /mnt/auto rdma
    expect_mount_opt /mnt/auto proto=rdma
    expect_mount_opt /mnt/auto port=$RDMA_PORT
    # Mounted through the helper's staging point, which it left empty.
    [ -z "$(ls -A /run/nfs-gds/stage 2>/dev/null)" ] || fail "the staging area keeps: $(ls -A /run/nfs-gds/stage)"
}

sd8_mount_timeout() {
    note "x-systemd.mount-timeout=5s against a server that never answers: the unit fails, systemd"
    note "stops the helper, and nothing is left on the mount point or in the staging area"
    mkdir -p /mnt/never
    printf '%s\n' "10.0.2.99:/export /mnt/never nfs-gds _netdev,noauto,x-systemd.mount-timeout=5s 0 0" >>/etc/fstab
    systemctl daemon-reload
    local unit
    unit=$(unit_of /mnt/never)
    run start-never 120 systemctl start "$unit"
    expect_rc_not start-never 0
    expect_unit_state "$unit" failed
    journalctl -u "$unit" --no-pager >"$SCN_DIR/journal-never.txt" 2>&1
    ! awk '$2 == "/mnt/never" { found=1 } END { exit !found }' /proc/mounts || fail "/mnt/never is mounted: $(awk '$2 == "/mnt/never"' /proc/mounts)"
    awk '$2 ~ "^/run/nfs-gds/stage/" && $3 ~ /^nfs/' /proc/mounts | grep -q . && fail "a staged NFS mount is left: $(awk '$2 ~ "^/run/nfs-gds/stage/"' /proc/mounts)"
    [ -z "$(ls -A /run/nfs-gds/stage 2>/dev/null)" ] || fail "the staging area keeps: $(ls -A /run/nfs-gds/stage)"
    sed -i '\|/mnt/never|d' /etc/fstab
    systemctl daemon-reload
    systemctl reset-failed "$unit" 2>/dev/null || true
}

# ---------------------------------------------------------------- a hand-written unit

write_mount_unit() {
    # $1: Options=
    cat >/etc/systemd/system/mnt-unit.mount <<EOF
[Unit]
Description=nfs-gds VM tests: a hand-written mount unit
Wants=network-online.target
After=network-online.target nfs-server.service

[Mount]
What=$SPEC
Where=/mnt/unit
Type=nfs-gds
Options=$1
TimeoutSec=240
EOF
    note "/etc/systemd/system/mnt-unit.mount:" && sed 's/^/    | /' /etc/systemd/system/mnt-unit.mount
    systemctl daemon-reload
}

sd5_mount_unit() {
    note "an explicit .mount unit with Type=nfs-gds; then systemctl reload (a remount through the helper)"
    local c
    c=$(server_file sd5.txt)
    write_mount_unit "_netdev,hard,gds_policy=enforce"
    run start 300 systemctl start mnt-unit.mount
    expect_rc start 0
    expect_unit_state mnt-unit.mount active
    [ "$(prop mnt-unit.mount FragmentPath)" = /etc/systemd/system/mnt-unit.mount ] || fail "mnt-unit.mount does not come from /etc/systemd/system"
    expect_helper_rdma_mount /mnt/unit
    expect_mount_opt /mnt/unit rw
    expect_file_content /mnt/unit/sd5.txt "$c"

    note "reload with ro added: systemd runs mount -o remount,… -t nfs-gds, the helper strips gds_policy"
    write_mount_unit "_netdev,hard,ro,gds_policy=enforce"
    run reload 300 systemctl reload mnt-unit.mount
    expect_rc reload 0
    expect_unit_state mnt-unit.mount active
    expect_mount_opt /mnt/unit ro
    expect_xprt /mnt/unit rdma
    expect_no_mount_opt_like /mnt/unit '^gds'
    ! touch /mnt/unit/sd5-written 2>/dev/null || fail "a write succeeded on the remounted read-only mount"
    capture_journal journal mnt-unit.mount
    expect_output journal 'Reload|Remount' "the unit's journal shows no reload"
    note "kernel fact: the same remount without the helper is refused (gds_policy reaches the kernel), so the reload went through it"
    run remount-direct 120 mount -t nfs4 -o remount,ro,gds_policy=enforce "$SPEC" /mnt/unit
    expect_rc_not remount-direct 0
}

sd7_agent_unit() {
    note "the package's agent unit, enabled as its README says, runs under its hardening on the real"
    note "systemd, sees the boot mounts the helper made, and writes its files and its cache"
    local unit=nfs-gds-agent.service status=/run/nfs-gds/status.json nfd=/etc/kubernetes/node-feature-discovery/features.d
    local prom=/var/lib/prometheus/node-exporter score i
    is_mounted /mnt/boot1 || abort "precondition: /mnt/boot1 is not mounted"
    # What NFD and node_exporter would have made; the unit may write only there and below /run
    # and /var/cache.
    mkdir -p "$nfd" "$prom"
    rm -f "$status"
    run enable 120 systemctl enable --now "$unit"
    expect_rc enable 0
    for i in $(seq 1 180); do [ -s "$status" ] && break; sleep 1; done
    [ -s "$status" ] || fail "$status did not appear within 180 s of starting $unit"
    note "first pass written after about $i s"
    expect_unit_state "$unit" active
    cp "$status" "$SCN_DIR/status.json" 2>/dev/null
    note "the agent read $(jq -r .mount_table "$status" 2>&1); verdict $(jq -r .verdict "$status" 2>&1), tier $(jq -r .tier "$status" 2>&1)"
    expect_agent_mount "$status" /mnt/boot1 meant_by=recorded protocol=rdma verdict=ready
    expect_agent_mount "$status" /mnt/boot2 meant_by=recorded protocol=rdma verdict=ready
    grep -q '^nfs_gds_mount_ready{.*mountpoint="/mnt/boot1".*} 1$' "$prom/nfs-gds.prom" 2>/dev/null \
        || fail "$prom/nfs-gds.prom has no nfs_gds_mount_ready 1 for /mnt/boot1"
    grep -q '^nfs-gds.feature.node.kubernetes.io/ready=' "$nfd/nfs-gds" 2>/dev/null \
        || fail "$nfd/nfs-gds has no ready label"
    case $(jq -r .verdict "$status") in
        ready | ready-with-warnings) [ -e /run/nfs-gds/ready ] || fail "the node is ready but /run/nfs-gds/ready is missing" ;;
        *) [ ! -e /run/nfs-gds/ready ] || fail "the node is not ready but /run/nfs-gds/ready exists" ;;
    esac
    # Only compressed modules and kernel images are worth caching; this guest's .ko are plain,
    # so compress the hooked build as Debian 13 ships modules and let the agent pass again.
    note "/var/cache/nfs-gds: $(stat -c '%U %a' /var/cache/nfs-gds 2>&1); rpcrdma compressed to .ko.xz, agent restarted"
    [ "$(stat -c '%U %a' /var/cache/nfs-gds 2>/dev/null)" = "root 700" ] || fail "/var/cache/nfs-gds is not root's, mode 700"
    local before
    before=$(stat -c %Y.%Z "$status")
    xz --check=crc32 -f "$UPDATES_RPCRDMA" && depmod -a || abort "cannot compress $UPDATES_RPCRDMA"
    run restart 120 systemctl restart "$unit"
    expect_rc restart 0
    for i in $(seq 1 180); do [ "$(stat -c %Y.%Z "$status")" != "$before" ] && break; sleep 1; done
    find /var/cache/nfs-gds -type f | sed 's/^/    cache | /'
    [ -n "$(find /var/cache/nfs-gds -type f -name '*.json' 2>/dev/null | head -n 1)" ] \
        || fail "the agent cached nothing in /var/cache/nfs-gds (CacheDirectory=) for ${UPDATES_RPCRDMA}.xz"
    expect_agent_mount "$status" /mnt/boot1 verdict=ready
    unxz -f "$UPDATES_RPCRDMA.xz" && depmod -a || abort "cannot restore $UPDATES_RPCRDMA"
    capture_journal journal "$unit"
    local denied='permission denied|operation not permitted|read-only file system'
    ! grep -Eiq "$denied" "$SCN_DIR/journal.out" \
        || fail "the unit's journal reports a refused access: $(grep -Ei "$denied" "$SCN_DIR/journal.out" | head -n 3 | tr '\n' ';')"
    run security 120 systemd-analyze security --no-pager "$unit"
    score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$SCN_DIR/security.out" | tail -n 1)
    note "systemd-analyze security (running unit): ${score:-none}"
    [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 2.5) }' || fail "exposure level '${score:-none}' is above 2.5"
    run disable 120 systemctl disable --now "$unit"
    expect_rc disable 0
}

sd6_umount_stop() {
    note "umount(8) of a boot mount and systemctl stop of another; systemd follows the kernel"
    local u1 u2
    u1=$(unit_of /mnt/boot1)
    u2=$(unit_of /mnt/boot2)
    is_mounted /mnt/boot1 && is_mounted /mnt/boot2 || abort "precondition: /mnt/boot1 and /mnt/boot2 are not both mounted"
    run umount 60 umount /mnt/boot1
    expect_rc umount 0
    expect_not_mounted /mnt/boot1
    wait_unit_state "$u1" inactive 20 || fail "$u1 is still '$(systemctl is-active "$u1")' 20 s after umount"
    run stop 120 systemctl stop "$u2"
    expect_rc stop 0
    expect_not_mounted /mnt/boot2
    expect_unit_state "$u2" inactive
    if systemctl is-active -q mnt-unit.mount; then
        run stop-unit 120 systemctl stop mnt-unit.mount
        expect_rc stop-unit 0
        expect_not_mounted /mnt/unit
    fi
    run stop-auto 120 systemctl stop "$(systemd-escape -p --suffix=automount /mnt/auto)" "$(unit_of /mnt/auto)"
    expect_rc stop-auto 0
    ! awk '$2 == "/mnt/auto" { found=1 } END { exit !found }' /proc/mounts || fail "/mnt/auto is still mounted after stopping its units: $(awk '$2 == "/mnt/auto"' /proc/mounts)"
}

# ---------------------------------------------------------------- runner

# The systemd guest keeps its fstab and units between scenarios; only a stray nvidia_fs unload
# is undone.
keep_guest_state() { [ -d /sys/module/nvidia_fs ] || modprobe nvidia_fs; }

record_systemd_env() {
    local e=$RESULTS/env
    mkdir -p "$e"
    uname -a >"$e/uname.txt"
    cat /proc/cmdline >"$e/cmdline.txt"
    lsmod >"$e/lsmod-at-start.txt"
    cat /etc/fstab >"$e/fstab.txt"
    cat /proc/fs/nfsd/portlist >"$e/nfsd-portlist.txt" 2>&1
    rdma link show >"$e/rdma-link.txt" 2>&1
    systemd-analyze >"$e/systemd-analyze.txt" 2>&1
    systemd-analyze blame >>"$e/systemd-analyze.txt" 2>&1
    systemctl list-units --failed --no-pager >"$e/failed-units-at-start.txt" 2>&1
    ls -l /run/systemd/generator/ >"$e/generator-units.txt" 2>&1
    dpkg-query -W -f='${Package} ${Version}\n' >"$e/packages.txt" 2>&1
    cp "$PAYLOAD/config.env" "$e/config.env"
    cp "$PAYLOAD/manifest.txt" "$e/payload-manifest.txt" 2>/dev/null
}

# shellcheck source=/dev/null
. "$PAYLOAD/config.env"
export NFS_GDS_VM_GUEST NFS_GDS_VM_ONLY
say "systemd guest up ($(systemctl is-system-running 2>&1)); running scenarios"
record_systemd_env
run_plan keep_guest_state
say "scenarios done"
harvest
power_off
