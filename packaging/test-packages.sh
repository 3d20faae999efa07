#!/usr/bin/env bash
# Checks the packages packaging/build-packages.sh wrote into DIR:
#
#   packaging/test-packages.sh DIR
#
# lintian --pedantic must report no error and no warning on the .deb, rpmlint no error on the
# .rpm; both must install into scratch roots (dpkg --root, rpm --root --nodeps) laid out as a
# merged-/usr system, with the helper where mount(8) looks (/sbin/mount.nfs-gds) as a link to
# nfs-gds that runs, the manual pages of both commands and the completions as that binary
# generates them, the same files in both, the policy as a configuration file equal to
# contrib/nfs-gds.toml, and the agent unit installed but not enabled. The binary must ask for
# no glibc symbol version newer than 2.17 (nor the RPM's requirements), and must run on Debian
# 11's glibc 2.31 (older than the 2.34 a plain build on Debian 12 needs): its libc6 package is
# fetched with apt through a private sources list, cached in target/old-glibc, and the binary run
# chrooted into it. Both binaries carry a GNU build-id. Any failure exits 1.
# Needs lintian, rpm, rpmlint and binutils (Debian: apt-get install lintian rpm rpmlint binutils).
set -euo pipefail
dir=${1:?usage: $0 DIR}
cd "$(dirname "$0")/.."
repo=$PWD

# Every prerequisite first, all of them in one message: a missing tool is not a finding on the
# packages.
missing=()
need() { command -v "$1" >/dev/null || missing+=("$1 is not installed (Debian: apt-get install $2)"); }
need lintian lintian
need rpmlint rpmlint
need rpm rpm
need dpkg-deb dpkg
need dpkg dpkg
need objdump binutils
need readelf binutils
need apt-get apt
need chroot coreutils
if [ ${#missing[@]} -gt 0 ]; then
    echo "$0: missing prerequisites; nothing was checked:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
fi

fail() {
    echo "test-packages: FAIL: $*" >&2
    exit 1
}
one() {
    local found=("$dir"/$1)
    [ ${#found[@]} = 1 ] && [ -f "${found[0]}" ] || fail "expected one $1 in $dir, found: ${found[*]}"
    echo "${found[0]}"
}
deb=$(one '*.deb')
rpm=$(one '*.rpm')
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)

echo "== lintian --pedantic -I $(basename "$deb")"
lintian --pedantic -I --fail-on error,warning "$deb" || fail "lintian reported errors or warnings"

echo "== rpmlint -c packaging/rpm/rpmlint.toml $(basename "$rpm")"
set +e
rpmlint -c packaging/rpm/rpmlint.toml "$rpm"
rc=$?
set -e
# rpmlint 2 exits 64 when it found errors, 66 when the badness threshold is exceeded.
[ "$rc" = 0 ] || [ "$rc" = 1 ] || fail "rpmlint found errors (exit $rc)"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# A merged-/usr root (/sbin, /bin and /lib are links into /usr, as on Debian 12 and Fedora)
# with a /bin/sh, so that dpkg and rpm can run the maintainer scripts chrooted into it. The
# scripts find no systemctl or deb-systemd-helper there and skip them, as on a system that is
# not running systemd.
merged_root() {
    mkdir -p "$1/usr/sbin" "$1/usr/bin" "$1/usr/lib" "$1/usr/lib64" "$1/etc" "$1/tmp"
    ln -s usr/sbin "$1/sbin"
    ln -s usr/bin "$1/bin"
    ln -s usr/lib "$1/lib"
    ln -s usr/lib64 "$1/lib64"
    cp -L /bin/sh "$1/usr/bin/sh"
    mkdir -p "$1/dev"
    mknod -m 0666 "$1/dev/null" c 1 3 2>/dev/null || true
    local lib
    for lib in $(ldd /bin/sh | grep -o '/[^ ]*'); do
        mkdir -p "$(dirname "$1$lib")"
        cp -L "$lib" "$1$lib"
    done
}

# The newest glibc symbol version a binary or package asks for, e.g. 2.17.
newest_glibc() { grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1; }
max_glibc=2.17
at_most() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -n 1)" = "$2" ]; }

echo "== glibc: symbol versions of the packaged binary"
bin_dir="$scratch/bin"
mkdir -p "$bin_dir"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$bin_dir" ./usr/sbin/nfs-gds
binary="$bin_dir/usr/sbin/nfs-gds"
needs=$(objdump -T "$binary" | newest_glibc)
[ -n "$needs" ] || fail "objdump -T found no glibc symbol version in the packaged binary"
at_most "$needs" "$max_glibc" || fail "the packaged binary needs GLIBC_$needs, newer than $max_glibc"
rpm_needs=$(rpm -qp --requires "$rpm" | newest_glibc)
[ -z "$rpm_needs" ] || at_most "$rpm_needs" "$max_glibc" || fail "the .rpm requires GLIBC_$rpm_needs, newer than $max_glibc"
deb_needs=$(dpkg-deb --field "$deb" Depends | sed -n 's/.*libc6 (>= \([0-9][0-9.]*\)).*/\1/p')
[ -n "$deb_needs" ] || fail "the .deb does not depend on libc6: $(dpkg-deb --field "$deb" Depends)"
at_most "$deb_needs" "$max_glibc" || fail "the .deb depends on libc6 (>= $deb_needs), newer than $max_glibc"
echo "glibc: the binary asks for GLIBC_$needs at most, the .rpm for GLIBC_${rpm_needs:-none}, the .deb for libc6 >= $deb_needs"

echo "== GNU build-id of the packaged binary (the .rpm's: below)"
# Debuginfo and crash reports are matched to a binary by it; zig's linker writes none unless
# asked (build-packages.sh asks).
readelf -n "$binary" | grep -q 'Build ID:' || fail "the .deb's binary has no GNU build-id (readelf -n)"
echo "build-id: $(readelf -n "$binary" | sed -n 's/.*Build ID: //p')"

echo "== the binary on Debian 11's glibc"
old=target/old-glibc
if ! ls "$old"/libc6_2.31-*.deb >/dev/null 2>&1; then
    mkdir -p "$old/lists/partial" "$old/cache/archives/partial"
    echo "deb http://deb.debian.org/debian bullseye main" >"$old/sources.list"
    : >"$old/status"
    apt_old=(-o "Dir::Etc::SourceList=$PWD/$old/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$PWD/$old/lists" -o "Dir::Cache=$PWD/$old/cache"
        -o "Dir::State::status=$PWD/$old/status" -o APT::Sandbox::User=root)
    apt-get -q "${apt_old[@]}" update >/dev/null || fail "cannot fetch Debian 11's package lists"
    (cd "$old" && apt-get -q "${apt_old[@]}" download libc6) >/dev/null || fail "cannot download Debian 11's libc6"
fi
oldroot="$scratch/old-glibc"
mkdir -p "$oldroot"
dpkg -x "$(ls "$old"/libc6_2.31-*.deb | head -n 1)" "$oldroot"
cp "$binary" "$oldroot/nfs-gds"
ran=$(chroot "$oldroot" /nfs-gds --version 2>&1) || fail "the packaged binary does not start on glibc 2.31: $ran"
case "$ran" in "nfs-gds $version"*) ;; *) fail "on glibc 2.31: nfs-gds --version said: $ran" ;; esac
echo "glibc 2.31: $ran"

echo "== dpkg --root"
droot="$scratch/deb"
merged_root "$droot"
mkdir -p "$droot/var/lib/dpkg/info" "$droot/var/lib/dpkg/updates"
touch "$droot/var/lib/dpkg/status" "$droot/var/lib/dpkg/available"
dpkg --root="$droot" --force-depends --install "$deb"
dpkg --root="$droot" -s nfs-gds | grep -qx 'Status: install ok installed' || fail "deb: not installed"

echo "== rpm --root --nodeps"
rroot="$scratch/rpm"
merged_root "$rroot"
rpm --root "$rroot" --initdb
rpm --root "$rroot" --nodeps -i "$rpm"
rpm --root "$rroot" -q nfs-gds >/dev/null || fail "rpm: not installed"
readelf -n "$rroot/usr/sbin/nfs-gds" | grep -q 'Build ID:' || fail "the .rpm's binary has no GNU build-id (readelf -n)"

for root in "$droot" "$rroot"; do
    kind=$(basename "$root")
    helper="$root/sbin/mount.nfs-gds"
    [ -L "$root/usr/sbin/mount.nfs-gds" ] || fail "$kind: /usr/sbin/mount.nfs-gds is not a symbolic link"
    [ "$(readlink "$root/usr/sbin/mount.nfs-gds")" = nfs-gds ] ||
        fail "$kind: mount.nfs-gds points at $(readlink "$root/usr/sbin/mount.nfs-gds"), not nfs-gds"
    [ -x "$helper" ] || fail "$kind: mount(8) would not find /sbin/mount.nfs-gds"
    # "mount.nfs-gds (nfs-gds VERSION (commit …, target …, features: …))"
    case "$("$helper" -V)" in
        "mount.nfs-gds (nfs-gds $version "*) ;;
        *) fail "$kind: /sbin/mount.nfs-gds -V: $("$helper" -V)" ;;
    esac
    cmp -s "$root/etc/nfs-gds/nfs-gds.toml" "$repo/contrib/nfs-gds.toml" ||
        fail "$kind: /etc/nfs-gds/nfs-gds.toml is not contrib/nfs-gds.toml"
    [ -f "$root/usr/lib/systemd/system/nfs-gds-agent.service" ] || fail "$kind: no agent unit"
    if find "$root/etc" -name 'nfs-gds-agent.service' | grep -q .; then
        fail "$kind: the agent unit is enabled"
    fi
    cmp -s "$root/usr/share/nfs-gds/oci/nfs-gds-hook.json" "$repo/contrib/oci/nfs-gds-hook.json" ||
        fail "$kind: no /usr/share/nfs-gds/oci/nfs-gds-hook.json"
    # Installing changes no container start: no hooks.d file where runtimes look.
    for dir in usr/share/containers/oci/hooks.d etc/containers/oci/hooks.d; do
        if [ -d "$root/$dir" ] && find "$root/$dir" -name '*nfs-gds*' | grep -q .; then
            fail "$kind: the package turns the container gate on ($dir)"
        fi
    done
    for page in man8/mount.nfs-gds.8 man8/nfs-gds.8 man5/nfs-gds.toml.5; do
        [ -f "$root/usr/share/man/$page.gz" ] || fail "$kind: no /usr/share/man/$page.gz"
    done
    # The generated pages are what the installed binary writes: its commands and options.
    for page in nfs-gds.8 mount.nfs-gds.8; do
        gzip -dc "$root/usr/share/man/man8/$page.gz" | cmp -s - <("$root/usr/sbin/nfs-gds" generate-man "$page") ||
            fail "$kind: /usr/share/man/man8/$page.gz is not what its nfs-gds generate-man $page writes"
    done
    # And so are the completions, where each family's shells look for them.
    zsh_dir=usr/share/zsh/vendor-completions
    [ "$kind" = rpm ] && zsh_dir=usr/share/zsh/site-functions
    for shell_file in bash:usr/share/bash-completion/completions/nfs-gds zsh:$zsh_dir/_nfs-gds \
        fish:usr/share/fish/vendor_completions.d/nfs-gds.fish; do
        shell=${shell_file%%:*} file=${shell_file#*:}
        cmp -s "$root/$file" <("$root/usr/sbin/nfs-gds" completions "$shell") ||
            fail "$kind: /$file is not what its nfs-gds completions $shell writes"
    done
    echo "$kind: /sbin/mount.nfs-gds -> $(readlink "$root/usr/sbin/mount.nfs-gds"), runs as $version"
done
dpkg-deb --info "$deb" conffiles | grep -qx /etc/nfs-gds/nfs-gds.toml || fail "deb: the policy is not a conffile"
rpm -qp --configfiles "$rpm" | grep -qx /etc/nfs-gds/nfs-gds.toml || fail "rpm: the policy is not a config file"
rpm -qp --scripts "$rpm" | grep -q 'systemctl.*preset.*nfs-gds-agent.service' || fail "rpm: no %systemd_post scriptlet"

# The same files, where each family keeps them: zsh completions and licences differ by
# distribution; only Debian ships copyright, changelog.Debian.gz (RPM keeps its changelog in
# the header) and lintian overrides.
listing() {
    (cd "$1" && find usr etc \( -type f -o -type l \) | sort) |
        grep -v -e '^usr/bin/sh$' -e '^usr/lib64/' -e '^usr/lib/x86_64-linux-gnu/' |
        sed -e 's|^usr/share/zsh/site-functions/|usr/share/zsh/vendor-completions/|' |
        grep -v -e '^usr/share/doc/nfs-gds/copyright$' -e '^usr/share/doc/nfs-gds/changelog.Debian.gz$' \
            -e '^usr/share/lintian/' \
            -e '^usr/share/licenses/nfs-gds/' -e '^usr/lib/\.build-id/'
}
if ! diff <(listing "$droot") <(listing "$rroot"); then
    fail "the .deb and the .rpm install different files (< deb, > rpm)"
fi
echo "test-packages: OK ($(listing "$droot" | wc -l) files, the same in both)"
