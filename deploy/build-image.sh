#!/usr/bin/env bash
# Builds the agent image and runs it against a fixture root, offline: a static binary
# (glibc, +crt-static), `podman build` FROM scratch, then `podman run --network=none --read-only`
# with the fixture as /host. The fixture has the host's mount table at proc/1 (an RDMA mount and a
# kubelet PV mount on TCP covered by the policy) and only an overlay root at proc/self, so the
# run shows the agent in a container reads the host's mounts. Exit 0 when every expectation held.
# Where `podman run` cannot start containers (inside another container, crun may be refused
# setrlimit), it falls back to `buildah run --isolation=chroot` in a new network namespace, and
# says so.
# Usage: deploy/build-image.sh [IMAGE]   (default localhost/nfs-gds:dev)
set -euo pipefail
cd "$(dirname "$0")/.."
image=${1:-localhost/nfs-gds:dev}
target=x86_64-unknown-linux-gnu
command -v podman >/dev/null || { echo "build-image: podman is not installed (apt-get install podman)" >&2; exit 2; }

RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --locked --target "$target"
bin=target/$target/release/nfs-gds
# FROM scratch has no dynamic loader: the binary must not ask for one.
if readelf -l "$bin" | grep -q 'program interpreter'; then
    echo "build-image: $bin is dynamically linked" >&2
    exit 1
fi
podman build --network=none -f deploy/Containerfile -t "$image" .
size=$(podman image inspect "$image" --format '{{.Size}}')
echo "build-image: $image is $((size / 1024 / 1024)) MiB"

fixture=$(mktemp -d)
trap 'rm -rf "$fixture"' EXIT
host=$fixture/host
pod=/var/lib/kubelet/pods/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/volumes/kubernetes.io~nfs/datasets
mkdir -p "$host"/proc/sys/kernel "$host"/proc/self "$host"/proc/1 "$host"/etc/nfs-gds \
    "$host"/etc/kubernetes/node-feature-discovery/features.d "$host"/var/lib/prometheus/node-exporter \
    "$host"/run/nfs-gds
echo 6.1.0-50-amd64 > "$host"/proc/sys/kernel/osrelease
echo "500 400 0:90 / / rw - overlay overlay rw" > "$host"/proc/self/mountinfo
cat > "$host"/proc/1/mountinfo <<TABLE
1 0 254:0 / / rw - ext4 /dev/vda rw
41 1 0:50 / $pod rw - nfs4 10.0.2.15:/datasets rw,vers=4.2,proto=tcp,addr=10.0.2.15
42 1 0:51 / /mnt/fast rw - nfs4 10.0.2.20:/fast rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.20
TABLE
printf '[[mount]]\nsource = "10.0.2.15:/datasets"\n' > "$host"/etc/nfs-gds/nfs-gds.toml
chmod -R go-w "$fixture"

run_agent() {
    if podman run --rm --network=none "$image" --version >/dev/null 2>&1; then
        echo "build-image: running the agent with podman run (read-only, no network, no capabilities)"
        podman run --rm --network=none --read-only --cap-drop=all --security-opt=no-new-privileges \
            -v "$host":/host "$image" "$@"
    else
        echo "build-image: podman run cannot start containers here; using buildah run --isolation=chroot without network"
        local c
        c=$(buildah from "$image")
        unshare --net buildah run --isolation=chroot -v "$host":/host "$c" -- /usr/sbin/nfs-gds "$@"
        local code=$?
        buildah rm "$c" >/dev/null
        return $code
    fi
}
set +e
run_agent --root /host agent --once --interval 300
code=$?
set -e
status=$host/run/nfs-gds/status.json
fail() { echo "build-image: $*" >&2; exit 1; }
[ "$code" = 1 ] || fail "the agent exited $code, expected 1 (not ready: no GDS stack in the fixture, a pod mount on TCP)"
[ -s "$status" ] || fail "no status.json below the root"
grep -q '"mount_table": "/host/proc/1/mountinfo"' "$status" || fail "the agent did not read the host's table (proc/1)"
grep -q "\"mountpoint\": \"$pod\"" "$status" || fail "the kubelet mount is not in the status"
grep -q 'nfs-gds.feature.node.kubernetes.io/gds-nfs=absent' "$host"/etc/kubernetes/node-feature-discovery/features.d/nfs-gds \
    || fail "no tier label"
grep -q 'nfs_gds_rdma_mounts_not_ready 1' "$host"/var/lib/prometheus/node-exporter/nfs-gds.prom \
    || fail "the textfile does not count the TCP pod mount"
echo "build-image: the agent in $image read the host's mounts and wrote its outputs below /host"
