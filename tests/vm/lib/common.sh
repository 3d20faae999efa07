# Shared helpers for the VM harness (sourced, not run).
# shellcheck shell=bash

log() { printf '[vm %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
warn() { printf '[vm %(%H:%M:%S)T] WARNING: %s\n' -1 "$*" >&2; }
die() { printf '[vm %(%H:%M:%S)T] ERROR: %s\n' -1 "$*" >&2; exit 2; }

# The Debian mirror to use: $NFS_GDS_VM_MIRROR, else the one the host's apt uses for bookworm,
# else empty (debootstrap then uses its built-in default).
debian_mirror() {
    if [ -n "${NFS_GDS_VM_MIRROR:-}" ]; then
        printf '%s\n' "$NFS_GDS_VM_MIRROR"
        return
    fi
    local f uri=""
    # deb822 stanzas: URIs: … / Suites: bookworm …
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -r "$f" ] || continue
        uri=$(awk '
            BEGIN { RS=""; FS="\n" }
            {
                u=""; s=""; t=""
                for (i=1; i<=NF; i++) {
                    if ($i ~ /^URIs:/)   { u=$i; sub(/^URIs:[ \t]*/, "", u) }
                    if ($i ~ /^Suites:/) { s=$i }
                    if ($i ~ /^Types:/)  { t=$i }
                }
                if (t ~ /(^|[ \t])deb([ \t]|$)/ && s ~ /[ \t]bookworm([ \t]|$)/ && u != "") { split(u, a, /[ \t]+/); print a[1]; exit }
            }' "$f")
        [ -n "$uri" ] && break
    done
    if [ -z "$uri" ] && [ -r /etc/apt/sources.list ]; then
        uri=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list)
    fi
    printf '%s\n' "$uri"
}

cache_dir() { printf '%s\n' "${NFS_GDS_VM_CACHE:-$HOME/.cache/nfs-gds-vm}"; }

# sha256 of the named files' contents and of extra strings, short form.
hash_of() { { for a in "$@"; do if [ -f "$a" ]; then cat "$a"; else printf '%s\n' "$a"; fi; done; } | sha256sum | cut -c1-16; }

# Remove a half-built tree. --one-file-system never crosses into a mount point, should an
# interrupted build have left one behind (the builds mount only inside a private namespace, so
# normally none survives). build-root.sh keeps its own copy: the roots' cache key is a hash of
# that script, so moving it here would rebuild every cached root.
remove_tree() {
    local d=$1
    [ -e "$d" ] || return 0
    if awk -v d="$d/" 'index($2 "/", d) == 1 { found=1 } END { exit !found }' /proc/mounts; then
        die "$d still has mounts under it (see /proc/mounts); unmount them, then remove it"
    fi
    rm -rf --one-file-system "$d"
}
