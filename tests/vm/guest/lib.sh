# Helpers for the guest side of the VM tests (sourced by init.sh and scenarios.sh).
# shellcheck shell=bash disable=SC2034  # constants used by the scripts that source this
#
# Results layout (harvested by the host as a tar stream from the results disk):
#   $RESULTS/guest.log                 everything init.sh did, with timestamps
#   $RESULTS/setup-failed              present if the test bed could not be set up (reason inside)
#   $RESULTS/env/…                     kernel, modules, RDMA and nfsd facts at boot
#   $RESULTS/scenarios/NAME/result     first line "PASS" or "FAIL: reason"
#   $RESULTS/scenarios/NAME/failures   every failed assertion, one a line
#   $RESULTS/scenarios/NAME/log        a transcript: commands, exit codes, stdout, stderr
#   $RESULTS/scenarios/NAME/CMD.{cmd,out,err,rc}   each captured command

PAYLOAD=${PAYLOAD:-/run/nfs-gds-payload}
RESULTS=${RESULTS:-/run/nfs-gds-results}
SERVER=10.0.2.15
EXPORT=/export
RDMA_PORT=20049
KVER=$(uname -r)
HOOK_REG=rpcrdma_register_nvfs_dma_ops
HOOK_DREG=rpcrdma_unregister_nvfs_dma_ops
CONFIG_FILE=/etc/nfs-gds/nfs-gds.toml
# How this guest's distribution ships modules, and so how the test builds are stored: .ko
# (Debian 12) or .ko.xz (Debian 13).
MODSUFFIX=$(cat "$PAYLOAD/modules/suffix" 2>/dev/null || echo .ko)
STOCK_RPCRDMA=/lib/modules/$KVER/kernel/net/sunrpc/xprtrdma/rpcrdma$MODSUFFIX
UPDATES_RPCRDMA=/lib/modules/$KVER/updates/rpcrdma$MODSUFFIX
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH

# ---------------------------------------------------------------- logging

say() {
    local line
    line="[guest $(date +%H:%M:%S)] $*"
    printf '%s\n' "$line" >/dev/console 2>/dev/null || true
    printf '%s\n' "$line"
}

# ---------------------------------------------------------------- test bed

# Start the kernel NFS server (threads plus the RDMA listener) and wait out the grace period, so
# the first OPEN of a test does not stall on NFS4ERR_GRACE.
start_nfsd() {
    rpc.nfsd 8 || { echo "rpc.nfsd 8 failed"; return 1; }
    echo "rdma $RDMA_PORT" >/proc/fs/nfsd/portlist || { echo "cannot add the rdma $RDMA_PORT listener"; return 1; }
    grep -q "^rdma $RDMA_PORT\$" /proc/fs/nfsd/portlist || { echo "nfsd portlist lacks 'rdma $RDMA_PORT'"; return 1; }
    local grace
    grace=$(cat /proc/fs/nfsd/nfsv4gracetime 2>/dev/null || echo 10)
    sleep $((grace + 1))
}

stop_nfsd() {
    rpc.nfsd 0 || { echo "rpc.nfsd 0 failed"; return 1; }
}

umount_all_nfs() {
    local t
    for t in $(awk '$3 == "nfs" || $3 == "nfs4" { print $2 }' /proc/mounts | sort -r); do
        timeout 60 umount "$t" 2>&1 || timeout 30 umount -f -l "$t" 2>&1 || echo "cannot unmount $t"
    done
    ! awk '$3 == "nfs" || $3 == "nfs4" { found=1 } END { exit !found }' /proc/mounts
}

# Unload rpcrdma (and nvidia_fs, which may hold it). The NFS client lets go of its
# transport a moment after the last unmount, so retry for a while.
unload_rpcrdma() {
    if [ -d /sys/module/nvidia_fs ]; then
        rmmod nvidia_fs || { echo "cannot rmmod nvidia_fs"; return 1; }
    fi
    local i
    for i in $(seq 1 60); do
        [ -d /sys/module/rpcrdma ] || return 0
        rmmod rpcrdma 2>/dev/null && return 0
        sleep 1
    done
    echo "cannot rmmod rpcrdma: $(cat /sys/module/rpcrdma/refcnt 2>/dev/null) users"
    lsmod | grep -E '^(rpcrdma|sunrpc|nfs|nfsv4|nfsd) ' || true
    return 1
}

# Put test builds where modprobe finds them first: /lib/modules/$KVER/updates/NAME$MODSUFFIX.
# VARIANT: rpcrdma-gpl | rpcrdma-plain | rpcrdma-badcrc | rpcrdma-* (any build in the payload:
# the BTF variants on a kernel without symbol CRCs) | none-rpcrdma (remove the rpcrdma
# override) | nvidia_fs (the stand-in) | nvidia-fs (NVIDIA's, with the nvidia_p2p provider). Both
# are the module nvidia_fs, so installing one removes the other.
# install_module_build also runs depmod (slow under TCG: install several, then depmod once).
install_module_files() {
    local variant dir=/lib/modules/$KVER/updates
    mkdir -p "$dir"
    for variant in "$@"; do
        case $variant in
            rpcrdma-*)
                [ -f "$PAYLOAD/modules/$variant$MODSUFFIX" ] || { echo "no $variant$MODSUFFIX in the payload"; return 1; }
                install -m 0644 "$PAYLOAD/modules/$variant$MODSUFFIX" "$dir/rpcrdma$MODSUFFIX" ;;
            nvidia_fs)
                rm -f "$dir"/nvidia-fs.ko*
                install -m 0644 "$PAYLOAD/modules/nvidia_fs$MODSUFFIX" "$dir/nvidia_fs$MODSUFFIX" ;;
            nvidia-fs)
                [ ! -f "$PAYLOAD/modules/nvidia-fs.failed" ] || { cat "$PAYLOAD/modules/nvidia-fs.failed"; return 1; }
                rm -f "$dir"/nvidia_fs.ko*
                install -m 0644 "$PAYLOAD/modules/nvidia-fs$MODSUFFIX" "$dir/nvidia-fs$MODSUFFIX"
                install -m 0644 "$PAYLOAD/modules/nvidia_p2p_stub$MODSUFFIX" "$dir/nvidia_p2p_stub$MODSUFFIX" ;;
            none-rpcrdma) rm -f "$dir"/rpcrdma.ko* ;;
            *) echo "unknown module build $variant"; return 1 ;;
        esac
    done
}

install_module_build() {
    install_module_files "$@" || return 1
    depmod -a "$KVER" || { echo "depmod failed"; return 1; }
}

# Put test builds (BUILD...) under updates/ with nothing loaded: unmount all NFS, stop nfsd,
# unload rpcrdma, install, depmod; modprobe must then resolve rpcrdma to updates/. nfsd stays
# stopped, so the caller decides what is loaded next.
stage_rpcrdma() {
    umount_all_nfs || { echo "NFS mounts remain"; return 1; }
    stop_nfsd || { echo "cannot stop nfsd"; return 1; }
    unload_rpcrdma || { echo "cannot unload rpcrdma"; return 1; }
    install_module_build "$@" || return 1
    same_file "$(modinfo -n rpcrdma)" "$UPDATES_RPCRDMA" \
        || { echo "modprobe does not resolve rpcrdma to $UPDATES_RPCRDMA"; return 1; }
}

# Replace the running rpcrdma with a test build and load an nvidia_fs: stage both, load both,
# restart nfsd. NVFS: nvidia_fs (the stand-in, the default) or nvidia-fs (NVIDIA's, whose
# nvidia_p2p provider is loaded first, as the GPU driver is on a GPU node: 2.13 takes its
# symbols with symbol_get on open and so does not pull it in as a dependency).
switch_rpcrdma() {
    local variant=$1 nvfs=${2:-nvidia_fs}
    stage_rpcrdma "$variant" "$nvfs" || return 1
    modprobe rpcrdma || { echo "modprobe rpcrdma failed"; return 1; }
    if [ "$nvfs" = nvidia-fs ]; then
        modprobe nvidia_p2p_stub || { echo "modprobe nvidia_p2p_stub failed"; return 1; }
    fi
    modprobe nvidia_fs || { echo "modprobe nvidia_fs ($nvfs) failed"; return 1; }
    echo "nvidia_fs now: $(modinfo -n nvidia_fs), version $(cat /sys/module/nvidia_fs/version)"
    local i
    for _ in $(seq 1 10); do [ -e /dev/nvidia-fs0 ] && break; sleep 1; done
    start_nfsd || return 1
    echo "rpcrdma now: $(modinfo -n rpcrdma) build-id $(loaded_build_id rpcrdma)"
}

# ---------------------------------------------------------------- kernel facts (ground truth)

# Whole-symbol lookup in /proc/kallsyms: prints "TYPE MODULE" lines for SYMBOL.
kallsyms_has() {
    awk -v s="$1" '$3 == s { print $2, $4; found=1 } END { exit !found }' /proc/kallsyms
}

# The GNU build-id of a loaded module, from /sys/module/NAME/notes (hex).
loaded_build_id() {
    local f=/sys/module/$1/notes/.note.gnu.build-id
    [ -r "$f" ] || { echo none; return; }
    # Note header: namesz, descsz, type (4 bytes each), then "GNU\0", then the id.
    od -An -v -tx1 "$f" | tr -d ' \n' | cut -c33-
    echo
}

# The ELF inside a module file: the file itself, or an uncompressed copy of a .ko.xz (readelf
# reads only plain ELF). Prints the path.
elf_of() {
    case $1 in
        *.ko.xz)
            local copy
            # Named by content: the same path holds different builds as the scenarios swap them.
            copy=/run/nfs-gds-elf/$(sha256sum <"$1" | cut -c1-16).ko
            mkdir -p /run/nfs-gds-elf
            [ -s "$copy" ] || xz -dc "$1" >"$copy" 2>/dev/null || rm -f "$copy"
            printf '%s\n' "$copy"
            ;;
        *) printf '%s\n' "$1" ;;
    esac
}

# Are two paths the same file (modinfo -n may print /lib/… or /usr/lib/… on a merged /usr)?
same_file() { [ -e "$1" ] && [ -e "$2" ] && [ "$(readlink -f "$1")" = "$(readlink -f "$2")" ]; }

file_build_id() {
    readelf -n "$(elf_of "$1")" 2>/dev/null | awk '/Build ID:/ { print $3; found=1 } END { if (!found) print "none" }'
}

# How module FILE exports SYMBOL, read with binutils alone: prints gpl, plain or none. Split
# tables (every kernel up to 6.x): the section of __ksymtab_SYMBOL, __ksymtab_gpl or __ksymtab.
# The flags table (Debian's 7.x): every export in __ksymtab, and the byte __flags_SYMBOL labels
# in __kflagstab has KSYM_FLAG_GPL_ONLY (1 << 0) for a GPL-only one.
ksymtab_of() {
    local file sym=$2 ndx section secoff off byte
    file=$(elf_of "$1")
    ndx=$(readelf -W -s "$file" | awk -v s="__ksymtab_$sym" '$8 == s { print $7; exit }')
    [ -n "$ndx" ] || { echo none; return; }
    section=$(readelf -W -S "$file" | sed -n 's/^ *\[ *\([0-9]*\)\] \([^ ]*\) .*/\1 \2/p' | awk -v n="$ndx" '$1 == n { print $2 }')
    case $section in
        __ksymtab_gpl) echo gpl; return ;;
        __ksymtab) ;;
        *) echo "unrecognised section $section"; return ;;
    esac
    # shdr fields after the "[Nr]" column: name type address offset …
    secoff=$(readelf -W -S "$file" | sed 's/^ *\[ *[0-9]*\]//' | awk '$1 == "__kflagstab" { print $4 }')
    [ -n "$secoff" ] || { echo plain; return; }
    off=$(readelf -W -s "$file" | awk -v s="__flags_$sym" '$8 == s { print $2; exit }')
    [ -n "$off" ] || { echo "no __flags_$sym"; return; }
    byte=$(od -An -tu1 -j $((16#$secoff + 16#$off)) -N1 "$file" | tr -d ' ')
    case $byte in
        '') echo "unreadable __kflagstab" ;;
        *) [ $((byte & 1)) = 1 ] && echo gpl || echo plain ;;
    esac
}

# Does module FILE define SYMBOL (a function symbol in its own symbol table)?
elf_defines() {
    readelf -W -s "$(elf_of "$1")" | awk -v s="$2" '$8 == s && $7 != "UND" { found=1 } END { exit !found }'
}

# ---------------------------------------------------------------- mounts

is_mounted() { awk -v t="$1" '$2 == t { found=1 } END { exit !found }' /proc/mounts; }

mount_opts() { awk -v t="$1" '$2 == t { print $4 }' /proc/mounts | tail -n 1; }

# Transport names of every xprt: line of the mount on DIR in /proc/self/mountstats.
mount_xprts() {
    awk -v t="$1" '
        /^device / { cur = ($5 == t) }
        cur && $1 == "xprt:" { print $2 }
    ' /proc/self/mountstats
}

# ---------------------------------------------------------------- scenario framework

SCN_DIR=

fail() {
    printf '%s\n' "$*" >>"$SCN_DIR/failures"
    printf 'ASSERTION FAILED: %s\n' "$*"
}

# Record a failure and end the scenario (for broken preconditions).
abort() {
    fail "$@"
    exit 1
}

note() { printf -- '-- %s\n' "$*"; }

# End the scenario as SKIPPED with REASON: what it tests cannot be set up here (a package that no
# longer installs). The host reports it as skipped, loudly, never as passed.
skip() {
    printf '%s\n' "$*" >"$SCN_DIR/skipped"
    printf 'SKIPPED: %s\n' "$*"
    exit 0
}

# run NAME TIMEOUT CMD... — run a command, capture stdout/stderr/exit code as NAME.{out,err,rc}.
run() {
    local name=$1 secs=$2
    shift 2
    announce "$name" "$@"
    local rc=0
    timeout -k 10 "$secs" "$@" >"$SCN_DIR/$name.out" 2>"$SCN_DIR/$name.err" </dev/null || rc=$?
    ran "$name" "$rc" "$secs" "$@"
}

# announce NAME CMD... — record the command as NAME.cmd and show it (run's first half).
announce() {
    local name=$1
    shift
    printf '%q ' "$@" >"$SCN_DIR/$name.cmd"
    echo >>"$SCN_DIR/$name.cmd"
    printf '$ %s' "$(cat "$SCN_DIR/$name.cmd")"
}

# ran NAME RC SECS CMD... — record and show how a command captured as NAME ended (run's second half).
ran() {
    local name=$1 rc=$2 secs=$3
    shift 3
    echo "$rc" >"$SCN_DIR/$name.rc"
    echo "  → exit $rc"
    if [ -s "$SCN_DIR/$name.out" ]; then echo "  stdout:"; sed 's/^/    | /' "$SCN_DIR/$name.out"; fi
    if [ -s "$SCN_DIR/$name.err" ]; then echo "  stderr:"; sed 's/^/    | /' "$SCN_DIR/$name.err"; fi
    [ "$rc" != 124 ] && [ "$rc" != 137 ] || fail "$name: timed out after ${secs}s: $*"
    return 0
}

rc_of() { cat "$SCN_DIR/$1.rc" 2>/dev/null || echo none; }

# Both streams of a captured command.
output_of() { cat "$SCN_DIR/$1.out" "$SCN_DIR/$1.err" 2>/dev/null; }

expect_rc() {
    local name=$1 want=$2 got
    got=$(rc_of "$name")
    [ "$got" = "$want" ] || fail "$name: exit code $got, expected $want ($(cat "$SCN_DIR/$name.cmd" 2>/dev/null))"
}

expect_rc_not() {
    local name=$1 bad=$2 got
    got=$(rc_of "$name")
    [ "$got" != "$bad" ] || fail "$name: exit code $got, expected anything but $bad"
}

# expect_names NAME CHECK-ID — the command's output names that check id (as a whole word).
expect_names() {
    local name=$1 id=$2
    output_of "$name" | grep -Eq "(^|[^A-Za-z0-9_-])${id}([^A-Za-z0-9_-]|\$)" \
        || fail "$name: output does not name check '$id'"
}

# expect_output NAME ERE WHAT — the command's output matches ERE.
expect_output() {
    local name=$1 re=$2 what=$3
    output_of "$name" | grep -Eq -- "$re" || fail "$name: $what (no match for /$re/ in its output)"
}

expect_mounted() { is_mounted "$1" || fail "$1 is not mounted (per /proc/mounts)"; }
expect_not_mounted() { ! is_mounted "$1" || fail "$1 is mounted but must not be: $(awk -v t="$1" '$2 == t' /proc/mounts)"; }

# expect_xprt DIR TRANSPORT — the mount has xprt: lines, and all are TRANSPORT.
expect_xprt() {
    local dir=$1 want=$2 got
    got=$(mount_xprts "$dir" | sort -u | tr '\n' ' ')
    note "mountstats of $dir: xprt ${got:-<none>}"
    [ "$got" = "$want " ] || fail "$dir: /proc/self/mountstats shows xprt '${got% }', expected '$want'"
}

expect_mount_opt() {
    local dir=$1 opt=$2
    mount_opts "$dir" | tr ',' '\n' | grep -qx -- "$opt" || fail "$dir: option $opt missing in /proc/mounts ($(mount_opts "$dir"))"
}

expect_no_mount_opt_like() {
    local dir=$1 re=$2
    ! mount_opts "$dir" | tr ',' '\n' | grep -Eq -- "$re" || fail "$dir: /proc/mounts options match /$re/ ($(mount_opts "$dir"))"
}

# A file on the server side of the export with fresh content; prints the content.
server_file() {
    local name=$1 content
    content="nfs-gds-vm $name $(date +%s%N) $RANDOM"
    printf '%s\n' "$content" >"$EXPORT/$name"
    sync
    printf '%s\n' "$content"
}

expect_file_content() {
    local path=$1 want=$2 got
    got=$(timeout 60 cat "$path" 2>&1) || { fail "cannot read $path: $got"; return; }
    [ "$got" = "$want" ] || fail "$path: read '$got', expected '$want'"
}

# ---------------------------------------------------------------- JSON (nfs-gds --json)

expect_json() {
    local name=$1
    jq -e . "$SCN_DIR/$name.out" >/dev/null 2>&1 || fail "$name: stdout is not a JSON document"
}

# The status of check ID anywhere in the JSON document (objects with "id" and "status").
json_status() {
    local v
    v=$(jq -r --arg id "$2" '[.. | objects | select(has("id") and has("status")) | select(.id == $id) | .status] | first // "absent"' \
        "$SCN_DIR/$1.out" 2>/dev/null) || v=invalid-json
    printf '%s\n' "${v:-no-output}"
}

json_verdict() {
    local v
    v=$(jq -r '.verdict // "absent"' "$SCN_DIR/$1.out" 2>/dev/null) || v=invalid-json
    printf '%s\n' "${v:-no-output}"
}

# expect_status NAME CHECK-ID STATUS... — the check's status is one of the given ones.
expect_status() {
    local name=$1 id=$2 got s
    shift 2
    got=$(json_status "$name" "$id")
    for s in "$@"; do [ "$got" = "$s" ] && return 0; done
    fail "$name: check $id is '$got', expected $(echo "$@" | sed 's/ / or /g')"
}

expect_status_not() {
    local name=$1 id=$2 bad=$3 got
    got=$(json_status "$name" "$id")
    [ "$got" != "$bad" ] && [ "$got" != absent ] && [ "$got" != invalid-json ] && [ "$got" != no-output ] \
        || fail "$name: check $id is '$got', expected a present status other than $bad"
}

# The summary of check ID (the first object with that id and a summary).
json_summary() {
    jq -r --arg id "$2" '[.. | objects | select(has("id") and has("summary")) | select(.id == $id) | .summary] | first // ""' \
        "$SCN_DIR/$1.out" 2>/dev/null
}

# expect_summary NAME CHECK-ID TEXT — the check's summary contains TEXT (a fixed string).
expect_summary() {
    local name=$1 id=$2 want=$3 got
    got=$(json_summary "$name" "$id")
    case $got in
        *"$want"*) ;;
        *) fail "$name: the summary of $id does not say '$want': '$got'" ;;
    esac
}

expect_verdict() {
    local name=$1 got s
    shift
    got=$(json_verdict "$name")
    for s in "$@"; do [ "$got" = "$s" ] && return 0; done
    fail "$name: verdict '$got', expected $(echo "$@" | sed 's/ / or /g')"
}

# jq over an agent status file: the mounts list, one compact object a line.
agent_mounts() { jq -c '.mounts[]?' "$1" 2>/dev/null; }

# expect_agent_mount FILE MOUNTPOINT FIELD=VALUE... — the agent's status lists the mount with
# those string fields.
expect_agent_mount() {
    local file=$1 mp=$2 m kv k v got
    shift 2
    m=$(agent_mounts "$file" | jq -c --arg mp "$mp" 'select(.mountpoint == $mp)' | head -n 1)
    [ -n "$m" ] || { fail "$(basename "$file"): the agent does not list $mp (mounts: $(agent_mounts "$file" | jq -r .mountpoint | tr '\n' ' '))"; return; }
    for kv in "$@"; do
        k=${kv%%=*} v=${kv#*=}
        got=$(jq -r --arg k "$k" '.[$k] // "absent"' <<<"$m")
        [ "$got" = "$v" ] || fail "$(basename "$file"): $mp has $k '$got', expected '$v'"
    done
}

expect_no_agent_mount() {
    local file=$1 mp=$2
    [ -s "$file" ] || { fail "$(basename "$file") was not written"; return; }
    [ -z "$(agent_mounts "$file" | jq -c --arg mp "$mp" 'select(.mountpoint == $mp)')" ] \
        || fail "$(basename "$file"): the agent lists $mp, which it must not see"
}

# ---------------------------------------------------------------- the plan

# A script's PLAN is a list of "scenario NAME FUNCTION [GUESTS]", "optin …" and "step NAME FUNCTION
# [GUESTS]" entries, run in order. NFS_GDS_VM_ONLY (an ERE) selects scenarios by bare NAME or
# GUEST/NAME; a step runs only when a selected scenario needs it (see run_plan).
selected() { [[ $1 =~ ${NFS_GDS_VM_ONLY:-.} || ${NFS_GDS_VM_GUEST:-}/$1 =~ ${NFS_GDS_VM_ONLY:-.} ]]; }

# An "optin NAME FUNCTION" entry is a scenario that runs only when NFS_GDS_VM_ONLY is set and
# selects it: it changes what the scenarios after it start from (the systemd guest's boot), so a
# run of everything leaves it out.
opted_in() { [ -n "${NFS_GDS_VM_ONLY:-}" ] && selected "$1"; }

# Is the PLAN entry of KIND and NAME a scenario to run?
wanted() {
    case $1 in
        scenario) selected "$2" ;;
        optin) opted_in "$2" ;;
        *) return 1 ;;
    esac
}

# An entry's optional fourth field limits it to some guests (comma-separated names); a guest
# whose script sets GUEST_SUBSET_<guest> runs only the scenarios named there (steps as needed).
# for_this_guest GUESTS KIND NAME
for_this_guest() {
    [ -z "$1" ] || [[ ,$1, == *",${NFS_GDS_VM_GUEST:-},"* ]] || return 1
    [ "$2" = step ] && return 0
    local subset=GUEST_SUBSET_${NFS_GDS_VM_GUEST//[^A-Za-z0-9_]/_}
    [ -z "${!subset:-}" ] || [[ " $(printf '%s ' ${!subset}) " == *" $3 "* ]] # words, any spacing
}

list_plan() {
    local entry kind name guests
    for entry in "${PLAN[@]}"; do
        read -r kind name _ guests <<<"$entry"
        wanted "$kind" "$name" && for_this_guest "$guests" "$kind" "$name" && echo "$name"
    done
    return 0
}

# Whether a scenario selected for this guest follows plan entry I before the next step.
block_selected() {
    local i kind name guests
    for ((i = $1 + 1; i < ${#PLAN[@]}; i++)); do
        read -r kind name _ guests <<<"${PLAN[$i]}"
        [ "$kind" = step ] && return 1
        for_this_guest "$guests" "$kind" "$name" && selected "$name" && return 0
    done
    return 1
}

# run_plan RESET — run the selected scenarios and the steps they need (a step whose block has no
# selected scenario is skipped: every step sets its kernel state up from scratch, whatever the
# one before left); RESET runs after each scenario. A
# failed step marks every later scenario failed ("not run") instead of running it on a kernel
# state it does not expect.
run_plan() {
    local reset=$1 broken='' i kind name fn guests t0 rc result n
    for i in "${!PLAN[@]}"; do
        read -r kind name fn guests <<<"${PLAN[$i]}"
        for_this_guest "$guests" "$kind" "$name" || continue
        if [ "$kind" = step ]; then
            mkdir -p "$RESULTS/steps"
            if ! block_selected "$i"; then
                echo "skipped: no selected scenario runs before the next step" >"$RESULTS/steps/$name.log"
                continue
            fi
            say "step $name"
            if [ -n "$broken" ]; then
                echo "not run: $broken" >"$RESULTS/steps/$name.log"
            elif ! "$fn" >"$RESULTS/steps/$name.log" 2>&1; then
                broken="step $name failed: $(tail -n 1 "$RESULTS/steps/$name.log")"
                say "$broken"
            fi
            continue
        fi
        wanted "$kind" "$name" || continue
        SCN_DIR=$RESULTS/scenarios/$name
        mkdir -p "$SCN_DIR"
        : >"$SCN_DIR/failures"
        t0=$SECONDS
        if [ -n "$broken" ]; then
            fail "not run: $broken" >/dev/null
        else
            (set +e; "$fn") >"$SCN_DIR/log" 2>&1
            rc=$?
            [ $rc = 0 ] || [ -s "$SCN_DIR/failures" ] || fail "scenario body ended with status $rc" >/dev/null
        fi
        if [ -s "$SCN_DIR/failures" ]; then
            result="FAIL: $(head -n 1 "$SCN_DIR/failures")"
            n=$(wc -l <"$SCN_DIR/failures")
            [ "$n" -gt 1 ] && result="$result (+$((n - 1)) more)"
        elif [ -s "$SCN_DIR/skipped" ]; then
            result="SKIP: $(head -n 1 "$SCN_DIR/skipped")"
        else
            result=PASS
        fi
        printf '%s\n' "$result" >"$SCN_DIR/result"
        say "$name: $result ($((SECONDS - t0)) s)"
        "$reset" >>"$SCN_DIR/log" 2>&1
    done
}

# ---------------------------------------------------------------- scenario plumbing shared by the guests

MNT=/mnt/gds
SPEC=$SERVER:$EXPORT
# Which nvidia_fs the steps loaded: nvidia_fs (the stand-in, modules/nvidia_fs) or nvidia-fs
# (NVIDIA's, from the suite's nvidia-fs-dkms, over the nvidia_p2p provider).
NVFS_UNDER_TEST=nvidia_fs

nvfs_name() { if [ "$NVFS_UNDER_TEST" = nvidia-fs ]; then echo "NVIDIA's nvidia-fs"; else echo "the nvidia_fs stub"; fi; }
# The version /sys/module/nvidia_fs/version must show for the nvidia_fs under test.
nvfs_expected_version() {
    if [ "$NVFS_UNDER_TEST" = nvidia-fs ]; then
        modinfo -F version "$PAYLOAD/modules/nvidia-fs$MODSUFFIX"
    else
        echo 2.28.4
    fi
}

# ---------------------------------------------------------------- preconditions

require_stock_kernel() {
    same_file "$(modinfo -n rpcrdma 2>/dev/null)" "$STOCK_RPCRDMA" || abort "precondition: modprobe does not resolve rpcrdma to the inbox module $STOCK_RPCRDMA ($(modinfo -n rpcrdma 2>&1))"
    [ -d /sys/module/rpcrdma ] || abort "precondition: rpcrdma is not loaded"
    ! kallsyms_has $HOOK_REG >/dev/null || abort "precondition: the loaded rpcrdma already has the nvfs hooks"
    [ ! -d /sys/module/nvidia_fs ] || abort "precondition: nvidia_fs is loaded"
}

# require_hooked_kernel gpl|plain
require_hooked_kernel() {
    local want=$1 file
    file=$(modinfo -n rpcrdma 2>/dev/null)
    same_file "$file" "$UPDATES_RPCRDMA" || abort "precondition: modprobe resolves rpcrdma to '$file', not $UPDATES_RPCRDMA"
    [ "$(ksymtab_of "$file" $HOOK_REG)" = "$want" ] || abort "precondition: $file does not export $HOOK_REG $want-only ($(ksymtab_of "$file" $HOOK_REG))"
    kallsyms_has $HOOK_REG >/dev/null || abort "precondition: the loaded rpcrdma has no $HOOK_REG in /proc/kallsyms"
    [ "$(loaded_build_id rpcrdma)" = "$(file_build_id "$file")" ] || abort "precondition: the loaded rpcrdma is not the build in $file"
    [ -d /sys/module/nvidia_fs ] || abort "precondition: $(nvfs_name) is not loaded"
    same_file "$(modinfo -n nvidia_fs 2>/dev/null)" "/lib/modules/$KVER/updates/$NVFS_UNDER_TEST$MODSUFFIX" \
        || abort "precondition: modprobe resolves nvidia_fs to '$(modinfo -n nvidia_fs 2>&1)', not $(nvfs_name)"
    [ "$(cat /sys/module/nvidia_fs/version 2>/dev/null)" = "$(nvfs_expected_version)" ] \
        || abort "precondition: the loaded nvidia_fs is $(cat /sys/module/nvidia_fs/version 2>&1), not $(nvfs_name) $(nvfs_expected_version)"
}

# A plain mount(8) of the export over RDMA, to prove the test bed; leaves it mounted on DIR.
plain_rdma_mount() {
    local name=$1 dir=$2
    run "$name" 120 mount -t nfs4 -o "vers=4.2,proto=rdma,port=$RDMA_PORT" "$SPEC" "$dir"
    expect_rc "$name" 0
}

plain_tcp_mount() {
    local name=$1 dir=$2
    run "$name" 120 mount -t nfs4 -o proto=tcp,vers=4.2 "$SPEC" "$dir"
    expect_rc "$name" 0
}

write_config() { mkdir -p /etc/nfs-gds && cat >"$CONFIG_FILE" && note "$CONFIG_FILE:" && sed 's/^/    | /' "$CONFIG_FILE"; }

# ---------------------------------------------------------------- results and power

disk_by_serial() {
    local b
    for b in /sys/block/vd*; do
        [ "$(cat "$b/serial" 2>/dev/null)" = "$1" ] && { echo "/dev/${b##*/}"; return 0; }
    done
    return 1
}

# Write the results as a tar stream onto the results disk. Only the first caller writes
# (the main program or the watchdog); a second one waits for it instead of powering off under it.
harvest() {
    if ! mkdir "$RESULTS/.harvest-lock" 2>/dev/null; then
        sleep 30
        return 0
    fi
    dmesg >"$RESULTS/dmesg.txt" 2>&1
    mkdir -p "$RESULTS/env"
    cat /proc/mounts >"$RESULTS/env/mounts-at-end.txt"
    lsmod >"$RESULTS/env/lsmod-at-end.txt" 2>&1
    if [ -d /run/systemd/system ]; then
        journalctl -b --no-pager -o short-monotonic >"$RESULTS/journal.txt" 2>&1
        systemctl list-units --all --no-pager >"$RESULTS/env/units-at-end.txt" 2>&1
    fi
    local dev
    dev=$(disk_by_serial nfs-gds-results) || { say "no results disk (virtio serial nfs-gds-results)"; return 1; }
    say "writing results to $dev"
    tar -cf "$dev" -C "$RESULTS" --exclude=.harvest-lock . || say "writing results to $dev failed"
    sync
    blockdev --flushbufs "$dev" 2>/dev/null || true
}

power_off() {
    sync
    echo o >/proc/sysrq-trigger
    sleep 60
}

# ---------------------------------------------------------------- between scenarios

BASELINE_FSTAB='# managed by the test scenarios'

reset_guest_state() {
    umount_all_nfs >/dev/null 2>&1 || say "warning: NFS mounts remain after a scenario: $(awk '$3 ~ /^nfs/' /proc/mounts)"
    rm -rf /etc/nfs-gds
    printf '%s\n' "$BASELINE_FSTAB" >/etc/fstab
    rm -rf /mnt/gds-noauto
}
