#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""An Ethernet hub for VMs, on unix sockets only (scripts/nfabric pools).

    nethub.py DIR N

listens on DIR/port0.sock .. DIR/port<N-1>.sock; a QEMU joins with
``-netdev stream,server=off,addr.type=unix,addr.path=DIR/portK.sock``.
QEMU's stream netdev sends each Ethernet frame as a 4-byte big-endian
length and the frame; the hub passes every whole frame it receives on one
port to every other connected port (a hub, not a switch: the guests' own
stacks drop frames that are not theirs).  Nothing leaves the machine: no
IP socket is opened.  It ends on SIGTERM/SIGINT, or once every port has
been connected and all have closed again; it removes its sockets.
"""
import os
import selectors
import signal
import socket
import struct
import sys

MAX_FRAME = 65536 + 64


def main(argv):
    if len(argv) != 3 or not argv[2].isdigit() or not 2 <= int(argv[2]) <= 16:
        print("usage: nethub.py DIR N (2..16 ports)", file=sys.stderr)
        return 2
    d, n = argv[1], int(argv[2])
    sel = selectors.DefaultSelector()
    listeners, conns, bufs, seen = {}, {}, {}, set()
    paths = [os.path.join(d, "port%d.sock" % k) for k in range(n)]
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    signal.signal(signal.SIGINT, lambda *a: stop.append(1))
    try:
        for k, p in enumerate(paths):
            if os.path.exists(p):
                os.unlink(p)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(p)
            s.listen(1)
            listeners[k] = s
            sel.register(s, selectors.EVENT_READ, ("listen", k))
        print("nethub: %d ports in %s" % (n, d), flush=True)
        while not stop:
            if seen and len(seen) == n and not conns:
                break           # every port came and went: the run is over
            for key, _ in sel.select(timeout=0.5):
                kind, k = key.data
                if kind == "listen":
                    c, _ = key.fileobj.accept()
                    if k in conns:          # one peer per port
                        c.close()
                        continue
                    conns[k], bufs[k] = c, b""
                    seen.add(k)
                    sel.register(c, selectors.EVENT_READ, ("conn", k))
                    continue
                c = conns.get(k)
                if c is None:
                    continue
                try:
                    data = c.recv(262144)
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(c)
                    c.close()
                    del conns[k], bufs[k]
                    continue
                buf = bufs[k] + data
                while len(buf) >= 4:
                    ln = struct.unpack(">I", buf[:4])[0]
                    if ln > MAX_FRAME:      # not QEMU's framing: drop the peer
                        print("nethub: port %d sent a frame of %d bytes; closed"
                              % (k, ln), file=sys.stderr, flush=True)
                        sel.unregister(c)
                        c.close()
                        del conns[k], bufs[k]
                        buf = None
                        break
                    if len(buf) < 4 + ln:
                        break
                    frame, buf = buf[:4 + ln], buf[4 + ln:]
                    for j, o in list(conns.items()):
                        if j != k:
                            try:
                                o.sendall(frame)
                            except OSError:
                                pass        # its own read sees the close
                if buf is not None:
                    bufs[k] = buf
    finally:
        for c in list(conns.values()) + list(listeners.values()):
            c.close()
        for p in paths:
            if os.path.exists(p):
                os.unlink(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
