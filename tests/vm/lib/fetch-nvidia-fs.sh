#!/usr/bin/env bash
# Fetch, or reuse from the cache, NVIDIA's nvidia-fs source as Debian ships it for SUITE: the
# binary package nvidia-fs-dkms of the non-free component (bookworm 2.13.5, trixie 2.19.7), which
# holds the source DKMS builds under /usr/src/nvidia-fs-*. apt-get download reads a private
# sources list and its own lists directory, so the host's apt configuration is neither needed
# nor touched.
#
# Usage: fetch-nvidia-fs.sh SUITE   — prints the .deb's path on stdout.
# The cache key covers this script, the suite and the mirror.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
. "$here/common.sh"
exec 3>&1 1>&2

suite=${1:?usage: fetch-nvidia-fs.sh SUITE}
mirror=$(debian_mirror)
mirror=${mirror:-http://deb.debian.org/debian}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$keyring" ] || die "no $keyring to check the $suite archive with (package debian-archive-keyring)"
out="$(cache_dir)/nvidia-fs-dkms-$suite-$(hash_of "$here/fetch-nvidia-fs.sh" "$suite" "$mirror")"

if [ -f "$out/.complete" ]; then
    log "nvidia-fs-dkms: cached ($out/$(cat "$out/.complete"))"
    printf '%s\n' "$out/$(cat "$out/.complete")" >&3
    exit 0
fi

rm -rf "$out"
mkdir -p "$out/apt/lists/partial" "$out/apt/cache/archives/partial"
printf 'deb [signed-by=%s] %s %s non-free\n' "$keyring" "$mirror" "$suite" >"$out/apt/sources.list"
apt_private=(
    -o "Dir::Etc::sourcelist=$out/apt/sources.list" -o Dir::Etc::sourceparts=-
    -o "Dir::State::Lists=$out/apt/lists" -o "Dir::Cache=$out/apt/cache"
    -o APT::Sandbox::User=root
)
log "nvidia-fs-dkms: apt-get update of $suite non-free ($mirror)"
apt-get -q "${apt_private[@]}" update || die "apt-get update of $suite non-free failed"
log "nvidia-fs-dkms: apt-get download nvidia-fs-dkms ($suite)"
(cd "$out" && apt-get -q "${apt_private[@]}" download nvidia-fs-dkms) || die "apt-get download nvidia-fs-dkms ($suite) failed"
deb=$(cd "$out" && ls -- nvidia-fs-dkms_*.deb)
dpkg-deb --field "$out/$deb" Package >/dev/null || die "$out/$deb is not a Debian package"
rm -rf "$out/apt"
printf '%s\n' "$deb" >"$out/.complete"
log "nvidia-fs-dkms: $deb → $out"
printf '%s\n' "$out/$deb" >&3
