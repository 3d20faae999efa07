#!/usr/bin/env bash
# Builds the starting corpus in fuzz/corpus/TARGET from what the test suite uses: the committed
# text seeds (fuzz/seeds/, modelled on the fixtures), the fixture files and the example policy,
# and module files and kernel images generated here rather than committed (binaries).
#
#   fuzz/seed-corpus.sh
#
# Modules come from examples/gen-module.rs (the test suite's ELF generator): both export-table
# layouts, each hook export, each packing a distribution uses (plain, xz with CRC32 and CRC64,
# zstd, gzip), so the fuzzer starts from valid streams of every decoder. Kernel images are a
# stub boot header followed by a gzip, xz or zstd payload, with and without the GPL-rule text,
# and a bare ELF. Needs xz, zstd and gzip.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
corpus="$here/corpus"

for tool in xz zstd gzip; do
    command -v "$tool" >/dev/null || {
        echo "seed-corpus.sh: needs $tool (apt-get install xz-utils zstd gzip)" >&2
        exit 2
    }
done

for dir in "$here"/seeds/*/; do
    target=$(basename "$dir")
    mkdir -p "$corpus/$target"
    cp "$dir"* "$corpus/$target/" 2>/dev/null || true
done
cp "$repo/tests/fixtures/mountstats.txt" "$corpus/mountstats/fixture-mountstats.txt"
cp "$repo/contrib/nfs-gds.toml" "$corpus/policy_toml/contrib-nfs-gds.toml"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$repo" && nice cargo build --quiet --example gen-module)
gen="$repo/target/debug/examples/gen-module"

modules="$corpus/module_file"
mkdir -p "$modules"
for layout in split flags; do
    for hooks in gpl plain unexported none; do
        name="rpcrdma-$layout-$hooks"
        "$gen" "$work/$name.ko" --layout "$layout" --hooks "$hooks" --release 6.8.0-45-generic
        cp "$work/$name.ko" "$modules/$name.ko"
        xz --check=crc32 --lzma2=dict=1MiB -c "$work/$name.ko" >"$modules/$name.ko.xz"
        xz --lzma2=dict=2MiB -c "$work/$name.ko" >"$modules/$name-crc64.ko.xz"
        zstd -q -c "$work/$name.ko" >"$modules/$name.ko.zst"
        gzip -n -c "$work/$name.ko" >"$modules/$name.ko.gz"
    done
done

# A kernel image: a stub x86 boot header (the "HdrS" signature at 0x202), then the payload.
images="$corpus/kernel_image"
mkdir -p "$images"
header() {
    head -c 514 /dev/zero
    printf 'HdrS'
    head -c 494 /dev/zero
}
# What the scan looks for, inside 1 MiB of other bytes (the scan wants a real-sized payload).
{
    head -c 1048576 /dev/zero
    printf 'failing symbol_get of non-GPLONLY symbol %%s.\n'
} >"$work/with-rule"
head -c 1048700 /dev/zero >"$work/without-rule"
for payload in with-rule without-rule; do
    { header; gzip -n -9 -c "$work/$payload"; } >"$images/bzimage-gzip-$payload"
    { header; xz --check=crc32 -c "$work/$payload"; } >"$images/bzimage-xz-$payload"
    { header; zstd -q -19 -c "$work/$payload"; } >"$images/bzimage-zstd-$payload"
done
{ head -c 64 "$work/rpcrdma-split-gpl.ko"; printf 'failing symbol_get of non-GPLONLY symbol'; } \
    >"$images/elf-with-rule"

du -sh "$corpus"/* >&2
