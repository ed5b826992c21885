# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/nfmachine/libvirt_suite.py (suite `libvirt`) without libvirtd:
the guest's verdict read from a serial log, the bounded wait for it, and
one domain's and the shared-device domains' checks against a stand-in
virsh (a guest that passes, one that fails, a domain that does not start)."""

import contextlib
import io
import os
import sys
import tempfile

from nfmachine import libvirt_suite as lv
from nfmachine.tap import done, ok


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    with tempfile.TemporaryDirectory() as d:
        s = os.path.join(d, "serial.log")
        write(s, "noise\r\nNFABRIC-READY region=region0\r\nok 1 - a\r\nok 2 - b\r\n"
                 "not ok 3 - c\r\nNFABRIC-EXIT=1\r\n")
        ok(lv.verdict(s) == ("NFABRIC-READY region=region0", "1", 2, 1),
           "the serial log's ready line, exit status and counts", lv.verdict(s))
        ok(lv.verdict(os.path.join(d, "none")) == ("", "", 0, 0), "no serial log: nothing")
        calls = {"n": 0}

        def never():
            calls["n"] += 1
            return calls["n"] >= 3
        lv.wait_serial([os.path.join(d, "none")], 100, never)
        ok(calls["n"] == 3, "the wait ends when the domain is off, not after its bound")

        log = []

        def fake_virsh(*args, out=None):
            log.append(args)
            if out:
                write(out, "virsh: " + " ".join(args) + "\n")
            if args[0] == "start":
                name = args[1]
                serial = os.path.join(d, "serial.log") if name == lv.DOMAIN else \
                    os.path.join(d, "cluster", name + "-serial.log")
                write(serial, "NFABRIC-READY r\nok 1 - x\nNFABRIC-EXIT=0\n")
                return 0
            if args[0] == "dominfo":
                return 1                      # gone
            return 0

        real = lv.virsh
        lv.virsh = fake_virsh
        try:
            tap = lv.suite_tap()
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                lv.one_domain(tap, d, os.path.join(d, "domain.xml"), os.path.join(d, "serial.log"))
            text = out.getvalue()
            ok(not tap.failed and tap.n == 5 and "guest checks passed: 1 ok, 0 not ok" in text,
               "one domain: defined, started, ready, its checks, removed", text)

            def libvirt_xml(argv):
                os.makedirs(argv[argv.index("-o") + 1], exist_ok=True)
                print("paths the suite does not show")
                return 0
            tap = lv.suite_tap()
            with contextlib.redirect_stdout(io.StringIO()) as out:
                lv.cluster(tap, os.path.join(d, "cluster"), libvirt_xml)
            text = out.getvalue()
            ok(not tap.failed and tap.n == 3 and "shared-device domain 1: 1 checks passed" in text
               and "paths" not in text, "two shared-device domains: started, each passed", text)

            def no_start(*args, out=None):
                if args[0] == "start":
                    if out:
                        write(out, "error: failed to start\n")
                    return 1
                return fake_virsh(*args, out=out) if args[0] != "dominfo" else 1
            lv.virsh = no_start
            tap = lv.suite_tap()
            with contextlib.redirect_stdout(io.StringIO()) as out:
                lv.one_domain(tap, d, os.path.join(d, "domain.xml"), os.path.join(d, "serial.log"))
            ok(tap.failed and "not ok 2 - libvirt: domain did not start: error: failed to start"
               in out.getvalue(), "a domain that does not start fails, with virsh's words",
               out.getvalue())
        finally:
            lv.virsh = real
    return done()


if __name__ == "__main__":
    sys.exit(main())
