# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# PyTorch: the `ddp` suite and `bench ddp` (docs/pytorch.md).  Debian's
# python3-torch (1.13.1, gloo) and python3-numpy run the hooks of
# guest/python/nfabric; on the host each DDP rank is a head of one shared
# device served by the device's controller (libnfabric.so, no VM).

NF_PY=/usr/bin/python3      # Debian's: a python3 earlier on PATH cannot see its torch
NF_PKGS_DDP=(python3-torch python3-torchvision python3-numpy dataset-fashion-mnist)

# nf_ddp_py ARGS...: python3 with the project's package on the path.
nf_ddp_py() {
    PYTHONPATH=$NF_ROOT/guest/python NFABRIC_LIB=$NF_HOST_BUILD/guest/libnfabric.so \
        "$NF_PY" "$@"
}

nf_ddp_prepare() {
    nf_need "${NF_PKGS_DDP[@]}"
    nf_host_build
}

# nf_ddp_check_json FILE MODE: the pieces a run of MODE must show: the
# server-side EF state the same on every rank; the sensitivity admission's
# set within its budget (planned traffic <= budget) and not empty.
nf_ddp_check_json() {
    local f=$1 mode=$2
    nf_ddp_py - "$f" "$mode" <<'PY'
import json, sys
path, mode = sys.argv[1:3]
rows = [json.loads(l) for l in open(path) if l.startswith("{")]
r0 = [r for r in rows if r["rank"] == 0][0]
ok = True
if "server" in mode or "both" in mode:
    same = all(r.get("ef_state_identical") for r in rows)
    print("%s - %s: server-side EF state identical on every rank" % ("ok" if same else "not ok", mode))
    ok &= same
if mode.startswith("layer_aware") and "last_linear" not in mode:
    within = r0.get("planned_pct") is not None and r0["planned_pct"] <= r0["budget_pct"] + 1e-9
    kept = r0.get("fp32_layers") or []
    sizes = {a["layer"]: a["params"] for a in r0.get("admission", [])}
    total = sum(sizes.values())
    # The planned share recomputed from the layers it kept.
    again = 100.0 * (total / 32 + sum(sizes[k] for k in kept) * 31 / 32) / total if total else -1
    good = within and kept and abs(again - r0["planned_pct"]) < 1e-3
    print("%s - %s: the admission kept %s on FP32, %.2f %% of FP32 planned within the %.1f %% budget"
          % ("ok" if good else "not ok", mode, ",".join(kept), r0.get("planned_pct", -1),
             r0.get("budget_pct", -1)))
    ok &= bool(good)
if "last_linear" in mode:
    good = r0.get("fp32_layers") == ["head"]
    print("%s - %s: the fixed rule keeps the head on FP32 (%s)" % ("ok" if good else "not ok",
          mode, r0.get("fp32_layers")))
    ok &= good
sys.exit(0 if ok else 1)
PY
}

# nf_ddp_vm_script FILE CMD...: a script the guests run with the host's
# Python (chroot /host: the host's root file system over virtio-9p), with
# the same float kernels as the host (--portable-math's environment).
nf_ddp_vm_script() {
    local f=$1
    shift
    {
        echo "#!/bin/sh"
        printf 'export PYTHONPATH=%q NFABRIC_LIB=%q\n' "$NF_ROOT/guest/python" "$NF_HOST_BUILD/guest/libnfabric.so"
        echo "export GLOO_SOCKET_IFNAME=eth0 ATEN_CPU_CAPABILITY=default OPENBLAS_CORETYPE=Prescott DNNL_MAX_CPU_ISA=SSE41"
        printf '%s\n' "$@"
    } > "$f"
}

# nf_ddp_vm_run DIR SCRIPT: 2 guests, one shared device, the host's file
# system, a link between them; each runs SCRIPT (in DIR) under chroot /host.
nf_ddp_vm_run() {
    local dir=$1 script=$2
    nf_cluster_main --hosts 2 --hostfs --net --cpus 1 --mem 2G --cxl-mem 512M \
        --timeout 900 --dir "$dir" --run "chroot /host /bin/sh $(printf %q "$script")"
}

nf_suite_pools() {
    local rc=0
    nf_ddp_prepare
    (cd "$NF_RUN_TMP" && nf_ddp_py -m nfabric.poolcheck) || rc=1
    echo "# in VMs: 2 pools x 2 guests, each pool one shared device, one network of their own"
    nf_pools_vm_check || rc=1
    return $rc
}

# nf_pools_vm_check: 2 pools of 2 VMs (scripts/nfabric pools) train 3
# G-Binary steps with DDP over their own network; every guest ends with the
# parameters of the same job on host heads (2 pools x 2), and of one
# device with 4 heads, bit for bit (--portable-math).
nf_pools_vm_check() {
    local d=$NF_BUILD/test-logs/pools-vm rc=0 hp fp vp n
    local args=(--portable-math --mode gbinary --steps 3 --train-samples 2000 --test-samples 200)
    rm -rf "$d"
    mkdir -p "$d"
    # shellcheck disable=SC2016  # the guest's shell expands these
    nf_ddp_vm_script "$d/run.sh" \
        "/usr/bin/python3 -m nfabric.examples.train ${args[*]} --pools 2 --exchange counts --rank \$NFABRIC_GLOBAL_RANK --world \$NFABRIC_WORLD --master-addr 169.254.0.1 --master-port 29517 --timeout-s 600"
    # The direct map on (the default): the guests read their counter areas
    # through its traps (docs/pools.md: the bug this found).
    if nf_pools_main --pools 2 --hosts 2 --hostfs --cpus 1 --mem 2G --cxl-mem 512M \
            ${NF_POOLS_VM_PROPS:+--device-props "$NF_POOLS_VM_PROPS"} \
            --timeout 1200 --dir "$d" --run "chroot /host /bin/sh $(printf %q "$d/run.sh")" \
            > "$d/pools.out" 2>&1; then
        echo "ok - scripts/nfabric pools: 2 pools x 2 VMs (direct map on: counter areas read through its traps) ran DDP (gloo over their own network, a hub on unix sockets) through 2 devices"
    else
        echo "not ok - scripts/nfabric pools, 2 x 2 VMs: $(tail -4 "$d/pools.out" | tr '\n' ' ')"
        rc=1
    fi
    vp=$(cat "$d"/pool*/host*.log 2>/dev/null | grep -o '"params": "[0-9a-f]*"' | sort -u)
    n=$(cat "$d"/pool*/host*.log 2>/dev/null | grep -c '"params_identical": true' || true)
    (cd "$NF_RUN_TMP" && nf_ddp_py -m nfabric.examples.train --spawn 4 --pools 2 "${args[@]}" \
         --master-port "$(nf_free_port)" > "$d/host-pools.json" 2> "$d/host-pools.err") || true
    (cd "$NF_RUN_TMP" && nf_ddp_py -m nfabric.examples.train --spawn 4 "${args[@]}" \
         --master-port "$(nf_free_port)" > "$d/host-flat.json" 2> "$d/host-flat.err") || true
    hp=$(grep -o '"params": "[0-9a-f]*"' "$d/host-pools.json" | sort -u)
    fp=$(grep -o '"params": "[0-9a-f]*"' "$d/host-flat.json" | sort -u)
    if [ "$n" = 4 ] && [ "$(wc -l <<<"$vp")" = 1 ] && [ -n "$hp" ] && [ "$vp" = "$hp" ] &&
       [ "$hp" = "$fp" ]; then
        echo "ok - the 4 guests end with the same parameters, equal bit for bit to the job on host heads (2 pools x 2) and to one device with 4 heads ($hp)"
    else
        echo "not ok - 2 x 2 VMs: guests ${vp//$'\n'/ } ($n identical), host pools ${hp:-none}, one device ${fp:-none}"
        rc=1
    fi
    grep -h '"net_bytes_per_step"' "$d"/pool0/host0.log 2>/dev/null | grep -o '"net_bytes_per_step": {[^}]*}' | sed 's/^/# VM rank 0 /' || true
    return $rc
}

nf_suite_ddp() {
    local d=$NF_BUILD/test-logs/ddp rc=0 out
    nf_ddp_prepare
    mkdir -p "$d"
    echo "# the hooks' aggregation against a reference of all ranks' gradients"
    nf_ddp_py -m nfabric.selftest --ranks 3 --dir "$NF_RUN_SHM/selftest" || rc=1
    echo "# DDP (gloo on loopback for the process group) through the device"
    local mode opts name port
    for mode in "gbinary" "gternary --error-feedback worker" "gbinary --error-feedback server" \
                "layer_aware --warmup 3 --error-feedback both" "layer_aware --admission last_linear" "fp32" \
                "layer_aware --task pairs --budget-pct 20"; do
        name=${mode// /_}
        port=$(nf_free_port)
        read -ra opts <<<"$mode"
        (cd "$d" && nf_ddp_py -m nfabric.examples.train --spawn 2 --mode "${opts[@]}" \
             --steps 12 --train-samples 4000 --test-samples 500 --master-port "$port" \
             --state "$NF_RUN_SHM/ddp-test.state" --mem "$NF_RUN_SHM/ddp-test.mem" \
             > "$d/$name.json" 2> "$d/$name.err") || true
        out=$(grep '"rank": 0' "$d/$name.json" || true)
        if [ "$(grep -c '"params_identical": true' "$d/$name.json")" = 2 ] &&
           grep -q '"loss_last": [0-9]' <<<"$out"; then
            echo "ok - DDP $mode, 2 ranks, 12 steps: every rank ends with the same parameters ($(grep -o '"traffic_pct": [0-9.]*' <<<"$out"), $(grep -o '"acc": [0-9.]*' <<<"$out"))"
            nf_ddp_check_json "$d/$name.json" "$mode" || rc=1
        else
            echo "not ok - DDP $mode, 2 ranks: $(tail -3 "$d/$name.err" | tr '\n' ' ') $(tr '\n' ' ' < "$d/$name.json")"
            rc=1
        fi
    done
    echo "# the paper's architectures: a step through the device, 2 ranks (host heads)"
    local arch
    for arch in "resnet18 --classes 10 --mode layer_aware --steps 2 --probe 1 --budget-pct 5" \
                "resnet18 --classes 100 --mode gternary --steps 1" \
                "distilbert --classes 2 --mode gbinary --steps 1 --batch 2 --seq 16"; do
        name=arch-${arch%% *}-$(grep -o 'classes [0-9]*' <<<"$arch" | tr -d ' ')
        port=$(nf_free_port)
        read -ra opts <<<"$arch"
        (cd "$d" && nice -n 10 env PYTHONPATH="$NF_ROOT/guest/python" \
             NFABRIC_LIB="$NF_HOST_BUILD/guest/libnfabric.so" "$NF_PY" -m nfabric.examples.archs \
             --spawn 2 --arch "${opts[@]}" --master-port "$port" \
             --state "$NF_RUN_SHM/ddp-arch.state" --mem "$NF_RUN_SHM/ddp-arch.mem" \
             > "$d/$name.json" 2> "$d/$name.err") || true
        if [ "$(grep -c '"params_identical": true' "$d/$name.json")" = 2 ] &&
           grep -q '"traffic_pct_all": [0-9]' "$d/$name.json"; then
            echo "ok - $arch: identical parameters on both ranks ($(grep -o '"params_total": [0-9]*' "$d/$name.json" | head -1), $(grep -o '"traffic_pct_all": [0-9.]*' "$d/$name.json"))"
            if [[ $arch == *layer_aware* ]]; then
                if grep -q '"head_fp32": true' "$d/$name.json"; then
                    echo "ok - $arch: the sensitivity admission keeps the classifier head on FP32 ($(grep -o '"planned_pct": [0-9.]*' "$d/$name.json") within 5 %)"
                else
                    echo "not ok - $arch: the admission left the classifier head low-bit: $(grep -o '"fp32_layers": [^]]*]' "$d/$name.json")"
                    rc=1
                fi
            fi
        else
            echo "not ok - $arch: $(tail -3 "$d/$name.err" | tr '\n' ' ') $(tr '\n' ' ' < "$d/$name.json")"
            rc=1
        fi
    done
    echo "# in VMs: 2 guests, one shared device, the host's Python and PyTorch (virtio-9p)"
    local vm=$d/vm host=$d/host-portable.json
    local args=(--portable-math --mode gbinary --steps 3 --train-samples 2000 --test-samples 200)
    local rn=(--arch resnet18 --classes 10 --mode gbinary --steps 2 --portable-math --master-port 29660)
    mkdir -p "$vm"
    # shellcheck disable=SC2016  # these lines run in the guest: its $start, not ours
    nf_ddp_vm_script "$vm/run.sh" \
        'start=$(cut -d" " -f1 /proc/uptime)' \
        '/usr/bin/python3 -c "import torch" && echo "# import-torch-seconds $(awk -v a=$start "{print \$1 - a}" /proc/uptime)"' \
        "/usr/bin/python3 -m nfabric.selftest --guest --rank \$NFABRIC_RANK --ranks 2 || exit 1" \
        "/usr/bin/python3 -m nfabric.examples.train ${args[*]} --master-addr 169.254.0.1 || exit 1" \
        "/usr/bin/python3 -m nfabric.examples.archs --guest ${rn[*]} --master-addr 169.254.0.1 | sed 's/^/# archs /'"
    if nf_ddp_vm_run "$vm" "$vm/run.sh" > "$vm/cluster.out" 2>&1; then
        echo "ok - 2 VMs ran the self-test and a DDP run through the shared device"
    else
        echo "not ok - 2 VMs: $(tail -3 "$vm/cluster.out" | tr '\n' ' ')"
        rc=1
    fi
    grep -hE '^(ok|not ok)' "$vm"/host*.log | sed 's/^\(not \)\{0,1\}ok [0-9]* - /&[VM] /' || true
    grep -h 'import-torch-seconds' "$vm"/host*.log | sed 's/^# /# VM /' || true
    (cd "$d" && nf_ddp_py -m nfabric.examples.train --spawn 2 "${args[@]}" --master-port "$(nf_free_port)" \
         --state "$NF_RUN_SHM/ddp-test.state" --mem "$NF_RUN_SHM/ddp-test.mem" \
         > "$host" 2> "$d/host-portable.err") || true
    local hp vp
    hp=$(grep -ho '"params": "[0-9a-f]*"' "$host" | sort -u)
    vp=$(grep -hv '^# archs' "$vm"/host*.log | grep -o '"params": "[0-9a-f]*"' | sort -u)
    if [ -n "$hp" ] && [ "$hp" = "$vp" ] && [ "$(wc -l <<<"$hp")" = 1 ]; then
        echo "ok - a 2-VM DDP run (3 steps, G-Binary) ends with the same parameters as the host run with the same seed, bit for bit ($hp)"
    else
        echo "not ok - 2-VM DDP vs host: VMs ${vp//$'\n'/ }, host ${hp//$'\n'/ }"
        rc=1
    fi
    # ResNet-18 in the same 2 VMs: both ranks end equal, and equal to the
    # same run of 2 host heads, bit for bit.
    (cd "$d" && nf_ddp_py -m nfabric.examples.archs --spawn 2 "${rn[@]}" --master-port "$(nf_free_port)" \
         --state "$NF_RUN_SHM/ddp-test.state" --mem "$NF_RUN_SHM/ddp-test.mem" \
         > "$d/host-resnet18.json" 2> "$d/host-resnet18.err") || true
    hp=$(grep -ho '"params": "[0-9a-f]*"' "$d/host-resnet18.json" | sort -u)
    vp=$(grep -h '^# archs' "$vm"/host*.log | grep -o '"params": "[0-9a-f]*"' | sort -u)
    if [ -n "$hp" ] && [ "$hp" = "$vp" ] && [ "$(wc -l <<<"$hp")" = 1 ] &&
       [ "$(grep -h '^# archs' "$vm"/host*.log | grep -c '"params_identical": true')" = 2 ]; then
        echo "ok - ResNet-18 (11 181 642 parameters) in 2 VMs, 2 G-Binary steps through the shared device: both guests end with the parameters of the same run on 2 host heads, bit for bit ($hp, $(grep -h '^# archs' "$vm"/host*.log | grep -o '"traffic_pct": [0-9.]*'))"
    else
        echo "not ok - ResNet-18 in 2 VMs vs host: VMs ${vp//$'\n'/ }, host ${hp//$'\n'/ } ($(tail -2 "$d/host-resnet18.err" | tr '\n' ' '))"
        rc=1
    fi
    rm -f "$NF_RUN_SHM/ddp-test.state" "$NF_RUN_SHM/ddp-test.mem"
    rm -rf "$NF_RUN_SHM/selftest"
    return $rc
}

nf_bench_ddp() {
    local steps=400 d=$NF_BUILD/bench-ddp mode shards key json opts vm_steps=20
    local parts=host,hard,archs,vm part
    while [ $# -gt 0 ]; do
        case "$1" in
        --steps) steps=${2:?}; shift ;;
        --vm-steps) vm_steps=${2:?}; shift ;;  # 0: no VMs; --steps 0: VMs only
        --parts) parts=${2:?}; shift ;;
        -h|--help) echo "usage: scripts/nfabric bench ddp [--steps N] [--vm-steps N] [--parts LIST]"
                   echo "LIST: a comma-separated subset of host,hard,archs,vm (default: all)."
                   echo "host: 4 DDP ranks on the host, each a head of one shared device (no VM):"
                   echo "allreduce (gloo, the baseline), fp32, gbinary, gternary, layer_aware,"
                   echo "the low-bit ones with and without (server-side) error feedback, IID and"
                   echo "non-IID shards;"
                   echo "hard: the hard configuration (bench hard: acc_MODE_hard=, recovered_pct_hard=);"
                   echo "archs: the paper's architectures (bench archs: traffic_pct_layer_aware_ARCH=);"
                   echo "vm: 2 VMs (--vm-steps, default 20): gloo allreduce over the VMs' link"
                   echo "against G-Binary through the device: exchange_speedup_vs_gloo=."
                   return 0 ;;
        *) echo "bench ddp: unknown option \"$1\"" >&2; return 2 ;;
        esac
        shift
    done
    { [[ "$steps" =~ ^[0-9]+$ ]] && [[ "$vm_steps" =~ ^[0-9]+$ ]]; } ||
        { echo "bench ddp: bad --steps or --vm-steps" >&2; return 2; }
    for part in ${parts//,/ }; do
        case "$part" in
        host|hard|archs|vm) ;;
        *) echo "bench ddp: unknown part \"$part\" in --parts (host, hard, archs, vm)" >&2
           return 2 ;;
        esac
    done
    nf_ddp_prepare
    mkdir -p "$d"
    if [ "$steps" -gt 0 ] && [[ ",$parts," == *,host,* ]]; then
        nf_bench_ddp_host "$d" "$steps"
    fi
    if [[ ",$parts," == *,hard,* ]]; then
        nf_bench_hard --seeds 3
    fi
    if [[ ",$parts," == *,archs,* ]]; then
        nf_bench_archs --steps 3
    fi
    if [[ ",$parts," == *,vm,* ]]; then
        nf_bench_ddp_vm "$d" "$vm_steps"
    fi
}

# nf_bench_ddp_host DIR STEPS: every mode on Fashion-MNIST, 4 host
# ranks, IID and non-IID, and the accuracy/traffic plot.
nf_bench_ddp_host() {
    local d=$1 steps=$2 port mode shards key json opts
    : > "$d/results.tsv"
    echo "steps=$steps"
    echo "ranks=4"
    for shards in iid noniid; do
        # Error feedback: the server-side form (the one that helps; the
        # forms side by side over seeds: bench ef).
        for mode in allreduce fp32 gbinary "gbinary --error-feedback server" gternary \
                    "gternary --error-feedback server" layer_aware \
                    "layer_aware --error-feedback server"; do
            key=${mode/ --error-feedback server/_ef}
            port=$(nf_free_port)
            json=$d/$key-$shards.json
            read -ra opts <<<"$mode"
            (cd "$d" && nf_ddp_py -m nfabric.examples.train --spawn 4 --mode "${opts[@]}" \
                 --shards "$shards" --steps "$steps" --master-port "$port" \
                 --state "$NF_RUN_SHM/bench-ddp.state" --mem "$NF_RUN_SHM/bench-ddp.mem" \
                 > "$json" 2> "$d/$key-$shards.err") ||
                nf_die "bench ddp: $mode $shards failed ($d/$key-$shards.err)"
            nf_ddp_py - "$json" "$key" "$shards" "$d/results.tsv" <<'PY'
import json, sys
path, key, shards, tsv = sys.argv[1:5]
r0 = [json.loads(l) for l in open(path) if '"rank": 0' in l][0]
print("acc_%s_%s=%.4f" % (key, shards, r0["acc"]))
print("traffic_pct_%s_%s=%.3f" % (key, shards, r0["traffic_pct"]))
print("backward_s_%s_%s=%.3f" % (key, shards, r0["backward_seconds"]))
if shards == "iid":
    print("traffic_pct_%s=%.3f" % (key, r0["traffic_pct"]))
with open(tsv, "a") as f:
    f.write("%s\t%s\t%.4f\t%.3f\n" % (key, shards, r0["acc"], r0["traffic_pct"]))
PY
        done
    done
    rm -f "$NF_RUN_SHM/bench-ddp.state" "$NF_RUN_SHM/bench-ddp.mem"
    nf_ddp_py - "$d/results.tsv" <<'PY'
import sys
rows = [l.split("\t") for l in open(sys.argv[1])]
t = {(k, s): float(b) for k, s, a, b in [(r[0], r[1], r[2], r[3]) for r in rows]}
a = {(k, s): float(r[2]) for r in rows for k, s in [(r[0], r[1])]}
for s in ("iid", "noniid"):
    for k in ("gbinary", "gternary", "layer_aware"):
        print("acc_%s_vs_allreduce_%s=%.3f" % (k, s, a[(k, s)] / a[("allreduce", s)]))
PY
    nf_need gnuplot-nox
    gnuplot <<GP || nf_die "bench ddp: gnuplot failed"
set terminal pngcairo noenhanced size 900,560 font ",11"
set output '$d/ddp-acc-traffic.png'
set title "DDP on Fashion-MNIST, 4 ranks, $steps steps: accuracy vs gradient traffic"
set xlabel "gradient traffic, % of FP32 (log)"
set ylabel "test accuracy"
set logscale x
set xrange [1:300]
set grid
set key bottom right
plot '< grep -P "\\tiid\\t" $d/results.tsv' using 4:3:1 with labels point pt 7 offset 0,1 title 'IID', \
     '< grep -P "\\tnoniid\\t" $d/results.tsv' using 4:3:1 with labels point pt 5 offset 0,-1 title 'non-IID'
GP
    cp "$d/ddp-acc-traffic.png" "$NF_ROOT/docs/img/ddp-acc-traffic.png"
    echo "plot=docs/img/ddp-acc-traffic.png"
}

# nf_bench_ddp_vm DIR STEPS: 2 VMs, the same training, gloo's
# allreduce over the emulated link against G-Binary through the shared
# device, side by side; and each beside the same run on the host.
nf_bench_ddp_vm() {
    local d=$1 vm_steps=$2 port vm=$1/vm m exch json
    [ "$vm_steps" -gt 0 ] || return 0
    declare -A ex
    for m in allreduce gbinary; do
        mkdir -p "$vm/$m"
        nf_ddp_vm_script "$vm/$m/run.sh" \
            "/usr/bin/python3 -m nfabric.examples.train --portable-math --mode $m --steps $vm_steps --train-samples 4000 --test-samples 500 --master-addr 169.254.0.1"
        nf_ddp_vm_run "$vm/$m" "$vm/$m/run.sh" > "$vm/$m/cluster.out" 2>&1 ||
            nf_die "bench ddp: the 2-VM $m run failed ($vm/$m)"
        json=$(grep -h '"rank": 0' "$vm/$m"/host0.log | tr -d '\r')
        exch=$(grep -o '"exchange_seconds": [0-9.]*' <<<"$json" | awk '{print $2}')
        ex[$m]=$exch
        echo "vm_exchange_s_$m=$exch"
        echo "vm_acc_$m=$(grep -o '"acc": [0-9.]*' <<<"$json" | awk '{print $2}')"
        echo "vm_traffic_pct_$m=$(grep -o '"traffic_pct": [0-9.]*' <<<"$json" | awk '{print $2}')"
        # The same run on the host: the same accuracy, traffic, parameters.
        port=$(nf_free_port)
        (cd "$d" && nf_ddp_py -m nfabric.examples.train --spawn 2 --portable-math --mode $m \
             --steps "$vm_steps" --train-samples 4000 --test-samples 500 --master-port "$port" \
             --state "$NF_RUN_SHM/bench-ddp.state" --mem "$NF_RUN_SHM/bench-ddp.mem" \
             > "$vm/$m/host-run.json" 2>/dev/null) || nf_die "bench ddp: host run of $m failed"
        local hj
        hj=$(grep '"rank": 0' "$vm/$m/host-run.json")
        echo "host_acc_$m=$(grep -o '"acc": [0-9.]*' <<<"$hj" | awk '{print $2}')"
        echo "host_traffic_pct_$m=$(grep -o '"traffic_pct": [0-9.]*' <<<"$hj" | awk '{print $2}')"
        echo "vm_params_equal_host_$m=$([ "$(grep -o '"params": "[0-9a-f]*"' <<<"$json")" = \
              "$(grep -o '"params": "[0-9a-f]*"' <<<"$hj")" ] && echo yes || echo no)"
    done
    rm -f "$NF_RUN_SHM/bench-ddp.state" "$NF_RUN_SHM/bench-ddp.mem"
    echo "vm_steps=$vm_steps"
    awk -v a="${ex[allreduce]}" -v b="${ex[gbinary]}" \
        'BEGIN{printf "exchange_speedup_vs_gloo=%.3f\n", (b > 0 ? a / b : 0)}'
}

nf_bench_archs() {
    local steps=3 budget=5.0 d=$NF_BUILD/bench-archs port spec mode arch json opts name
    while [ $# -gt 0 ]; do
        case "$1" in
        --steps) steps=${2:?}; shift ;;
        --budget-pct) budget=${2:?}; shift ;;
        -h|--help) echo "usage: scripts/nfabric bench archs [--steps N] [--budget-pct P]"
                   echo "ResNet-18 (10 and 100 classes) and a DistilBERT-sized encoder, 2 ranks on"
                   echo "host heads of one device, random data, N steps (the first a probe step on"
                   echo "FP32 for the sensitivity admission): traffic_pct_MODE_ARCH= from the pool"
                   echo "statistics, the layers layer_aware keeps on FP32 within P % (default 5)."
                   return 0 ;;
        *) echo "bench archs: unknown option \"$1\"" >&2; return 2 ;;
        esac
        shift
    done
    { [[ "$steps" =~ ^[0-9]+$ ]] && [ "$steps" -ge 2 ] && [[ "$budget" =~ ^[0-9]+(\.[0-9]+)?$ ]]; } ||
        { echo "bench archs: --steps must be an integer >= 2, --budget-pct a number" >&2; return 2; }
    nf_ddp_prepare
    mkdir -p "$d"
    echo "steps=$steps"
    echo "budget_pct=$budget"
    echo "paper_traffic_pct_layer_aware_min=3.6"
    echo "paper_traffic_pct_layer_aware_max=5.4"
    for spec in "resnet18_c10 resnet18 10 --batch 4" "resnet18_c100 resnet18 100 --batch 4" \
                "distilbert distilbert 2 --batch 2 --seq 16"; do
        read -ra opts <<<"$spec"
        name=${opts[0]} arch=${opts[1]}
        for mode in fp32 gbinary gternary layer_aware "layer_aware --admission last_linear"; do
            port=$(nf_free_port)
            local key=${mode/ --admission last_linear/_last_linear}
            json=$d/$key-$name.json
            local mo
            read -ra mo <<<"$mode"
            (cd "$d" && nice -n 5 env PYTHONPATH="$NF_ROOT/guest/python" \
                 NFABRIC_LIB="$NF_HOST_BUILD/guest/libnfabric.so" "$NF_PY" -m nfabric.examples.archs \
                 --spawn 2 --arch "$arch" --classes "${opts[2]}" "${opts[@]:3}" --mode "${mo[@]}" \
                 --steps "$steps" --probe 1 --budget-pct "$budget" --master-port "$port" \
                 --state "$NF_RUN_SHM/bench-archs.state" --mem "$NF_RUN_SHM/bench-archs.mem" \
                 > "$json" 2> "$d/$key-$name.err") ||
                nf_die "bench archs: $mode on $name failed ($d/$key-$name.err)"
            nf_ddp_py - "$json" "$key" "$name" <<'PY'
import json, sys
path, key, name = sys.argv[1:4]
rows = [json.loads(l) for l in open(path) if l.startswith("{")]
r0 = [r for r in rows if r["rank"] == 0][0]
if not all(r["params_identical"] for r in rows):
    sys.exit("bench archs: %s %s: the ranks' parameters differ" % (key, name))
print("params_%s=%d" % (name, r0["params_total"]))
print("traffic_pct_%s_%s=%.3f" % (key, name, r0["traffic_pct"]))
if key.startswith("layer_aware"):
    kept = r0.get("fp32_layers") or []
    print("fp32_layers_%s_%s=%s" % (key, name, ",".join(kept) or "-"))
    print("fp32_layer_count_%s_%s=%d" % (key, name, len(kept)))
    if "head" in r0:
        print("head_%s=%s" % (name, r0["head"]))
        print("head_fp32_%s_%s=%s" % (key, name, "yes" if r0["head_fp32"] else "no"))
        print("head_sensitivity_rank_%s=%d" % (name, r0["head_rank"]))
        print("ranking_%s=%s" % (name, ",".join(r0.get("ranking", []))))
PY
        done
    done
    rm -f "$NF_RUN_SHM/bench-archs.state" "$NF_RUN_SHM/bench-archs.mem"
}

nf_bench_ef() {
    local seeds=3 steps=300 d=$NF_BUILD/bench-ef
    while [ $# -gt 0 ]; do
        case "$1" in
        --seeds) seeds=${2:?}; shift ;;
        --steps) steps=${2:?}; shift ;;
        -h|--help) echo "usage: scripts/nfabric bench ef [--seeds N] [--steps N]"
                   echo "nfabric.examples.study --study ef: 4 ranks on host heads, Fashion-MNIST,"
                   echo "every EF form against none at the same steps, N seeds each:"
                   echo "acc_CONFIG_SHARDS_mean=, _std=, _min=, _max=, _seeds=; and what EF did:"
                   echo "ef_residual_ratio_{first,last}_CONFIG_SHARDS= (|e| / |g|, worker EF) and"
                   echo "scale_{first,last}_CONFIG_SHARDS= (the compressor's scale), first and last tenth."
                   return 0 ;;
        *) echo "bench ef: unknown option \"$1\"" >&2; return 2 ;;
        esac
        shift
    done
    nf_ddp_study ef "$seeds" "$steps" "$d"
}

# nf_ddp_study STUDY SEEDS STEPS DIR [ARGS...]: nfabric.examples.study
# --study STUDY on host heads, each run's JSON kept in DIR/runs.
nf_ddp_study() {
    local study=$1 seeds=$2 steps=$3 d=$4
    shift 4
    { [[ "$seeds" =~ ^[0-9]+$ ]] && [ "$seeds" -ge 1 ] && [[ "$steps" =~ ^[0-9]+$ ]] && [ "$steps" -ge 1 ]; } ||
        { echo "bench $study: --seeds and --steps must be positive integers" >&2; return 2; }
    nf_ddp_prepare
    mkdir -p "$d"
    (cd "$d" && nice -n 5 env PYTHONPATH="$NF_ROOT/guest/python" \
         NFABRIC_LIB="$NF_HOST_BUILD/guest/libnfabric.so" "$NF_PY" -m nfabric.examples.study \
         --study "$study" --seeds "$seeds" --steps "$steps" --out "$d/runs" "$@") ||
        nf_die "bench $study: the study failed (runs in $d/runs)"
}

nf_bench_hard() {
    local seeds=3 steps=300 d=$NF_BUILD/bench-hard
    while [ $# -gt 0 ]; do
        case "$1" in
        --seeds) seeds=${2:?}; shift ;;
        --steps) steps=${2:?}; shift ;;
        -h|--help) echo "usage: scripts/nfabric bench hard [--seeds N] [--steps N]"
                   echo "nfabric.examples.study --study hard: 4 ranks on host heads, the task"
                   echo "--task pairs (100 classes), fp32 / gbinary / gternary / layer_aware"
                   echo "(sensitivity admission, 20 % budget, G-Binary or G-Ternary on the rest),"
                   echo "N seeds each: acc_CONFIG_hard= (mean), _std=, _min=, _max=, _seeds=,"
                   echo "traffic_pct_CONFIG_hard=, fp32_layers_CONFIG_hard=, recovered_pct_hard="
                   echo "(the share of the fp32 - gbinary gap layer_aware closes, %)."
                   return 0 ;;
        *) echo "bench hard: unknown option \"$1\"" >&2; return 2 ;;
        esac
        shift
    done
    nf_ddp_study hard "$seeds" "$steps" "$d"
}

# ---- bench pools: jobs across pools (docs/pools.md) -----------------------
nf_bench_pools() {
    local d=$NF_BUILD/bench-pools
    case "${1:-}" in
    -h|--help) nf_ddp_py -m nfabric.poolbench --help; return 0 ;;
    esac
    nf_ddp_prepare
    nf_need gnuplot-nox
    mkdir -p "$d"
    (cd "$NF_RUN_TMP" && nf_ddp_py -m nfabric.poolbench --out "$d" "$@") | tee "$d/results.txt"
    [ "${PIPESTATUS[0]}" = 0 ] || nf_die "bench pools: nfabric.poolbench failed"
    awk -F'\t' '$1 ~ /^pools[0-9]+_counts$/ { p = $1; sub(/^pools/, "", p); sub(/_counts$/, "", p); c[p] = $2 }
                $1 ~ /^pools[0-9]+_votes$/ { p = $1; sub(/^pools/, "", p); sub(/_votes$/, "", p); v[p] = $2 }
                $1 == "flat16" { f = $2 }
                END { for (p in c) printf "%s %s %s %s\n", p, c[p], (p in v) ? v[p] : c[p], f }' \
        "$d/pools.tsv" | sort -n > "$d/acc.dat"
    awk -F'\t' '$1 ~ /^pools/ { print $1, $3, $4, $5 }' "$d/pools.tsv" > "$d/bytes.dat"
    gnuplot <<GP || nf_die "bench pools: gnuplot failed"
set terminal pngcairo noenhanced size 1100,460 font ",11"
set output '$d/pools.png'
set multiplot layout 1,2
set title "test accuracy against the number of pools (G-Binary, 4 ranks a pool)"
set xlabel 'pools P'
set ylabel 'accuracy'
set logscale x 2
set grid
set key bottom left
plot '$d/acc.dat' using 1:2 with linespoints title 'counts (exact)', \
     '' using 1:3 with linespoints title 'votes (majority of pools)', \
     '' using 1:4 with lines dt 2 title 'one device, 16 ranks'
unset logscale x
set title "bytes per step and rank, per tier"
set style data histograms
set style histogram clustered
set style fill solid 0.8 border -1
set logscale y
set ylabel 'bytes (log)'
set xtics rotate by -30
set key top right
plot '$d/bytes.dat' using 2:xtic(1) title 'between pools', '' using 3 title 'inside a pool (network)', \
     '' using 4 title 'device writes (pool 0)'
unset multiplot
GP
    mkdir -p "$NF_ROOT/docs/img"
    cp "$d/pools.png" "$NF_ROOT/docs/img/pools.png"
    nf_log "bench pools: results in $d, figure docs/img/pools.png"
}
