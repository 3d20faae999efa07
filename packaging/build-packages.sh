#!/usr/bin/env bash
# Builds the .deb and the .rpm of nfs-gds from one release build:
#
#   packaging/build-packages.sh OUTDIR
#
# The binary in both packages is linked against glibc 2.17's symbol versions, so that one build
# starts on every distribution GDS supports (RHEL/Rocky 8 has glibc 2.28, Ubuntu 20.04 2.31,
# SLES 15 2.31), not only on the glibc it was built on: `cargo zigbuild` with zig as the linker
# and `--target <arch>-unknown-linux-gnu.2.17`, with a GNU build-id (zig's linker writes none
# unless asked) so that crash reports and debuginfo can be matched to it. The .deb is cargo-deb's
# `glibc217` variant, whose Depends states that glibc; a plain `cargo deb` builds for the build
# machine's glibc and lets dpkg-shlibdeps say which. The manual pages of the two commands and
# the shell completions are written by the binary built here (`nfs-gds generate-man`,
# `nfs-gds completions`) into target/generated/ (packaging/generated-assets.sh).
#
# Needs, checked before anything is installed: cargo and a C compiler, rpmbuild (Debian: apt-get
# install rpm), readelf (binutils), and, unless zig is on PATH or python3 imports ziglang,
# python3 with venv (Debian: apt-get install python3-venv). cargo-deb and cargo-zigbuild are then
# installed with `cargo install --locked` when missing, and zig from PyPI's `ziglang` into
# target/zig-venv. packaging/test-packages.sh OUTDIR lints and installs them, and runs the binary
# on Debian 11's glibc.
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
cd "$(dirname "$0")/.."

# Every prerequisite first, all of them in one message, before anything is installed.
missing=()
command -v cargo >/dev/null || missing+=("cargo (Rust: https://rustup.rs)")
command -v cc >/dev/null || missing+=("cc (Debian: apt-get install gcc)")
command -v rpmbuild >/dev/null || missing+=("rpmbuild (Debian: apt-get install rpm)")
command -v readelf >/dev/null || missing+=("readelf (Debian: apt-get install binutils)")
# Where zig from PyPI goes (NFS_GDS_ZIG_VENV names another place, as the tests do).
zig_venv=${NFS_GDS_ZIG_VENV:-target/zig-venv}
if ! command -v zig >/dev/null && ! python3 -c 'import ziglang' 2>/dev/null \
    && ! { [ -x "$zig_venv/bin/python3" ] && "$zig_venv/bin/python3" -c 'import ziglang' 2>/dev/null; }; then
    # zig comes from PyPI into a virtualenv: python3 and its venv module (with ensurepip).
    python3 -c 'import venv, ensurepip' 2>/dev/null \
        || missing+=("python3 with venv, for zig from PyPI (Debian: apt-get install python3-venv)")
fi
if [ ${#missing[@]} -gt 0 ]; then
    echo "$0: missing prerequisites; nothing was installed:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
fi

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
    venv=$zig_venv
    [ -x "$venv/bin/python3" ] && "$venv/bin/python3" -c 'import ziglang' 2>/dev/null || {
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q ziglang
    }
    case $venv in /*) ;; *) venv=$PWD/$venv ;; esac
    export PATH="$venv/bin:$PATH"
fi

if ! bash packaging/changelog.sh deb | cmp -s - packaging/debian/changelog; then
    echo "$0: packaging/debian/changelog is stale: NFS_GDS_BLESS=1 cargo test --test integration -- packaging:: writes it" >&2
    exit 1
fi

triple=$(uname -m)-unknown-linux-gnu
# zig's linker writes no .note.gnu.build-id unless asked (rpmbuild warns, and debuginfo and
# crash reports cannot be matched to the binary). With --target, RUSTFLAGS reaches only the
# target's artifacts, not the build scripts.
RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-C link-arg=-Wl,--build-id=sha1" \
    cargo zigbuild --release --locked --target "$triple.2.17"
binary=target/$triple/release/nfs-gds
readelf -n "$binary" | grep -q 'Build ID' || {
    echo "$0: $binary has no GNU build-id" >&2
    exit 1
}
# The manual pages and completions, written by this very binary (see the script).
bash packaging/generated-assets.sh "$binary"
# cargo deb --target takes the assets' target/release/ from target/TRIPLE/release/. The
# glibc217 variant states the glibc the binary was linked for (see Cargo.toml).
cargo deb --no-build --variant glibc217 --target "$triple" --output "$out"

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
