# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `scripts/nfabric cluster` (scripts/nfmachine/cluster.py): several hosts
# (one QEMU each) with one shared NEURON-Fabric device: each host's device
# is a head of the same device (shared-state=FILE, head=R, heads=N) over the
# same device memory file.  Here: the `multihost` test suite and `bench
# cluster`, whose hosts are started one by one.  docs/multihost.md.

# A cluster's device files (its memory and state, links in DIR to the
# run's /dev/shm): scripts/nfmachine/cluster.py, which the cluster command
# uses too.  nf_cluster_busy DIR prints what of an earlier cluster in DIR
# still runs (true if anything does); nf_cluster_prepare DIR CXL_MIB makes
# a fresh device (waiting up to 15 s for such hosts to end, else dying);
# nf_cluster_release DIR removes it (its hosts have ended).
nf_cluster_busy() {
    nf_machine cluster-files busy "$1"
}

nf_cluster_prepare() {
    mkdir -p "$1"
    nf_machine cluster-files prepare "$1" "$2" ||
        nf_die "cluster: no device files in $1 (above)"
}

nf_cluster_release() {
    nf_machine cluster-files release "$1"
}

# nf_cluster_boot DIR R N CMD CXL_MIB [vm options...]: start host R in the
# background; its status goes to DIR/hostR.rc, its console to DIR/hostR.log,
# its QEMU pid to DIR/hostR.pid.
nf_cluster_boot() {
    local dir=$1 r=$2 n=$3 cmd=$4 cxl=$5
    shift 5
    rm -f "$dir/host$r.rc" "$dir/host$r.pid" "$dir/qmp$r.sock"
    (
        rc=0
        nf_vm_main --quiet --log "$dir/host$r.log" --cxl-mem "${cxl}M" \
            --mem-path "$dir/mem" \
            --device-props "shared-state=$dir/state,head=$r,heads=$n" \
            --qemu-arg -pidfile --qemu-arg "$dir/host$r.pid" \
            --qemu-arg -qmp --qemu-arg "unix:$dir/qmp$r.sock,server=on,wait=off" \
            --run "export NFABRIC_RANK=$r NFABRIC_HOSTS=$n; $cmd" "$@" \
            > "$dir/host$r.out" 2>&1 || rc=$?
        echo "$rc" > "$dir/host$r.rc"
    ) &
}

# nf_cluster_wait DIR R [TIMEOUT]: wait for host R's status; print it.
nf_cluster_wait() {
    local dir=$1 r=$2 t=${3:-1200} i=0
    while [ ! -s "$dir/host$r.rc" ]; do
        sleep 0.2
        i=$((i + 1))
        [ "$i" -gt $((t * 5)) ] && { echo 124; return 0; }
    done
    cat "$dir/host$r.rc"
}

# nf_cluster_wait_mark DIR R TIMEOUT: wait until host R printed NFABRIC-MARK.
nf_cluster_wait_mark() {
    local dir=$1 r=$2 t=$3 i=0
    until grep -q 'NFABRIC-MARK' "$dir/host$r.log" 2>/dev/null; do
        sleep 0.2
        i=$((i + 1))
        [ "$i" -gt $((t * 5)) ] && return 1
        [ -s "$dir/host$r.rc" ] && return 1
    done
    return 0
}

# nf_cluster_report DIR N: one line per host; returns non-zero if any failed.
nf_cluster_report() {
    local dir=$1 n=$2 r rc bad=0 why
    for ((r = 0; r < n; r++)); do
        rc=$(cat "$dir/host$r.rc" 2>/dev/null || echo 125)
        case "$rc" in
        0) why="ok" ;;
        124) why="TIMED OUT (hung)" ;;
        125) why="stopped without reporting a status" ;;
        *) why="FAILED (status $rc)" ;;
        esac
        printf 'cluster: host %d: %s (console: %s)\n' "$r" "$why" "$dir/host$r.log"
        [ "$rc" = 0 ] || bad=1
        if [ "$rc" != 0 ] && [ -s "$dir/host$r.out" ]; then
            sed 's/^/    /' "$dir/host$r.out" | tail -5
        fi
    done
    return $bad
}

nf_cluster_main() {
    local rc=0
    nf_machine cluster "$@" || rc=$?
    return "$rc"
}

# ---- the multihost suite ----------------------------------------------------

# Print the hosts' TAP lines (prefixed by rank) for the runner to count.
nf_mh_tap() {
    local dir=$1 n=$2 r
    for ((r = 0; r < n; r++)); do
        grep -E '^(ok|not ok|#|summary:)' "$dir/host$r.log" 2>/dev/null || true
    done
}

# nf_mh_run NAME N CMD [vm options]: a cluster run of N hosts; TAP out.
nf_mh_run() {
    local name=$1 n=$2 cmd=$3 dir=$NF_BUILD/test-logs/multihost/$1 r rc bad=0
    shift 3
    nf_cluster_prepare "$dir" 256
    for ((r = 0; r < n; r++)); do
        nf_cluster_boot "$dir" "$r" "$n" "$cmd" 256 --timeout 600 "$@"
    done
    for ((r = 0; r < n; r++)); do
        rc=$(nf_cluster_wait "$dir" "$r" 660)
        [ "$rc" = 0 ] || bad=1
    done
    wait
    nf_mh_tap "$dir" "$n"
    if nf_cluster_report "$dir" "$n" | sed 's/^/# /'; [ "$bad" = 0 ]; then
        echo "ok - $name: every host exited 0"
    else
        echo "not ok - $name: a host failed (logs in $dir)"
    fi
}

# (c) SIGKILL of a host mid-round; it is started again and rejoins.
nf_mh_kill() {
    local dir=$NF_BUILD/test-logs/multihost/kill rc0 rc1 pid
    nf_cluster_prepare "$dir" 256
    nf_cluster_boot "$dir" 0 2 "nfabric-multihost kill" 256 --timeout 600 --cpus 1 --mem 1G
    nf_cluster_boot "$dir" 1 2 "nfabric-multihost kill" 256 --timeout 600 --cpus 1 --mem 1G
    if ! nf_cluster_wait_mark "$dir" 1 300; then
        echo "not ok - kill: host 1 never reached the middle of its round"
        pkill -F "$dir/host0.pid" 2>/dev/null; wait; return 0
    fi
    pid=$(cat "$dir/host1.pid")
    kill -KILL "$pid"
    echo "# kill: SIGKILL to host 1's QEMU (pid $pid) mid-round"
    rc1=$(nf_cluster_wait "$dir" 1 60)
    echo "$([ "$rc1" != 0 ] && echo ok || echo not ok) - kill: host 1's QEMU is gone (status $rc1)"
    cp "$dir/host1.log" "$dir/host1-killed.log"
    # Started again: the same head joins the same device.
    nf_cluster_boot "$dir" 1 2 "nfabric-multihost rejoin" 256 --timeout 600 --cpus 1 --mem 1G
    rc0=$(nf_cluster_wait "$dir" 0 660)
    rc1=$(nf_cluster_wait "$dir" 1 660)
    wait
    nf_mh_tap "$dir" 2
    echo "$([ "$rc0" = 0 ] && [ "$rc1" = 0 ] && echo ok || echo not ok) - kill: the survivor (status $rc0) and the restarted host (status $rc1) finish"
}

# (f) system_reset of a host mid-round: the others' round stays intact.
nf_mh_reset() {
    local dir=$NF_BUILD/test-logs/multihost/reset rc0 rc1 reply
    nf_cluster_prepare "$dir" 256
    nf_cluster_boot "$dir" 0 2 "nfabric-multihost reset" 256 --timeout 600 --cpus 1 --mem 1G
    nf_cluster_boot "$dir" 1 2 "nfabric-multihost reset" 256 --timeout 600 --cpus 1 --mem 1G --reboot
    if ! nf_cluster_wait_mark "$dir" 1 300; then
        echo "not ok - reset: host 1 never reached the middle of its round"
        pkill -F "$dir/host0.pid" 2>/dev/null; pkill -F "$dir/host1.pid" 2>/dev/null; wait; return 0
    fi
    if reply=$(nf_qmp "$dir/qmp1.sock" system_reset); then
        echo "ok - reset: system_reset of host 1 mid-round ($reply)"
    else
        echo "not ok - reset: system_reset of host 1 failed: $reply"
    fi
    rc0=$(nf_cluster_wait "$dir" 0 660)
    rc1=$(nf_cluster_wait "$dir" 1 660)
    wait
    nf_mh_tap "$dir" 2
    grep -E '^NFABRIC-(READY|NOT-READY)' "$dir/host1.log" | sed 's/^/# host 1: /'
    echo "$([ "$rc0" = 0 ] && [ "$rc1" = 0 ] && echo ok || echo not ok) - reset: both hosts finish (status $rc0, $rc1)"
}

# (g) the state file truncated under 2 running hosts: no head may die of
# it (SIGBUS) or hang; each reports it and refuses the device's accesses.
nf_mh_corrupt() {
    local dir=$NF_BUILD/test-logs/multihost/corrupt r rc ok=1
    # shellcheck disable=SC2016  # expanded in the guest (NFABRIC_RANK)
    local cmd='w=$((NFABRIC_RANK * 2)); nfabricctl set-window $w --base $((NFABRIC_RANK * 0x10000)) --size 4K --counters $((0x100000 + NFABRIC_RANK * 0x10000)) --path gbinary --width 8; nfabricctl complete $w; echo NFABRIC-MARK; nfabricctl wait $w --timeout 300000; echo "wait-status=$?"; nfabricctl clear $w; echo "clear-status=$?"; nfabricctl info | grep -E "enabled-mask|last-error"'
    nf_cluster_prepare "$dir" 256
    for r in 0 1; do
        nf_cluster_boot "$dir" "$r" 2 "$cmd" 256 --timeout 300 --cpus 1 --mem 1G
    done
    for r in 0 1; do
        if ! nf_cluster_wait_mark "$dir" "$r" 200; then
            echo "not ok - corrupt: host $r never enabled its window"
            pkill -F "$dir/host0.pid" 2>/dev/null; pkill -F "$dir/host1.pid" 2>/dev/null; wait; return 0
        fi
    done
    truncate -s 0 "$dir/state"
    echo "# corrupt: $dir/state truncated to 0 bytes under both hosts"
    for r in 0 1; do
        rc=$(nf_cluster_wait "$dir" "$r" 300)
        if [ "$rc" = 0 ] && grep -q '^wait-status=1' "$dir/host$r.log" &&
           grep -q 'wait [0-9]*: .*HEAD_INFO.STATE_FAILED' "$dir/host$r.log" &&
           grep -q '^clear-status=1' "$dir/host$r.log" &&
           grep -q '^last-error: 16' "$dir/host$r.log" &&
           grep -q '^enabled-mask: 0x00000000' "$dir/host$r.log" &&
           grep -q "refuses the device's accesses" "$dir/host$r.out"; then
            echo "ok - corrupt: host $r's QEMU lives on, reports it ($(grep -o 'the state file was [^;]*' "$dir/host$r.out" | head -1)), its guest's wait for the round (nfabricctl wait, 300 s timeout) ends at once with STATE_FAILED, then it sees error 16 and no window"
        else
            echo "not ok - corrupt: host $r (status $rc; console $dir/host$r.log, QEMU $dir/host$r.out)"
            ok=0
        fi
    done
    wait
    [ "$ok" = 1 ] || grep -h 'Bus error\|wait\|clear-status\|last-error' "$dir"/host*.log "$dir"/host*.out | sed 's/^/# /'
}

# (h) memory-wide mailbox commands from other hosts: each of hosts 1..N-1
# (at the same time) destroys its own region, then tries Sanitize and
# poison injection and clearing over host 0's data and counters (as root
# through the kernel's sysfs and debugfs files; a Sanitize runs in the
# background: the attacker waits until it is over); each is refused by the
# device, and host 0 (the victim, nfabric-multihost sanitize) finds its
# data and its round intact.
# shellcheck disable=SC2016  # the command runs in the attacker's guest
NF_MH_ATTACK='cxl destroy-region -f region0 >/dev/null 2>&1; echo "destroy-status=$?"
echo 1 > /sys/bus/cxl/devices/mem0/security/sanitize; echo "sanitize-status=$?"
i=0; while [ "$(cat /sys/bus/cxl/devices/mem0/security/state)" = sanitize ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
echo "security-state=$(cat /sys/bus/cxl/devices/mem0/security/state) after $i waits"
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug
for a in 0xc00000 0x200000; do
  echo $a > /sys/kernel/debug/cxl/mem0/inject_poison; echo "inject-$a-status=$?"
  echo $a > /sys/kernel/debug/cxl/mem0/clear_poison; echo "clear-$a-status=$?"
done'
# nf_mh_sanitize N: host 0 the victim, hosts 1..N-1 attack it together.
nf_mh_sanitize() {
    local n=$1 dir=$NF_BUILD/test-logs/multihost/sanitize$1 rc r bad=0 out log what ok
    local name cmd op code
    nf_cluster_prepare "$dir" 256
    nf_cluster_boot "$dir" 0 "$n" "nfabric-multihost sanitize" 256 --timeout 600 --cpus 1 \
        --mem "$((n > 2 ? 768 : 1024))M"
    if ! nf_cluster_wait_mark "$dir" 0 300; then
        echo "not ok - sanitize$n: host 0 never got its data and round ready"
        nf_mh_stop "$dir" "$n"; return 0
    fi
    for ((r = 1; r < n; r++)); do
        nf_cluster_boot "$dir" "$r" "$n" "$NF_MH_ATTACK" 256 --timeout 300 --cpus 1 \
            --mem "$((n > 2 ? 768 : 1024))M" --qemu-arg -d --qemu-arg guest_errors
    done
    for ((r = 1; r < n; r++)); do
        rc=$(nf_cluster_wait "$dir" "$r" 360)
        [ "$rc" = 0 ] || bad=1
    done
    rc=$(nf_cluster_wait "$dir" 0 400)
    [ "$rc" = 0 ] || bad=1
    wait
    nf_mh_tap "$dir" 1
    for ((r = 1; r < n; r++)); do
        log=$(tr -d '\r' < "$dir/host$r.log")
        out=$dir/host$r.out
        if grep -q '^destroy-status=0$' <<<"$log"; then
            echo "ok - sanitize$n: host $r destroyed its own region (the kernel allows Sanitize only then)"
        else
            echo "not ok - sanitize$n: host $r could not destroy its region (console $dir/host$r.log)"
        fi
        for what in "sanitize SANITIZE_OVERWRITE 0x4400 0x13" \
                    "inject-0xc00000 MEDIA_AND_POISON_INJECT_POISON 0x4301 0xf" \
                    "clear-0xc00000 MEDIA_AND_POISON_CLEAR_POISON 0x4302 0xf" \
                    "inject-0x200000 MEDIA_AND_POISON_INJECT_POISON 0x4301 0xf" \
                    "clear-0x200000 MEDIA_AND_POISON_CLEAR_POISON 0x4302 0xf"; do
            read -r name cmd op code <<<"$what"
            ok=0
            if grep -qE "^$name-status=[1-9]" <<<"$log" &&
               grep -qF "mailbox command $cmd ($op) refused (return code $code)" "$out"; then
                ok=1
            fi
            echo "$([ "$ok" = 1 ] && echo ok || echo not ok) - sanitize$n: host $r's $name fails in its guest ($(grep -E "^$name-status=" <<<"$log" | head -1)) and the device refused $cmd with return code $code"
        done
    done
    echo "$([ "$bad" = 0 ] && echo ok || echo not ok) - sanitize$n: all $n hosts finish"
}

# (i) a hostile host in a job of its own: the fabric manager puts heads
# 0..N-2 (the victims, cooperating in one round) in job 0 and head N-1 (the
# attacker) in job 1 before any guest runs; the attacker tries every
# attack of issue 21 on job 0 (nfabric-multihost jobs), then the fabric
# manager gives job 0 window 14 too (the victims' sign to check their data,
# counts and round).
# nf_mh_stop DIR N: stop the N hosts of DIR (a case that cannot go on).
nf_mh_stop() {
    local r
    for ((r = 0; r < $2; r++)); do
        pkill -F "$1/host$r.pid" 2>/dev/null || true
    done
    wait
}

# nf_mh_boot_paused NAME DIR N CMD [vm options...]: a fresh device in DIR
# and N hosts on it, started paused (-S) so that the fabric manager assigns
# jobs before any guest runs, each to run CMD; returns once every head
# attached, or prints "not ok" naming the head that did not, stops the
# hosts and returns 1.
nf_mh_boot_paused() {
    local name=$1 dir=$2 n=$3 cmd=$4 r
    shift 4
    nf_cluster_prepare "$dir" 256
    for ((r = 0; r < n; r++)); do
        nf_cluster_boot "$dir" "$r" "$n" "$cmd" 256 --cpus 1 --qemu-arg -S "$@"
    done
    for ((r = 0; r < n; r++)); do
        nf_cluster_wait_attached "$dir" "$r" && continue
        echo "not ok - $name: head $r never attached"
        nf_mh_stop "$dir" "$n"
        return 1
    done
}

nf_mh_jobs_fm() {
    local n=$1 signal=$2
    echo --job 0 --heads "0-$((n - 2))" --windows "0-7,15${signal}" --mem 0+16M \
         --job 1 --heads "$((n - 1))" --windows 8-13 --mem 16M+16M
}
nf_mh_jobs() {
    local n=$1 dir=$NF_BUILD/test-logs/multihost/jobs$1 out r rc bad=0 fm=()
    local last=$(($1 - 1))
    nf_mh_boot_paused "jobs$n" "$dir" "$n" "nfabric-multihost jobs" --timeout 600 --mem 768M ||
        return 0
    # Every head attached and paused: assign, then run the victims first.
    read -r -a fm <<<"$(nf_mh_jobs_fm "$n" "")"
    if out=$("$NF_HOST_BUILD/bench/nfabric-state" fm "$dir/state" "${fm[@]}" 2>&1); then
        echo "ok - jobs$n: the fabric manager assigned the jobs ($out)"
    else
        echo "not ok - jobs$n: the fabric manager's assignment was refused: $out"
    fi
    for ((r = 0; r < last; r++)); do
        nf_qmp "$dir/qmp$r.sock" cont > /dev/null || true
    done
    if ! nf_cluster_wait_mark "$dir" 0 300; then
        echo "not ok - jobs$n: the victims never got their data and round ready"
        nf_mh_stop "$dir" "$n"; return 0
    fi
    nf_qmp "$dir/qmp$last.sock" cont > /dev/null || true
    rc=$(nf_cluster_wait "$dir" "$last" 400)
    [ "$rc" = 0 ] || bad=1
    # The attack is over: job 0 gets window 14 (its hosts' sign).
    read -r -a fm <<<"$(nf_mh_jobs_fm "$n" ",14")"
    out=$("$NF_HOST_BUILD/bench/nfabric-state" fm "$dir/state" "${fm[@]}" 2>&1) ||
        echo "not ok - jobs$n: the fabric manager's second assignment was refused: $out"
    for ((r = 0; r < last; r++)); do
        rc=$(nf_cluster_wait "$dir" "$r" 400)
        [ "$rc" = 0 ] || bad=1
    done
    wait
    nf_mh_tap "$dir" "$n"
    "$NF_HOST_BUILD/bench/nfabric-state" "$dir/state" 2>/dev/null |
        grep -E '^(fm_|job|head[0-9]+_job|range)' | sed 's/^/# state: /'
    echo "$([ "$bad" = 0 ] && echo ok || echo not ok) - jobs$n: every host finishes (${n} hosts: $((n - 1)) victims, 1 attacker)"
}

# (m) the fabric manager moves memory between jobs while windows are
# enabled (docs/multihost.md "Reassignment"): the last host (job 1) enables
# window 9 over 20 MiB (counters at 24 MiB) in its job's memory; giving that
# memory, or window 9's slot, to job 0 is refused while the window is
# enabled; job 1 is asked (window 14) to disable it; then the memory goes
# to job 0, which owns it from then on (nfabric-multihost reassign).
# nf_mh_reassign_fm N STEP: the assignment of each step.
nf_mh_reassign_fm() {
    local n=$1 j0="--job 0 --heads 0-$(($1 - 2))" j1="--job 1 --heads $(($1 - 1))"
    case $2 in
    start)   echo "$j0 --windows 0-7 --mem 0+16M $j1 --windows 8-13 --mem 16M+16M" ;;
    memory)  echo "$j0 --windows 0-7,14 --mem 0+32M $j1 --windows 8-13 --mem 32M+16M" ;;
    slot)    echo "$j0 --windows 0-7,9 --mem 0+16M $j1 --windows 8,10-13 --mem 16M+16M" ;;
    ask)     echo "$j0 --windows 0-7 --mem 0+16M $j1 --windows 8-14 --mem 16M+16M" ;;
    esac
}

nf_mh_reassign() {
    local n=$1 dir=$NF_BUILD/test-logs/multihost/reassign$1 out r rc bad=0 fm=() t
    local last=$(($1 - 1)) st=$NF_HOST_BUILD/bench/nfabric-state
    nf_mh_boot_paused "reassign$n" "$dir" "$n" "nfabric-multihost reassign" --timeout 600 \
        --mem 768M || return 0
    read -r -a fm <<<"$(nf_mh_reassign_fm "$n" start)"
    rc=0
    out=$("$st" fm "$dir/state" "${fm[@]}" 2>&1) || rc=$?
    nf_tap "$rc" "reassign$n: the fabric manager assigns job 0 (hosts 0-$((n - 2)), 0-16 MiB) and job 1 (host $last, 16-32 MiB)"
    for ((r = 0; r < n; r++)); do
        nf_qmp "$dir/qmp$r.sock" cont > /dev/null || true
    done
    if ! nf_cluster_wait_mark "$dir" "$last" 300; then
        echo "not ok - reassign$n: job 1 never enabled its window"
        nf_mh_stop "$dir" "$n"; return 0
    fi
    read -r -a fm <<<"$(nf_mh_reassign_fm "$n" memory)"
    rc=0
    out=$("$st" fm "$dir/state" "${fm[@]}" 2>&1) || rc=$?
    nf_tap "$([ "$rc" != 0 ] && grep -q 'window 9 of job 1 is enabled over 0x1400000+0x10000' <<<"$out" && echo 0 || echo 1)" \
        "reassign$n: giving job 1's memory under its enabled window 9 to job 0 is refused, naming the window and the range ($out)"
    read -r -a fm <<<"$(nf_mh_reassign_fm "$n" slot)"
    rc=0
    out=$("$st" fm "$dir/state" "${fm[@]}" 2>&1) || rc=$?
    nf_tap "$([ "$rc" != 0 ] && grep -q 'window 9 is enabled in job 1' <<<"$out" && echo 0 || echo 1)" \
        "reassign$n: moving enabled window 9's slot to job 0 is refused ($out)"
    "$st" "$dir/state" 2>/dev/null | grep -qx 'range1=0x1000000+0x1000000 job=1 owner=job' ||
        nf_tap 1 "reassign$n: the refused assignments changed nothing ($("$st" "$dir/state" 2>&1 | grep '^range' | tr '\n' ' '))"
    read -r -a fm <<<"$(nf_mh_reassign_fm "$n" ask)"
    rc=0
    out=$("$st" fm "$dir/state" "${fm[@]}" 2>&1) || rc=$?
    nf_tap "$rc" "reassign$n: job 1 is asked to give window 9 up (window 14 in its slots)"
    for ((t = 0; t < 1500; t++)); do
        grep -q '^REASSIGN-DISABLED' "$dir/host$last.log" 2>/dev/null && break
        [ -s "$dir/host$last.rc" ] && break
        sleep 0.2
    done
    read -r -a fm <<<"$(nf_mh_reassign_fm "$n" memory)"
    rc=0
    out=$("$st" fm "$dir/state" "${fm[@]}" 2>&1) || rc=$?
    nf_tap "$rc" "reassign$n: with window 9 disabled, the memory goes to job 0 (${out:-accepted})"
    for ((r = 0; r < n; r++)); do
        rc=$(nf_cluster_wait "$dir" "$r" 400)
        [ "$rc" = 0 ] || bad=1
    done
    wait
    nf_mh_tap "$dir" "$n"
    echo "$([ "$bad" = 0 ] && echo ok || echo not ok) - reassign$n: every host finishes ($((n - 1)) of job 0, 1 of job 1)"
}

# (j) a host stopped (SIGSTOP, as a debugger does) at whatever it was
# doing: host 1 enables, clears and disables a window with a 64 MiB counter
# area in a loop; every other host times its own accesses, register writes
# and enables (nfabric-multihost pause), and every other host's QMP is
# timed 6 times during each stop.  Host 1 is stopped for about 1.5 s five
# times: at least twice where it holds no configuration lock (the others'
# enables then wait for its map: PEER) and, if it comes, once where it
# holds it (their register writes then wait the bound: STATE); a stop of a
# kind already had is undone at once (nfabric-state says which kind).
# nf_mh_pause N: N hosts.
# nf_mh_pause N [apart]: N hosts (2 or 3); with apart, each host is in a
# job of its own (the fabric manager's, before the guests run), host 1 in
# job 1: then nothing of host 1, stopped or churning, may hold the others
# up (issue 36: none refused, the slowest under 50 ms).
nf_mh_pause() {
    local n=$1 apart=${2:-} name=pause$1 pid k ms worst=0 r rc bad=0 qpids=() fm=()
    local held free=0 busy=0 tries=0 args="" lock=job0_lock_head out
    [ -z "$apart" ] || { name=apart$1; args=" --apart"; lock=job1_lock_head; }
    local dir=$NF_BUILD/test-logs/multihost/$name vm=(--timeout 400 --mem "$((n > 2 ? 768 : 1024))M")
    if [ -z "$apart" ]; then
        nf_cluster_prepare "$dir" 256
        for ((r = 0; r < n; r++)); do
            nf_cluster_boot "$dir" "$r" "$n" "nfabric-multihost pause --iters 40" 256 --cpus 1 "${vm[@]}"
        done
    else
        nf_mh_boot_paused "$name" "$dir" "$n" "nfabric-multihost pause --iters 40$args" "${vm[@]}" ||
            return 0
        # Each host in a job of its own: host r's windows and memory as
        # nfabric-multihost pause lays them out (its own window, the window
        # it enables and their counters, its plain memory).
        # shellcheck disable=SC2054  # the commas are nfabric-state's list syntax
        fm=(--job 0 --heads 0 --windows 0,2
            --mem 0x0+0x110000,0x200000+0x100000,0x9000000+0x10000,0x9100000+0x10000,0x9200000+0x100000
            --job 1 --heads 1 --windows 1 --mem 32M+96M)
        # shellcheck disable=SC2054  # the commas are nfabric-state's list syntax
        [ "$n" -gt 2 ] && fm+=(--job 2 --heads 2 --windows 8,12
            --mem 0x120000+0x10000,0x300000+0x100000,0x9020000+0x10000,0x9120000+0x10000,0x9300000+0x100000)
        rc=0
        out=$("$NF_HOST_BUILD/bench/nfabric-state" fm "$dir/state" "${fm[@]}" 2>&1) || rc=$?
        nf_tap "$rc" "$name: the fabric manager puts each host in a job of its own, host 1 (the one stopped) in job 1 ($out)"
        for ((r = 0; r < n; r++)); do
            nf_qmp "$dir/qmp$r.sock" cont > /dev/null || true
        done
    fi
    if ! nf_cluster_wait_mark "$dir" 1 300; then
        echo "not ok - pause: host 1 never started its loop"
        nf_mh_stop "$dir" "$n"; return 0
    fi
    pid=$(cat "$dir/host1.pid")
    k=0
    while [ "$k" -lt 5 ] && [ "$tries" -lt 40 ]; do
        tries=$((tries + 1))
        sleep "0.$((3 + RANDOM % 7))"
        kill -STOP "$pid" || break
        sleep 0.05
        held=$("$NF_HOST_BUILD/bench/nfabric-state" "$dir/state" 2>/dev/null |
               sed -n "s/^$lock=//p") || held=unknown
        if [ "$held" = 1 ]; then
            # Stopped holding the configuration lock: once is enough.
            if [ "$busy" -ge 1 ] || [ $((5 - k)) -le $((2 - free)) ]; then
                kill -CONT "$pid"; continue
            fi
            busy=$((busy + 1))
        else
            # Keep the last stop for one holding the lock, for a while.
            if [ "$free" -ge 2 ] && [ $((5 - k)) -le $((1 - busy)) ] && [ "$tries" -lt 20 ]; then
                kill -CONT "$pid"; continue
            fi
            free=$((free + 1))
        fi
        k=$((k + 1))
        # Every other host's QMP at once, 6 times 0.2 s apart.
        for ((r = 0; r < n; r++)); do
            [ "$r" = 1 ] && continue
            { nf_machine qmp-ms "$dir/qmp$r.sock" 6 0.2 || echo 99999; } > "$dir/qmp$r.ms" &
            qpids+=("$!")
        done
        wait "${qpids[@]}" || true
        qpids=()
        for ((r = 0; r < n; r++)); do
            [ "$r" = 1 ] && continue
            ms=$(cat "$dir/qmp$r.ms")
            [[ "$ms" =~ ^[0-9]+$ ]] || ms=99999
            echo "# $name: stop $k (host 1 $([ "$held" = 1 ] && echo holding || echo not holding) its job's configuration lock): 6 QMP query-status of host $r in 1.2 s, the slowest answered in $ms ms"
            [ "$ms" -gt "$worst" ] && worst=$ms
        done
        kill -CONT "$pid"
        sleep 1
    done
    echo "# $name: host 1's QEMU (pid $pid) stopped $k times for about 1.5 s ($free not holding its job's configuration lock, $busy holding it; $tries stops in all)"
    echo "$([ "$free" -ge 2 ] && echo ok || echo not ok) - $name: host 1 was stopped at least twice where it held no configuration lock ($free times)"
    if [ -n "$apart" ]; then
        echo "$([ "$busy" -ge 1 ] && echo ok || echo not ok) - $name: host 1 was stopped at least once holding its job's configuration lock ($busy times)"
    fi
    echo "$([ "$worst" -lt 1000 ] && echo ok || echo not ok) - $name: QMP of every other host answered within a second while host 1 was stopped (slowest $worst ms)"
    for ((r = 0; r < n; r++)); do
        rc=$(nf_cluster_wait "$dir" "$r" 300)
        [ "$rc" = 0 ] || bad=1
    done
    wait
    nf_mh_tap "$dir" "$n"
    echo "$([ "$bad" = 0 ] && echo ok || echo not ok) - $name: all $n hosts finish"
}

# (k) a head's own ranges at RAM speed: the fabric manager gives job 0
# (every head) the first 64 MiB and each head 16 MiB of its own, at
# 64 MiB + 16 MiB * head; each host's QEMU maps its own range directly.
# nfabric-multihost own: writes to its own range are not seen by the
# device and read back; writes to the job's memory are; a window inside
# its own range aggregates; the other head's range is refused.
nf_mh_own_fm() {
    local n=$1 r
    printf '%s ' --job 0 --heads "0-$((n - 1))" --windows 0-15 --mem 0+64M
    for ((r = 0; r < n; r++)); do
        printf '%s ' --own "$r@$((64 + 16 * r))M+16M"
    done
}

# nf_mh_own NAME N MIB: the case's cluster in $NF_BUILD/test-logs/multihost/NAME,
# each host timing MIB MiB of writes; 0 if every host passed.
nf_mh_own() {
    local name=$1 n=$2 mib=$3 dir=$NF_BUILD/test-logs/multihost/$1 r rc bad=0 fm=() out
    nf_mh_boot_paused "$name" "$dir" "$n" "nfabric-multihost own --bytes $mib" --timeout 600 \
        --mem 768M || return 1
    read -r -a fm <<<"$(nf_mh_own_fm "$n")"
    if out=$("$NF_HOST_BUILD/bench/nfabric-state" fm "$dir/state" "${fm[@]}" 2>&1); then
        echo "ok - $name: the fabric manager gave each of the $n heads 16 MiB of its own ($out)"
    else
        echo "not ok - $name: the fabric manager's assignment was refused: $out"
        bad=1
    fi
    for ((r = 0; r < n; r++)); do
        nf_qmp "$dir/qmp$r.sock" cont > /dev/null || true
    done
    # While the heads run, their own ranges are not taken from them.
    out=$("$NF_HOST_BUILD/bench/nfabric-state" fm "$dir/state" --none 2>&1) && rc=0 || rc=$?
    if [ "$rc" != 0 ] && grep -q "is head 0's own and head 0 is attached" <<<"$out"; then
        echo "ok - $name: the fabric manager cannot take a running head's own range ($out)"
    else
        echo "not ok - $name: removing the assignment under running heads: status $rc: $out"
        bad=1
    fi
    for ((r = 0; r < n; r++)); do
        rc=$(nf_cluster_wait "$dir" "$r" 660)
        [ "$rc" = 0 ] || bad=1
    done
    wait
    nf_mh_tap "$dir" "$n"
    echo "$([ "$bad" = 0 ] && echo ok || echo not ok) - $name: every host finishes ($n hosts)"
    return "$bad"
}

# nf_cluster_wait_attached DIR R: wait (60 s at most) until head R of
# DIR's device is attached (its process holds its live byte).
nf_cluster_wait_attached() {
    local dir=$1 r=$2 t live
    for ((t = 0; t < 300; t++)); do
        live=$("$NF_HOST_BUILD/bench/nfabric-state" --live "$dir/state" 2>/dev/null |
               sed -n 's/^live_heads=//p') || true
        [ -n "$live" ] && (( (live >> r) & 1 )) && return 0
        sleep 0.2
    done
    return 1
}

# ---- (d) refusals at start-up: QEMU alone, no guest ------------------------

# shellcheck disable=SC2054  # -M q35,cxl=on is one argument
NF_MH_MACHINE=(-nodefaults -display none -S -M q35,cxl=on -m 256M
    -device pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1
    -device cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2
    -M cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G)

# nf_mh_qemu BACKEND DEVPROPS [QEMU args]: the QEMU line of one head.
nf_mh_qemu_args() {
    local backend=$1 props=$2
    shift 2
    # shellcheck disable=SC2086
    printf '%s\n' "${NF_FIRMWARE[@]}" "${NF_MH_MACHINE[@]}" -object "$backend" \
        -device "cxl-neuron-fabric,bus=rp0,volatile-memdev=vmem0,id=nf0,$props" "$@"
}

# nf_mh_refused NAME EXPECT BACKEND PROPS: QEMU must exit with EXPECT.
nf_mh_refused() {
    local name=$1 expect=$2 out rc=0 args
    mapfile -t args < <(nf_mh_qemu_args "$3" "$4")
    out=$(timeout 30 "$NF_QEMU_BIN" "${args[@]}" 2>&1 </dev/null) || rc=$?
    if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -qF -- "$expect" <<<"$out"; then
        echo "ok - refused: $name ($(head -1 <<<"$out" | sed 's/.*cxl-neuron-fabric: //'))"
    else
        echo "not ok - refused: $name: status $rc, wanted \"$expect\", got: $(head -3 <<<"$out")"
    fi
}

# nf_mh_live DIR NAME BACKEND PROPS: start a head (paused) in the background.
nf_mh_live() {
    local dir=$1 name=$2 args i
    mapfile -t args < <(nf_mh_qemu_args "$3" "$4" -qmp "unix:$dir/$name.qmp,server=on,wait=off" \
                        -pidfile "$dir/$name.pid" -trace nfabric_head_attach)
    rm -f "$dir/$name.qmp" "$dir/$name.pid"
    "$NF_QEMU_BIN" "${args[@]}" </dev/null >"$dir/$name.log" 2>&1 &
    for ((i = 0; i < 150; i++)); do
        [ -S "$dir/$name.qmp" ] && [ -s "$dir/$name.pid" ] && return 0
        sleep 0.1
    done
    return 1
}

nf_mh_refusals() {
    local dir=$NF_BUILD/test-logs/multihost/refusals apid i
    rm -rf "$dir"
    mkdir -p "$dir"
    truncate -s 256M "$dir/mem" "$dir/mem-other"
    truncate -s 512M "$dir/mem-512"
    local file="memory-backend-file,id=vmem0,share=on,mem-path=$dir/mem,size=256M"
    local st="shared-state=$dir/state"
    nf_mh_refused "RAM backend" "needs 'volatile-memdev' to be a memory-backend-file with share=on" \
        "memory-backend-ram,id=vmem0,share=on,size=256M" "$st,head=0,heads=2"
    nf_mh_refused "share=off" "needs 'volatile-memdev' to be a memory-backend-file with share=on" \
        "memory-backend-file,id=vmem0,share=off,mem-path=$dir/mem,size=256M" "$st,head=0,heads=2"
    nf_mh_refused "head >= heads" "property 'head' must be 0..1" "$file" "$st,head=2,heads=2"
    nf_mh_refused "heads=17" "property 'heads' must be 1..16" "$file" "$st,head=0,heads=17"
    nf_mh_refused "head without shared-state" "need 'shared-state'" "$file" "head=1,heads=2"
    nf_mh_refused "state file of another size" "bytes, not the" "$file" "shared-state=/etc/hostname,head=0,heads=2"

    # A live head 0 of a 2-head device, then heads that conflict with it.
    if ! nf_mh_live "$dir" a "$file" "$st,head=0,heads=2"; then
        echo "not ok - a first head starts (log: $dir/a.log)"
        return 0
    fi
    apid=$(cat "$dir/a.pid")
    # Its QMP socket may come up before the device attaches: wait for that.
    for ((i = 0; i < 50; i++)); do
        grep -q 'head 0 of 2' "$dir/a.log" && break
        sleep 0.1
    done
    echo "ok - a first head (pid $apid) creates the state: $(grep -o 'head 0 of 2.*' "$dir/a.log" | head -1 || true)"
    nf_mh_refused "head in use by a live process" "head 0 of '$dir/state' is in use by a live process (pid $apid)" \
        "$file" "$st,head=0,heads=2"
    nf_mh_refused "other head count" "property 'heads': 3, but the device in '$dir/state' has 2 heads" \
        "$file" "$st,head=1,heads=3"
    nf_mh_refused "other memory file" "maps another file than the other heads" \
        "memory-backend-file,id=vmem0,share=on,mem-path=$dir/mem-other,size=256M" "$st,head=1,heads=2"
    nf_mh_refused "other memory size" "property 'volatile-memdev': 536870912 bytes, but the device" \
        "memory-backend-file,id=vmem0,share=on,mem-path=$dir/mem-512,size=512M" "$st,head=1,heads=2"
    nf_mh_refused "a second state file over the memory of live heads" \
        "is the device memory of live heads of another device state ('$dir/state'" \
        "$file" "shared-state=$dir/state2,head=0,heads=2"
    if nf_mh_live "$dir" b "$file" "$st,head=1,heads=2" && sleep 0.5 &&
       kill -0 "$(cat "$dir/b.pid")" 2>/dev/null; then
        echo "ok - head 1 joins the live head 0: $(grep -o 'head 1 of 2.*' "$dir/b.log" | head -1)"
    else
        echo "not ok - head 1 joins the live head 0 (log: $dir/b.log)"
    fi
    local reply
    reply=$(nf_qmp "$dir/a.qmp" migrate '{"uri": "exec:cat > /dev/null"}' 2>&1) || true
    if grep -q "cannot migrate" <<<"$reply"; then
        echo "ok - migration of a head is refused: ${reply#QMP migrate: }"
    else
        echo "not ok - migration of a head is refused: $reply"
    fi
    # The state emptied under the live heads: never made anew under them.
    : > "$dir/state"
    nf_mh_refused "a state file emptied under live heads" "is empty but heads are attached to it" \
        "$file" "$st,head=0,heads=2"
    # Split brain: the state deleted under the live heads and made anew.
    rm -f "$dir/state"
    nf_mh_refused "a state made anew over the memory of live heads" \
        "is the device memory of live heads of another device state (a state file not found" \
        "$file" "$st,head=0,heads=2"
    # A crashed run: every head killed; the next head makes the state anew.
    kill -KILL "$apid" "$(cat "$dir/b.pid")" 2>/dev/null
    wait 2>/dev/null
    cp "$dir/state" "$dir/state.junk"
    if nf_mh_live "$dir" c "$file" "$st,head=1,heads=2" && sleep 0.5 &&
       grep -q "re-initialised (no head was alive)" "$dir/c.log"; then
        echo "ok - a state file left by killed heads is re-initialised by the next head"
    else
        echo "not ok - a state file left by killed heads is re-initialised (log: $dir/c.log)"
    fi
    pkill -KILL -F "$dir/c.pid" 2>/dev/null
    wait 2>/dev/null
    # The same size, but not a state file of this layout.
    local junk_size
    junk_size=$(stat -c %s "$dir/state.junk")
    head -c "$junk_size" /dev/urandom > "$dir/state.junk"
    nf_mh_refused "state file of another version" "is not a state file of layout" \
        "$file" "shared-state=$dir/state.junk,head=0,heads=2"
}

nf_suite_multihost() {
    nf_image_main >&2
    echo "# (d) refusals and joining, QEMU alone"
    nf_mh_refusals
    echo "# (a) 2 and 4 hosts aggregate into the same windows"
    nf_mh_run agg2 2 "nfabric-multihost agg" --cpus 1 --mem 1G
    nf_mh_run agg4 4 "nfabric-multihost agg" --cpus 1 --mem 512M
    echo "# (b) 2 hosts x 2 vCPUs x 2 processes on one window"
    nf_mh_run hammer 2 "nfabric-multihost hammer --procs 2 --iters 8000" --cpus 2 --mem 1G
    echo "# (c) SIGKILL of one host mid-round"
    nf_mh_kill
    echo "# (f) system_reset of one host mid-round"
    nf_mh_reset
    echo "# (g) the state file truncated under 2 running hosts"
    nf_mh_corrupt
    echo "# (h) Sanitize and poison commands of other hosts, 2 and 3 hosts"
    nf_mh_sanitize 2
    nf_mh_sanitize 3
    echo "# (i) a hostile host in a job of its own (fabric manager), 2 and 3 hosts"
    nf_mh_jobs 2
    nf_mh_jobs 3
    echo "# (m) memory and window slots reassigned while windows are enabled, 2 and 3 hosts"
    nf_mh_reassign 2
    nf_mh_reassign 3
    echo "# (j) a host stopped (SIGSTOP) again and again while it reconfigures, 2 and 3 hosts"
    nf_mh_pause 2
    nf_mh_pause 3
    echo "# (n) the same with every host in a job of its own: nothing of the stopped,"
    echo "#     churning host holds the others up (none refused, the slowest under 50 ms), 2 and 3 hosts"
    nf_mh_pause 2 apart
    nf_mh_pause 3 apart
    echo "# (k) each head's own range mapped directly (fabric manager), 2 and 3 hosts"
    nf_mh_own own2 2 64 || true
    nf_mh_own own3 3 32 || true
    echo "# (l) no fabric manager: every head maps plain memory directly; a window"
    echo "#     enabled over memory every host had mapped (map protocol), 2 and 3 hosts"
    nf_mh_run direct2 2 "nfabric-multihost direct --bytes 64" --cpus 1 --mem 768M
    nf_mh_run direct3 3 "nfabric-multihost direct --bytes 32" --cpus 1 --mem 512M
    echo "# (o) the Python example of docs/guest.md: two heads started from Python"
    nf_mh_example
}

# (o) scripts/nfmachine/example_cluster.py, as a user runs it: two hosts,
# one shared device, a G-Binary round each host checks.
nf_mh_example() {
    local dir=$NF_BUILD/test-logs/multihost/example out rc=0
    rm -rf "$dir"
    mkdir -p "$dir"
    out=$(cd "$NF_ROOT" && PYTHONPATH=scripts:$NF_QEMU_SRC/python /usr/bin/python3 \
          -m nfmachine.example_cluster --qemu "$NF_QEMU_BIN" --guest "$NF_GUEST" \
          --logs "$dir" 2>&1) || rc=$?
    printf '# %s\n' "${out//$'\n'/$'\n'# }"
    nf_mh_tap "$dir" 2
    [ "$rc" = 0 ] && [ "$(grep -c '^host [01]: status 0,' <<<"$out")" = 2 ]
    nf_tap $? "example_cluster.py: 2 heads booted from Python, both exit 0 (consoles: $dir)"
}

# ---- bench cluster ------------------------------------------------------------

# nf_mh_bench_figures DIR N: "PATH MBPS HOSTS MIN MAX" per path (gbinary,
# gternary, floor: the trapped-access floor): all hosts' bytes over the
# slowest host's time (the hosts start together at a barrier), and the
# slowest and fastest host's own MB/s.
nf_mh_bench_figures() {
    local dir=$1 n=$2 r
    for ((r = 0; r < n; r++)); do
        grep -h '^mh_bench ' "$dir/host$r.log" || true
    done | tr -d '\r' |
        awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
               p = v["path"]; b[p] += v["bytes"]; if (v["seconds"] > t[p]) t[p] = v["seconds"]
               if (!(p in lo) || v["mbps"] < lo[p]) lo[p] = v["mbps"]
               if (!(p in hi) || v["mbps"] > hi[p]) hi[p] = v["mbps"]
               c[p]++ }
             END { for (p in b) if (t[p] > 0)
                       printf "%s %.3f %d %.3f %.3f\n", p, b[p] / t[p] / 1e6, c[p], lo[p], hi[p] }'
}

# nf_mh_bench_keep KEY MBPS [MIN MAX]: keep the best of the rounds in best[]
# (and that round's slowest and fastest host in lo[] and hi[]).
nf_mh_bench_keep() {
    awk -v a="$2" -v b="${best[$1]:-0}" 'BEGIN{exit !(a > b)}' || return 0
    best[$1]=$2
    lo[$1]=${3:-$2}
    hi[$1]=${4:-$2}
}

# nf_ratio KEY A B: KEY=A/B with three decimals.
nf_ratio() {
    awk -v k="$1" -v a="$2" -v b="$3" 'BEGIN{ if (b > 0) printf "%s=%.3f\n", k, a / b; else printf "%s=n/a\n", k }'
}

nf_bench_cluster() {
    local mib=16 rounds=2 r n dir p v h own ram
    while [ $# -gt 0 ]; do
        case "$1" in
        --mib) mib=${2:?}; shift ;;
        --rounds) rounds=${2:?}; shift ;;
        -h|--help) echo "usage: scripts/nfabric bench cluster [--mib N] [--rounds N]"
                   echo "Each host writes N MiB (default 16) of packed data with 8-byte stores into one"
                   echo "shared window, G-Binary then G-Ternary, then as many 8-byte stores into"
                   echo "QEMU's edu device (the trapped-access floor); best of --rounds (default 2)."
                   echo "Then 2 heads of one device (no fabric manager: all plain memory mapped"
                   echo "directly) each time 256 MiB of plain 8-byte writes against guest RAM."
                   return 0 ;;
        *) echo "bench cluster: unknown option \"$1\"" >&2; return 2 ;;
        esac
        shift
    done
    if ! [[ "$mib" =~ ^[1-9][0-9]*$ ]] || ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then
        echo "bench cluster: --mib and --rounds take positive numbers" >&2
        return 2
    fi
    [ -x "$NF_QEMU_BIN" ] || nf_setup_main --quiet
    nf_image_main >&2
    declare -A best lo hi waits sleeps
    local cmd="nfabric-multihost bench --bytes $mib"
    # The trapped-access floor: QEMU's edu device in every VM (the guest
    # times 8-byte stores into its BAR after the windows).
    local floor=(--qemu-arg -device --qemu-arg "edu,bus=pcie.0")
    for ((r = 0; r < rounds; r++)); do
        # The device as it was: not shared, RAM backend, one host.
        dir=$NF_BUILD/bench-cluster/single
        mkdir -p "$dir"
        nf_vm_main --quiet --log "$dir/host0.log" --cpus 1 --mem 512M --timeout 900 \
            "${floor[@]}" --run "NFABRIC_RANK=0 NFABRIC_HOSTS=1 $cmd" >/dev/null 2>&1 ||
            nf_die "bench cluster: the single-head run failed (console: $dir/host0.log)"
        local -A round=()
        while read -r p v _; do
            nf_mh_bench_keep "single_$p" "$v"
            round[$p]=$v
        done < <(nf_mh_bench_figures "$dir" 1)
        if [ -z "${round[floor]:-}" ] || [ -z "${round[gbinary]:-}" ]; then
            nf_die "bench cluster: the single-head run printed no trapped-access floor (console: $dir/host0.log)"
        fi
        nf_mh_bench_keep pair_single_gbinary \
            "$(awk -v a="${round[gbinary]}" -v b="${round[floor]}" 'BEGIN{printf "%.4f", a / b}')"
        for n in 1 2 4; do
            dir=$NF_BUILD/bench-cluster/heads$n
            nf_cluster_prepare "$dir" 256
            for ((h = 0; h < n; h++)); do
                nf_cluster_boot "$dir" "$h" "$n" "$cmd" 256 --cpus 1 --mem 512M --timeout 900 "${floor[@]}"
            done
            for ((h = 0; h < n; h++)); do
                [ "$(nf_cluster_wait "$dir" "$h" 960)" = 0 ] ||
                    nf_die "bench cluster: host $h of $n failed (console: $dir/host$h.log)"
            done
            wait
            local -A round=()
            while read -r p v cnt vlo vhi; do
                [ "$cnt" = "$n" ] || nf_die "bench cluster: $cnt of $n hosts reported $p"
                nf_mh_bench_keep "heads${n}_$p" "$v" "$vlo" "$vhi"
                round[$p]=$v
            done < <(nf_mh_bench_figures "$dir" "$n")
            [ -n "${round[floor]:-}" ] ||
                nf_die "bench cluster: the $n-host run printed no trapped-access floor (console: $dir/host0.log)"
            # The device against the floor of the same VMs a few seconds
            # later: side by side, whatever the machine did in other rounds.
            for p in gbinary gternary; do
                nf_mh_bench_keep "pair_heads${n}_$p" \
                    "$(awk -v a="${round[$p]}" -v b="${round[floor]}" 'BEGIN{printf "%.4f", a / b}')"
            done
            "$NF_HOST_BUILD/bench/nfabric-state" "$dir/state" > "$dir/state.txt"
            waits[$n]=$(sed -n 's/^lock_waits=//p' "$dir/state.txt")
            sleeps[$n]=$(sed -n 's/^lock_sleeps=//p' "$dir/state.txt")
        done
        # Plain 8-byte writes of 2 heads of one device, no fabric manager
        # (all memory mapped directly, the map protocol), against guest RAM
        # in the same guest (case (l)).
        nf_mh_run bench-direct 2 "nfabric-multihost direct --bytes 256" --cpus 1 --mem 768M \
            > "$NF_BUILD/bench-cluster/direct.tap"
        ! grep -q '^not ok' "$NF_BUILD/bench-cluster/direct.tap" ||
            nf_die "bench cluster: the direct-map run failed (consoles: $NF_BUILD/test-logs/multihost/bench-direct)"
        for ((h = 0; h < 2; h++)); do
            read -r own ram < <(sed -n 's/^mh_direct rank=[0-9]* plain_mbps=\([0-9.]*\) ram_mbps=\([0-9.]*\).*/\1 \2/p' \
                "$NF_BUILD/test-logs/multihost/bench-direct/host$h.log" | tr -d '\r') || true
            [ -n "$ram" ] || nf_die "bench cluster: host $h of the direct-map run printed no mh_direct figures"
            v=$(awk -v a="$own" -v b="$ram" 'BEGIN{printf "%.3f", a / b}')
            awk -v a="$v" -v b="${best[own_vs_ram_$h]:-0}" 'BEGIN{exit !(a > b)}' &&
                best[own_vs_ram_$h]=$v best[own_$h]=$own best[ram_$h]=$ram
        done
    done
    echo "bench_mib_per_host=$mib"
    echo "rounds=$rounds"
    for p in gbinary gternary; do
        echo "single_${p}_mbps=${best[single_$p]}"
        for n in 1 2 4; do
            echo "heads${n}_${p}_mbps=${best[heads${n}_$p]}"
            echo "heads${n}_${p}_per_head_mbps_min=${lo[heads${n}_$p]}"
            echo "heads${n}_${p}_per_head_mbps_max=${hi[heads${n}_$p]}"
        done
        for n in 2 4; do
            nf_ratio "${p}_heads${n}_vs_heads1" "${best[heads${n}_$p]}" "${best[heads1_$p]}"
        done
    done
    # How far each figure is from what any trapped access costs here.
    echo "trap_floor_single_mbps=${best[single_floor]}"
    for n in 1 2 4; do
        echo "trap_floor_heads${n}_mbps=${best[heads${n}_floor]}"
    done
    for n in 2 4; do
        nf_ratio "trap_floor_heads${n}_vs_heads1" "${best[heads${n}_floor]}" "${best[heads1_floor]}"
    done
    # Against the floor measured in the same round (best round), and how
    # much of the machine's own scaling the device keeps: 1 when N heads
    # are as far from the floor as one is.
    for p in gbinary gternary; do
        for n in 1 2 4; do
            echo "${p}_heads${n}_vs_trap_floor=$(awk -v a="${best[pair_heads${n}_$p]}" 'BEGIN{printf "%.3f", a}')"
        done
        for n in 2 4; do
            nf_ratio "${p}_heads${n}_scaling_vs_floor" "${best[pair_heads${n}_$p]}" "${best[pair_heads1_$p]}"
        done
    done
    echo "gbinary_write_vs_trap_floor=$(awk -v a="${best[pair_heads1_gbinary]}" 'BEGIN{printf "%.3f", a}')"
    echo "single_gbinary_write_vs_trap_floor=$(awk -v a="${best[pair_single_gbinary]}" 'BEGIN{printf "%.3f", a}')"
    nf_ratio shared_vs_single_head "${best[heads1_gbinary]}" "${best[single_gbinary]}"
    nf_ratio shared_vs_single_head_gternary "${best[heads1_gternary]}" "${best[single_gternary]}"
    for ((h = 0; h < 2; h++)); do
        echo "head${h}_plain_write_mbps=${best[own_$h]}"
        echo "head${h}_ram_write_mbps=${best[ram_$h]}"
    done
    # The slower head's ratio: every head at RAM speed.
    awk -v a="${best[own_vs_ram_0]}" -v b="${best[own_vs_ram_1]}" \
        'BEGIN{printf "shared_plain_write_vs_ram=%.3f\n", a < b ? a : b}'
    for n in 1 2 4; do
        local writes=$((n * mib * 1024 * 1024 * 2 / 8))
        echo "lock_waits_heads$n=${waits[$n]:-0}"
        echo "lock_sleeps_heads$n=${sleeps[$n]:-0}"
        awk -v w="${waits[$n]:-0}" -v t="$writes" -v k="lock_contended_pct_heads$n" \
            'BEGIN{printf "%s=%.2f\n", k, 100 * w / t}'
    done
}
