#!/usr/bin/env bash
# Fetch, or reuse from the cache, a second kernel package for a guest running KVER: the kernel an
# `apt upgrade` would install beside it (a security or point-release update of the same series;
# else the newest other one the host's apt offers, e.g. bookworm-backports). The guest installs
# it without any hooked rpcrdma build, as a node looks after an upgrade DKMS built nothing for.
#
# The choice comes from the `Depends:` of every version of the flavour's meta package
# (linux-image-amd64 for 6.1.0-50-amd64) in the host's apt lists: the highest version whose
# kernel is of KVER's series (6.1.0-*) and is not KVER, else the highest that is not KVER.
#
# Usage: fetch-next-kernel.sh KVER   — prints the .deb's path on stdout; exit 3 when apt offers
# no other kernel of that flavour, 2 on any other failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
. "$here/common.sh"
exec 3>&1 1>&2

kver=${1:?usage: fetch-next-kernel.sh KVER}
flavour=${kver#*-*-}        # 6.1.0-50-amd64 → amd64
series=${kver%-*-*}         # → 6.1.0
out="$(cache_dir)/next-kernel-$kver"

if [ -f "$out/.complete" ]; then
    log "next kernel: cached ($(cat "$out/.complete"))"
    printf '%s\n' "$out/$(cat "$out/.complete")" >&3
    exit 0
fi

# "VERSION PACKAGE" for every version of the meta package.
list_candidates() {
    apt-cache show "linux-image-$flavour" 2>/dev/null | awk '
        /^Version:/ { v = $2 }
        /^Depends:/ { if (match($0, /linux-image-[^ ,]+/)) print v, substr($0, RSTART, RLENGTH) }'
}
candidates=$(list_candidates)
if [ -z "$candidates" ]; then
    # A machine that had every package already may never have fetched its lists.
    log "next kernel: apt knows no linux-image-$flavour; apt-get update"
    apt-get update -q || warn "apt-get update reported errors"
    candidates=$(list_candidates)
fi
[ -n "$candidates" ] || { log "next kernel: apt knows no linux-image-$flavour"; exit 3; }

pick() { # FILTER-ERE — the highest version whose package matches and is not the running kernel
    local best_v='' best_p='' v p
    while read -r v p; do
        [ "$p" != "linux-image-$kver" ] && [[ $p =~ $1 ]] || continue
        if [ -z "$best_v" ] || dpkg --compare-versions "$v" gt "$best_v"; then
            best_v=$v best_p=$p
        fi
    done <<<"$candidates"
    [ -n "$best_p" ] && printf '%s=%s\n' "$best_p" "$best_v"
}
choice=$(pick "^linux-image-${series//./\\.}-[0-9]+-$flavour\$" || pick "^linux-image-.*-$flavour\$") \
    || { log "next kernel: apt offers no linux-image-*-$flavour other than $kver"; exit 3; }

log "next kernel: apt-get download $choice"
rm -rf "$out"
mkdir -p "$out"
(cd "$out" && apt-get download -q "$choice") || die "apt-get download $choice failed"
deb=$(cd "$out" && ls -- *.deb)
dpkg-deb --field "$out/$deb" Package >/dev/null || die "$out/$deb is not a Debian package"
printf '%s\n' "$deb" >"$out/.complete"
printf '%s\n' "$out/$deb" >&3
