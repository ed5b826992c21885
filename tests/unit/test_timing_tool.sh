#!/bin/sh
# shellcheck disable=SC2016  # each check is `sh -c '...' sh ARGS`: $1, $2 are the inner shell's
# SPDX-License-Identifier: GPL-2.0-or-later
# The offline timing tool (bench/nfabric_timing_tool.c), TAP output:
# a recorded stream replays to the figures the tool computed live, the
# device's register figures come out as the hand-checked values, and bad
# input is refused.  Usage: test_timing_tool.sh PATH-TO-nfabric-timing
set -u
tool=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0

check() {   # check NAME COMMAND...
    name=$1
    shift
    n=$((n + 1))
    if "$@" >"$tmp/out" 2>&1; then
        echo "ok $n - $name"
    else
        echo "not ok $n - $name"
        sed 's/^/#   /' "$tmp/out" | head -20
        failed=$((failed + 1))
    fi
}

# Everything from clock_mhz on: the model's figures.
figures() { sed -n '/^clock_mhz=/,$p' "$1"; }

has() {     # has FILE KEY=VALUE...
    f=$1
    shift
    for kv in "$@"; do
        grep -qx "$kv" "$f" || { echo "missing $kv in:"; cat "$f"; return 1; }
    done
}

same_replay() {     # same_replay SYNTH-ARGS...: live == replayed
    "$tool" "$@" --record "$tmp/rec" >"$tmp/live" &&
    "$tool" --replay "$tmp/rec" >"$tmp/replay" &&
    figures "$tmp/live" >"$tmp/a" && figures "$tmp/replay" >"$tmp/b" &&
    diff "$tmp/a" "$tmp/b"
}

check "dependent 8-byte stream: replay = live" \
    same_replay --dependent --count 2000 --lowbit-share 0.7
check "dependent: device figures 1000 x (300000+250+5000) ps, 16653 ppm" \
    sh -c '"$1" --dependent --count 1000 >"$2/o" && cat "$2/o" |
           grep -qx total_ps=305250000 && grep -qx exposed_ppm=16653 "$2/o" &&
           grep -qx gbinary_exposed_ps=5000000 "$2/o"' sh "$tool" "$tmp"
check "dependent: latency and runtime added = exposed (all views agree)" \
    sh -c '"$1" --dependent --count 500 --lowbit-share 0.5 >"$2/o" &&
           e=$(sed -n "s/^exposed_pct=//p" "$2/o") &&
           grep -qx "latency_added_pct=$e" "$2/o" &&
           grep -qx "runtime_added_pct=$e" "$2/o"' sh "$tool" "$tmp"
check "poisson load 0.9, mixed paths: replay = live" \
    same_replay --load 0.9 --arrivals poisson --seed 7 --count 5000 \
        --size 64 --lowbit-share 0.5
check "overload 1.2, depth 32: replay = live" \
    same_replay --load 1.2 --depth 32 --count 3000
check "record header carries the parameters" \
    sh -c '"$1" --load 0.5 --count 10 --clock-mhz 2000 --depth 8 \
               --service-ns 150 --link-mbps 64000 --record "$2/rec" >/dev/null &&
           "$1" --replay "$2/rec" >"$2/o"' sh "$tool" "$tmp"
check "replayed parameters: 2000 MHz, depth 8, 150 ns, 64000 MB/s" \
    has "$tmp/o" clock_mhz=2000 depth=8 service_ns=150 link_mbps=64000 \
        records=10 dependent=0
check "replay --depth 0 overrides the header: nothing exposed" \
    sh -c '"$1" --replay "$2/rec" --depth 0 | grep -qx exposed_ps=0' \
    sh "$tool" "$tmp"
check "record size: 32 + 10 x 16 bytes" \
    test "$(wc -c <"$tmp/rec")" -eq 192
printf 'NFTRxxxx' >"$tmp/bad"
check "bad record refused with status 1" \
    sh -c '"$1" --replay "$2/bad"; test $? -eq 1' sh "$tool" "$tmp"
check "bad usage refused with status 2" \
    sh -c '"$1" --load 0.5 --depth 2000; test $? -eq 2' sh "$tool"

echo "1..$n"
[ "$failed" -eq 0 ]
