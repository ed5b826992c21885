# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `scripts/nfabric pools`: P clusters of H VMs, each cluster one shared
# device (a pool), every VM on one network of their own: a hub on unix
# sockets (scripts/lib/nethub.py), nothing else (docs/pools.md).

nf_pools_usage() {
    cat <<'USAGE'
usage: scripts/nfabric pools [--pools P] [--hosts H] [OPTIONS] --run CMD

Boots P pools of H guests: each pool is `scripts/nfabric cluster --hosts H`
(one device shared by its guests' heads), and all P x H guests are on one
network of their own (a hub on unix sockets; guest K = pool*H + host is
169.254.0.(K+1)/16 on eth0). CMD runs in every guest with NFABRIC_POOL,
NFABRIC_POOLS, NFABRIC_RANK (the host in its pool), NFABRIC_HOSTS,
NFABRIC_GLOBAL_RANK and NFABRIC_WORLD set. Ends when every guest has.

  --pools P      pools (default 2); P x H at most 16
  --hosts H      guests per pool (default 2)
  --dir DIR      pool p's cluster in DIR/pool<p>, the hub in DIR/net
                 (default build/pools)
  --hostfs, --cpus N, --mem SIZE, --cxl-mem SIZE, --timeout S,
  --device-props P: as cluster's
USAGE
}

nf_pools_main() {
    local np=2 nh=2 dir="" cmd="" have_run=0 copts=() p rc=0 hub pids=()
    while [ $# -gt 0 ]; do
        case "$1" in
        -h|--help) nf_pools_usage; return 0 ;;
        --pools|--hosts|--dir|--run|--cpus|--mem|--cxl-mem|--timeout|--device-props)
            [ $# -ge 2 ] || { echo "nfabric pools: $1 needs a value" >&2; return 2; }
            case "$1" in
            --pools) np=$2 ;;
            --hosts) nh=$2 ;;
            --dir) dir=$2 ;;
            --run) cmd=$2; have_run=1 ;;
            *) copts+=("$1" "$2") ;;
            esac
            shift ;;
        --hostfs) copts+=(--hostfs) ;;
        *) echo "nfabric pools: unknown argument \"$1\"" >&2; nf_pools_usage >&2; return 2 ;;
        esac
        shift
    done
    [ "$have_run" = 1 ] || { echo "nfabric pools: --run CMD is required" >&2; return 2; }
    if ! [[ "$np" =~ ^[1-9][0-9]*$ ]] || ! [[ "$nh" =~ ^[1-9][0-9]*$ ]] || [ $((np * nh)) -gt 16 ] ||
       [ $((np * nh)) -lt 2 ]; then
        echo "nfabric pools: --pools $np --hosts $nh: 2..16 guests in all" >&2
        return 2
    fi
    dir=${dir:-$NF_BUILD/pools}
    hub=$dir/net
    mkdir -p "$hub"
    /usr/bin/python3 "$NF_ROOT/scripts/lib/nethub.py" "$hub" $((np * nh)) > "$dir/nethub.log" 2>&1 &
    local hubpid=$!
    for p in $(seq 0 $((np - 1))); do
        nf_cluster_main --hosts "$nh" --dir "$dir/pool$p" --net-hub "$hub" \
            --net-first $((p * nh)) "${copts[@]}" \
            --run "export NFABRIC_POOL=$p NFABRIC_POOLS=$np NFABRIC_WORLD=$((np * nh)); export NFABRIC_GLOBAL_RANK=\$((NFABRIC_POOL * NFABRIC_HOSTS + NFABRIC_RANK)); $cmd" \
            > "$dir/pool$p.out" 2>&1 &
        pids+=($!)
    done
    for p in "${!pids[@]}"; do
        if ! wait "${pids[$p]}"; then
            rc=1
            echo "nfabric pools: pool $p failed: $(tail -3 "$dir/pool$p.out" | tr '\n' ' ')" >&2
        fi
    done
    kill "$hubpid" 2>/dev/null || true
    wait "$hubpid" 2>/dev/null || true
    for p in $(seq 0 $((np - 1))); do
        echo "pool $p: $dir/pool$p (consoles host<R>.log, $(cat "$dir"/pool"$p"/host*.rc 2>/dev/null | tr '\n' ' '))"
    done
    return $rc
}
