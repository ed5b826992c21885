# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The `lifecycle` suite: a guest's life with the device beyond one boot
# (issue 13), with a real booted Debian guest under TCG, not qtest:
#
#  1. live migration: a 1 GiB guest (guest RAM larger than the 256 MiB of
#     device memory; NF_LIFECYCLE_MEM and NF_LIFECYCLE_CXL_MEM change them)
#     keeps a G-Binary round and an FP32 writer running
#     (nfabric-lifecycle-check migrate) while the host migrates it over a
#     unix socket to a second QEMU started with -incoming and -S.  The host
#     bridge has a second, empty root port, so that it is not in passthrough
#     and CXL.mem goes through its HDM decoder.  With both sides stopped the
#     host compares every read-only figure of the device (qom-get stats-*,
#     timing-*), `info pci` (root port bus numbers and windows, the device's
#     BARs), the host bridge's and root port's CXL.cache/mem registers and
#     device memory (both sides use a memory-backend-file, compared with
#     cmp); then the destination runs on, the host writes the stop word
#     into its device memory, and the guest checks registers, counts,
#     statistics, counters, read-back and every FP32 byte against what it
#     did, and runs nfabricctl.
#  2. warm reset: one guest boots three times in one QEMU run (no
#     -no-reboot): a guest `reboot -f`, then a QMP system_reset; each boot
#     must bring up the region, dax and windows again
#     (nfabric-lifecycle-check boot).
#  3. the same two things on stock cxl-type3, with other sizes (2 GiB guest,
#     1 GiB device): a system_reset, then a migration that must complete
#     (QEMU's own code paths: patches 0005 and 0006 of qemu-patches/).
#
# Reproduce one by hand with the commands in docs/reliability.md.


NF_LC_DEVICE_ID="cxl-vmem0"
# The QEMU pid file of each guest the suite started, by its vm's pid.
declare -A NF_LC_PIDFILE=()
# Sizes of the migration test (1): guest RAM must exceed device memory to
# reach the bug of patch 0005; device memory a multiple of 256M.
NF_LC_MEM=${NF_LIFECYCLE_MEM:-1G}
NF_LC_CXL_MEM=${NF_LIFECYCLE_CXL_MEM:-256M}
# A second, empty root port on the host bridge: with two root ports the
# bridge is no longer in passthrough, Linux programs its HDM decoder and
# CXL.mem goes through it, so the migration also needs the bridge's
# registers (patch 0008).
# shellcheck disable=SC2054  # the commas are QEMU's option syntax
NF_LC_RP1=(--qemu-arg -device --qemu-arg cxl-rp,port=1,bus=cxl.1,id=rp1,chassis=0,slot=3)
# The device's read-only figures (hw/mem/nfabric/cxl_nfabric.c).
NF_LC_FIGURES=(timing-total-ps timing-exposed-ppm timing-runtime-ps
               timing-queued-ps timing-link-busy-ps)
for _p in fp32 gbinary gternary; do
    NF_LC_FIGURES+=("timing-$_p-ps" "timing-$_p-exposed-ps" "timing-$_p-accesses"
                    "stats-$_p-reads" "stats-$_p-writes" "stats-$_p-read-bytes"
                    "stats-$_p-write-bytes")
done
unset _p

# nf_lc_figures SOCKET: "name=value" for every read-only figure of the device.
nf_lc_figures() {
    local f v
    for f in "${NF_LC_FIGURES[@]}"; do
        v=$(nf_qmp "$1" qom-get "{\"path\": \"/machine/peripheral/$NF_LC_DEVICE_ID\", \"property\": \"$f\"}") ||
            return 1
        printf '%s=%s\n' "$f" "$v"
    done
}

# nf_lc_wait_for FILE REGEX COUNT SECONDS [PID]: wait until FILE has COUNT
# lines matching REGEX; 1 on timeout or when PID died first.
nf_lc_wait_for() {
    local file=$1 re=$2 count=$3 secs=$4 pid=${5:-} n i
    for ((i = 0; i < secs * 5; i++)); do
        n=$(tr -d '\r' < "$file" 2>/dev/null | grep -cE "$re" || true)
        [ "$n" -ge "$count" ] && return 0
        if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
            n=$(tr -d '\r' < "$file" 2>/dev/null | grep -cE "$re" || true)
            [ "$n" -ge "$count" ] && return 0
            return 1
        fi
        sleep 0.2
    done
    return 1
}

# nf_lc_stop PID: stop the QEMU of the guest whose `vm` runs as PID (by
# QEMU's pid file: `vm` then reports and exits), and wait for PID.
nf_lc_stop() {
    local pidf=${NF_LC_PIDFILE[$1]:-}
    if [ -n "$pidf" ] && [ -s "$pidf" ]; then
        pkill -F "$pidf" 2>/dev/null || true
    fi
    wait "$1" 2>/dev/null || true
}

# nf_lc_wait_exit PID SECONDS: wait for a guest we started; QEMU's exit
# status (124 if it had to be stopped).
nf_lc_wait_exit() {
    local pid=$1 secs=$2 i rc=0
    for ((i = 0; i < secs * 5; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
        nf_lc_stop "$pid"
        return 124
    fi
    wait "$pid" 2>/dev/null || rc=$?
    return $rc
}

# nf_lc_start VAR NAME DEVICE MEM CXL-MEM MEM-FILE CMD [vm options...]:
# boot a guest in the background through `vm` (scripts/nfmachine: the
# machine every guest boots on), 1 vCPU, exiting with QEMU's status;
# console in $NF_LC_DIR/NAME.log, QMP on NAME.qmp, QEMU's pid in NAME.pid,
# vm's and QEMU's messages in NAME.err; the device memory in MEM-FILE
# (shared, to compare) or RAM if empty.  The vm's pid goes to VAR.
nf_lc_start() {
    local var=$1 name=$2 dev=$3 mem=$4 cxl=$5 file=$6 cmd=$7 i d=$NF_LC_DIR
    local opts=()
    shift 7
    [ -z "$file" ] || opts=(--mem-path "$file")
    rm -f "$d/$name.log" "$d/$name.qmp" "$d/$name.pid"
    nf_vm_main --quiet --qemu-status --timeout 600 --cpus 1 --mem "$mem" \
        --cxl-mem "$cxl" --device "$dev" "${opts[@]}" --log "$d/$name.log" \
        --qemu-arg -qmp --qemu-arg "unix:$d/$name.qmp,server=on,wait=off" \
        --qemu-arg -pidfile --qemu-arg "$d/$name.pid" \
        --run "$cmd" "$@" > "$d/$name.err" 2>&1 < /dev/null &
    printf -v "$var" '%s' "$!"
    NF_LC_PIDS+=("$!")
    NF_LC_PIDFILE[$!]=$d/$name.pid
    for ((i = 0; i < 150; i++)); do
        [ -S "$d/$name.qmp" ] && return 0
        kill -0 "$!" 2>/dev/null || break
        sleep 0.1
    done
    echo "# $name: no QMP socket after 15 s: $(tail -3 "$d/$name.err")"
    return 1
}

# The guest's "LC ok/not ok" lines (nfabric-lifecycle-check) as TAP.
nf_lc_guest_tap() {   # CONSOLE PREFIX
    local line
    while IFS= read -r line; do
        case "$line" in
        "LC ok - "*) nf_tap 0 "$2${line#LC ok - }" ;;
        "LC not ok - "*) nf_tap 1 "$2${line#LC not ok - }" ;;
        esac
    done < <(tr -d '\r' < "$1")
}

# Stop the QEMUs of a test that are still running (a test that failed
# early), so that never more than two run at once.
nf_lc_reap() {
    local p
    for p in "${NF_LC_PIDS[@]}"; do
        if kill -0 "$p" 2>/dev/null; then
            echo "# stopping the guest (vm pid $p) left by a failed test"
            nf_lc_stop "$p"
        fi
    done
    NF_LC_PIDS=()
}

nf_lc_cleanup() {
    nf_lc_reap > /dev/null
    rm -f "${NF_LC_SHM[@]}"
}

# ---- 1. live migration mid-round ------------------------------------------
nf_lc_migration() {
    local src dst s_mem d_mem status info rc st i
    local src_fig dst_fig src_pci dst_pci src_gbw guest_gbw src_regs dst_regs r
    # Device memory in files: tmpfs when there is one (fast to compare).
    local shm=$NF_RUN_SHM
    [ -d "$shm" ] && [ -w "$shm" ] || shm=$NF_LC_DIR
    s_mem=$shm/nfabric-lc-$$-src
    d_mem=$shm/nfabric-lc-$$-dst
    NF_LC_SHM+=("$s_mem" "$d_mem")
    rm -f "$s_mem" "$d_mem"
    echo "# 1. live migration: guest RAM $NF_LC_MEM, device memory $NF_LC_CXL_MEM, G-Binary round + FP32 writer running"
    # shellcheck disable=SC2016  # the command runs in the guest: its $rc
    nf_lc_start src mig-src cxl-neuron-fabric "$NF_LC_MEM" "$NF_LC_CXL_MEM" "$s_mem" \
        'nfabric-lifecycle-check migrate; rc=$?; nfabricctl info && nfabricctl windows || rc=1; exit $rc' \
        "${NF_LC_RP1[@]}" || { nf_tap 1 "source QEMU started"; return; }
    if ! nf_lc_wait_for "$NF_LC_DIR/mig-src.log" '^LC-MIGRATE-READY' 1 120 "$src"; then
        nf_tap 1 "source guest runs the round (LC-MIGRATE-READY)"
        tail -20 "$NF_LC_DIR/mig-src.log" | sed 's/^/# /'
        return
    fi
    rm -f "$NF_LC_DIR/mig.sock"
    nf_lc_start dst mig-dst cxl-neuron-fabric "$NF_LC_MEM" "$NF_LC_CXL_MEM" "$d_mem" \
        'echo the destination never boots this' \
        "${NF_LC_RP1[@]}" --qemu-arg -S --qemu-arg -incoming --qemu-arg "unix:$NF_LC_DIR/mig.sock" ||
        { nf_tap 1 "destination QEMU started"; return; }
    # QEMU listens for the incoming migration only once the machine is
    # made, well after its QMP socket appears (seconds on a busy machine).
    for ((i = 0; i < 300; i++)); do
        [ -S "$NF_LC_DIR/mig.sock" ] && break
        kill -0 "$dst" 2>/dev/null || break
        sleep 0.1
    done
    [ -S "$NF_LC_DIR/mig.sock" ] ||
        { nf_tap 1 "destination QEMU listens on $NF_LC_DIR/mig.sock (30 s)"; return; }
    rc=0
    nf_qmp "$NF_LC_DIR/mig-src.qmp" migrate "{\"uri\": \"unix:$NF_LC_DIR/mig.sock\"}" > /dev/null || rc=1
    status=""
    for ((i = 0; i < 600 && rc == 0; i++)); do
        info=$(nf_qmp "$NF_LC_DIR/mig-src.qmp" query-migrate 2>/dev/null) || break
        status=$(python3 -c 'import json,sys; print(json.load(sys.stdin).get("status",""))' <<<"$info")
        case "$status" in completed|failed|cancelled) break ;; esac
        sleep 0.2
    done
    echo "# source query-migrate: $(cut -c1-400 <<<"$info")"
    [ "$status" = completed ] && rc=0 || rc=1
    nf_tap $rc "migration completed while the guest wrote (status ${status:-none}, source QEMU alive: no physmem assertion)"
    if [ $rc != 0 ]; then
        sed 's/^/# src: /' "$NF_LC_DIR/mig-src.err" | tail -5
        return
    fi
    st=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["ram"]["dirty-sync-count"])' <<<"$info")
    nf_tap "$([ "$st" -ge 2 ] && echo 0 || echo 1)" "precopy iterated while the guest ran (dirty-sync-count $st)"

    # Both sides stopped: the device's state must be the same.
    src_fig=$(nf_lc_figures "$NF_LC_DIR/mig-src.qmp") || src_fig="(qom-get failed)"
    dst_fig=$(nf_lc_figures "$NF_LC_DIR/mig-dst.qmp") || dst_fig="(qom-get failed)"
    src_gbw=$(sed -n 's/^stats-gbinary-writes=//p' <<<"$src_fig")
    echo "# source at switchover: $(grep -E 'stats-(fp32|gbinary)-writes' <<<"$src_fig" | tr '\n' ' ')"
    [ "$src_fig" = "$dst_fig" ] && [ "${src_gbw:-0}" -gt 0 ]
    nf_tap $? "every statistic and timing figure (${#NF_LC_FIGURES[@]}) equal on source and destination"
    [ "$src_fig" = "$dst_fig" ] || diff <(echo "$src_fig") <(echo "$dst_fig") | sed 's/^/# /'
    src_pci=$(nf_machine hmp "$NF_LC_DIR/mig-src.qmp" "info pci")
    dst_pci=$(nf_machine hmp "$NF_LC_DIR/mig-dst.qmp" "info pci")
    [ -n "$src_pci" ] && [ "$src_pci" = "$dst_pci" ] && grep -q 'secondary bus 13' <<<"$dst_pci"
    nf_tap $? "PCI state equal on the destination: cxl-rp bus numbers and windows, device BARs (info pci)"
    [ "$src_pci" = "$dst_pci" ] || diff <(echo "$src_pci") <(echo "$dst_pci") | head -20 | sed 's/^/# /'
    for r in pxb-cxl-host cxl-rp; do
        src_regs=$(nf_machine cm-regs "$NF_LC_DIR/mig-src.qmp" "$r") || src_regs=""
        dst_regs=$(nf_machine cm-regs "$NF_LC_DIR/mig-dst.qmp" "$r") || dst_regs=""
        [ -n "$src_regs" ] && [ "$src_regs" = "$dst_regs" ]
        nf_tap $? "$r: CXL.cache/mem registers (HDM decoders) equal on the destination"
        [ "$src_regs" = "$dst_regs" ] || diff <(echo "$src_regs") <(echo "$dst_regs") | head -10 | sed 's/^/# /'
    done
    cmp -s "$s_mem" "$d_mem"
    nf_tap $? "device memory byte-identical on source and destination ($NF_LC_CXL_MEM, cmp)"

    nf_qmp "$NF_LC_DIR/mig-src.qmp" quit > /dev/null 2>&1
    nf_lc_wait_exit "$src" 30
    rc=$?
    nf_tap $rc "source QEMU exited normally after the migration (status $rc)"

    # The destination runs on: the round continues there; then stop it.
    nf_qmp "$NF_LC_DIR/mig-dst.qmp" cont > /dev/null
    sleep 3
    printf 'LCSTOP!!' | dd of="$d_mem" bs=1 seek=$((0x0fff0000)) conv=notrunc status=none
    if ! nf_lc_wait_for "$NF_LC_DIR/mig-dst.log" '^NFABRIC-EXIT=' 1 180 "$dst"; then
        nf_tap 1 "the guest finished on the destination"
        tail -20 "$NF_LC_DIR/mig-dst.log" | sed 's/^/# /'
        return
    fi
    nf_lc_guest_tap "$NF_LC_DIR/mig-dst.log" "destination guest: "
    guest_gbw=$(tr -d '\r' < "$NF_LC_DIR/mig-dst.log" | sed -n 's/^LC iterations=.* gbinary-writes=//p')
    echo "# $(tr -d '\r' < "$NF_LC_DIR/mig-dst.log" | grep '^LC iterations=')"
    [ -n "$guest_gbw" ] && [ -n "$src_gbw" ] && [ "$guest_gbw" -gt "$src_gbw" ]
    nf_tap $? "the G-Binary round went on after the switchover (${src_gbw:-?} writes on the source, ${guest_gbw:-?} in all)"
    tr -d '\r' < "$NF_LC_DIR/mig-dst.log" | grep -q '^magic: \|^pci: ' &&
        tr -d '\r' < "$NF_LC_DIR/mig-dst.log" | grep -q '^NFABRIC-EXIT=0$'
    nf_tap $? "nfabricctl info/windows through the register block on the destination; guest exit 0"
    nf_lc_wait_exit "$dst" 30
    nf_tap $? "destination QEMU exited normally"
}

# ---- 2. two warm resets in one run ----------------------------------------
nf_lc_reboots() {
    local vm n
    echo "# 2. warm reset: guest reboot -f, then QMP system_reset, in one QEMU run"
    # shellcheck disable=SC2016  # the command runs in the guest: its $rc
    nf_lc_start vm reboot cxl-neuron-fabric 1G 256M "" \
        'nfabric-lifecycle-check boot; rc=$?; case $rc in 10) echo LC-REBOOTING; reboot -f; sleep 60 ;; 11) echo LC-RESET-ME; sleep 300 ;; esac; exit $rc' \
        --reboot ||
        { nf_tap 1 "QEMU started"; return; }
    if nf_lc_wait_for "$NF_LC_DIR/reboot.log" '^LC-RESET-ME' 1 180 "$vm"; then
        nf_qmp "$NF_LC_DIR/reboot.qmp" system_reset > /dev/null
        nf_tap $? "QMP system_reset sent on the second boot"
    else
        nf_tap 1 "the guest rebooted itself and asked for system_reset (LC-RESET-ME)"
    fi
    nf_lc_wait_for "$NF_LC_DIR/reboot.log" '^NFABRIC-EXIT=' 1 180 "$vm"
    nf_lc_guest_tap "$NF_LC_DIR/reboot.log" "guest: "
    n=$(tr -d '\r' < "$NF_LC_DIR/reboot.log" | grep -c '^NFABRIC-READY' || true)
    [ "$n" = 3 ] && ! tr -d '\r' < "$NF_LC_DIR/reboot.log" | grep -q 'NFABRIC-NOT-READY'
    nf_tap $? "region and dax came up on all 3 boots ($n NFABRIC-READY, no NOT-READY)"
    tr -d '\r' < "$NF_LC_DIR/reboot.log" | grep -E 'NFABRIC-(NOT-)?READY|^LC-BOOT|Range register' | sed 's/^/# /'
    tr -d '\r' < "$NF_LC_DIR/reboot.log" | grep -q '^NFABRIC-EXIT=0$'
    nf_tap $? "third boot finished its checks (exit 0)"
    nf_lc_wait_exit "$vm" 30
    nf_tap $? "QEMU exited normally"
}

# ---- 3. stock cxl-type3: the same QEMU code paths --------------------------
nf_lc_stock() {
    local vm info status i
    echo "# 3. stock cxl-type3: system_reset, then migration of a 2 GiB guest with 1 GiB of device memory"
    nf_lc_start vm stock cxl-type3 2G 1G "" 'sleep 300' --reboot ||
        { nf_tap 1 "QEMU started"; return; }
    nf_lc_wait_for "$NF_LC_DIR/stock.log" '^NFABRIC-READY' 1 120 "$vm" &&
        nf_qmp "$NF_LC_DIR/stock.qmp" system_reset > /dev/null &&
        nf_lc_wait_for "$NF_LC_DIR/stock.log" '^NFABRIC-(NOT-)?READY' 2 120 "$vm" &&
        [ "$(tr -d '\r' < "$NF_LC_DIR/stock.log" | grep -c '^NFABRIC-READY')" = 2 ]
    nf_tap $? "stock cxl-type3: region and dax again after system_reset"
    nf_qmp "$NF_LC_DIR/stock.qmp" migrate '{"uri": "exec:cat > /dev/null"}' > /dev/null
    status=""
    for ((i = 0; i < 600; i++)); do
        info=$(nf_qmp "$NF_LC_DIR/stock.qmp" query-migrate 2>/dev/null) || break
        status=$(python3 -c 'import json,sys; print(json.load(sys.stdin).get("status",""))' <<<"$info")
        case "$status" in completed|failed|cancelled) break ;; esac
        sleep 0.2
    done
    [ "$status" = completed ]
    nf_tap $? "stock cxl-type3: migration of a 2 GiB guest completed (status ${status:-none})"
    [ "$status" = completed ] || sed 's/^/# /' "$NF_LC_DIR/stock.err" | tail -5
    nf_qmp "$NF_LC_DIR/stock.qmp" quit > /dev/null 2>&1
    nf_lc_wait_exit "$vm" 30
    nf_tap $? "stock cxl-type3: QEMU exited normally"
}

nf_suite_lifecycle() {
    (
        NF_LC_DIR=$NF_BUILD/lifecycle
        NF_LC_PIDS=()
        NF_LC_PIDFILE=()
        NF_LC_SHM=()
        rm -rf "$NF_LC_DIR"
        mkdir -p "$NF_LC_DIR"
        trap nf_lc_cleanup EXIT
        nf_image_main >&2
        nf_lc_migration
        nf_lc_reap
        nf_lc_reboots
        nf_lc_reap
        nf_lc_stock
        nf_lc_reap
        echo "1..$NF_TAP_N"
        echo "# consoles and QEMU output: $NF_LC_DIR"
        [ "$NF_TAP_FAILED" = 0 ]
    )
}
