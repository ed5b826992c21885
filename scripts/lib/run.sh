# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A run of scripts/nfabric on the machine it shares (docs/host.md).
#
# Every command but `qemu` and `--help` is a run.  A run names what it makes
# outside the checkout after the checkout (NF_CHECKOUT_ID, common.sh) and
# after itself (NF_RUN_ID: its shell's pid and start time), so that two
# checkouts, or two runs of one checkout, never share a name:
#   NF_RUN_SHM  /dev/shm/nfabric-CHECKOUT-run-RUN   shared memory, state files
#   NF_RUN_TMP  $TMPDIR/nfabric-CHECKOUT-run-RUN    temporary files (TMPDIR)
# Each holds an `owner` file (pid and start time of the run's shell).  Every
# process the run starts carries NF_RUN_ID and NF_RUN_CHECKOUT in its
# environment.  When the run ends, however it ends short of SIGKILL, it
# stops the processes that still carry its NF_RUN_ID and removes both
# directories; a run that could not (SIGKILL, a crash of the machine) is
# found by the next run of the same checkout: its owner no longer runs, and
# its processes and directories are removed then.  A nested scripts/nfabric
# of the same checkout belongs to the run that started it.

NF_HOST_PY=$NF_ROOT/scripts/nfmachine/nfhost.py
# Where runs' temporary directories go: TMPDIR as the first run found it (a
# run points TMPDIR at its own directory; a run it starts keeps the base).
NF_TMP_BASE=${NF_TMP_BASE:-${TMPDIR:-/tmp}}

# nf_proc_start PID: the process's start time (clock ticks after boot), or
# nothing if it does not run.
nf_proc_start() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    stat=${stat##*) }
    # Fields after the command name: state is field 3, starttime field 22.
    read -r -a f <<<"$stat"
    echo "${f[19]}"
}

# nf_run_alive DIR: true if the run that owns DIR still runs (or is making
# DIR: no owner file yet, and DIR less than a minute old).
nf_run_alive() {
    local pid start
    if [ ! -s "$1/owner" ]; then
        [ -n "$(find "$1" -maxdepth 0 -mmin -1 2>/dev/null)" ]
        return
    fi
    read -r pid start < "$1/owner" 2>/dev/null || return 1
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [ -n "$start" ] && [ "$(nf_proc_start "$pid")" = "$start" ]
}

# nf_run_procs ID [--kill]: the processes whose environment holds
# NF_RUN_ID=ID (not this shell nor its ancestors), one "pid comm" a line;
# with --kill they are stopped (SIGTERM, then SIGKILL after 3 s).
nf_run_procs() {
    /usr/bin/python3 "$NF_HOST_PY" procs --env "NF_RUN_ID=$1" "${@:2}"
}

# nf_run_reap_stale: remove what runs of this checkout left that ended
# without cleaning up (their owner no longer runs): their processes, their
# shared memory and temporary directories.
nf_run_reap_stale() {
    local d id procs
    for d in /dev/shm/nfabric-"$NF_CHECKOUT_ID"-run-* "$NF_TMP_BASE"/nfabric-"$NF_CHECKOUT_ID"-run-*; do
        [ -d "$d" ] || continue
        nf_run_alive "$d" && continue
        id=${d##*-run-}
        procs=$(nf_run_procs "$id" --kill | tr '\n' ' ')
        rm -rf "$d"
        nf_log "removed what an earlier run of this checkout left when it ended without cleaning up: $d${procs:+; stopped its processes: $procs}"
    done
}

# nf_run_begin: start a run (or join the run of the scripts/nfabric that
# started this one, if it is of the same checkout and still runs).
nf_run_begin() {
    if [ -n "${NF_RUN_ID:-}" ] && [ "${NF_RUN_CHECKOUT:-}" = "$NF_CHECKOUT_ID" ] &&
       [ -d "${NF_RUN_SHM:-/nonexistent}" ] && nf_run_alive "$NF_RUN_SHM"; then
        return 0
    fi
    NF_RUN_ID=$$.$(nf_proc_start $$)
    NF_RUN_CHECKOUT=$NF_CHECKOUT_ID
    NF_RUN_SHM=/dev/shm/nfabric-$NF_CHECKOUT_ID-run-$NF_RUN_ID
    [ -d /dev/shm ] && [ -w /dev/shm ] || NF_RUN_SHM=$NF_BUILD/shm-run-$NF_RUN_ID
    NF_RUN_TMP=$NF_TMP_BASE/nfabric-$NF_CHECKOUT_ID-run-$NF_RUN_ID
    NF_RUN_OWNER=$$
    export NF_RUN_ID NF_RUN_CHECKOUT NF_RUN_SHM NF_RUN_TMP NF_TMP_BASE
    nf_run_reap_stale
    mkdir -p "$NF_RUN_SHM" "$NF_RUN_TMP"
    echo "$$ $(nf_proc_start $$)" > "$NF_RUN_SHM/owner"
    cp "$NF_RUN_SHM/owner" "$NF_RUN_TMP/owner"
    export TMPDIR=$NF_RUN_TMP
    trap nf_run_end EXIT
    trap 'exit 129' HUP
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# nf_run_end: at the run's exit: stop what it left running, remove its
# directories.  Keeps the exit status.
nf_run_end() {
    local rc=$? procs
    [ "${NF_RUN_OWNER:-}" = "$BASHPID" ] || return "$rc"
    trap - EXIT HUP INT TERM
    # No pipe: a reader of it would carry NF_RUN_ID and be stopped too.
    procs=$(nf_run_procs "$NF_RUN_ID" --kill) || true
    [ -z "$procs" ] || nf_log "stopped the processes this run left running: ${procs//$'\n'/ }"
    rm -rf "$NF_RUN_SHM" "$NF_RUN_TMP"
    return "$rc"
}

# nf_free_port: a TCP port on the loopback address that no one listens on
# now (the kernel's choice), for a process group's rendezvous.
nf_free_port() {
    /usr/bin/python3 "$NF_HOST_PY" free-port
}

# ---- scripts/nfabric clean --------------------------------------------------

nf_clean_usage() {
    cat <<'USAGE'
usage: scripts/nfabric clean [--build] [--all]

Removes what this checkout made outside itself and left behind: processes of
its runs that still run, its shared memory and state files in /dev/shm
(clusters kept with --keep among them), its temporary directories.
  --build   also the build directory (build/, or where it links to)
  --all     also the build directory, the download cache (NF_CACHE) and the
            apt entries the set-up added; prints the packages it installed
            (left installed: other programs may use them)
USAGE
}

nf_clean_main() {
    local build=0 all=0 d n=0 procs
    while [ $# -gt 0 ]; do
        case "$1" in
        -h|--help) nf_clean_usage; return 0 ;;
        --build) build=1 ;;
        --all) build=1; all=1 ;;
        *) echo "nfabric clean: unknown argument \"$1\"" >&2; nf_clean_usage >&2; return 2 ;;
        esac
        shift
    done
    procs=$(/usr/bin/python3 "$NF_HOST_PY" procs --env "NF_RUN_CHECKOUT=$NF_CHECKOUT_ID" \
            --not-env "NF_RUN_ID=$NF_RUN_ID" --kill | tr '\n' ' ')
    [ -z "$procs" ] || echo "clean: stopped processes of this checkout: $procs"
    for d in /dev/shm/nfabric-"$NF_CHECKOUT_ID"-* "$NF_TMP_BASE"/nfabric-"$NF_CHECKOUT_ID"-*; do
        [ -e "$d" ] || continue
        case $d in "$NF_RUN_SHM"|"$NF_RUN_TMP") continue ;; esac
        rm -rf "$d"
        echo "clean: removed $d"
        n=$((n + 1))
    done
    if [ "$build" = 1 ]; then
        d=$(readlink -f "$NF_BUILD_BASE" 2>/dev/null || echo "$NF_BUILD_BASE")
        if [ -e "$d" ]; then
            rm -rf "$d"
            echo "clean: removed the build directory $d"
        fi
        [ ! -L "$NF_ROOT/build" ] || rm -f "$NF_ROOT/build"
    fi
    if [ "$all" = 1 ]; then
        if [ -d "$NF_CACHE" ]; then
            rm -rf "$NF_CACHE"
            echo "clean: removed the download cache $NF_CACHE"
        fi
        for d in "$NF_APT_LIST" /etc/apt/preferences.d/nfabric "$NF_APT_STAMP"; do
            [ -e "$d" ] || continue
            rm -f "$d"
            echo "clean: removed $d"
        done
        echo "clean: the packages the set-up installs are left installed; to remove them: apt-get remove $(nf_setup_packages | tr '\n' ' ')"
    fi
    echo "clean: done ($n leftovers of earlier runs removed)"
}

# ---- the host check of `scripts/nfabric test` -------------------------------

# nf_host_snapshot FILE: the machine's state as the host check compares it
# (scripts/nfmachine/nfhost.py snapshot: device nodes, /dev/shm and /tmp, this
# checkout's processes, mounts, network namespaces, apt sources).
nf_host_snapshot() {
    /usr/bin/python3 "$NF_HOST_PY" snapshot --checkout "$NF_CHECKOUT_ID" \
        --run "$NF_RUN_ID" --tmp "$NF_TMP_BASE" > "$1"
}

# nf_suite_host BEFORE: the host check, run after every suite of `test`:
# nothing of this run still runs, and the machine is as BEFORE was.
nf_host_check() {
    local before=$1 after procs line
    after=$NF_RUN_TMP/host-after
    procs=$(nf_run_procs "$NF_RUN_ID")
    if [ -z "$procs" ]; then
        nf_tap 0 "no process of this run is left running"
    else
        while read -r line; do
            nf_tap 1 "a process of this run is left running: $line"
        done <<<"$procs"
        nf_run_procs "$NF_RUN_ID" --kill > /dev/null
    fi
    # What the suites kept in the run's own directories until its end
    # (clusters' memory files, state files) goes now, as at any run's end.
    find "$NF_RUN_SHM" "$NF_RUN_TMP" -mindepth 1 -maxdepth 1 ! -name owner ! -name 'host-*' \
        -exec rm -rf {} + 2>/dev/null || true
    nf_host_snapshot "$after"
    /usr/bin/python3 "$NF_HOST_PY" compare "$before" "$after"
}

# ---- suite `isolation`: runs side by side, and a run that was killed -------


# nf_iso_leftovers CHECKOUT-ID: what runs of that checkout left (processes,
# /dev/shm and temporary entries); nothing if none.
nf_iso_leftovers() {
    local d
    /usr/bin/python3 "$NF_HOST_PY" procs --env "NF_RUN_CHECKOUT=$1" --not-env "NF_RUN_ID=$NF_RUN_ID"
    for d in /dev/shm/nfabric-"$1"-* "$NF_TMP_BASE"/nfabric-"$1"-*; do
        [ -e "$d" ] && echo "$d"
    done
    return 0
}

nf_suite_isolation() {
    local d=$NF_RUN_TMP/isolation copy second ck2 out st a b sa sb left
    d=$NF_BUILD/test-logs/isolation
    rm -rf "$d"
    mkdir -p "$d"
    # A second checkout: a copy of this one with a build directory of its
    # own whose QEMU (build and source), guest image and host programs are
    # this one's (links).
    copy=$NF_RUN_TMP/second-checkout
    second=$NF_RUN_TMP/second-build
    nf_checkout_copy "$copy"
    mkdir -p "$second"
    ln -s "$NF_QEMU_BUILD" "$second/qemu-build"
    ln -s "$NF_QEMU_SRC" "$second/qemu-src"      # its python/qemu: scripts/nfmachine
    ln -s "$NF_BUILD/guest" "$second/guest"
    ln -s "$NF_HOST_BUILD" "$second/host"
    ck2=$(printf '%s' "$copy" | md5sum | cut -c1-12)

    # 0. The demo, a run of its own, leaves nothing behind.
    env -u NF_RUN_ID "$NF_ROOT/scripts/nfabric" demo > "$d/demo.out" 2>&1
    st=$?
    left=$(nf_iso_leftovers "$NF_CHECKOUT_ID" | grep -v "run-$NF_RUN_ID" | tr '\n' ' ')
    nf_tap "$([ "$st" = 0 ] && [ -z "$left" ] && [ "$(stat -c %a /dev/null)" = 666 ] && echo 0 || echo 1)" \
        "scripts/nfabric demo ($(grep '^demo:' "$d/demo.out")) leaves no process, nothing in /dev/shm or $NF_TMP_BASE${left:+ (left: $left)}, /dev/null mode $(stat -c %a /dev/null)"

    # 1. Two checkouts, one cluster each, at the same time, both with the
    # default --dir: each device's files are its own run's.
    local cmd='nfabric-multihost agg'
    (cd "$copy" && env -u NF_RUN_ID NF_BUILD="$second" scripts/nfabric cluster --hosts 2 --run "$cmd" \
        > "$d/second-cluster.out" 2>&1; echo $? > "$d/second-cluster.rc") &
    a=$!
    (env -u NF_RUN_ID "$NF_ROOT/scripts/nfabric" cluster --hosts 2 --run "$cmd" \
        > "$d/first-cluster.out" 2>&1; echo $? > "$d/first-cluster.rc") &
    b=$!
    # While both run: each checkout's device in a run directory of its own.
    local t seen=""
    for ((t = 0; t < 600; t++)); do
        sa=$(find /dev/shm -maxdepth 3 -path "/dev/shm/nfabric-$NF_CHECKOUT_ID-run-*/cluster-*/state" 2>/dev/null | grep -v "run-$NF_RUN_ID/" | head -n 1)
        sb=$(find /dev/shm -maxdepth 3 -path "/dev/shm/nfabric-$ck2-run-*/cluster-*/state" 2>/dev/null | head -n 1)
        if [ -n "$sa" ] && [ -n "$sb" ]; then seen="$sa and $sb"; break; fi
        kill -0 "$a" 2>/dev/null || kill -0 "$b" 2>/dev/null || break
        sleep 0.5
    done
    nf_tap "$([ -n "$seen" ] && echo 0 || echo 1)" \
        "two checkouts' clusters at once: each device's state in its own run's directory (${seen:-not both seen})"
    wait "$a" "$b" || true
    for out in first second; do
        st=$(cat "$d/$out-cluster.rc" 2>/dev/null || echo none)
        nf_tap "$([ "$st" = 0 ] && echo 0 || echo 1)" \
            "the $out checkout's 2-host cluster ($cmd) passed while the other ran (status $st)"
        [ "$st" = 0 ] || tail -n 8 "$d/$out-cluster.out" | nf_comment
    done
    for ck in "$NF_CHECKOUT_ID" "$ck2"; do
        left=$(nf_iso_leftovers "$ck" | grep -v "run-$NF_RUN_ID" | tr '\n' ' ')
        nf_tap "$([ -z "$left" ] && echo 0 || echo 1)" \
            "checkout $ck's cluster run left no process and nothing in /dev/shm or $NF_TMP_BASE${left:+: $left}"
    done

    # 2. Two test runs of this checkout at once, different suites.
    (env -u NF_RUN_ID NF_TEST_LOGDIR="$d/unit" "$NF_ROOT/scripts/nfabric" test unit > "$d/test-unit.out" 2>&1
     echo $? > "$d/test-unit.rc") &
    a=$!
    (env -u NF_RUN_ID NF_TEST_LOGDIR="$d/pybind" "$NF_ROOT/scripts/nfabric" test pybind > "$d/test-pybind.out" 2>&1
     echo $? > "$d/test-pybind.rc") &
    b=$!
    wait "$a" "$b" || true
    for out in unit pybind; do
        st=$(cat "$d/test-$out.rc" 2>/dev/null || echo none)
        nf_tap "$([ "$st" = 0 ] && grep -q '^host: .* 0 failed' "$d/test-$out.out" && echo 0 || echo 1)" \
            "scripts/nfabric test $out beside another test run: $(tail -n 1 "$d/test-$out.out"), its host check passed (status $st)"
        [ "$st" = 0 ] || grep -E '^ +\[|failed' "$d/test-$out.out" | head -n 10 | nf_comment
    done

    # 3. Two host DDP jobs at once with the defaults (device files, port).
    if declare -F nf_ddp_prepare > /dev/null && nf_ddp_prepare > "$d/ddp-prepare.out" 2>&1; then
        for out in 1 2; do
            (env -u NF_RUN_SHM PYTHONPATH="$NF_ROOT/guest/python" NFABRIC_LIB="$NF_HOST_BUILD/guest/libnfabric.so" \
                /usr/bin/python3 -m nfabric.examples.train --spawn 2 --mode gbinary --steps 4 \
                --train-samples 1000 --test-samples 100 > "$d/ddp$out.json" 2> "$d/ddp$out.err"
             echo $? > "$d/ddp$out.rc") &
        done
        wait
        for out in 1 2; do
            st=$(cat "$d/ddp$out.rc" 2>/dev/null || echo none)
            nf_tap "$([ "$st" = 0 ] && [ "$(grep -c '"params_identical": true' "$d/ddp$out.json")" = 2 ] && echo 0 || echo 1)" \
                "host DDP job $out of 2 at once (train --spawn 2, default device files and port): both ranks end equal (status $st)"
            [ "$st" = 0 ] || tail -n 5 "$d/ddp$out.err" | nf_comment
        done
        left=$(find /dev/shm -maxdepth 1 -name 'nfabric-ddp-*' | tr '\n' ' ')
        nf_tap "$([ -z "$left" ] && echo 0 || echo 1)" "the two DDP jobs removed their device files${left:+: $left}"
    else
        nf_tap 1 "PyTorch for the DDP jobs ($(tail -n 2 "$d/ddp-prepare.out" | tr '\n' ' '))"
    fi

    # 4. A run killed (SIGKILL, no cleanup): the next run of the checkout
    # finds what it left and removes it.
    (exec env -u NF_RUN_ID "$NF_ROOT/scripts/nfabric" cluster --hosts 1 --dir "$d/killed" \
        --run 'echo NFABRIC-MARK; sleep 600' --timeout 700 > "$d/killed.out" 2>&1) &
    a=$!
    local qpid="" runid=""
    for ((t = 0; t < 600; t++)); do
        grep -q NFABRIC-MARK "$d/killed/host0.log" 2>/dev/null && break
        kill -0 "$a" 2>/dev/null || break
        sleep 0.5
    done
    qpid=$(cat "$d/killed/host0.pid" 2>/dev/null || true)
    runid=$(tr '\0' '\n' < "/proc/$qpid/environ" 2>/dev/null | sed -n 's/^NF_RUN_ID=//p')
    kill -KILL "$a" 2>/dev/null || true
    wait "$a" 2>/dev/null || true
    nf_tap "$([ -n "$runid" ] && kill -0 "$qpid" 2>/dev/null && [ -d "/dev/shm/nfabric-$NF_CHECKOUT_ID-run-$runid" ] && echo 0 || echo 1)" \
        "a run killed with SIGKILL leaves its guest's QEMU (pid ${qpid:-none}) and its run directory behind"
    out=$(env -u NF_RUN_ID "$NF_ROOT/scripts/nfabric" test --list 2>&1)
    echo "$out" | grep 'removed what' | nf_comment
    sleep 0.5
    nf_tap "$([ -n "$runid" ] && ! kill -0 "$qpid" 2>/dev/null && [ ! -e "/dev/shm/nfabric-$NF_CHECKOUT_ID-run-$runid" ] &&
              [ ! -e "$NF_TMP_BASE/nfabric-$NF_CHECKOUT_ID-run-$runid" ] && grep -q "removed what an earlier run" <<<"$out" && echo 0 || echo 1)" \
        "the next run of the checkout stopped that QEMU and removed the killed run's directories, and said so"
    rm -rf "$copy" "$second"
    return "$NF_TAP_FAILED"
}
