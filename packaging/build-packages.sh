#!/usr/bin/env bash
# Builds the .deb and the .rpm of nfs-gds from one release build:
#
#   packaging/build-packages.sh OUTDIR
#
# The binary in both packages is linked against glibc 2.17's symbol versions, so that one build
# starts on every distribution GDS supports (RHEL/Rocky 8 has glibc 2.28, Ubuntu 20.04 2.31,
# SLES 15 2.31), not only on the glibc it was built on: `cargo zigbuild` with zig as the linker
# and `--target <arch>-unknown-linux-gnu.2.17`.
#
# Needs cargo (cargo-deb and cargo-zigbuild are installed with `cargo install --locked` when
# missing), python3 with venv (zig comes from PyPI's `ziglang` into target/zig-venv when no
# `zig` is on PATH) and rpmbuild (Debian: apt-get install rpm). packaging/test-packages.sh
# OUTDIR lints and installs them, and runs the binary on Debian 11's glibc.
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
cd "$(dirname "$0")/.."
mkdir -p "$out"
out=$(cd "$out" && pwd)

if ! cargo deb --version >/dev/null 2>&1; then
    cargo install --locked cargo-deb
fi
if ! cargo zigbuild --version >/dev/null 2>&1; then
    cargo install --locked cargo-zigbuild
fi
# cargo-zigbuild runs `zig`, or `python3 -m ziglang` where zig is PyPI's package.
if ! command -v zig >/dev/null && ! python3 -c 'import ziglang' 2>/dev/null; then
    venv=target/zig-venv
    [ -x "$venv/bin/python3" ] && "$venv/bin/python3" -c 'import ziglang' 2>/dev/null || {
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q ziglang
    }
    export PATH="$PWD/$venv/bin:$PATH"
fi
command -v rpmbuild >/dev/null || {
    echo "$0: rpmbuild is missing (Debian: apt-get install rpm)" >&2
    exit 1
}

if ! bash packaging/changelog.sh deb | cmp -s - packaging/debian/changelog; then
    echo "$0: packaging/debian/changelog is stale: bash packaging/changelog.sh deb > packaging/debian/changelog" >&2
    exit 1
fi

triple=$(uname -m)-unknown-linux-gnu
cargo zigbuild --release --locked --target "$triple.2.17"
binary=target/$triple/release/nfs-gds
# cargo deb --target takes the assets' target/release/ from target/TRIPLE/release/.
cargo deb --no-build --target "$triple" --output "$out"

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
top=$(mktemp -d)
trap 'rm -rf "$top"' EXIT
spec="$top/nfs-gds.spec"
{
    cat packaging/rpm/nfs-gds.spec
    echo
    echo '%changelog'
    bash packaging/changelog.sh rpm
} >"$spec"
load=()
if [ -z "$(rpm --eval '%{?systemd_post:defined}')" ]; then
    load=(--load "$PWD/packaging/rpm/macros.systemd")
fi
# The spec compresses the manual pages itself: Debian's brp-compress needs a bash /bin/sh.
rpmbuild -bb --quiet "${load[@]}" \
    --define "_topdir $top" \
    --define "_rpmdir $out" \
    --define '_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm' \
    --define "srcroot $PWD" \
    --define "binary $binary" \
    --define "pkg_version $version" \
    --define '__brp_compress %{nil}' \
    "$spec"
ls -l "$out"
