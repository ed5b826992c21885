# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# nfabric-train (guest/train/, docs/training.md):
#   scripts/nfabric bench train   the host study: every mode on the easy and
#                                 the hard configuration, key=value lines,
#                                 plots in build/bench/train/ and docs/img/
#   suite `train`                 host determinism and traffic checks, and a
#                                 guest run through the device whose
#                                 aggregated-gradient hashes must equal the
#                                 host engine run's

NF_TRAIN_BIN=$NF_HOST_BUILD/guest/train/nfabric-train
NF_TRAIN_STATIC=$NF_HOST_BUILD/guest/train/static/nfabric-train
NF_TRAIN_OUT=$NF_BUILD/bench/train

# NAME|nfabric-train arguments.  The first four are the modes of the study;
# the others are the variants docs/training.md discusses.
NF_TRAIN_RUNS=(
    "fp32|--mode fp32"
    "gbinary|--mode gbinary"
    "gternary|--mode gternary"
    "layeraware|--mode layeraware"
    "layeraware_gternary|--mode layeraware --lowbit gternary"
    "gbinary_ef|--mode gbinary --ef"
    "layeraware_ef|--mode layeraware --ef"
)

# The data set, the host build, and a build that embeds the guest subset
# (guest/train/meson.build looks for the data set when it is configured).
nf_train_prepare() {
    nf_need dataset-fashion-mnist
    nf_host_build
    if [ ! -x "$NF_TRAIN_BIN" ] || ! "$NF_TRAIN_BIN" --has-embedded >/dev/null 2>&1; then
        nf_log "train: reconfiguring $NF_HOST_BUILD to embed the Fashion-MNIST subset"
        meson setup --reconfigure "$NF_HOST_BUILD" "$NF_ROOT" >/dev/null ||
            nf_die "train: meson setup --reconfigure failed"
        nf_host_build
    fi
    [ -x "$NF_TRAIN_BIN" ] || nf_die "train: $NF_TRAIN_BIN was not built"
}

# nf_train_kv FILE KEY: the value of KEY= in FILE (last one).
nf_train_kv() {
    sed -n "s/^$2=//p" "$1" | tail -1
}

# ---- bench ---------------------------------------------------------------
nf_bench_train_usage() {
    cat <<'USAGE'
usage: scripts/nfabric bench train [--seed N] [--no-plots] [-- NFABRIC-TRAIN-ARGS...]

Trains the MLP of docs/training.md with every aggregation mode (fp32,
gbinary, gternary, layeraware and the variants layeraware_gternary,
gbinary_ef, layeraware_ef) on the easy and the hard configuration, through
the engine backend (host memory).  Prints acc_MODE_CONFIG= (final test
accuracy, %), traffic_pct_MODE_CONFIG= (bytes the workers wrote, % of the
fp32 run's, as counted by the engine backend), grad_bytes_per_step_*,
wall_s_*.  Outputs, CSV curves and PNG plots: build/bench/train/; the plots
are copied to docs/img/train-*.png.  Arguments after -- go to every run.
USAGE
}

nf_bench_train() {
    local seed=1 plots=1 extra=()
    while [ $# -gt 0 ]; do
        case "$1" in
        -h|--help) nf_bench_train_usage; return 0 ;;
        --seed) [ $# -ge 2 ] || { echo "bench train: --seed needs a value" >&2; return 2; }
                seed=$2; shift ;;
        --no-plots) plots=0 ;;
        --) shift; extra=("$@"); break ;;
        *) echo "bench train: unknown argument \"$1\"" >&2; nf_bench_train_usage >&2; return 2 ;;
        esac
        shift
    done
    nf_train_prepare
    mkdir -p "$NF_TRAIN_OUT"
    local t0=$EPOCHREALTIME cfg r name args f base bytes acc
    for cfg in easy hard; do
        for r in "${NF_TRAIN_RUNS[@]}"; do
            name=${r%%|*}
            args=${r#*|}
            f=$NF_TRAIN_OUT/${name}_$cfg
            nf_log "train: $name ($cfg)"
            # shellcheck disable=SC2086
            "$NF_TRAIN_BIN" --config "$cfg" $args --seed "$seed" --quiet \
                --csv "$f.csv" "${extra[@]}" > "$f.txt" ||
                nf_die "train: $name $cfg failed (output: $f.txt)"
        done
    done
    echo "train_backend=engine"
    echo "traffic_source=$(nf_train_kv "$NF_TRAIN_OUT/fp32_easy.txt" traffic_source)"
    echo "seed=$seed"
    for cfg in easy hard; do
        base=$(nf_train_kv "$NF_TRAIN_OUT/fp32_$cfg.txt" grad_bytes_per_step)
        echo "steps_$cfg=$(nf_train_kv "$NF_TRAIN_OUT/fp32_$cfg.txt" steps)"
        for r in "${NF_TRAIN_RUNS[@]}"; do
            name=${r%%|*}
            f=$NF_TRAIN_OUT/${name}_$cfg.txt
            acc=$(nf_train_kv "$f" final_acc)
            bytes=$(nf_train_kv "$f" grad_bytes_per_step)
            echo "acc_${name}_$cfg=$acc"
            awk -v b="$bytes" -v f="$base" -v k="traffic_pct_${name}_$cfg" \
                'BEGIN { printf "%s=%.3f\n", k, 100 * b / f }'
            echo "grad_bytes_per_step_${name}_$cfg=$bytes"
            echo "wall_s_${name}_$cfg=$(nf_train_kv "$f" wall_s)"
        done
    done | tee "$NF_TRAIN_OUT/results.txt"
    [ "$plots" = 1 ] && nf_train_plots "$NF_TRAIN_OUT"
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "study_s=%.1f\n", b - a }'
}

# nf_train_plots DIR: accuracy vs step per configuration, traffic per mode.
nf_train_plots() {
    local dir=$1 cfg r name plot="" sep="" i=0
    nf_need gnuplot-nox
    local colors=(1 2 3 4 6 7 8)
    for cfg in easy hard; do
        plot=""
        sep=""
        i=0
        for r in "${NF_TRAIN_RUNS[@]}"; do
            name=${r%%|*}
            plot="$plot$sep'$dir/${name}_$cfg.csv' using 1:3 with linespoints lt ${colors[$i]} dt $([ $i -lt 4 ] && echo 1 || echo 2) pt 7 ps 0.5 title '$name'"
            sep=", "
            i=$((i + 1))
        done
        gnuplot <<GP || nf_die "train: gnuplot failed"
set terminal pngcairo noenhanced size 900,560 font ",11"
set output '$dir/train-acc-$cfg.png'
set title "nfabric-train, $cfg configuration: test accuracy vs step (2000 test images per point)"
set xlabel 'optimiser step'
set ylabel 'test accuracy (%)'
set key bottom right
set grid
set datafile separator ','
set yrange [$([ $cfg = easy ] && echo 60 || echo 30):95]
plot $plot
GP
    done
    # Traffic per mode: % of FP32 (bytes written by the workers).  Both
    # configurations train the same network, so the traffic is the same;
    # the labels give each configuration's final accuracy.
    {
        echo "# mode traffic acc_easy acc_hard"
        for r in "${NF_TRAIN_RUNS[@]}"; do
            name=${r%%|*}
            printf '%s %s %s %s\n' "$name" \
                "$(nf_train_kv "$dir/results.txt" "traffic_pct_${name}_easy")" \
                "$(nf_train_kv "$dir/results.txt" "acc_${name}_easy")" \
                "$(nf_train_kv "$dir/results.txt" "acc_${name}_hard")"
        done
    } > "$dir/traffic.dat"
    gnuplot <<GP || nf_die "train: gnuplot failed"
set terminal pngcairo noenhanced size 900,560 font ",11"
set output '$dir/train-traffic.png'
set title "nfabric-train: gradient bytes written per step, % of FP32 (engine backend's counts)"
set style fill solid 0.8 border -1
set boxwidth 0.6
set logscale y
set yrange [1:300]
set xrange [-0.6:${#NF_TRAIN_RUNS[@]}-0.4]
set ylabel 'bytes written by the workers, % of FP32 (log scale)'
set xtics rotate by -20
set grid ytics
set label 1 "labels: traffic %, final test accuracy easy / hard" at graph 0.02, graph 0.95
plot '$dir/traffic.dat' using 0:2:xtic(1) with boxes lc rgb '#3b7dd8' notitle, \
     '' using 0:(\$2*1.5):(sprintf("%.2f%%\n%.1f / %.1f", \$2, \$3, \$4)) with labels notitle
GP
    mkdir -p "$NF_ROOT/docs/img"
    for f in train-acc-easy train-acc-hard train-traffic; do
        cp "$dir/$f.png" "$NF_ROOT/docs/img/$f.png"
    done
    nf_log "train: plots in $dir and docs/img/train-*.png"
}

# ---- suite ---------------------------------------------------------------

# Runs compared between the host (engine) and the guest (device).
NF_TRAIN_CHECK_RUNS=(
    "fp32|--mode fp32"
    "gbinary|--mode gbinary"
    "gternary|--mode gternary"
    "layeraware|--mode layeraware"
    "gbinary_ef|--mode gbinary --ef"
    "layeraware_gt_warm|--mode layeraware --lowbit gternary --warmup 2"
)
# Small enough for TCG: 2 workers, 5 steps of 32 images, 200 test images.
NF_TRAIN_GUEST_ARGS="--workers 2 --batch 32 --steps 5 --hash-steps 5 --subset 200 --test-subset 200 --data embedded --quiet"

nf_suite_train() {
    local dir=$NF_BUILD/test-logs/train r name args a b k st
    rm -rf "$dir"
    mkdir -p "$dir"
    nf_train_prepare
    [ -x "$NF_TRAIN_BIN" ] && [ -x "$NF_TRAIN_STATIC" ]
    nf_tap $? "nfabric-train built for the host and the guest"
    ! readelf -l "$NF_TRAIN_STATIC" 2>/dev/null | grep -q INTERP
    nf_tap $? "guest nfabric-train is a static binary"
    "$NF_TRAIN_BIN" --has-embedded > "$dir/embedded.txt" 2>&1
    nf_tap $? "embedded subset present ($(tr '\n' ' ' < "$dir/embedded.txt"))"

    # Host determinism: the same seed twice gives the same hashes.
    local small="--subset 2000 --steps 20 --hash-steps 10 --test-subset 1000 --quiet"
    for r in "${NF_TRAIN_CHECK_RUNS[@]}"; do
        name=${r%%|*}
        args=${r#*|}
        # shellcheck disable=SC2086
        "$NF_TRAIN_BIN" $small $args > "$dir/host-$name-1.txt" 2>&1 &&
            "$NF_TRAIN_BIN" $small $args > "$dir/host-$name-2.txt" 2>&1
        st=$?
        a=$(nf_train_kv "$dir/host-$name-1.txt" grad_hash)
        b=$(nf_train_kv "$dir/host-$name-2.txt" grad_hash)
        [ "$st" = 0 ] && [ -n "$a" ] && [ "$a" = "$b" ] &&
            [ "$(nf_train_kv "$dir/host-$name-1.txt" weights_hash)" = \
              "$(nf_train_kv "$dir/host-$name-2.txt" weights_hash)" ]
        nf_tap $? "host determinism $name: same seed twice, grad_hash $a = $b, same weights"
    done
    # shellcheck disable=SC2086
    "$NF_TRAIN_BIN" $small --mode gbinary --seed 2 > "$dir/host-gbinary-seed2.txt" 2>&1
    a=$(nf_train_kv "$dir/host-gbinary-1.txt" grad_hash)
    b=$(nf_train_kv "$dir/host-gbinary-seed2.txt" grad_hash)
    [ -n "$b" ] && [ "$a" != "$b" ]
    nf_tap $? "another seed gives another hash ($a vs $b)"

    # Traffic as the engine backend counted it.
    k=$dir/host-fp32-1.txt
    [ "$(nf_train_kv "$k" traffic_pct)" = 100.000 ] &&
        [ "$(nf_train_kv "$k" bytes_written_fp32)" = \
          "$(( $(nf_train_kv "$k" fp32_bytes_per_step) * 20 ))" ]
    nf_tap $? "fp32 writes W x 4 bytes x params per step on the FP32 path"
    nf_train_range() {   # FILE LO HI
        awk -v v="$(nf_train_kv "$1" traffic_pct)" -v lo="$2" -v hi="$3" \
            'BEGIN { exit !(v != "" && v >= lo && v <= hi) }'
    }
    nf_train_range "$dir/host-gbinary-1.txt" 3.1 3.2 &&
        [ "$(nf_train_kv "$dir/host-gbinary-1.txt" bytes_written_fp32)" = 0 ]
    nf_tap $? "gbinary traffic $(nf_train_kv "$dir/host-gbinary-1.txt" traffic_pct)% of FP32, all on the G-Binary path"
    nf_train_range "$dir/host-gternary-1.txt" 6.2 6.4
    nf_tap $? "gternary traffic $(nf_train_kv "$dir/host-gternary-1.txt" traffic_pct)% of FP32 (codes + scales)"
    nf_train_range "$dir/host-layeraware-1.txt" 3.5 3.8 &&
        [ "$(nf_train_kv "$dir/host-layeraware-1.txt" bytes_written_fp32)" -gt 0 ]
    nf_tap $? "layeraware traffic $(nf_train_kv "$dir/host-layeraware-1.txt" traffic_pct)% of FP32 (head on FP32)"
    awk -v a="$(nf_train_kv "$dir/host-fp32-1.txt" final_acc)" \
        -v b="$(nf_train_kv "$dir/host-gbinary-1.txt" final_acc)" 'BEGIN { exit !(a > 50 && b > 50) }'
    nf_tap $? "20 steps learn: fp32 $(nf_train_kv "$dir/host-fp32-1.txt" final_acc)%, gbinary $(nf_train_kv "$dir/host-gbinary-1.txt" final_acc)%"

    # Guest: the same runs through the device must give the same hashes.
    nf_train_guest "$dir"
    return "$NF_TAP_FAILED"
}

nf_train_guest() {
    local dir=$1 why="" r name args cmd rc=0 h g k ok
    local log=$dir/guest-console.log
    if [ ! -x "$NF_QEMU_BIN" ] ||
       ! "$NF_QEMU_BIN" -nodefaults -device help 2>/dev/null | grep -q '"cxl-neuron-fabric"'; then
        why="QEMU with cxl-neuron-fabric not built (scripts/nfabric setup)"
    elif ! declare -F nf_vm_main >/dev/null || ! declare -F nf_image_main >/dev/null; then
        why="scripts/nfabric vm/image not available"
    else
        nf_image_main >&2 || why="image build failed"
        if [ -z "$why" ] && ! cmp -s "$NF_GUEST/rootfs/usr/bin/nfabric-train" "$NF_TRAIN_STATIC"; then
            why="the guest image has no current /usr/bin/nfabric-train (scripts/lib/image.sh must copy $NF_TRAIN_STATIC)"
        fi
    fi
    if [ -n "$why" ]; then
        # Not a skip: the suite exists to run this part.
        nf_tap 1 "guest run: $why"
        return 1
    fi
    cmd="r() { n=\$1; shift; echo NFT-BEGIN \$n; nfabric-train --device $NF_TRAIN_GUEST_ARGS \"\$@\"; echo NFT-END \$n rc=\$?; };"
    for r in "${NF_TRAIN_CHECK_RUNS[@]}"; do
        cmd="$cmd r ${r%%|*} ${r#*|};"
        name=${r%%|*}
        args=${r#*|}
        # shellcheck disable=SC2086
        "$NF_TRAIN_BIN" $NF_TRAIN_GUEST_ARGS $args > "$dir/ref-$name.txt" 2>&1 ||
            echo "# host reference run $name failed"
    done
    nf_log "train: guest run (console: $log)"
    nf_vm_main --quiet --log "$log" --timeout 600 --run "$cmd" >&2 || rc=$?
    nf_tap "$rc" "guest runs exited 0 (vm status $rc)"
    for r in "${NF_TRAIN_CHECK_RUNS[@]}"; do
        name=${r%%|*}
        awk -v n="$name" '$0 == "NFT-BEGIN " n { on = 1; next }
                          on && index($0, "NFT-END " n " ") == 1 { print "end=" substr($0, length("NFT-END " n " rc=") + 1); on = 0 }
                          on' "$log" > "$dir/guest-$name.txt"
        h=$(nf_train_kv "$dir/ref-$name.txt" grad_hash)
        g=$(nf_train_kv "$dir/guest-$name.txt" grad_hash)
        ok=1
        [ "$(nf_train_kv "$dir/guest-$name.txt" end)" = 0 ] || ok=0
        [ "$(nf_train_kv "$dir/guest-$name.txt" traffic_source)" = device-stats ] || ok=0
        [ -n "$h" ] && [ "$h" = "$g" ] || ok=0
        nf_tap $((1 - ok)) "guest $name: device grad_hash $g = host engine $h (5 steps)"
        ok=1
        [ "$(nf_train_kv "$dir/ref-$name.txt" weights_hash)" = \
          "$(nf_train_kv "$dir/guest-$name.txt" weights_hash)" ] || ok=0
        for k in bytes_written_fp32 bytes_written_gbinary bytes_written_gternary \
                 bytes_read_fp32 bytes_read_gbinary bytes_read_gternary; do
            [ -n "$(nf_train_kv "$dir/guest-$name.txt" $k)" ] &&
            [ "$(nf_train_kv "$dir/ref-$name.txt" $k)" = "$(nf_train_kv "$dir/guest-$name.txt" $k)" ] || ok=0
        done
        nf_tap $((1 - ok)) "guest $name: same final weights; device statistics = engine byte counts (wrote $(nf_train_kv "$dir/guest-$name.txt" grad_bytes_per_step) B/step, $(nf_train_kv "$dir/guest-$name.txt" traffic_pct)% of FP32)"
    done
}
