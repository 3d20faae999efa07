# The helper's own staging point, on the real kernel (sourced by scenarios.sh): every mount the
# helper makes lands first below /run/nfs-gds/stage/, so a refused mount never appears on DIR,
# not for a moment, and nothing another process mounts on DIR is ever taken for the helper's.
#
# Two independent witnesses per run: strace of the helper and every child (which mount calls
# name which path), and mntwatch, which reads /proc/self/mountinfo after every change event the
# kernel signals (POLLPRI) and keeps every line whose mount point is DIR — a mount that lived for
# a few milliseconds is still seen.

STAGE_AREA=/run/nfs-gds/stage

# The watcher, built static on the host (the guest has no C library headers) and installed on
# the root filesystem: the payload below /run is on a noexec tmpfs.
MNTWATCH=/usr/local/bin/mntwatch

# watched_run NAME SECS DIR CMD… — runs CMD as `run` does, under strace -f (mount calls only)
# and with mntwatch on DIR; leaves NAME.strace and NAME.watch in the scenario's results.
watched_run() {
    local name=$1 secs=$2 dir=$3 stop
    shift 3
    [ -x "$MNTWATCH" ] || install -m 0755 "$here/mntwatch" "$MNTWATCH" \
        || abort "cannot install the mountinfo watcher from the payload ($here/mntwatch): $(ls -la "$here" 2>&1 | tr '\n' ' ')"
    stop=$(mktemp -u)
    rm -f "$SCN_DIR/$name.watch.ready"
    "$MNTWATCH" "$dir" "$SCN_DIR/$name.watch" "$stop" &
    local watcher=$!
    local i
    for i in $(seq 100); do [ -e "$SCN_DIR/$name.watch.ready" ] && break; sleep 0.05; done
    run "$name" "$secs" strace -f -qq -o "$SCN_DIR/$name.strace" \
        -e trace=mount,umount2,move_mount,fsmount,open_tree "$@"
    touch "$stop"
    wait "$watcher"
    rm -f "$stop"
}

# What mntwatch saw on DIR during NAME (its lines, no comments).
watched_lines() { grep -v '^#' "$SCN_DIR/$1.watch" 2>/dev/null; }

# expect_never_on NAME DIR — no mount appeared on DIR at any change event during NAME, and no
# mount call of the helper or its children named DIR.
expect_never_on() {
    local name=$1 dir=$2
    if [ -n "$(watched_lines "$name")" ]; then
        fail "$name: a mount appeared on $dir: $(watched_lines "$name" | head -3)"
    fi
    note "$name: mntwatch saw no mount on $dir in $(grep -c . "$SCN_DIR/$name.watch") lines ($(tail -n 1 "$SCN_DIR/$name.watch"))"
    expect_no_call_on "$name" "$dir"
    if grep -q 'move_mount(' "$SCN_DIR/$name.strace"; then
        fail "$name: a refused mount was moved: $(grep 'move_mount(' "$SCN_DIR/$name.strace")"
    fi
}

# expect_no_call_on NAME DIR — no mount(2), umount2(2) or fsmount in NAME's trace names DIR.
expect_no_call_on() {
    local name=$1 dir=$2 hits
    hits=$(grep -E '(mount|umount2|fsmount)\(' "$SCN_DIR/$name.strace" | grep -v 'open_tree(' | grep -F "\"$dir\"" || true)
    [ -z "$hits" ] || fail "$name: mount calls named $dir: $hits"
    grep -qE '^[0-9]+ +mount\("[^"]*", "'"$STAGE_AREA"'/[^"]+/mnt"' "$SCN_DIR/$name.strace" \
        || fail "$name: mount.nfs did not mount at a staging point: $(grep -E '^[0-9]+ +mount\(' "$SCN_DIR/$name.strace" | head -3)"
}

# The NFS mounts below the staging area in this namespace.
staged_nfs() { awk '$5 ~ "^/run/nfs-gds/stage/" { for (i = 7; $i != "-"; i++); if ($(i + 1) ~ /^nfs/) print }' /proc/self/mountinfo; }

expect_stage_empty() {
    [ -z "$(staged_nfs)" ] || fail "$1: NFS mounts left below $STAGE_AREA: $(staged_nfs)"
    local left
    left=$(ls -A "$STAGE_AREA" 2>/dev/null)
    [ -z "$left" ] || fail "$1: run directories left in $STAGE_AREA: $left"
}

# wait_staged N — until N NFS mounts are staged (60 s at most).
wait_staged() {
    local i
    for i in $(seq 600); do
        [ "$(staged_nfs | grep -c .)" -ge "$1" ] && return 0
        sleep 0.1
    done
    fail "no $1 staged mount(s) within 60 s: $(staged_nfs)"
    return 1
}

# delayed_helper DIR SECS — the helper on DIR in the background, its move_mount held back SECS
# seconds by strace (a helper stopped between mount.nfs and the move); its pid in DELAYED_PID.
delayed_helper() {
    strace -f -qq -o /dev/null -e trace=move_mount -e "inject=move_mount:delay_enter=$(($2 * 1000000))" \
        /sbin/mount.nfs-gds "$SPEC" "$1" >"$SCN_DIR/delayed-${1##*/}.out" 2>&1 &
    DELAYED_PID=$!
}

# kill_delayed DIR — SIGKILL to the held-back helper on DIR, then to its strace, and its end
# awaited. The helper first: strace dying first detaches it, its delayed move_mount goes on, and
# the mount reaches DIR before the helper's own SIGKILL lands (seen on Debian 13, the first
# pattern matching strace's command line too).
kill_delayed() {
    pkill -9 -f "^/sbin/mount.nfs-gds $SPEC $1\$"
    pkill -9 -f "^strace .* /sbin/mount.nfs-gds $SPEC $1\$"
    wait "$DELAYED_PID" 2>/dev/null
}

scn_s10() {
    note "the helper's own staging point: accepted mounts reach DIR by one move, nothing else is touched"
    require_hooked_kernel gpl
    mkdir -p /mnt/gds2 /mnt/gds3
    local c
    c=$(server_file s10.txt)

    note "A: an accepted mount: mount.nfs mounts at a staging point, one move_mount, nothing left behind"
    watched_run mount-good 120 "$MNT" mount -t nfs-gds "$SPEC" "$MNT"
    expect_rc mount-good 0
    expect_xprt "$MNT" rdma
    expect_file_content "$MNT/s10.txt" "$c"
    expect_no_call_on mount-good "$MNT"
    [ "$(grep -c 'move_mount(' "$SCN_DIR/mount-good.strace")" = 1 ] \
        || fail "mount-good: expected one move_mount: $(grep 'move_mount(' "$SCN_DIR/mount-good.strace")"
    if watched_lines mount-good | grep -v ' - nfs4 ' | grep -q .; then
        fail "mount-good: something other than the NFS mount appeared on $MNT: $(watched_lines mount-good)"
    fi
    expect_stage_empty mount-good
    run umount-good 60 umount "$MNT"
    expect_rc umount-good 0

    note "B: a stranger's mount already on $MNT stays under ours, and is still there after umount"
    mount -t tmpfs nfs-gds-stranger "$MNT" || abort "cannot mount the stranger's tmpfs"
    run mount-over 120 mount -t nfs-gds "$SPEC" "$MNT"
    expect_rc mount-over 0
    expect_xprt "$MNT" rdma
    run umount-over 60 umount "$MNT"
    expect_rc umount-over 0
    [ "$(awk -v t="$MNT" '$2 == t { s = $1 } END { print s }' /proc/mounts)" = nfs-gds-stranger ] \
        || fail "the stranger's tmpfs is not the mount on $MNT after umount: $(awk -v t="$MNT" '$2 == t' /proc/mounts)"
    umount "$MNT"

    note "C: mount -a twice leaves one mount on $MNT; utab names $MNT with _netdev, never a staging path"
    printf '%s\n%s %s nfs-gds _netdev 0 0\n' "$BASELINE_FSTAB" "$SPEC" "$MNT" >/etc/fstab
    run mount-a1 180 mount -a
    expect_rc mount-a1 0
    run mount-a2 180 mount -a
    expect_rc mount-a2 0
    local n
    n=$(awk -v t="$MNT" '$2 == t && $3 ~ /^nfs/' /proc/mounts | grep -c .)
    [ "$n" = 1 ] || fail "mount -a twice: $n NFS mounts on $MNT: $(awk -v t="$MNT" '$2 == t' /proc/mounts)"
    cp /run/mount/utab "$SCN_DIR/utab.txt" 2>/dev/null
    note "utab: $(cat /run/mount/utab 2>&1)"
    if grep -q "$STAGE_AREA" /run/mount/utab 2>/dev/null; then fail "utab names a staging path: $(cat /run/mount/utab)"; fi
    grep -qE "TARGET=$MNT .*_netdev" /run/mount/utab 2>/dev/null \
        || fail "utab has no entry for $MNT with _netdev: $(cat /run/mount/utab 2>&1)"
    run umount-a 60 umount "$MNT"
    expect_rc umount-a 0
    if grep -q "TARGET=$MNT " /run/mount/utab 2>/dev/null; then fail "utab keeps $MNT after umount: $(cat /run/mount/utab)"; fi
    printf '%s\n' "$BASELINE_FSTAB" >/etc/fstab

    note "D: a namespace made beforehand with --propagation slave sees the mount on $MNT, nothing staged"
    note "   (/ made shared first, as systemd makes it: without that nothing propagates at all)"
    mount --make-rshared /
    unshare -m --propagation slave sleep 300 &
    local ns=$!
    sleep 0.5
    run mount-slave 120 mount -t nfs-gds "$SPEC" "$MNT"
    expect_rc mount-slave 0
    nsenter -t "$ns" -m awk -v t="$MNT" '$5 == t' /proc/self/mountinfo >"$SCN_DIR/slave-mountinfo.txt"
    grep -q ' - nfs4 ' "$SCN_DIR/slave-mountinfo.txt" || fail "the slave namespace does not see the NFS mount on $MNT"
    if nsenter -t "$ns" -m awk '$5 ~ "^/run/nfs-gds/stage/" && / - nfs/' /proc/self/mountinfo | grep -q .; then
        fail "the slave namespace sees a staged NFS mount"
    fi
    kill "$ns" 2>/dev/null
    umount "$MNT"
    # Back to the stub guest's private mounts, which every later scenario was written for.
    mount --make-rprivate /

    note "E: a helper killed between mount.nfs and the move leaves its staged mount; the agent"
    note "   reports nothing for it and removes it"
    local out=/run/nfs-gds-agent-test i
    rm -rf "$out" && mkdir -p "$out"
    delayed_helper /mnt/gds2 60
    wait_staged 1
    sleep 1
    if ! kill -0 "$DELAYED_PID" 2>/dev/null || [ -z "$(staged_nfs)" ]; then
        # The helper went on to the move: strace did not hold it back (seen once in three runs on
        # Debian 13, on a loaded host). The scenario then ends as skipped, never as passed.
        echo "E and F not run: $(strace -V 2>&1 | head -n 1) did not hold move_mount back" >"$SCN_DIR/not-run-E-F"
        say "s10-staging-point: E and F NOT RUN on this guest: $(strace -V 2>&1 | head -n 1) did not hold the helper's move_mount back"
        kill_delayed /mnt/gds2
        umount_all_nfs >/dev/null || fail "cannot unmount the NFS mounts"
        cat "$SCN_DIR/not-run-E-F" >"$SCN_DIR/skipped"
        return
    fi
    kill_delayed /mnt/gds2
    note "left behind: $(staged_nfs)"
    run agent-staged 120 nfs-gds agent --once --status-file "$out/s.json" --nfd-dir "$out/f" --textfile-dir "$out/t"
    if jq -e '.mounts[]? | select(.target | startswith("/run/nfs-gds/stage"))' "$out/s.json" >/dev/null 2>&1; then
        fail "the agent reports a staged mount: $(jq -c '.mounts' "$out/s.json")"
    fi
    cp "$out/s.json" "$SCN_DIR/agent-status.json" 2>/dev/null
    expect_stage_empty agent-sweep

    note "F: the next helper removes a dead run's staging while a live helper's survives"
    note "   (the live one first: a helper starting sweeps what dead ones left)"
    delayed_helper /mnt/gds3 40
    local live=$DELAYED_PID
    wait_staged 1
    delayed_helper /mnt/gds2 60
    wait_staged 2
    kill_delayed /mnt/gds2
    note "staged now: $(staged_nfs)"
    run mount-sweeps 120 mount -t nfs-gds "$SPEC" /mnt/gds2
    expect_rc mount-sweeps 0
    expect_output mount-sweeps 'cleaned up after an nfs-gds helper that did not finish' "the sweep is not reported"
    [ "$(staged_nfs | grep -c .)" = 1 ] || fail "the live helper's staged mount did not survive: $(staged_nfs)"
    kill -0 "$live" 2>/dev/null || fail "the live helper ended before the sweep was checked (held back too briefly?)"
    for i in $(seq 900); do is_mounted /mnt/gds3 && break; sleep 0.1; done
    note "the live helper: $(cat "$SCN_DIR/delayed-gds3.out")"
    is_mounted /mnt/gds3 || fail "the live helper's mount did not reach /mnt/gds3: $(cat "$SCN_DIR/delayed-gds3.out")"
    expect_xprt /mnt/gds3 rdma
    expect_stage_empty after-sweep
    umount_all_nfs >/dev/null || fail "cannot unmount the NFS mounts"
    rm -rf "$out"
}
