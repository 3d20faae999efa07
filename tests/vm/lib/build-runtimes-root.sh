#!/usr/bin/env bash
# Build, or reuse from the cache, the root of the `runtimes` guest: a copy of the Debian 12 root
# (build-root.sh bookworm) with a real container runtime and a real scheduler added, so the
# NRI plugin and the Slurm commands meet the programs they serve:
#   containerd   Debian unstable's package (2.1.x: NRI on by default), downloaded with apt-get
#                download and installed with dpkg beside Debian 12's runc. When it no longer
#                installs, the root is still built, `containerd.unavailable` says why, and the
#                containerd scenarios are reported SKIPPED (never passed).
#   Slurm        Debian 12's slurmctld, slurmd, slurm-client and munge (22.05).
#   CRI client   python3-grpcio and python3-protobuf, with the CRI v1 bindings generated here
#                from the api.proto of Debian 13's golang-github-kubernetes-cri-api-dev (its
#                gogoproto options removed) by python3-grpc-tools, into /opt/nfs-gds-vm/cri.
# The base root's cache entry is copied, never written, so it stays valid for the other guests;
# the kernel, initrd and modules are the base root's (the same kernel).
#
# Usage: build-runtimes-root.sh BASE-ROOT-DIR   — prints the cache directory on stdout, laid out
# as build-root.sh's (rootfs/, root.img, vmlinuz, initrd.img, kver, packages.txt) plus
#   containerd.txt          Package, Version and Depends of the containerd that was installed
#   containerd.unavailable  why no containerd is in the root (then no containerd.txt)
#   cri-api.txt             which package and version the CRI api.proto came from
# The cache key covers the base root (its key is in its name), this script and the mirror.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
. "$here/common.sh"
exec 3>&1 1>&2

base=${1:?usage: build-runtimes-root.sh BASE-ROOT-DIR}
[ -f "$base/.complete" ] || die "the base root $base is not complete"
[ "$(cat "$base/suite")" = bookworm ] || die "the runtimes root is derived from the bookworm root, not $(cat "$base/suite")"
mirror=$(debian_mirror)
mirror=${mirror:-http://deb.debian.org/debian}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$keyring" ] || die "no $keyring to check Debian's archives with (package debian-archive-keyring)"

# From Debian 12 itself (the root's own sources).
EXTRA_PACKAGES=(
    slurmctld slurmd slurm-client munge
    python3-grpcio python3-protobuf python3-grpc-tools python3-pkg-resources
)
IMAGE_SIZE=3G

cache=$(cache_dir)
key=$(hash_of "$(basename "$base")" "$here/build-runtimes-root.sh" "$mirror")
out="$cache/runtimes-bookworm-$key"
if [ -f "$out/.complete" ]; then
    log "runtimes root: cached ($out)"
    printf '%s\n' "$out" >&3
    exit 0
fi
[ "$(id -u)" = 0 ] || die "building the runtimes root needs root (chroot)"

tmp="$out.tmp"
remove_tree "$tmp"
mkdir -p "$tmp/debs"
t0=$SECONDS

# apt-get download from SUITE's main through a private sources list and lists directory (the
# host's apt configuration is neither read nor changed). Prints nothing; the .deb lands in DIR.
fetch_deb() {
    local suite=$1 pkg=$2 dir=$3 a=$tmp/apt-$1
    mkdir -p "$a/lists/partial" "$a/cache/archives/partial"
    printf 'deb [signed-by=%s] %s %s main\n' "$keyring" "$mirror" "$suite" >"$a/sources.list"
    local opts=(-o "Dir::Etc::sourcelist=$a/sources.list" -o Dir::Etc::sourceparts=-
        -o "Dir::State::Lists=$a/lists" -o "Dir::Cache=$a/cache" -o APT::Sandbox::User=root)
    [ -f "$a/updated" ] || { apt-get -q "${opts[@]}" update && touch "$a/updated"; } || return 1
    (cd "$dir" && apt-get -q "${opts[@]}" download "$pkg")
}

log "runtimes root: apt-get download containerd (unstable) and golang-github-kubernetes-cri-api-dev (trixie) from $mirror"
containerd_deb=
if fetch_deb unstable containerd "$tmp/debs"; then
    containerd_deb=$(ls "$tmp"/debs/containerd_*.deb)
else
    echo "apt-get download containerd from $mirror unstable failed" >"$tmp/containerd.unavailable"
fi
fetch_deb trixie golang-github-kubernetes-cri-api-dev "$tmp/debs" || die "apt-get download golang-github-kubernetes-cri-api-dev (trixie) failed"
cri_deb=$(ls "$tmp"/debs/golang-github-kubernetes-cri-api-dev_*.deb)
dpkg-deb -x "$cri_deb" "$tmp/cri-api"
proto=$(find "$tmp/cri-api" -path '*/cri-api/pkg/apis/runtime/v1/api.proto' | head -n 1)
[ -n "$proto" ] || die "$cri_deb has no cri-api/pkg/apis/runtime/v1/api.proto"
printf '%s %s\n' "$(dpkg-deb -f "$cri_deb" Package)" "$(dpkg-deb -f "$cri_deb" Version)" >"$tmp/cri-api.txt"
# gogoproto's options only steer Go code generation; without its import protoc reads the file.
sed -e '/gogoproto/d' "$proto" >"$tmp/api.proto"

log "runtimes root: copying the base root $(basename "$base")"
cp -a "$base/rootfs" "$tmp/rootfs"
rootfs=$tmp/rootfs
mkdir -p "$rootfs/opt/nfs-gds-vm/cri" "$rootfs/var/cache/nfs-gds-vm"
cp "$tmp/api.proto" "$rootfs/opt/nfs-gds-vm/cri/api.proto"
[ -z "$containerd_deb" ] || cp "$containerd_deb" "$rootfs/var/cache/nfs-gds-vm/"

log "runtimes root: apt-get install ${EXTRA_PACKAGES[*]}; dpkg -i ${containerd_deb##*/}"
unshare --mount --propagation private -- bash -euo pipefail -s -- \
    "$rootfs" "$tmp" "${containerd_deb##*/}" "${EXTRA_PACKAGES[@]}" <<'INNER'
rootfs=$1 tmp=$2 cdeb=$3
shift 3
mount -t proc proc "$rootfs/proc"
mount --rbind /dev "$rootfs/dev"
mount -t sysfs sysfs "$rootfs/sys"
cp /etc/resolv.conf "$rootfs/etc/resolv.conf" 2>/dev/null || true
printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
chmod 755 "$rootfs/usr/sbin/policy-rc.d"
in_root() { chroot "$rootfs" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LC_ALL=C HOME=/root "$@"; }

in_root sh -euc '
    apt-get update -q
    apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-confold "$@"
' sh "$@" >"$tmp/apt.log" 2>&1 || { tail -n 40 "$tmp/apt.log" >&2; echo "apt-get install in the runtimes root failed; full log: $tmp/apt.log" >&2; exit 1; }

# containerd from unstable: its own dependencies (runc, libc6 >= 2.34) are Debian 12's. A
# failure is recorded, not fatal: the containerd scenarios then say SKIPPED with this reason.
if [ -n "$cdeb" ]; then
    if in_root dpkg -i "/var/cache/nfs-gds-vm/$cdeb" >"$tmp/containerd-install.log" 2>&1 &&
        in_root containerd --version >>"$tmp/containerd-install.log" 2>&1; then
        in_root dpkg-query -W -f='Package: ${Package}\nVersion: ${Version}\nDepends: ${Depends}\n' containerd >"$tmp/containerd.txt"
        in_root containerd --version >>"$tmp/containerd.txt"
    else
        in_root dpkg -r containerd >>"$tmp/containerd-install.log" 2>&1 || true
        echo "dpkg -i $cdeb failed in the Debian 12 root: $(grep -E 'depends on|error|Error' "$tmp/containerd-install.log" | head -n 3 | tr '\n' ' ')" >"$tmp/containerd.unavailable"
    fi
    rm -f "$rootfs/var/cache/nfs-gds-vm/$cdeb"
fi

# The CRI v1 bindings the kubelet stand-in imports (api_pb2, api_pb2_grpc).
in_root sh -euc 'cd /opt/nfs-gds-vm/cri && python3 -m grpc_tools.protoc -I. --python_out=. --grpc_python_out=. api.proto &&
    PYTHONPATH=/opt/nfs-gds-vm/cri python3 -c "import api_pb2, api_pb2_grpc; api_pb2.RunPodSandboxRequest"' \
    >"$tmp/cri-stubs.log" 2>&1 || { cat "$tmp/cri-stubs.log" >&2; echo "generating the CRI bindings failed" >&2; exit 1; }

in_root sh -c 'apt-get clean; rm -rf /var/lib/apt/lists/*'
rm -f "$rootfs/usr/sbin/policy-rc.d"
INNER

cp "$base/vmlinuz" "$base/initrd.img" "$base/kver" "$base/suite" "$base/linux-source" "$tmp/"
chroot "$rootfs" dpkg-query -W -f='${Package} ${Version}\n' >"$tmp/packages.txt"
{
    echo "# containerd (Debian unstable, installed with dpkg -i):"
    if [ -f "$tmp/containerd.txt" ]; then sed 's/^/# /' "$tmp/containerd.txt"; else echo "# UNAVAILABLE: $(cat "$tmp/containerd.unavailable")"; fi
    echo "# CRI api.proto from $(cat "$tmp/cri-api.txt")"
} >>"$tmp/packages.txt"
if [ -f "$tmp/containerd.unavailable" ]; then
    warn "runtimes root: NO containerd: $(cat "$tmp/containerd.unavailable") — the containerd scenarios will be SKIPPED"
else
    log "runtimes root: $(grep -E '^(Version|Depends):' "$tmp/containerd.txt" | tr '\n' ' ')"
fi

log "runtimes root: making ext4 image ($IMAGE_SIZE, sparse)"
mkfs.ext4 -q -F -L nfs-gds-root -d "$rootfs" "$tmp/root.img" "$IMAGE_SIZE"
rm -rf "$tmp/debs" "$tmp"/apt-* "$tmp/cri-api"
touch "$tmp/.complete"
remove_tree "$out"
mv "$tmp" "$out"
log "runtimes root: built in $((SECONDS - t0)) s → $out"

for old in "$cache"/runtimes-bookworm-*; do
    [ "$old" = "$out" ] || [ "$old" = "$out.tmp" ] || [ ! -d "$old" ] || { log "runtimes root: removing outdated cache $old"; remove_tree "$old"; }
done
printf '%s\n' "$out" >&3
