# SPDX-License-Identifier: GPL-2.0-or-later
# `scripts/nfabric cluster`: several hosts (one QEMU each) with one shared
# NEURON-Fabric device: each host's device is a head of the same device
# (shared-state=FILE, head=R, heads=N) over the same device memory file.
# Also the `multihost` test suite and `bench cluster`.  docs/multihost.md.

nf_cluster_usage() {
    cat <<'USAGE'
usage: scripts/nfabric cluster --hosts N --run CMD [OPTIONS]

Boots N guests (hosts), each with its own head of one shared
cxl-neuron-fabric device, runs CMD in every guest with NFABRIC_RANK (its
head, 0..N-1) and NFABRIC_HOSTS (N) in the environment, and exits non-zero
if any guest failed; each host's result is reported by rank.

Options:
  --hosts N           number of hosts (1..16)
  --run CMD           the command every host runs (sh -c)
  --cpus N            vCPUs per host (default 1)
  --mem SIZE          guest RAM per host (default 1G)
  --cxl-mem SIZE      shared device memory (default 256M)
  --timeout S         kill a host after S seconds (default 600)
  --dir DIR           state file, memory file, consoles host<R>.log and
                      QMP sockets qmp<R>.sock (default build/cluster)
  --stagger S         start host r after r*S seconds (default 0)
  --device-props P    extra device properties for every head
USAGE
}

# nf_cluster_prepare DIR CXL_MIB: a fresh state file and memory file.
nf_cluster_prepare() {
    local dir=$1 cxl=$2
    mkdir -p "$dir"
    rm -f "$dir"/host*.log "$dir"/host*.rc "$dir"/host*.pid "$dir"/qmp*.sock
    rm -f "$dir/state" "$dir/mem"
    # The memory file on tmpfs when the directory is not: shared RAM speed.
    truncate -s "${cxl}M" "$dir/mem" || nf_die "cluster: cannot create $dir/mem"
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
            --device-props "shared-state=$dir/state,head=$r,heads=$n${NF_CLUSTER_PROPS:+,$NF_CLUSTER_PROPS}" \
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

# nf_qmp SOCKET COMMAND-JSON: one QMP command; prints the reply.
nf_qmp() {
    python3 - "$1" "$2" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(30)
s.connect(sys.argv[1])
f = s.makefile("rw")
json.loads(f.readline())                      # greeting
f.write(json.dumps({"execute": "qmp_capabilities"}) + "\n"); f.flush()
json.loads(f.readline())
f.write(sys.argv[2] + "\n"); f.flush()
while True:
    r = json.loads(f.readline())
    if "return" in r or "error" in r:
        print(json.dumps(r))
        sys.exit(0 if "return" in r else 1)
PY
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
    local n="" cmd="" have_run=0 cpus=1 mem=1G cxlmem=256M timeout=600
    local dir=$NF_BUILD/cluster stagger=0 props=""
    while [ $# -gt 0 ]; do
        case "$1" in
        -h|--help) nf_cluster_usage; return 0 ;;
        --hosts|--run|--cpus|--mem|--cxl-mem|--timeout|--dir|--stagger|--device-props)
            [ $# -ge 2 ] || { echo "nfabric cluster: $1 needs a value" >&2; return 2; }
            case "$1" in
            --hosts) n=$2 ;;
            --run) cmd=$2; have_run=1 ;;
            --cpus) cpus=$2 ;;
            --mem) mem=$2 ;;
            --cxl-mem) cxlmem=$2 ;;
            --timeout) timeout=$2 ;;
            --dir) dir=$2 ;;
            --stagger) stagger=$2 ;;
            --device-props) props=$2 ;;
            esac
            shift ;;
        *) echo "nfabric cluster: unknown argument \"$1\"" >&2; nf_cluster_usage >&2; return 2 ;;
        esac
        shift
    done
    [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 16 ] ||
        { echo "nfabric cluster: --hosts must be 1..16, not \"$n\"" >&2; return 2; }
    [ "$have_run" = 1 ] || { echo "nfabric cluster: --run CMD is required" >&2; return 2; }
    [[ "$timeout" =~ ^[1-9][0-9]*$ ]] || { echo "nfabric cluster: bad --timeout \"$timeout\"" >&2; return 2; }
    [[ "$stagger" =~ ^[0-9]+$ ]] || { echo "nfabric cluster: bad --stagger \"$stagger\"" >&2; return 2; }
    local cxl_mib
    cxl_mib=$(nf_size_mib "$cxlmem")
    [ -n "$cxl_mib" ] && [ "$cxl_mib" -ge 256 ] && [ $((cxl_mib % 256)) -eq 0 ] ||
        { echo "nfabric cluster: bad --cxl-mem \"$cxlmem\" (a multiple of 256M)" >&2; return 2; }
    [ -x "$NF_QEMU_BIN" ] || nf_setup_main --quiet
    nf_image_ensure
    nf_cluster_prepare "$dir" "$cxl_mib"
    nf_log "cluster: $n hosts, one shared device (${cxl_mib} MiB, state $dir/state)"
    local r t0=$EPOCHREALTIME
    for ((r = 0; r < n; r++)); do
        NF_CLUSTER_PROPS=$props nf_cluster_boot "$dir" "$r" "$n" "$cmd" "$cxl_mib" \
            --cpus "$cpus" --mem "$mem" --timeout "$timeout"
        [ "$stagger" -gt 0 ] && sleep "$stagger"
    done
    for ((r = 0; r < n; r++)); do
        nf_cluster_wait "$dir" "$r" $((timeout + 60)) > /dev/null
    done
    wait
    printf 'cluster: %d hosts finished in %.1f s\n' "$n" \
        "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{print b-a}')"
    nf_cluster_report "$dir" "$n"
}
