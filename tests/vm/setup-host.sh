#!/usr/bin/env bash
# Install what the VM harness needs on a Debian 12 host, idempotently: qemu, debootstrap,
# e2fsprogs from apt, and cargo-deb (to build the package the guests install) with cargo.
#
# Needs root. Installs only what is missing. If a newer qemu-utils from bookworm-backports is
# already installed, Debian 12's own qemu-system-x86 (7.2) would conflict with it (apt would remove
# qemu-utils), so qemu-system-x86 then comes from bookworm-backports too, using the same mirror the
# host's apt already uses.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/common.sh
. "$here/lib/common.sh"

[ "$(id -u)" = 0 ] || die "setup-host.sh must run as root (it installs packages with apt-get)"
command -v apt-get >/dev/null || die "no apt-get: this harness expects a Debian 12 host"

export DEBIAN_FRONTEND=noninteractive
apt_opts=(-y -q --no-install-recommends -o Dpkg::Options::=--force-confold -o DPkg::Lock::Timeout=600)

need_cmd() { command -v "$1" >/dev/null 2>&1; }

missing=()
need_cmd qemu-system-x86_64 || missing+=(qemu-system-x86)
need_cmd qemu-img || missing+=(qemu-utils)
need_cmd debootstrap || missing+=(debootstrap)
need_cmd mkfs.ext4 || missing+=(e2fsprogs)
need_cmd timeout || missing+=(coreutils)
need_cmd tar || missing+=(tar)
need_cmd xz || missing+=(xz-utils)
need_cmd sha256sum || missing+=(coreutils)
# The staging scenarios' mountinfo watcher is built static here (the guests have no libc headers).
need_cmd cc || missing+=(gcc)
[ -f /usr/lib/x86_64-linux-gnu/libc.a ] || missing+=(libc6-dev)
[ -r /usr/share/keyrings/debian-archive-keyring.gpg ] || missing+=(debian-archive-keyring)

# cargo deb builds the package the guests install (not needed when NFS_GDS_VM_DEB names one).
ensure_cargo_deb() {
    [ -z "${NFS_GDS_VM_DEB:-}" ] || return 0
    if ! need_cmd cargo && [ -x "$HOME/.cargo/bin/cargo" ]; then PATH=$HOME/.cargo/bin:$PATH; fi
    need_cmd cargo || die "cargo not found; install Rust, or set NFS_GDS_VM_DEB to a built package"
    cargo deb --version >/dev/null 2>&1 && return 0
    log "host: cargo install --locked cargo-deb"
    cargo install --locked cargo-deb || die "cargo install cargo-deb failed (see above)"
}

if [ ${#missing[@]} -eq 0 ]; then
    ensure_cargo_deb
    log "host: all tools present (qemu-system-x86_64, qemu-img, debootstrap, mkfs.ext4, cargo deb)"
    exit 0
fi

log "host: installing ${missing[*]}"
apt_updated=0
apt_update() {
    [ $apt_updated = 1 ] && return 0
    # A failing third-party source must not stop us; the install below tells if Debian's work.
    apt-get update -q || warn "apt-get update reported errors; trying to install anyway"
    apt_updated=1
}
apt_update

# qemu-utils from bookworm-backports installed? Then qemu-system-x86 must come from there too.
qu_ver=$(dpkg-query -W -f='${Version}' qemu-utils 2>/dev/null || true)
if [[ " ${missing[*]} " == *" qemu-system-x86 "* ]] && [[ "$qu_ver" == *bpo12* ]]; then
    log "host: qemu-utils $qu_ver is from bookworm-backports; taking qemu-system-x86 from there too"
    if ! apt-cache policy qemu-system-x86 | grep -q 'bookworm-backports'; then
        mirror=$(debian_mirror)
        [ -n "$mirror" ] || die "cannot find the Debian mirror in /etc/apt/sources.list*; set NFS_GDS_VM_MIRROR"
        cat >/etc/apt/sources.list.d/nfs-gds-vm-backports.sources <<SRC
Types: deb
URIs: $mirror
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
        apt_updated=0
        apt_update
    fi
    # qemu-system-x86 from backports, and its own dependencies (qemu-system-common, -data,
    # seabios) at the versions it needs, which are in backports too: -t makes apt take them from
    # there. Everything else comes from bookworm, in a separate install.
    rest=()
    for m in "${missing[@]}"; do [ "$m" = qemu-system-x86 ] || rest+=("$m"); done
    if [ ${#rest[@]} -gt 0 ]; then
        apt-get install "${apt_opts[@]}" "${rest[@]}" || die "apt-get install ${rest[*]} failed (see above)"
    fi
    apt-get install "${apt_opts[@]}" -t bookworm-backports qemu-system-x86 \
        || die "apt-get install -t bookworm-backports qemu-system-x86 failed (see above)"
elif ! apt-get install "${apt_opts[@]}" "${missing[@]}"; then
    die "apt-get install ${missing[*]} failed (see above)"
fi

for c in qemu-system-x86_64 qemu-img debootstrap mkfs.ext4; do
    need_cmd "$c" || die "host: $c still missing after install"
done
ensure_cargo_deb
log "host: ready ($(qemu-system-x86_64 --version | head -1))"
