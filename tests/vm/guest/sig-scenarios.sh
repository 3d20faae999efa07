#!/bin/bash
# Module signature enforcement on a real kernel: the Debian 12 guest booted with
# module.sig_enforce=1 (test bed as in scenarios.sh: soft-RoCE, knfsd over RDMA, the package).
#
#   sig-scenarios.sh --list   print the scenario names
#   sig-scenarios.sh          run them (inside that guest only)
#
# Debian signs its own modules, so the inbox rpcrdma loads; the out-of-tree hooked build is
# unsigned and the kernel refuses it. nfs-gds's module-signature check must say so before the
# load is tried, and pass for the signed inbox module. Trusting a
# key of one's own would need it in the kernel's keyring, which a stock distribution kernel only
# takes through Secure Boot and MOK (shim); this guest boots without firmware Secure Boot, so a
# signed out-of-tree build cannot be shown loading here.
set -u

# shellcheck disable=SC2034  # run by run_plan in lib.sh
PLAN=(
    "scenario sig1-unsigned-refusal-predicted scn_sig_enforce"
)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
[ "${1:-}" = --list ] && { list_plan; exit 0; }

scn_sig_enforce() {
    note "module.sig_enforce=1: the signed inbox rpcrdma loads, the unsigned hooked build is refused,"
    note "and nfs-gds said which before either was loaded"
    grep -qw 'module.sig_enforce=1' /proc/cmdline || abort "precondition: the kernel was not booted with module.sig_enforce=1 ($(cat /proc/cmdline))"
    [ "$(cat /sys/module/module/parameters/sig_enforce 2>/dev/null)" = Y ] || abort "precondition: /sys/module/module/parameters/sig_enforce is not Y"
    run signer-stock 30 modinfo -F signer "$STOCK_RPCRDMA"
    expect_output signer-stock . "the inbox rpcrdma carries no signature (modinfo -F signer is empty)"
    run signer-test 30 modinfo -F signer "$PAYLOAD/modules/rpcrdma-gpl$MODSUFFIX"
    [ ! -s "$SCN_DIR/signer-test.out" ] || fail "the test build is signed: $(cat "$SCN_DIR/signer-test.out")"
    [ -d /sys/module/rpcrdma ] || fail "the signed inbox rpcrdma was not loaded at set-up"

    stage_rpcrdma rpcrdma-gpl || abort "cannot put the hooked build in place (see above)"
    run check 60 nfs-gds check --json
    expect_rc check 1
    expect_json check
    expect_status check rpcrdma-hooks pass
    expect_status check module-signature fail
    expect_summary check module-signature "Key was rejected by service"
    run modprobe-unsigned 60 modprobe rpcrdma
    expect_rc_not modprobe-unsigned 0
    expect_output modprobe-unsigned 'Key was rejected by service' "modprobe of the unsigned build did not fail with 'Key was rejected by service'"
    [ ! -d /sys/module/rpcrdma ] || fail "the unsigned rpcrdma was loaded despite module.sig_enforce=1"
    dmesg | grep -E 'rpcrdma|unsigned|signature' | tail -n 5 | sed 's/^/    dmesg | /'

    install_module_build none-rpcrdma || abort "cannot remove the hooked build"
    run check-signed 60 nfs-gds check --json
    expect_json check-signed
    expect_status check-signed module-signature pass
    expect_output check-signed 'signed' "check does not say the inbox module is signed"
    # doctor also reads the kernel log, which still has the refusal of the unsigned build.
    run doctor-signed 120 nfs-gds doctor --json
    expect_json doctor-signed
    expect_status doctor-signed module-signature pass
    run modprobe-signed 60 modprobe rpcrdma
    expect_rc modprobe-signed 0
    [ "$(loaded_build_id rpcrdma)" = "$(file_build_id "$STOCK_RPCRDMA")" ] || fail "the rpcrdma loaded now is not the inbox module"
}

nothing_to_reset() { :; }
run_plan nothing_to_reset
