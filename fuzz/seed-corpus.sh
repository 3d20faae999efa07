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

# depmod's binary index format (what tests/support/kmod_index.rs writes): an alias index with a
# wildcard pattern and a dep index, so the fuzzer starts past the magic and the node layout.
indexes="$corpus/kmod_index_bin"
mkdir -p "$indexes"
python3 - "$indexes" <<'PY'
import struct, sys
def node(trie, out):
    prefix = b""
    while not trie.get(None) and len([k for k in trie if k is not None]) == 1:
        (c, child), = [(k, v) for k, v in trie.items() if k is not None]
        prefix += bytes([c]); trie = child
    kids = sorted((c, node(t, out)) for c, t in trie.items() if c is not None)
    off, flags = len(out), 0
    if prefix:
        flags |= 0x80000000; out += prefix + b"\0"
    if kids:
        flags |= 0x20000000; first, last = kids[0][0], kids[-1][0]; out += bytes([first, last])
        for c in range(first, last + 1):
            out += struct.pack(">I", dict(kids).get(c, 0))
    if trie.get(None):
        flags |= 0x40000000; out += struct.pack(">I", len(trie[None]))
        for p, v in trie[None]:
            out += struct.pack(">I", p) + v + b"\0"
    return flags | off
def index(entries):
    root = {}
    for k, v in entries:
        t = root
        for c in k: t = t.setdefault(c, {})
        t.setdefault(None, []).append((len(t.get(None, [])), v))
    out = bytearray(struct.pack(">III", 0xB007F457, 0x00020001, 0))
    out[8:12] = struct.pack(">I", node(root, out))
    return bytes(out)
d = sys.argv[1]
open(f"{d}/alias", "wb").write(index([(b"xprtrdma", b"rpcrdma"), (b"rpcrdma6", b"rpcrdma"),
    (b"pci:v000015B3d*sv*sd*bc*sc*i*", b"mlx5_core"), (b"symbol:rpcrdma_register_nvfs_dma_ops", b"rpcrdma")]))
open(f"{d}/dep", "wb").write(index([(b"rpcrdma", b"kernel/net/sunrpc/xprtrdma/rpcrdma.ko: kernel/net/sunrpc/sunrpc.ko")]))
PY

# The redactor and the record and fstab readers start from the mount tables' seeds.
mkdir -p "$corpus/redact" "$corpus/mount_record" "$corpus/modprobe_config"
cp "$here"/seeds/mountinfo/* "$here"/seeds/mount_options/* "$corpus/redact/"
cp "$here"/seeds/mount_options/fstab-line "$corpus/mount_record/"
printf '{"source":"10.0.2.15:/export","target":"/mnt/gds","device":"0:50","mount_id":40,"port":20049}\n' \
    >"$corpus/mount_record/record.json"
printf 'alias xprtrdma rpcrdma\nblacklist rpcrdma\noptions rpcrdma max_requests=128\ninstall rpcrdma /bin/true\nsoftdep rpcrdma pre: nvidia-fs\n' \
    >"$corpus/modprobe_config/conf"

du -sh "$corpus"/* >&2
