#!/usr/bin/env bash
# Diffs what nfs-gds reads from a real module tree against kmod's own tools on the same tree:
# every module's import versions (`modprobe --dump-modversions`), signer, key and digest
# (`modinfo -F`), every module name and alias resolved through the binary indexes
# (`modprobe -R`), and every import CRC of every module against its provider's export CRC (a
# consistent distribution tree has no disagreement).
#
# Usage: benches/kmod-fidelity.sh ROOT RELEASE   (ROOT/lib/modules/RELEASE with depmod's output;
# needs kmod: apt-get install kmod)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(realpath "$1") release=$2
tree=$root/lib/modules/$release
cargo build --release --quiet --example kmod-answers
answers=$PWD/target/release/examples/kmod-answers
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

modules=$(awk -F: '{ print $1 }' "$tree/modules.dep")
count=0 versions_diff=0 sig_diff=0 abi_mismatch=0 matched=0
for rel in $modules; do
    f=$tree/$rel
    count=$((count + 1))
    cmp -s <("$answers" versions "$f") <(modprobe --dump-modversions "$f" 2>/dev/null) ||
        { versions_diff=$((versions_diff + 1)); echo "versions differ: $rel"; }
    theirs=$(printf 'signer: %s\nsig_key: %s\nsig_hashalgo: %s' "$(modinfo -F signer "$f")" \
        "$(modinfo -F sig_key "$f")" "$(modinfo -F sig_hashalgo "$f")")
    ours=$("$answers" signature "$f")
    [ "$ours" = unsigned ] && ours=$'signer: \nsig_key: \nsig_hashalgo: '
    [ "$ours" = "$theirs" ] || { sig_diff=$((sig_diff + 1)); echo "signature differs: $rel"; }
    read -r _ m _ _ _ x < <("$answers" abi "$root" "$release" "$f" | head -1)
    matched=$((matched + m)); abi_mismatch=$((abi_mismatch + x))
done
echo "modules: $count; import versions differing from modprobe --dump-modversions: $versions_diff"
echo "signatures differing from modinfo: $sig_diff"
echo "imports compared with their provider's export CRC: $matched agree, $abi_mismatch disagree"

# Names and aliases: every module name, and every alias pattern with its wildcards filled in.
{ for rel in $modules; do basename "$rel" | sed 's/\.ko.*//'; done
  awk '$1 == "alias" { print $2 }' "$tree/modules.alias" | sed 's/\*/0/g; s/?/0/g' | grep -v '\[' ; } |
    sort -u >"$work/names"
xargs -a "$work/names" "$answers" resolve "$root" "$release" | awk -F'\t' '$3 !~ /^\(/ { print $1 "\t" $2 }' | tr - _ | sort >"$work/ours"
while read -r n; do
    printf '%s\t%s\n' "$n" "$(modprobe -d "$root" -S "$release" -R "$n" 2>/dev/null | head -1)"
done <"$work/names" | awk -F'\t' '$2 != ""' | tr - _ | sort >"$work/theirs"
echo "names and aliases resolved: $(wc -l <"$work/names"); differing from modprobe -R: $(diff "$work/ours" "$work/theirs" | grep -c '^[<>]' || true)"
diff "$work/ours" "$work/theirs" | head -20 || true
