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

# ---- in scripts/nfmachine: clean (isolation.py), the host check (hostcheck.py)

# `scripts/nfabric clean [--build] [--all]` (its --help).
nf_clean_main() {
    local rc=0
    NF_BUILD_BASE=$NF_BUILD_BASE NF_CACHE=$NF_CACHE NF_APT_LIST=$NF_APT_LIST \
        NF_APT_STAMP=$NF_APT_STAMP NF_SETUP_PACKAGES="$(nf_setup_packages | tr '\n' ' ')" \
        nf_machine clean "$@" || rc=$?
    return "$rc"
}

# nf_host_snapshot FILE: the machine's state as the host check compares it
# (device nodes, /dev/shm and /tmp, this checkout's processes, mounts,
# network namespaces, apt sources).
nf_host_snapshot() {
    nf_machine host-snapshot "$1"
}

# nf_host_check BEFORE: the host check, run after every suite of `test`:
# nothing of this run still runs, and the machine is as BEFORE was.
nf_host_check() {
    local rc=0
    nf_machine host-check "$1" || rc=$?
    return "$rc"
}

# Suite `isolation` (scripts/nfmachine/isolation.py): runs side by side, and
# a run that was killed.  Here the provisioning of its host DDP jobs
# (PyTorch, the host programs), its status handed on.
nf_suite_isolation() {
    local d=$NF_BUILD/test-logs/isolation prepared=0 rc=0
    rm -rf "$d"
    mkdir -p "$d"
    (nf_ddp_prepare) > "$d/ddp-prepare.out" 2>&1 || prepared=$?
    nf_machine isolation-suite "$d" "$prepared" || rc=$?
    return "$rc"
}
