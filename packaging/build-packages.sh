#!/usr/bin/env bash
# Builds the .deb and the .rpm of nfs-gds from one release build:
#
#   packaging/build-packages.sh OUTDIR
#
# Needs cargo (cargo-deb is installed with `cargo install --locked` when missing) and rpmbuild
# (Debian: apt-get install rpm). packaging/test-packages.sh OUTDIR lints and installs them.
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
cd "$(dirname "$0")/.."
mkdir -p "$out"
out=$(cd "$out" && pwd)

if ! cargo deb --version >/dev/null 2>&1; then
    cargo install --locked cargo-deb
fi
command -v rpmbuild >/dev/null || {
    echo "$0: rpmbuild is missing (Debian: apt-get install rpm)" >&2
    exit 1
}

if ! bash packaging/changelog.sh deb | cmp -s - packaging/debian/changelog; then
    echo "$0: packaging/debian/changelog is stale: bash packaging/changelog.sh deb > packaging/debian/changelog" >&2
    exit 1
fi

cargo build --release --locked
cargo deb --no-build --output "$out"

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
    --define "pkg_version $version" \
    --define '__brp_compress %{nil}' \
    "$spec"
ls -l "$out"
