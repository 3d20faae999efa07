#!/usr/bin/env bash
# Checks the packages packaging/build-packages.sh wrote into DIR:
#
#   packaging/test-packages.sh DIR
#
# lintian --pedantic must report no error and no warning on the .deb, rpmlint no error on the
# .rpm; both must install into scratch roots (dpkg --root, rpm --root --nodeps) laid out as a
# merged-/usr system, with the helper where mount(8) looks (/sbin/mount.nfs-gds) as a link to
# nfs-gds that runs, the same files in both, the policy as a configuration file equal to
# contrib/nfs-gds.toml, and the agent unit installed but not enabled. Any failure exits 1.
# Needs lintian, rpm and rpmlint (Debian: apt-get install lintian rpm rpmlint).
set -euo pipefail
dir=${1:?usage: $0 DIR}
cd "$(dirname "$0")/.."
repo=$PWD

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

for root in "$droot" "$rroot"; do
    kind=$(basename "$root")
    helper="$root/sbin/mount.nfs-gds"
    [ -L "$root/usr/sbin/mount.nfs-gds" ] || fail "$kind: /usr/sbin/mount.nfs-gds is not a symbolic link"
    [ "$(readlink "$root/usr/sbin/mount.nfs-gds")" = nfs-gds ] ||
        fail "$kind: mount.nfs-gds points at $(readlink "$root/usr/sbin/mount.nfs-gds"), not nfs-gds"
    [ -x "$helper" ] || fail "$kind: mount(8) would not find /sbin/mount.nfs-gds"
    [ "$("$helper" -V)" = "mount.nfs-gds (nfs-gds $version)" ] || fail "$kind: /sbin/mount.nfs-gds -V: $("$helper" -V)"
    cmp -s "$root/etc/nfs-gds/nfs-gds.toml" "$repo/contrib/nfs-gds.toml" ||
        fail "$kind: /etc/nfs-gds/nfs-gds.toml is not contrib/nfs-gds.toml"
    [ -f "$root/usr/lib/systemd/system/nfs-gds-agent.service" ] || fail "$kind: no agent unit"
    if find "$root/etc" -name 'nfs-gds-agent.service' | grep -q .; then
        fail "$kind: the agent unit is enabled"
    fi
    for page in man8/mount.nfs-gds.8 man8/nfs-gds.8 man5/nfs-gds.toml.5; do
        [ -f "$root/usr/share/man/$page.gz" ] || fail "$kind: no /usr/share/man/$page.gz"
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
