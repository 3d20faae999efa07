# Sourced by benches/real-node.sh: sampling in interleaved rounds, the figure rows with their
# goals, peak RSS, instruction counts and the agent pass. Needs $work, $bin, $rounds, $runs
# and $callgrind; every judged row is also appended to $work/verdicts.

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
ms() { awk -v s="$1" 'BEGIN { printf "%.2f ms", s * 1000 }'; }

heading() {
    : >"$work/verdicts"
    : >"$work/figures"
    printf '%-18s %-30s %10s %10s %8s %8s  %-10s %s\n' tree figure "cpu" "cpu ref" "×wall" "×cpu" goal result
}

# The verdict of a CPU figure against its goal: "x G" (at most G), "gt G" (more than G), "-".
judge() { # value kind goal
    case $2 in
        x) awk -v v="$1" -v g="$3" 'BEGIN { print (v <= g ? "PASS" : "MISS") }' ;;
        gt) awk -v v="$1" -v g="$3" 'BEGIN { print (v > g ? "PASS" : "MISS") }' ;;
        *) echo "" ;;
    esac
}
goal_text() { case $1 in x) echo "≤ $2×" ;; gt) echo "> $2×" ;; lt) echo "< $2" ;; *) echo "—" ;; esac; }
verdict_line() { # tree figure value-columns... result ; prints and records
    local tree=$1 figure=$2 result=${*: -1}
    shift 2
    printf '%-18s %-30s %10s %10s %8s %8s  %-10s %s\n' "$tree" "$figure" "$@"
    [ -z "$result" ] || echo "$result $tree: $figure" >>"$work/verdicts"
}

sample() { # label [VAR=value…] -- command… : one hyperfine round, appended to $work/all.csv
    local label=$1 shell=-N envs=()
    shift
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    [ "$label" = manual ] && shell=
    env "${envs[@]}" hyperfine $shell --style none --warmup 1 --runs 5 -i \
        --export-csv "$work/one.csv" -n "$label" "$*" >/dev/null 2>&1
    tail -n +2 "$work/one.csv" >>"$work/all.csv"
}
median_col() { # label wall|cpu -> median over rounds, in seconds
    awk -F, -v c="$1" -v k="$2" '$1 == c { print (k == "wall" ? $4 : $5 + $6) }' "$work/all.csv" |
        sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
row() { # tree figure label reference-label goal kind(x|gt|-)
    local cw cc rw rc r
    cw=$(median_col "$3" wall) cc=$(median_col "$3" cpu)
    rw=$(median_col "$4" wall) rc=$(median_col "$4" cpu)
    r=$(ratio "$cc" "$rc")
    echo "$1 $3 $cc" >>"$work/figures"
    verdict_line "$1" "$2" "$(ms "$cc")" "$(ms "$rc")" "$(ratio "$cw" "$rw")" "$r" \
        "$(goal_text "$6" "$5")" "$(judge "$r" "$6" "$5")"
}
peak_kb() { # command… -> the peak RSS of one run, in KiB
    # GNU time's last line is the RSS, after "Command exited with non-zero status N" when the
    # command did (a node that is not ready); that exit status is not the bench's failure.
    { /usr/bin/time -f %M "$@" 2>&1 >/dev/null || true; } | tail -1
}
# The kernel-image scan's peak RSS over the same check without it, against its goal: the
# decoder's window as the image declares it, capped at what the payload decompresses to, plus
# at most 4 MiB.
rss_over_row() { # tree what base-KiB window-MiB command…
    local kb over
    kb=$(peak_kb "${@:5}")
    over=$(awk -v k="$kb" -v b="$3" 'BEGIN { printf "%.1f", (k - b) / 1024 }')
    verdict_line "$1" "peak RSS over no scan, $2" "$over MiB" "" "" "" "≤ $(($4 + 4)) MiB" \
        "$(awk -v o="$over" -v g="$(($4 + 4))" 'BEGIN { print (o <= g ? "PASS" : "MISS") }')"
}
peak_mb() { # command… -> the peak RSS of one run, in MB with one decimal
    awk -v k="$(peak_kb "$@")" 'BEGIN { printf "%.1f", k / 1024 }'
}
rss_row() { # tree what command… : peak RSS of one run, against the 16 MB goal
    local mb
    mb=$(peak_mb "${@:3}")
    verdict_line "$1" "peak RSS, $2" "$mb MB" "" "" "" "< 16 MB" \
        "$(awk -v m="$mb" 'BEGIN { print (m < 16 ? "PASS" : "MISS") }')"
}
# A peak RSS whose goal is another row's: the kernel-image scan's memory is judged by its
# window (rss_over_row), not by the 16 MB every other check is held to.
rss_figure() { # tree what command…
    verdict_line "$1" "peak RSS, $2" "$(peak_mb "${@:3}") MB" "" "" "" "by window" ""
}

# Instruction counts (user space, callgrind) of one run, as a multiple of --version's, and the
# inclusive cost of the hot paths by the functions that own them (they nest: the CRC check
# includes the decompression of the providers). A path the run never entered shows "-".
hot_paths=(
    "kernel config|host::modules::kernel_config::"
    "symbol CRCs, providers|host::modules::(module_load|symbol_providers)::"
    "  decompression|kmod::decompress::"
    "  module index (.bin)|kmod::index::"
    "rpcrdma ELF inspection|host::modules::module_files::"
    "kallsyms|host::modules::kallsyms::"
    "kernel-image scan|kmod::image_scan::"
    "nvidia-fs|host::platform::(nvidia_fs|nvfs_)"
    "module owners|host::modules::module_owners::"
    "PCI walk|host::platform::(pci|pcie_tree)::"
    "MOK, key lists|host::platform::module_keys::"
    "boot kernels, next boot|host::boot::"
    "mount tables|host::mounts::"
)
callgrind_total() { # out-file -> instructions
    # Read to the end: an early exit would break callgrind_annotate's pipe (and pipefail).
    callgrind_annotate "$1" 2>/dev/null | awk '/PROGRAM TOTALS/ && !t { gsub(",", "", $1); t = $1 } END { print t }'
}
instructions_of() { # command… -> the instructions one run executes (user space)
    "$valgrind" --tool=callgrind --callgrind-out-file="$work/cg-one.out" "$@" >/dev/null 2>&1 || true
    callgrind_total "$work/cg-one.out"
}
# An instruction ratio judged against its goal: the primary figure on a loaded machine, where
# CPU-time ratios move with the load and instruction counts do not.
ir_row() { # tree figure instructions reference-instructions goal
    local r
    r=$(ratio "$3" "$4")
    verdict_line "$1" "$2" "$(awk -v t="$3" 'BEGIN { printf "%.1f M", t / 1e6 }')" \
        "$(awk -v t="$4" 'BEGIN { printf "%.1f M", t / 1e6 }')" "" "$r" "$(goal_text x "$5")" \
        "$(judge "$r" x "$5")"
}
instructions() { # tree what [VAR=value…] -- command… (sets last_ir)
    local tree=$1 what=$2 envs=() total out=$work/cg.out
    shift 2
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    if [ -z "${version_ir:-}" ]; then
        "$valgrind" --tool=callgrind --callgrind-out-file="$out" "$bin" --version >/dev/null 2>&1
        version_ir=$(callgrind_total "$out")
    fi
    env "${envs[@]}" "$valgrind" --tool=callgrind --callgrind-out-file="$out" "$@" >/dev/null 2>&1 || true
    total=$(callgrind_total "$out")
    last_ir=$total
    verdict_line "$tree" "instructions, $what" "$(awk -v t="$total" 'BEGIN { printf "%.1f M", t / 1e6 }')" \
        "$(awk -v t="$version_ir" 'BEGIN { printf "%.1f M", t / 1e6 }')" "" "$(ratio "$total" "$version_ir")" "—" ""
    callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null >"$work/cg.txt"
    local entry name pattern
    for entry in "${hot_paths[@]}"; do
        name=${entry%%|*} pattern=${entry#*|}
        awk -v p="$pattern" -v n="$name" -v t="$total" '
            { f = $0; sub(/^ *[0-9,]+ *\([^)]*\) */, "", f) }
            f ~ p { v = $1; gsub(",", "", v); if (v + 0 > max) max = v + 0 }
            END { if (max > 0) printf "%-18s   %-28s %10.1f M %9.1f %%\n", "", n, max / 1e6, 100 * max / t
                  else printf "%-18s   %-28s %12s\n", "", n, "-" }' "$work/cg.txt"
    done
}

# Every figure of one node tree: its commands in interleaved rounds, the ratios with their goals,
# the peak RSS of each nfs-gds run and, for one kernel, the instruction counts.
measure_tree() { # root packing state kernels
    local root=$1 packing=$2 state=$3 kernels=$4 release module elf unpack manual tree
    release=$(cat "$root/proc/sys/kernel/osrelease")
    module=$(ls "$root/lib/modules/$release/updates/dkms/"rpcrdma.ko*)
    tree="$packing $state ${kernels}k"
    [ "${headers:-without}" = without ] || tree="$tree+h"
    case $packing in
        plain) elf=$module unpack=: ;;
        zst) elf=$work/unpacked.ko unpack="zstd -q -d -f -o $elf $module" ;;
        xz) elf=$work/unpacked.ko unpack="xz -dc $module > $elf" ;;
    esac
    manual="grep rpcrdma $root/proc/modules; modinfo -b $root -k $release rpcrdma | grep -i nvfs; $unpack; readelf -Ws $elf | grep nvfs_dma"
    "$bin" --root "$root" check >/dev/null 2>&1 || true # fills the facts cache (as root)
    : >"$work/all.csv"
    for _ in $(seq "$rounds"); do
        sample version -- "$bin" --version
        sample cold NFS_GDS_NO_CACHE=1 -- "$bin" --root "$root" check
        sample warm -- "$bin" --root "$root" check
        sample manual -- "$manual"
        sample modprobe -- modprobe -n -v -d "$root" -S "$release" rpcrdma
        if [ "$packing" = xz ]; then sample xz-dc -- xz -dc "$module"; fi
    done
    if [ "$packing" = xz ]; then
        row "$tree" "check cold ÷ xz -dc" cold xz-dc 1.3 x
        row "$tree" "check cold ÷ --version" cold version - -
    else
        row "$tree" "check cold ÷ --version" cold version 2 x
    fi
    row "$tree" "check warm ÷ --version" warm version 1.3 x
    row "$tree" "manual ÷ check cold" manual cold 1 gt
    row "$tree" "manual ÷ check warm" manual warm 1 gt
    row "$tree" "modprobe -n -v ÷ check cold" modprobe cold - -
    rss_row "$tree" "check cold" env NFS_GDS_NO_CACHE=1 "$bin" --root "$root" check
    rss_row "$tree" "check warm" "$bin" --root "$root" check
    if [ "$callgrind" = 1 ] && [ "$kernels" = 1 ]; then
        instructions "$tree" cold NFS_GDS_NO_CACHE=1 -- "$bin" --root "$root" check
        if [ "$packing" = xz ]; then
            ir_row "$tree" "instructions cold ÷ xz -dc" "$last_ir" "$(instructions_of xz -dc "$module")" 1.3
        else
            ir_row "$tree" "instructions cold ÷ --version" "$last_ir" "$version_ir" 2
        fi
        if [ "$state" = cold ]; then instructions "$tree" warm -- "$bin" --root "$root" check; fi
    fi
}

# One agent pass (`agent --once`, the whole process) on ROOT's 10,000 mounts: CPU against
# the 50 ms goal, peak RSS against 16 MB.
agent_rows() { # label root
    local label=$1 root=$2 judged
    local args=(--root "$root" agent --once --nfd-dir "$root/out/f" --textfile-dir "$root/out/t"
        --status-file "$root/out/status.json")
    mkdir -p "$root/out"
    "$bin" "${args[@]}" >/dev/null 2>&1 || true # fills the facts cache
    judged=$(grep -c '"mountpoint"' "$root/out/status.json" || true)
    [ "$judged" = 10000 ] || { echo "real-node: the agent judged $judged mounts of 10000 on $label" >&2; exit 1; }
    : >"$work/all.csv"
    for _ in $(seq "$rounds"); do sample agent -- "$bin" "${args[@]}"; done
    local c w
    c=$(median_col agent cpu) w=$(median_col agent wall)
    verdict_line "agent, $label" "pass of 10,000 mounts (CPU)" "$(ms "$c")" "$(ms "$w") wall" "" "" "≤ 50 ms" \
        "$(awk -v c="$c" 'BEGIN { print (c <= 0.050 ? "PASS" : "MISS") }')"
    rss_row "agent, $label" "pass" "$bin" "${args[@]}"
}

# One kernel against three, from the figures kept by row, then the count of goals met.
summary() {
    local packing state what one three h
    for h in "" +h; do for packing in plain zst xz; do for state in cold loaded; do for what in cold warm; do
        one=$(awk -v t="$packing $state 1k$h" -v w="$what" '$1 " " $2 " " $3 == t && $4 == w { print $5; exit }' "$work/figures")
        three=$(awk -v t="$packing $state 3k$h" -v w="$what" '$1 " " $2 " " $3 == t && $4 == w { print $5; exit }' "$work/figures")
        if [ -n "$one" ] && [ -n "$three" ]; then
            verdict_line "$packing $state$h" "check $what, 3 kernels ÷ 1" "$(ms "$three")" "$(ms "$one")" "" \
                "$(ratio "$three" "$one")" "—" ""
        fi
    done; done; done; done
    echo
    echo "goals met: $(grep -c '^PASS' "$work/verdicts" || true), missed: $(grep -c '^MISS' "$work/verdicts" || true)"
    grep '^MISS' "$work/verdicts" | sed 's/^MISS /  missed: /' || true
}
