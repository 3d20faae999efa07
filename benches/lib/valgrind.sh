# shellcheck shell=bash
# Sourced by the benches that count instructions with callgrind. Valgrind before 3.22 does not
# know openat2(2): it answers ENOSYS, and nfs-gds falls back to resolving paths below --root
# one component at a time in user space — a path a native run on any kernel since 5.6 never
# takes, so those counts are too high (by ~0.3 M instructions for a warm check). VALGRIND names
# another build (e.g. one built from Debian trixie's valgrind source into /opt).
valgrind=${VALGRIND:-valgrind}

# Warns, once, when $valgrind is older than 3.22; never fails.
check_valgrind() { # NAME of the bench
    local v
    v=$("$valgrind" --version 2>/dev/null | sed -n 's/^valgrind-\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
    # shellcheck disable=SC2086 # the two numbers, split on purpose
    set -- "$1" $v
    if [ $# -lt 3 ] || [ "$2" -lt 3 ] || { [ "$2" = 3 ] && [ "$3" -lt 22 ]; }; then
        echo "$1: $("$valgrind" --version 2>/dev/null || echo "$valgrind") has no openat2: the instruction counts include the user-space path walk a native run does not do (VALGRIND=PATH names a valgrind ≥ 3.22)" >&2
    fi
}
