# The cost a user sees of mounting through the helper, on the guest's real kernel (sourced by
# scenarios.sh, systemd-scenarios.sh and systemd-boot.sh). Benchmarks, not timed tests: the
# scenarios assert that every mount worked and that the figures were computed, never a ratio.
# shellcheck shell=bash disable=SC2034  # constants used by the scripts that source this
#
#   perf-mount-cost     `mount -t nfs-gds` against `mount -t nfs4 -o vers=4.2,proto=rdma,port=…`
#                       of the same export, COST_CYCLES mount/umount cycles each, interleaved;
#                       and the helper run by itself (`/sbin/mount.nfs-gds SPEC DIR`) beside an
#                       earlier build of it when the payload carries one (NFS_GDS_VM_BASE_BINARY:
#                       `base/mount.nfs-gds`), to show what a change to the helper costs
#   sd-perf-boot-cost   COST_BOOT_UNITS nfs-gds fstab lines against as many nfs4 ones, mounted in
#                       one boot; the mount units' activation times
#
# Each writes `figures` (what the log prints at its end) and the raw numbers (`cycles.tsv`,
# `units.tsv`) into its result directory.

COST_CYCLES=10
# An earlier build of the helper, when the payload carries one (NFS_GDS_VM_BASE_BINARY), installed
# on the root filesystem (the payload is on a noexec tmpfs) under the name the binary answers to.
COST_BASE=/usr/local/libexec/nfs-gds-base/mount.nfs-gds
COST_BOOT_UNITS=20
COST_DIR=/mnt/cost

# The median of the numbers on stdin (one a line); fails on none.
median() {
    sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) exit 1
        if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2
    }'
}

# ratio A B — A ÷ B to two places; fails unless B > 0.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (!(b > 0)) exit 1; printf "%.2f\n", a / b }'; }

# column FILE KIND FIELD — the FIELDth column of FILE's rows whose second column is KIND.
column() { awk -v k="$2" -v f="$3" '$2 == k { print $f }' "$1"; }

# timed_run NAME TIMEOUT CMD... — run as `run` does, and keep the command's own wall and CPU time
# (user + system of it and everything it waited for: bash's `time`, to the millisecond) as
# NAME.time, "WALL_MS CPU_MS". Only the command is timed, not the transcript around it.
timed_run() {
    local name=$1 secs=$2 rc=0 TIMEFORMAT='%3R %3U %3S'
    shift 2
    announce "$name" "$@"
    { time timeout -k 10 "$secs" "$@" >"$SCN_DIR/$name.out" 2>"$SCN_DIR/$name.err" </dev/null || rc=$?; } 2>"$SCN_DIR/$name.time.raw"
    awk '{ printf "%d %d\n", $1 * 1000, ($2 + $3) * 1000 }' "$SCN_DIR/$name.time.raw" >"$SCN_DIR/$name.time"
    ran "$name" "$rc" "$secs" "$@"
    echo "  wall, CPU (ms): $(cat "$SCN_DIR/$name.time")"
}

# The figures, in the log and on the console too (the host shows them as the guest runs, and keeps
# them in console.log should the VM be killed before it harvests).
show_figures() {
    local line
    while IFS= read -r line; do say "$1 figures: $line"; done <"$SCN_DIR/figures"
}

# ---------------------------------------------------------------- mount(8), cycle by cycle

# One mount/umount cycle of KIND (nfs-gds or nfs4) on $COST_DIR; appends
# "CYCLE KIND MOUNT_WALL_MS MOUNT_CPU_MS UMOUNT_WALL_MS" to cycles.tsv.
cost_cycle() {
    local cycle=$1 kind=$2 name=$2-$1
    case $kind in
        nfs-gds) timed_run "mount-$name" 120 mount -t nfs-gds "$SERVER:$EXPORT" "$COST_DIR" ;;
        nfs4) timed_run "mount-$name" 120 mount -t nfs4 -o "vers=4.2,proto=rdma,port=$RDMA_PORT" "$SERVER:$EXPORT" "$COST_DIR" ;;
        helper) timed_run "mount-$name" 120 /sbin/mount.nfs-gds "$SERVER:$EXPORT" "$COST_DIR" ;;
        base) timed_run "mount-$name" 120 "$COST_BASE" "$SERVER:$EXPORT" "$COST_DIR" ;;
    esac
    expect_rc "mount-$name" 0
    is_mounted "$COST_DIR" || abort "mount-$name: nothing is mounted on $COST_DIR"
    expect_xprt "$COST_DIR" rdma
    mount_opts "$COST_DIR" >"$SCN_DIR/options-$kind"
    timed_run "umount-$name" 60 umount "$COST_DIR"
    expect_rc "umount-$name" 0
    ! is_mounted "$COST_DIR" || abort "umount-$name: $COST_DIR is still mounted"
    printf '%s %s %s %s\n' "$cycle" "$kind" "$(cat "$SCN_DIR/mount-$name.time")" \
        "$(cut -d' ' -f1 "$SCN_DIR/umount-$name.time")" >>"$SCN_DIR/cycles.tsv"
}

# A row of the figures: WHAT, the medians of FIELD of the counted cycles (1 … COST_CYCLES of
# cycles.tsv) of kind A (nfs-gds) and kind B (nfs4), their ratio.
cost_row() {
    local what=$1 field=$2 a=${3:-nfs-gds} b=${4:-nfs4} g n r counted=$SCN_DIR/cycles-counted.tsv
    awk '$1 >= 1' "$SCN_DIR/cycles.tsv" >"$counted"
    g=$(column "$counted" "$a" "$field" | median) || { fail "no $what figures for $a"; return; }
    n=$(column "$counted" "$b" "$field" | median) || { fail "no $what figures for $b"; return; }
    r=$(ratio "$g" "$n") || r="n/a ($b took 0 ms)"
    printf '| %s | %s | %s | %s |\n' "$what" "$g" "$n" "$r"
}

scn_perf_mount_cost() {
    note "the cost a user sees: mount -t nfs-gds (checks, then mount.nfs) against mount -t nfs4 of the"
    note "same export with the options the helper adds, $COST_CYCLES cycles each, interleaved, on a GDS-ready node"
    require_hooked_kernel gpl
    mkdir -p "$COST_DIR"
    # Cycle 0 runs on an empty helper cache (as after a node's first boot); it is kept apart.
    find /var/cache/nfs-gds -mindepth 1 -delete 2>/dev/null
    printf '# cycle kind mount_wall_ms mount_cpu_ms umount_wall_ms (cycle 0: the first, not in the medians)\n' >"$SCN_DIR/cycles.tsv"
    local i kind counted kinds="nfs-gds nfs4 helper"
    if [ -f "$PAYLOAD/base/mount.nfs-gds" ]; then
        install -D -m 0755 "$PAYLOAD/base/mount.nfs-gds" "$COST_BASE" || fail "cannot install the earlier helper"
        kinds="$kinds base"
    fi
    for i in $(seq 0 "$COST_CYCLES"); do
        for kind in $kinds; do cost_cycle "$i" "$kind"; done
    done
    for kind in $kinds; do
        cmp -s "$SCN_DIR/options-$kind" "$SCN_DIR/options-nfs4" \
            || fail "the mounts got different options, so they do not compare: $kind '$(cat "$SCN_DIR/options-$kind")', nfs4 '$(cat "$SCN_DIR/options-nfs4")'"
    done
    counted=$(awk '$1 >= 1' "$SCN_DIR/cycles.tsv" | wc -l)
    [ "$counted" = $(($(wc -w <<<"$kinds") * COST_CYCLES)) ] || fail "$counted timed cycles, expected $(($(wc -w <<<"$kinds") * COST_CYCLES))"
    {
        echo "mount cost on $KVER: \`mount -t nfs-gds\` against \`mount -t nfs4 -o vers=4.2,proto=rdma,port=$RDMA_PORT\`"
        echo "of $SERVER:$EXPORT, $COST_CYCLES cycles each, interleaved; medians in ms. Options the kernel shows for both:"
        echo "  $(cat "$SCN_DIR/options-nfs4")"
        echo
        echo "| median | nfs-gds | nfs4 | ratio |"
        echo "|---|---|---|---|"
        cost_row "mount, wall" 3
        cost_row "umount, wall" 5
        cost_row "mount, CPU of mount(8) and all it ran" 4
        echo
        echo "the helper by itself (\`/sbin/mount.nfs-gds SPEC DIR\`, no mount(8)), medians in ms:"
        echo
        echo "| median | helper | nfs4 (with mount(8)) | ratio |"
        echo "|---|---|---|---|"
        cost_row "mount, wall" 3 helper nfs4
        cost_row "mount, CPU" 4 helper nfs4
        if [[ $kinds == *base* ]]; then
            echo
            echo "this helper against an earlier build of it ($("$COST_BASE" -V 2>&1 | head -n 1)), both run by themselves:"
            echo
            echo "| median | helper | earlier helper | ratio |"
            echo "|---|---|---|---|"
            cost_row "mount, wall" 3 helper base
            cost_row "mount, CPU" 4 helper base
            cost_row "umount, wall" 5 helper base
        fi
        echo
        echo "cycle 0 (helper cache empty), mount wall: nfs-gds $(column "$SCN_DIR/cycles.tsv" nfs-gds 3 | head -n 1) ms, nfs4 $(column "$SCN_DIR/cycles.tsv" nfs4 3 | head -n 1) ms"
    } >"$SCN_DIR/figures"
    cost_breakdown
    show_figures perf-mount-cost
}

# ---------------------------------------------------------------- where the helper's time goes

# Five interleaved rounds of what the helper's cost is made of, on this kernel: the floor of any
# process here (`true`, coreutils' C binary), a process of nfs-gds that does nothing
# (`--version`), `check` with the facts cache as root keeps it, `check` without it,
# and the kernel writing /proc/kallsyms (its CPU is the reader's). Appends a table to figures.
cost_breakdown() {
    local i what rows=$SCN_DIR/breakdown.tsv kinds='true version check check-nocache kallsyms'
    : >"$rows"
    for i in 1 2 3 4 5; do
        for what in $kinds; do
            case $what in
                true) timed_run "$what-$i" 60 /bin/true ;;
                version) timed_run "$what-$i" 60 nfs-gds --version ;;
                check) timed_run "$what-$i" 120 nfs-gds check ;;
                check-nocache) timed_run "$what-$i" 120 env NFS_GDS_NO_CACHE=1 nfs-gds check ;;
                kallsyms) timed_run "$what-$i" 60 dd if=/proc/kallsyms of=/dev/null bs=64k status=none ;;
            esac
            [ -s "$SCN_DIR/$what-$i.time" ] || fail "$what-$i was not timed"
            printf '%s %s %s\n' "$i" "$what" "$(cat "$SCN_DIR/$what-$i.time")" >>"$rows"
        done
    done
    {
        echo
        echo "where the helper's time goes: 5 interleaved rounds, medians in ms ($(wc -l </proc/kallsyms) kallsyms lines)"
        echo
        echo "| command | wall | CPU |"
        echo "|---|---|---|"
        for what in $kinds; do
            printf '| %s | %s | %s |\n' "$what" "$(column "$rows" "$what" 3 | median)" "$(column "$rows" "$what" 4 | median)"
        done
    } >>"$SCN_DIR/figures"
}

# ---------------------------------------------------------------- mount units at boot

# The indexes 01 … COST_BOOT_UNITS, and the two mount points of each.
cost_indexes() { seq -w 1 "$COST_BOOT_UNITS"; }
cost_boot_dir() { printf '%s/%s%s\n' "$COST_DIR" "$1" "$2"; } # KIND (gds|nfs) INDEX

# The fstab lines of the boot cost, interleaved: the same export, the same options in the end (the
# helper adds vers=4.2,proto=rdma,port=… to its lines), both after the local server.
cost_boot_fstab() {
    local i
    echo "# the boot cost: $COST_BOOT_UNITS mounts through the helper, as many plain ones"
    for i in $(cost_indexes); do
        echo "$SERVER:$EXPORT $(cost_boot_dir gds "$i") nfs-gds _netdev,x-systemd.after=nfs-server.service 0 0"
        echo "$SERVER:$EXPORT $(cost_boot_dir nfs "$i") nfs4 vers=4.2,proto=rdma,port=$RDMA_PORT,_netdev,x-systemd.after=nfs-server.service 0 0"
    done
}

cost_boot_mkdirs() {
    local i
    for i in $(cost_indexes); do mkdir -p "$(cost_boot_dir gds "$i")" "$(cost_boot_dir nfs "$i")" || return 1; done
}

# How long KIND's units took from the first one's start to the last one's activation, in ms.
cost_span() {
    awk -v k="$1" '$2 == k { if (!s || $4 < s) s = $4; if ($5 > e) e = $5 } END { printf "%d\n", (e - s) / 1000 }' "$SCN_DIR/units.tsv"
}

sd_perf_boot_cost() {
    note "the boot cost: $COST_BOOT_UNITS nfs-gds fstab lines and $COST_BOOT_UNITS nfs4 ones of the same export, one boot;"
    note "each mount unit's activation time (InactiveExit → ActiveEnter, what systemd-analyze blame prints)"
    local i kind dir unit a b units=()
    printf '# index kind activation_ms inactive_exit_us active_enter_us\n' >"$SCN_DIR/units.tsv"
    for i in $(cost_indexes); do
        for kind in gds nfs; do
            dir=$(cost_boot_dir "$kind" "$i")
            unit=$(unit_of "$dir")
            units+=("$unit")
            expect_unit_state "$unit" active
            [ "$(prop "$unit" SourcePath)" = /etc/fstab ] || fail "$unit does not come from /etc/fstab"
            expect_mounted "$dir"
            expect_xprt "$dir" rdma
            expect_mount_opt "$dir" proto=rdma
            expect_mount_opt "$dir" port=$RDMA_PORT
            a=$(prop "$unit" InactiveExitTimestampMonotonic)
            b=$(prop "$unit" ActiveEnterTimestampMonotonic)
            if [ "${a:-0}" -gt 0 ] && [ "${b:-0}" -ge "$a" ]; then
                printf '%s %s %s %s %s\n' "$i" "$kind" "$(((b - a) / 1000))" "$a" "$b" >>"$SCN_DIR/units.tsv"
            else
                fail "$unit has no activation timestamps (InactiveExit '$a', ActiveEnter '$b')"
            fi
        done
    done
    run blame 120 systemd-analyze blame --no-pager
    local counted g n
    counted=$(grep -vc '^#' "$SCN_DIR/units.tsv")
    [ "$counted" = $((2 * COST_BOOT_UNITS)) ] || fail "$counted units timed, expected $((2 * COST_BOOT_UNITS))"
    g=$(column "$SCN_DIR/units.tsv" gds 3 | median) || fail "no activation times of the nfs-gds units"
    n=$(column "$SCN_DIR/units.tsv" nfs 3 | median) || fail "no activation times of the nfs4 units"
    {
        echo "boot cost on $KVER: $COST_BOOT_UNITS nfs-gds fstab lines and $COST_BOOT_UNITS nfs4 ones (vers=4.2,proto=rdma,port=$RDMA_PORT)"
        echo "of $SERVER:$EXPORT, mounted in one boot; mount units' activation, ms"
        echo
        echo "| | nfs-gds | nfs4 | ratio |"
        echo "|---|---|---|---|"
        echo "| median activation | $g | $n | $(ratio "$g" "$n" || echo n/a) |"
        echo "| slowest activation | $(column "$SCN_DIR/units.tsv" gds 3 | sort -g | tail -n 1) | $(column "$SCN_DIR/units.tsv" nfs 3 | sort -g | tail -n 1) | |"
        echo "| first start → last active | $(cost_span gds) | $(cost_span nfs) | |"
        echo
        echo "systemd-analyze blame, these units:"
        grep -F "$(basename "$COST_DIR")-" "$SCN_DIR/blame.out" | sed 's/^ */  /'
    } >"$SCN_DIR/figures"
    cost_breakdown
    show_figures sd-perf-boot-cost
    run stop 300 systemctl stop "${units[@]}"
    expect_rc stop 0
    for i in $(cost_indexes); do
        for kind in gds nfs; do expect_not_mounted "$(cost_boot_dir "$kind" "$i")"; done
    done
}
