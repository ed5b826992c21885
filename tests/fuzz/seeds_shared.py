#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Seed inputs of the shared-state harness (tests/fuzz/fuzz_shared.c).

Writes tests/fuzz/corpus/shared/seed-*: each a short, valid story two heads
tell (program and enable an FP32, a G-Binary or a G-Ternary window, write
and read it from both heads, complete the round, clear, disable, reset), so
that libFuzzer starts from enabled windows of every path instead of having
to find a valid configuration first.  Run it again after changing the
harness's input layout:

    python3 tests/fuzz/seeds_shared.py [DIR]

Input layout (fuzz_shared.c): 12 bytes per operation.
  b0: bit 0 the head, (b0 >> 1) % 7 the operation:
      0, 1 register write; 2 register read; 3 memory write, 4 memory read;
      5 ROUND_COMPLETE of the current round; 6 reset of the head, or with
      b1 & 0x80 the head killed at point b2 % 4 of stripe (value % 64) of
      window b3 % 16 (0 idle, 1 holding the word, 2 inside through its
      bias, 3 taking a bias back; b3 & 0x80: the other head reaps it),
      then attached again
  register ops: b1 % 4 == 0 a window register, b2 window, (b3 % 16) * 4
      the offset in it; b1 % 4 == 3 the offset (b2 << 8 | b3) % 4 KiB;
      b3 & 0x80 masks the value to device memory, b3 & 1 makes the access
      8 bytes (else 4)
  memory ops: DPA (b1 << 8 | b2) % 64 KiB, length 1 + b3 % 8
  b4..b11: the value (little-endian)
"""
import os
import struct
import sys

DPA_BASE, DPA_SIZE, COUNTERS, CTRL, THRESHOLD, CMD = 0, 2, 4, 6, 7, 8
FP32, GBINARY, GTERNARY = 0, 1, 2


def op(head, code, b1, b2, b3, value=0):
    return bytes([(code << 1) | head, b1, b2, b3]) + struct.pack("<Q", value)


def wreg(head, win, field, value):
    if field == THRESHOLD:
        # (b3 % 16) * 4 = 0x1c would make the access 8 bytes (b3 & 1):
        # THRESHOLD is 4 bytes, so name its offset whole (b1 % 4 == 3).
        off = 0x400 + win * 0x40 + 0x1c
        return op(head, 0, 3, off >> 8, off & 0xff, value)
    return op(head, 0, 0, win, 0x80 | field, value)


def wctrl(path, width, tie=0, enable=True):
    return path << 4 | width << 8 | tie << 16 | (1 if enable else 0)


def window(head, win, base, size, counters, path, width, threshold=1):
    return (wreg(head, win, DPA_BASE, base) + wreg(head, win, DPA_SIZE, size) +
            wreg(head, win, COUNTERS, counters) +
            wreg(head, win, THRESHOLD, threshold) +
            wreg(head, win, CTRL, wctrl(path, width)))


def mem(head, dpa, length, write, value=0):
    return op(head, 3 if write else 4, dpa >> 8, dpa & 0xff, length - 1, value)


def story(win, base, size, counters, path, width):
    s = window(0, win, base, size, counters, path, width)
    for k in range(4):
        s += mem(k & 1, base + 8 * k, 8, True, 0x5a5a5a5a5a5a5a5a ^ k)
    s += mem(1, base, 8, False) + mem(0, base + 8, 4, False)
    s += op(0, 5, win, 0, 0) + op(1, 5, win, 0, 0)
    s += op(1, 0, 0, win, CMD, 1)          # CMD = CLEAR
    s += mem(1, base + 3, 2, True, 0xffff) + mem(0, 0xff00, 8, True, 0x1234)
    s += wreg(0, win, CTRL, wctrl(path, width, enable=False))
    return s


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus", "shared")
    os.makedirs(out, exist_ok=True)
    seeds = {
        "seed-fp32": story(0, 0x1000, 0x1000, 0, FP32, 0),
        "seed-gbinary8": story(1, 0x2000, 0x400, 0x8000, GBINARY, 8),
        "seed-gternary16": story(2, 0x3000, 0x200, 0xc000, GTERNARY, 16),
        # Two windows at once, a refused overlap, a reset in between.
        "seed-two-windows": (window(0, 3, 0x4000, 0x100, 0x6000, GBINARY, 16) +
                             window(1, 4, 0x5000, 0x100, 0x7000, GTERNARY, 8) +
                             window(1, 5, 0x4000, 0x100, 0x9000, GBINARY, 8) +
                             mem(0, 0x4000, 8, True, 0xf0f0f0f0f0f0f0f0) +
                             op(1, 6, 0, 0, 0) +
                             mem(1, 0x5000, 8, True, 0x1111111111111111) +
                             mem(0, 0x4ffc, 8, True, 0x0102030405060708) +
                             op(0, 5, 3, 0, 0) + op(1, 2, 1, 3, 8)),
    }
    # Heads killed at every point of a window's stripe locks, reaped or
    # not, between writes of both heads and a round's completion.
    deaths = window(0, 6, 0x6000, 0x400, 0xa000, GBINARY, 16)
    for point in range(4):
        for head in (0, 1):
            deaths += mem(head, 0x6000 + 0x10 * point, 8, True,
                          0x00ff00ff00ff00ff)
            deaths += op(head, 6, 0x80, point, 6 | (0x80 if head else 0),
                         point * 17)
    deaths += mem(0, 0x6000, 8, False) + op(0, 5, 6, 0, 0) + op(1, 5, 6, 0, 0)
    seeds["seed-deaths"] = deaths
    # Window set-ups at the edges of device memory (64 KiB), one per path:
    # an FP32 window ending exactly at the end (its COUNTERS at the end
    # too: stored, never used), a G-Binary and a G-Ternary window whose
    # counter area ends exactly there; COUNTERS written whole (8 bytes,
    # unmasked), so that mutations cross the edges.
    for path, width, name in [(FP32, 0, "fp32"), (GBINARY, 8, "gbinary"),
                              (GTERNARY, 16, "gternary")]:
        size = 0x400
        clen = size * width            # bytes of counters (8 or 16 bits)
        base = 0x10000 - size if not width else 0x2000
        ctrs = 0x10000 - clen if width else 0x10000
        seeds["seed-edge-" + name] = (
            wreg(0, 8, DPA_BASE, base) + wreg(0, 8, DPA_SIZE, size) +
            op(0, 0, 0, 8, 0x04, ctrs) + wreg(0, 8, THRESHOLD, 1) +
            wreg(1, 8, CTRL, wctrl(path, width)) +
            mem(1, base, 8, True, 0x0f0f0f0f0f0f0f0f) +
            mem(0, base + size - 8, 8, False) +
            op(0, 0, 0, 8, CMD, 1))
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print("%d seeds in %s" % (len(seeds), out))


if __name__ == "__main__":
    main()
