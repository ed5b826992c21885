# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The `qtest` suite (scripts/nfmachine/qtest_suite.py): the device's qtests
# and QEMU's own cxl-test, built here in QEMU's tree, then run there with
# the device's command-line validation.

NF_QTESTS=(tests/qtest/nfabric-test tests/qtest/nfabric-migration-test
           tests/qtest/nfabric-fuzz-test tests/qtest/cxl-test)

nf_suite_qtest() {
    ninja -C "$NF_QEMU_BUILD" "${NF_QTESTS[@]}" >"$NF_BUILD/qtest-ninja.log" 2>&1 || {
        tail -20 "$NF_BUILD/qtest-ninja.log"
        return 1
    }
    # A shared library that is no libnfrtl.so, for the rtl-lib refusal.
    local rc=0
    NF_RUN_SHM=$NF_RUN_SHM NF_QTESTS="${NF_QTESTS[*]}" \
        nf_machine qtest-suite "$(gcc -print-file-name=libgcc_s.so.1)" || rc=$?
    return "$rc"
}
