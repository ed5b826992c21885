# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `scripts/nfabric vm`: boot the guest with a NEURON-Fabric (or stock
# cxl-type3) device under QEMU/TCG, console on the terminal.
#
# The guest's init (guest/init/init) creates the CXL RAM region, binds
# /dev/daxX.Y, prints NFABRIC-READY, runs the --run command and prints
# NFABRIC-EXIT=<status>; this side parses the markers and exits with that
# status.  docs/guest.md describes the options.

nf_vm_usage() {
    cat <<'USAGE'
usage: scripts/nfabric vm [OPTIONS]

Boots the guest (build/guest/, built first if missing) under QEMU with the
CXL topology q35 + pxb-cxl + cxl-rp + the device + one fixed memory window.

Options:
  --cpus N            vCPUs (default 2)
  --mem SIZE          guest RAM (default 2G)
  --cxl-mem SIZE      device memory, a multiple of 256M (default 256M)
  --device NAME       cxl-neuron-fabric (default) or cxl-type3 (stock)
  --device-props P    extra properties for the device, "k=v,k=v"
  --rtl MODE          the low-bit datapath through its RTL (hw/rtl, built
                      first): serve, or compare (RTL beside the engine, an
                      access they differ on is dropped and reported); off
  --devices N         N devices, each on its own root port of one host
                      bridge (default 1; the guest's region is on mem0)
  --mem-path FILE     device memory in FILE (memory-backend-file, share=on),
                      e.g. one that other hosts map too (docs/multihost.md)
  --hostfs            share the host's root file system read-only (virtio-9p);
                      the guest mounts it at /host (chroot /host CMD runs the
                      host's programs on the guest's device: docs/pytorch.md)
  --net-listen SOCK   a virtio NIC on a point-to-point link to another VM,
  --net-connect SOCK  over the unix socket SOCK (this VM listens / connects)
  --ip ADDR/LEN       the guest's eth0 address (link-local: 169.254.0.0/16)
  --reboot            a guest reboot or system_reset restarts the guest
                      (default: QEMU exits, -no-reboot)
  --run CMD           run CMD (sh -c) in the guest once the region is ready,
                      then power off; exit with CMD's status
  --timeout S         kill the guest after S seconds (exit 124); default 900
                      with --run, none without
  --append ARGS       extra kernel command-line arguments
  --qemu-arg ARG      extra QEMU argument (repeatable)
  --log FILE          also write the console to FILE (default build/guest/vm.log)
  --quiet             do not copy the console to stdout (markers still parsed)

Without --run the guest starts a shell on the console; leaving it powers
off.  When standard input is not a terminal, it is read as the script to run
(as with --run).
Prints "vm: boot-to-ready X s" (QEMU start to NFABRIC-READY) on stderr.
Exit status: CMD's status; 124 on timeout; 125 if the guest stopped without
reporting one; QEMU's status (with its message) if QEMU refused to start;
2 for bad options.
USAGE
}

# nf_size_mib SIZE: SIZE (K/M/G/T suffix, plain = MiB) in MiB; empty if bad.
nf_size_mib() {
    local s=$1 n unit
    [[ "$s" =~ ^([0-9]+)([KkMmGgTt]?)[Bb]?$ ]] || return 0
    n=${BASH_REMATCH[1]}
    unit=${BASH_REMATCH[2]^^}
    case "$unit" in
    K) if [ $((n % 1024)) -eq 0 ]; then echo $((n / 1024)); fi ;;
    ""|M) echo "$n" ;;
    G) echo $((n * 1024)) ;;
    T) echo $((n * 1024 * 1024)) ;;
    esac
}

# nf_vm_has_device NAME: does the QEMU binary know device NAME?
nf_vm_has_device() {
    "$NF_QEMU_BIN" -nodefaults -device help 2>/dev/null | grep -q "name \"$1\""
}

# nf_vm_filter STATEFILE T0 QUIET LOG: copy the console, note the markers.
nf_vm_filter() {
    local state=$1 t0=$2 quiet=$3 log=$4 line
    : > "$state"
    while IFS= read -r line || [ -n "$line" ]; do
        line=${line%$'\r'}
        [ "$quiet" = 1 ] || printf '%s\n' "$line"
        printf '%s\n' "$line" >> "$log"
        case "$line" in
        *NFABRIC-READY*|*NFABRIC-NOT-READY*)
            printf 'ready_host=%s\n' "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}')" >> "$state"
            printf 'ready_line=%q\n' "$line" >> "$state"
            [[ "$line" == *NFABRIC-NOT-READY* ]] && echo "not_ready=1" >> "$state"
            ;;
        NFABRIC-EXIT=*)
            printf 'exit_status=%s\n' "${line#NFABRIC-EXIT=}" >> "$state" ;;
        esac
    done
    return 0
}

# nf_vm_qemu_args ARRAYNAME: fills the QEMU command line from the nf_vm_*
# variables (shared with libvirt-xml through nf_vm_cxl_args).
nf_vm_cxl_args() {   # DEVICE CXL_MIB FMW_MIB PROPS [MEM_PATH [NDEV]]
    local dev=$1 cxl=$2 fmw=$3 props=$4 mem_path=${5:-} ndev=${6:-1} backend i
    printf '%s\n' -device pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1
    for ((i = 0; i < ndev; i++)); do
        if [ -n "$mem_path" ]; then
            backend="memory-backend-file,id=vmem$i,share=on,mem-path=$mem_path,size=${cxl}M"
        else
            backend="memory-backend-ram,id=vmem$i,share=on,size=${cxl}M"
        fi
        # The first device keeps the names it always had (cxl-vmem0, rp0).
        printf '%s\n' \
            -object "$backend" \
            -device "cxl-rp,port=$i,bus=cxl.1,id=rp$i,chassis=0,slot=$((2 + i))" \
            -device "$dev,bus=rp$i,volatile-memdev=vmem$i,id=cxl-vmem$i${props:+,$props}"
    done
    printf '%s\n' -M "cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=${fmw}M"
}

nf_vm_main() {
    local cpus=2 mem=2G cxlmem=256M device=cxl-neuron-fabric props="" run="" have_run=0
    local timeout="" append="" log="$NF_BUILD/guest/vm.log" quiet=0 extra=()
    local mem_path="" reboot=0 ndev=1 hostfs=0 net_listen="" net_connect="" ipaddr="" rtl=off
    while [ $# -gt 0 ]; do
        case "$1" in
        -h|--help) nf_vm_usage; return 0 ;;
        --cpus|--mem|--cxl-mem|--device|--device-props|--run|--timeout|--append|--qemu-arg|--log|--mem-path|--devices|--net-listen|--net-connect|--ip|--rtl)
            [ $# -ge 2 ] || { echo "nfabric vm: $1 needs a value" >&2; return 2; }
            case "$1" in
            --cpus) cpus=$2 ;;
            --mem) mem=$2 ;;
            --cxl-mem) cxlmem=$2 ;;
            --device) device=$2 ;;
            --device-props) props=$2 ;;
            --run) run=$2; have_run=1 ;;
            --timeout) timeout=$2 ;;
            --append) append=$2 ;;
            --qemu-arg) extra+=("$2") ;;
            --log) log=$2 ;;
            --mem-path) mem_path=$2 ;;
            --devices) ndev=$2 ;;
            --net-listen) net_listen=$2 ;;
            --net-connect) net_connect=$2 ;;
            --ip) ipaddr=$2 ;;
            --rtl) rtl=$2 ;;
            esac
            shift ;;
        --quiet) quiet=1 ;;
        --reboot) reboot=1 ;;
        --hostfs) hostfs=1 ;;
        *) echo "nfabric vm: unknown argument \"$1\"" >&2; nf_vm_usage >&2; return 2 ;;
        esac
        shift
    done
    local mem_mib cxl_mib fmw_mib
    { [[ "$cpus" =~ ^[1-9][0-9]*$ ]] && [ "$cpus" -le 64 ]; } ||
        { echo "nfabric vm: --cpus must be 1..64, not \"$cpus\"" >&2; return 2; }
    mem_mib=$(nf_size_mib "$mem")
    { [ -n "$mem_mib" ] && [ "$mem_mib" -ge 256 ]; } ||
        { echo "nfabric vm: bad --mem \"$mem\" (e.g. 2G, at least 256M)" >&2; return 2; }
    cxl_mib=$(nf_size_mib "$cxlmem")
    { [ -n "$cxl_mib" ] && [ "$cxl_mib" -ge 256 ] && [ $((cxl_mib % 256)) -eq 0 ]; } ||
        { echo "nfabric vm: bad --cxl-mem \"$cxlmem\" (a multiple of 256M: CXL regions are)" >&2; return 2; }
    if [ -n "$ipaddr" ]; then
        [[ "$ipaddr" =~ ^169\.254\.[0-9]{1,3}\.[0-9]{1,3}/16$ ]] ||
            { echo "nfabric vm: --ip must be a link-local address 169.254.X.Y/16, not \"$ipaddr\"" >&2; return 2; }
        [ -n "$net_listen$net_connect" ] ||
            { echo "nfabric vm: --ip needs --net-listen or --net-connect" >&2; return 2; }
    fi
    [ -z "$net_listen" ] || [ -z "$net_connect" ] ||
        { echo "nfabric vm: --net-listen and --net-connect exclude each other" >&2; return 2; }
    [[ "$ndev" =~ ^[1-8]$ ]] ||
        { echo "nfabric vm: --devices must be 1..8, not \"$ndev\"" >&2; return 2; }
    [ "$ndev" = 1 ] || [ -z "$mem_path" ] ||
        { echo "nfabric vm: --mem-path takes one device (a head of a shared one)" >&2; return 2; }
    case "$device" in
    cxl-neuron-fabric|cxl-type3) ;;
    *) echo "nfabric vm: --device must be cxl-neuron-fabric or cxl-type3" >&2; return 2 ;;
    esac
    case "$rtl" in
    off) ;;
    serve|compare)
        [ "$device" = cxl-neuron-fabric ] ||
            { echo "nfabric vm: --rtl needs --device cxl-neuron-fabric" >&2; return 2; }
        local lib
        lib=$(nf_rtl_lib) || nf_die "vm: cannot build the RTL datapath's library (scripts/nfabric rtl-lib)"
        # QEMU's option syntax: a comma in a value is written twice.
        props="rtl=$rtl,rtl-lib=${lib//,/,,}${props:+,$props}" ;;
    *) echo "nfabric vm: --rtl must be off, serve or compare, not \"$rtl\"" >&2; return 2 ;;
    esac
    if [ -n "$timeout" ]; then
        [[ "$timeout" =~ ^[1-9][0-9]*$ ]] || { echo "nfabric vm: bad --timeout \"$timeout\"" >&2; return 2; }
    elif [ "$have_run" = 1 ]; then
        timeout=900
    fi
    if [ "$have_run" = 0 ] && [ ! -t 0 ]; then
        # No terminal: standard input is the script the guest runs.
        run=$(cat)
        have_run=1
        [ -n "$timeout" ] || timeout=900
    fi
    [ -x "$NF_QEMU_BIN" ] || nf_setup_main --quiet
    [ -x "$NF_QEMU_BIN" ] || nf_die "vm: $NF_QEMU_BIN is missing (run scripts/nfabric setup)"
    nf_vm_has_device "$device" ||
        nf_die "vm: $NF_QEMU_BIN has no device $device (run scripts/nfabric setup, or --device cxl-type3)"
    nf_image_ensure
    fmw_mib=$(( cxl_mib * ndev > 4096 ? cxl_mib * ndev : 4096 ))

    local cmdline="console=ttyS0 quiet loglevel=3 panic=-1"
    if [ "$have_run" = 1 ]; then
        local b64
        b64=$(printf '%s' "$run" | base64 -w0)
        [ ${#b64} -le 1800 ] || nf_die "vm: --run command too long for the kernel command line"
        cmdline="$cmdline nfabric.run=$b64"
    fi
    [ "$hostfs" = 1 ] && cmdline="$cmdline nfabric.hostfs=1"
    [ -n "$ipaddr" ] && cmdline="$cmdline nfabric.ip=$ipaddr"
    [ -n "$append" ] && cmdline="$cmdline $append"

    local qemu=()
    [ -n "$timeout" ] && qemu+=(timeout --foreground -k 5 "$timeout")
    # shellcheck disable=SC2054  # the commas are QEMU's option syntax
    qemu+=("$NF_QEMU_BIN" "${NF_FIRMWARE[@]}" -nodefaults -M q35,cxl=on -cpu max,-hypervisor
           -m "${mem_mib}M,maxmem=$((mem_mib + 2048))M,slots=4" -smp "$cpus"
           -serial stdio -display none -nic none
           -kernel "$NF_GUEST_KERNEL" -initrd "$NF_GUEST_INITRD" -append "$cmdline")
    [ "$reboot" = 1 ] || qemu+=(-no-reboot)
    if [ "$hostfs" = 1 ]; then
        qemu+=(-fsdev "local,id=hostfs,path=/,security_model=none,readonly=on"
               -device "virtio-9p-pci,fsdev=hostfs,mount_tag=hostfs")
    fi
    if [ -n "$net_listen$net_connect" ]; then
        # Point to point over a unix socket on this host: nothing leaves it.
        if [ -n "$net_listen" ]; then
            qemu+=(-netdev "stream,id=n0,server=on,addr.type=unix,addr.path=$net_listen")
        else
            qemu+=(-netdev "stream,id=n0,server=off,reconnect-ms=200,addr.type=unix,addr.path=$net_connect")
        fi
        qemu+=(-device "virtio-net-pci,netdev=n0,romfile=")
    fi
    mapfile -t -O "${#qemu[@]}" qemu < <(nf_vm_cxl_args "$device" "$cxl_mib" "$fmw_mib" "$props" "$mem_path" "$ndev")
    qemu+=("${extra[@]}")

    mkdir -p "$(dirname "$log")"
    : > "$log"
    nf_log "vm: $device, ${cpus} vCPUs, ${mem_mib} MiB RAM, ${cxl_mib} MiB CXL memory"
    if [ "$have_run" = 0 ] && [ -t 0 ]; then
        # Interactive: QEMU owns the terminal.
        local rc=0
        "${qemu[@]}" || rc=$?
        return $rc
    fi
    local state t0 qrc=0 exit_rc="" ready_host="" ready_line="" not_ready="" errf
    local attempt pidf hungf wpid hang_s=${NF_VM_BOOT_HANG_S:-120} i own_pidf="" qargs=()
    # The watchdog below needs QEMU's pid: the caller's -pidfile if it gave
    # one (scripts/lib/cluster.sh kills hosts by it), else one of our own.
    for ((i = 0; i + 1 < ${#extra[@]}; i++)); do
        if [ "${extra[i]}" = -pidfile ]; then own_pidf=${extra[i + 1]}; fi
    done
    for attempt in 1 2; do
        state=$(mktemp)
        errf=$(mktemp)
        qargs=("${qemu[@]}")
        if [ -n "$own_pidf" ]; then
            pidf=$own_pidf
            rm -f "$pidf"
        else
            pidf=$(mktemp)
            qargs+=(-pidfile "$pidf")
        fi
        hungf=$state.hung
        qrc=0
        t0=$EPOCHREALTIME
        # A boot that prints nothing at all for hang_s seconds (init prints
        # within seconds, even under load) hung before /init: it has been
        # seen once, in the kernel's PCI scan, with both vCPUs idle.  It is
        # killed, reported, and started once more; a second hang fails.
        # (The sleep in the background, so that the kill below ends it too:
        # a killed subshell leaves its foreground child running.)
        (
            trap 'kill "$sp" 2>/dev/null; exit 0' TERM
            sleep "$hang_s" &
            sp=$!
            wait "$sp"
            if [ ! -s "$log" ] && [ -s "$pidf" ]; then
                touch "$hungf"
                kill "$(cat "$pidf")" 2>/dev/null || true
            fi
        ) &
        wpid=$!
        # QEMU's own messages go to stderr as always, and are kept to report.
        "${qargs[@]}" < /dev/null 2> >(tee "$errf" >&2) |
            nf_vm_filter "$state" "$t0" "$quiet" "$log" || qrc=$?
        kill "$wpid" 2>/dev/null || true
        wait "$wpid" 2>/dev/null || true
        [ -n "$own_pidf" ] || rm -f "$pidf"
        if [ -e "$hungf" ]; then
            mkdir -p "${NF_TEST_LOGS:-$NF_BUILD/test-logs}"
            echo "$(date -u +%FT%TZ) boot hung (nothing on the console in $hang_s s), attempt $attempt: $log" \
                >> "${NF_TEST_LOGS:-$NF_BUILD/test-logs}/boot-hangs.log"
            rm -f "$hungf" "$state" "$errf"
            if [ "$attempt" = 1 ]; then
                echo "vm: BOOT HUNG: the guest printed nothing in $hang_s s; killed it, starting it once more" >&2
                : > "$log"
                continue
            fi
            echo "vm: BOOT HUNG twice: the guest printed nothing in $hang_s s (console: $log)" >&2
            return 124
        fi
        break
    done
    # shellcheck disable=SC1090
    . "$state"
    rm -f "$state"
    exit_rc=${exit_status:-}
    if [ -n "$ready_host" ]; then
        if [ -n "$not_ready" ]; then
            echo "vm: guest setup FAILED after $ready_host s: $ready_line" >&2
        else
            echo "vm: boot-to-ready $ready_host s (${ready_line#*NFABRIC-READY })" >&2
        fi
    fi
    if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
        echo "vm: timed out after $timeout s (console: $log)" >&2
        rm -f "$errf"
        return 124
    fi
    if [ -z "$ready_host" ] && [ "$qrc" != 0 ]; then
        # QEMU refused to start (a bad option or property): say so, with
        # its message, and exit with its status.
        sleep 0.1
        echo "vm: QEMU exited with status $qrc before the guest started: $(grep -v '^$' "$errf" | tail -n 1)" >&2
        rm -f "$errf"
        return "$qrc"
    fi
    rm -f "$errf"
    if [ -z "$exit_rc" ]; then
        [ "$have_run" = 1 ] && echo "vm: the guest stopped without NFABRIC-EXIT (qemu status $qrc; console: $log)" >&2
        [ "$have_run" = 1 ] && return 125
        return $qrc
    fi
    [ "$exit_rc" = 0 ] || echo "vm: guest command exited with status $exit_rc" >&2
    return "$exit_rc"
}
