# Sourced by the benchmarks that compare this tree with a base revision. Builds both release
# binaries in the shared target/ (its dependencies are already built) into $work/nfs-gds-base
# and $work/nfs-gds-head. Both builds have the same output file and fingerprint, so each side's
# sources are touched first, or cargo would call the second build fresh and compare a binary with
# itself; identical binaries stop the benchmark. Needs $work and $base_rev; $1 names the caller.
build_base_and_head() {
    local who=$1
    mkdir "$work/base"
    git archive "$base_rev" | tar -x -C "$work/base"
    find "$work/base/src" -name '*.rs' -exec touch {} +
    cargo build --release --quiet --bin nfs-gds --manifest-path "$work/base/Cargo.toml" \
        --target-dir "$PWD/target"
    cp target/release/nfs-gds "$work/nfs-gds-base"
    touch src/lib.rs src/main.rs
    cargo build --release --quiet --bin nfs-gds
    cp target/release/nfs-gds "$work/nfs-gds-head"
    if cmp -s "$work/nfs-gds-base" "$work/nfs-gds-head"; then
        echo "$who: BASE and this tree built the same binary" >&2
        exit 1
    fi
}
