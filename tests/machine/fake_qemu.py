#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A stand-in for qemu-system-x86_64 that speaks just enough QMP and
console for scripts/nfmachine/vm.py, so that boot()'s verdicts are tested
without booting (tests/machine/test_boot.py).  FAKE_QEMU_MODE says what
the "guest" does:

  exit3     READY, then NFABRIC-EXIT=3, then powers off (exit 0)
  noexit    READY, then powers off without NFABRIC-EXIT
  refuse    QEMU refuses an option: a message on stderr, exit 1, no QMP
  silent    prints nothing, runs until killed (a boot hang)
  forever   READY, then runs until killed (a timeout)
  warn      a QEMU warning on stderr, READY, NFABRIC-EXIT=0, exit 0

`-fake-mode MODE` sets it for one stand-in (several in one BootAll).
`-qmp unix:PATH,server=on,wait=off` adds a monitor on PATH (QMP as on
the other; `quit` exits 0), `-pidfile PATH` writes the pid there, as the
lifecycle suite's guests have them (tests/machine/test_lifecycle.py).
"""

import json
import os
import re
import socket
import sys
import threading
import time


def fd_of(args, chardev_id):
    for a in args:
        m = re.fullmatch(rf"socket,id={chardev_id},fd=(\d+)", a)
        if m:
            return int(m.group(1))
    sys.exit(f"fake qemu: no -chardev socket,id={chardev_id},fd=N")


NEGOTIATED = threading.Event()


def qmp(sock):
    """Greet, then answer every command with an empty return.  Commands
    are a JSON stream (qemu.qmp sends no newline after one)."""
    sock.sendall(json.dumps({"QMP": {"version": {"qemu": {"micro": 0, "minor": 0, "major": 10},
                                                 "package": "fake"},
                                     "capabilities": []}}).encode() + b"\r\n")
    dec, buf = json.JSONDecoder(), ""
    while True:
        data = sock.recv(4096)
        if not data:
            return
        buf += data.decode()
        while buf.strip():
            try:
                msg, end = dec.raw_decode(buf.lstrip())
            except ValueError:
                break                      # the rest of it still to come
            buf = buf.lstrip()[end:]
            reply = {"return": {}}
            if "id" in msg:
                reply["id"] = msg["id"]
            sock.sendall(json.dumps(reply).encode() + b"\r\n")
            NEGOTIATED.set()
            if msg.get("execute") == "quit":
                os._exit(0)


def option(args, name):
    """The value of option NAME in ARGS, or None."""
    return args[args.index(name) + 1] if name in args[:-1] else None


def serve_qmp(spec):
    """A QMP monitor on the unix socket of SPEC (unix:PATH,server=on,...),
    a connection at a time, as QEMU's -qmp."""
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(spec[len("unix:"):].split(",")[0])
    srv.listen(1)

    def accept():
        while True:
            conn, _ = srv.accept()
            qmp(conn)
            conn.close()
    threading.Thread(target=accept, daemon=True).start()


def main():
    mode = option(sys.argv, "-fake-mode") or os.environ.get("FAKE_QEMU_MODE", "exit3")
    if mode == "refuse":
        print("qemu-system-x86_64: -device cxl-neuron-fabric,clock-mhz=0: "
              "property 'clock-mhz' must be in 1..100000, not 0", file=sys.stderr)
        return 1
    if option(sys.argv, "-pidfile"):
        with open(option(sys.argv, "-pidfile"), "w", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
    if option(sys.argv, "-qmp"):
        serve_qmp(option(sys.argv, "-qmp"))
    mon = socket.socket(fileno=fd_of(sys.argv, "mon"))
    con = socket.socket(fileno=fd_of(sys.argv, "console"))
    threading.Thread(target=qmp, args=(mon,), daemon=True).start()
    # A real guest boots for seconds: the monitor is up long before the
    # guest can power off.
    NEGOTIATED.wait(10)
    if mode == "warn":
        print("qemu-system-x86_64: warning: fake warning", file=sys.stderr, flush=True)
    if mode == "silent":
        time.sleep(3600)
    con.sendall(b"booting\r\nNFABRIC-READY uptime=0.1s region=region0\r\n")
    if mode == "forever":
        time.sleep(3600)
    if mode in ("exit3", "warn"):
        con.sendall(b"NFABRIC-EXIT=%d\r\n" % (3 if mode == "exit3" else 0))
    con.sendall(b"reboot: Power down")        # no newline: the last line
    con.close()
    time.sleep(0.2)               # QEMU takes a moment to exit after that
    return 0


if __name__ == "__main__":
    sys.exit(main())
