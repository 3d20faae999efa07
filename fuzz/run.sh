#!/usr/bin/env bash
# Runs each fuzz target for SECONDS (default 60), one after the other, on one core, and prints
# per target: executions, executions per second, corpus size and findings (the crash, timeout
# and out-of-memory inputs libFuzzer saved, by kind).
#
#   fuzz/run.sh [SECONDS] [TARGET...]
#
# Needs nightly and cargo-fuzz (`cargo install cargo-fuzz`). Seeds come from fuzz/seeds/ and
# from fuzz/seed-corpus.sh (generated modules and kernel images), which this runs first when
# fuzz/corpus/ is missing. The working corpus grows in fuzz/corpus/TARGET, findings land in
# fuzz/artifacts/TARGET, libFuzzer's output in fuzz/logs/TARGET.log.
#
# Environment: SANITIZER (default none: the parsers are safe Rust, and the C decoders are not
# instrumented by cargo-fuzz anyway; `address` doubles the cost per input), TIMEOUT (seconds
# one input may take before it counts as a hang, default 10), RSS_LIMIT_MB (default 2048).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

seconds=${1:-60}
shift || true
sanitizer=${SANITIZER:-none}
timeout=${TIMEOUT:-10}
rss_limit=${RSS_LIMIT_MB:-2048}

case "$seconds" in
'' | *[!0-9]*)
    echo "run.sh: SECONDS must be a whole number, got '$seconds'" >&2
    exit 2
    ;;
esac

if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

[ -d corpus ] || ./seed-corpus.sh

nice -n 19 cargo +nightly fuzz build --sanitizer "$sanitizer"

mkdir -p logs
rows=()
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target" "artifacts/$target"
    seeds=()
    [ -d "seeds/$target" ] && seeds=("seeds/$target")
    before=$(find "artifacts/$target" -type f | wc -l)
    log="logs/$target.log"
    echo "== $target: ${seconds}s" >&2
    status=0
    # Fork mode with -ignore_*: a finding is saved and counted, and fuzzing goes on for the
    # whole time instead of stopping at the first one.
    nice -n 19 cargo +nightly fuzz run --sanitizer "$sanitizer" "$target" \
        "corpus/$target" "${seeds[@]}" -- \
        -max_total_time="$seconds" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
        -timeout="$timeout" -rss_limit_mb="$rss_limit" \
        -artifact_prefix="artifacts/$target/" >"$log" 2>&1 || status=$?
    # The last status line: "#EXECS: cov: … exec/s: … oom/timeout/crash: O/T/C time: Ss …".
    last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -n 1 || true)
    execs=$(sed -nE 's/^#([0-9]+):.*/\1/p' <<<"$last")
    elapsed=$(sed -nE 's/.* time: ([0-9]+)s.*/\1/p' <<<"$last")
    kinds=$(sed -nE 's/.*oom\/timeout\/crash: ([0-9]+\/[0-9]+\/[0-9]+).*/\1/p' <<<"$last")
    rate="?"
    [ -n "$execs" ] && [ "${elapsed:-0}" -gt 0 ] && rate=$((execs / elapsed))
    corpus=$(find "corpus/$target" -type f | wc -l)
    after=$(find "artifacts/$target" -type f | wc -l)
    findings=$((after - before))
    what=""
    [ -n "$kinds" ] && [ "$kinds" != "0/0/0" ] && what="oom/timeout/crash $kinds"
    first=$(grep -m 1 -oE 'panicked at [^ ]+:[0-9]+:[0-9]+' "$log" || true)
    [ -n "$first" ] && what="$what; first: $first"
    [ "$status" -ne 0 ] && what="$what; exit $status, see $log"
    rows+=("$(printf '%-16s %12s %8s %7s %8s  %s' "$target" "${execs:-?}" "$rate" \
        "$corpus" "$findings" "$what")")
done

printf '%-16s %12s %8s %7s %8s  %s\n' target executions exec/s corpus findings what
printf '%s\n' "${rows[@]}"
