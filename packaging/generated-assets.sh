#!/usr/bin/env bash
# Writes into target/generated/ what the packages install that the binary writes from its own
# definitions, so that it describes the very build it ships with: the manual pages' synopsis,
# commands and options (the clap definition, the helper's usage text, the check registry) around
# their hand-written prose (packaging/man/PAGE.in), and the shell completions. Cargo.toml's
# assets and the RPM spec take them from there, so every `cargo deb` needs this first:
#
#   packaging/generated-assets.sh BINARY
#
# packaging/build-packages.sh runs it with the glibc 2.17 build, tests/vm/run with the release
# build it packages.
set -euo pipefail
binary=${1:?usage: $0 BINARY}
binary=$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")
cd "$(dirname "$0")/.."
generated=target/generated
rm -rf "$generated"
mkdir -p "$generated/man" "$generated/completions"
for page in nfs-gds.8 mount.nfs-gds.8; do
    "$binary" generate-man "$page" >"$generated/man/$page"
done
"$binary" completions bash >"$generated/completions/nfs-gds.bash"
"$binary" completions zsh >"$generated/completions/_nfs-gds"
"$binary" completions fish >"$generated/completions/nfs-gds.fish"
