# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `scripts/nfabric bench timing`: the timing model's exposed datapath
# overhead in both regimes and the sweep between them (offered load,
# datapath depth), through the offline tool bench/nfabric_timing_tool.c.
# Prints two tables and key=value lines; draws build/bench/timing/*.png.
# docs/timing.md explains the model and the figures.

NF_TIMING_LOADS="0.05 0.1 0.15 0.2 0.25 0.3 0.35 0.4 0.5 0.6 0.7 0.8 0.9 0.95 1.0 1.05 1.1 1.2"
NF_TIMING_DEPTHS="0 1 2 3 4 5 6 8 10 12 14 16 20 24 28 32"

nf_timing_usage() {
    cat <<'USAGE'
usage: scripts/nfabric bench timing [--count N] [--no-plot] [--docs]

Runs the timing model (default parameters: 1000 MHz, depth 5, 300 ns,
32000 MB/s) on synthetic streams of low-bit accesses:
  LLC-miss regime      dependent accesses (each waits for the previous)
  bandwidth pressure   open arrivals at the link bandwidth (load 1.0)
  sweeps               offered load 0.05..1.2 (8 and 64 bytes, evenly
                       spaced and Poisson arrivals) and depth 0..32
Prints tables and key=value lines; plots into build/bench/timing/.
  --count N   requests per run (default 10000)
  --no-plot   skip the PNG plots (and gnuplot)
  --docs      copy the plots to docs/img/timing-{load,depth}.png
USAGE
}

# nf_timing_fig KEY... < tool output: the values, space separated.
nf_timing_fig() {
    awk -F= -v keys="$*" '
        BEGIN { n = split(keys, k, " ") }
        { v[$1] = $2 }
        END { for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? " " : ""),
                  (k[i] in v ? v[k[i]] : "nan"); print "" }'
}

# nf_timing_run ARGS...: run the tool, output on stdout, die on failure.
nf_timing_run() {
    local o
    o=$("$NF_TIMING_TOOL" "$@") || nf_die "nfabric-timing $* failed"
    printf '%s\n' "$o"
}

nf_timing_plot() {
    local out=$1
    command -v gnuplot >/dev/null 2>&1 || nf_need gnuplot-nox
    gnuplot <<GP || nf_die "gnuplot failed"
set terminal pngcairo size 800,500 font "sans,10"
set grid
set key top right
set datafile missing "nan"

set output "$out/timing-load.png"
set title "Exposed datapath overhead vs offered load (depth 5, 1 GHz, 300 ns, 32 GB/s)"
set xlabel "offered load (fraction of link bandwidth)"
set ylabel "exposed overhead (% of access time)"
set xrange [0:1.25]
set yrange [0:2]
set key right center
plot "$out/load.dat" using 1:2 with linespoints pt 7 ps 0.6 lw 2 title "8 B, evenly spaced", \
     "" using 1:3 with linespoints pt 5 ps 0.6 lw 2 title "8 B, Poisson", \
     "" using 1:4 with linespoints pt 9 ps 0.6 lw 2 title "64 B, evenly spaced", \
     "" using 1:5 with linespoints pt 11 ps 0.6 lw 2 title "64 B, Poisson", \
     $NF_TIMING_LLC with lines dt 2 lw 2 lc rgb "black" title sprintf("LLC-miss regime (dependent): %.3f %%", $NF_TIMING_LLC)

set output "$out/timing-depth.png"
set title "Exposed datapath overhead vs datapath depth (8 B accesses, 1 GHz, 300 ns, 32 GB/s)"
set xlabel "datapath depth (cycles)"
set ylabel "exposed overhead (% of access time, log scale)"
set xrange [0:32]
set logscale y
set yrange [0.0001:20]
set format y "%g"
set key bottom right
set arrow from 5, graph 0 to 5, graph 1 nohead dt 3 lc rgb "gray40"
set label "default depth 5" at 5.3, 10 textcolor rgb "gray40"
# (depth 0 exposes nothing: off the log scale)
plot "$out/depth.dat" using 1:2 with linespoints pt 7 ps 0.6 lw 2 title "LLC-miss regime (dependent)", \
     "" using 1:3 with linespoints pt 5 ps 0.6 lw 2 title "load 0.1, Poisson", \
     "" using 1:4 with linespoints pt 9 ps 0.6 lw 2 title "load 0.5, Poisson", \
     "" using 1:5 with linespoints pt 11 ps 0.6 lw 2 title "load 0.9, Poisson", \
     "" using 1:6 with linespoints pt 13 ps 0.6 lw 2 title "load 1.0 (bandwidth pressure)", \
     1.67 with lines dt 2 lc rgb "black" title "1.67 %"
GP
}

nf_bench_timing() {
    local count=10000 plot=1 docs=0
    while [ $# -gt 0 ]; do
        case "$1" in
        --count) [ $# -ge 2 ] || nf_die "--count needs a value"
                 count=$2; shift ;;
        --count=*) count=${1#*=} ;;
        --no-plot) plot=0 ;;
        --docs) docs=1 ;;
        -h|--help) nf_timing_usage; return 0 ;;
        *) echo "nfabric bench timing: unknown option \"$1\"" >&2
           nf_timing_usage >&2; return 2 ;;
        esac
        shift
    done
    case "$count" in ''|*[!0-9]*) nf_die "--count: a number, not \"$count\"" ;; esac

    nf_host_build
    NF_TIMING_TOOL=$NF_HOST_BUILD/bench/nfabric-timing
    local out=$NF_BUILD/bench/timing c=(--count "$count")
    mkdir -p "$out"

    # ---- the two regimes ------------------------------------------------
    local llc llc_ppm llc64 llc32 bw bwp bwq bwf over
    read -r llc llc_ppm <<<"$(nf_timing_run --dependent "${c[@]}" |
                              nf_timing_fig exposed_pct exposed_ppm)"
    llc64=$(nf_timing_run --dependent "${c[@]}" --size 64 | nf_timing_fig exposed_pct)
    llc32=$(nf_timing_run --dependent "${c[@]}" --depth 32 | nf_timing_fig exposed_pct)
    read -r bw bwq bwf <<<"$(nf_timing_run --load 1.0 "${c[@]}" |
                         nf_timing_fig exposed_pct max_queued mean_in_flight)"
    bwp=$(nf_timing_run --load 1.0 --arrivals poisson "${c[@]}" | nf_timing_fig exposed_pct)
    over=$(nf_timing_run --load 1.2 "${c[@]}" | nf_timing_fig exposed_pct)
    NF_TIMING_LLC=$llc

    # ---- load sweep -------------------------------------------------------
    local l f8 p8 f64 p64 occ
    {
        echo "# load exp%_8B_fixed exp%_8B_poisson exp%_64B_fixed exp%_64B_poisson" \
             "mean_queued max_queued mean_in_flight max_in_flight link_util%" \
             "latency_added% runtime_added% (8B Poisson)"
        for l in $NF_TIMING_LOADS; do
            f8=$(nf_timing_run --load "$l" "${c[@]}" | nf_timing_fig exposed_pct)
            occ=$(nf_timing_run --load "$l" --arrivals poisson "${c[@]}" |
                  nf_timing_fig exposed_pct mean_queued max_queued \
                                mean_in_flight max_in_flight link_util_pct \
                                latency_added_pct runtime_added_pct)
            p8=${occ%% *}
            f64=$(nf_timing_run --load "$l" --size 64 "${c[@]}" | nf_timing_fig exposed_pct)
            p64=$(nf_timing_run --load "$l" --size 64 --arrivals poisson "${c[@]}" |
                  nf_timing_fig exposed_pct)
            echo "$l $f8 $p8 $f64 $p64 ${occ#* }"
        done
    } >"$out/load.dat"

    echo "Exposed datapath overhead (% of access time) vs offered load, depth 5:"
    printf '%6s | %9s %9s | %9s %9s | %8s %6s %9s %6s %6s | %6s %6s\n' \
        load "8B even" "8B pois" "64B even" "64B pois" \
        "mean q" "max q" "in flight" "max" "util%" "lat+%" "run+%"
    while read -r l f8 p8 f64 p64 mq xq mf xf u la ra; do
        [ "${l#\#}" = "$l" ] || continue
        printf '%6s | %9.4f %9.4f | %9.4f %9.4f | %8.2f %6s %9.1f %6s %6.1f | %6.3f %6.3f\n' \
            "$l" "$f8" "$p8" "$f64" "$p64" "$mq" "$xq" "$mf" "$xf" "$u" "$la" "$ra"
    done <"$out/load.dat"
    echo "(right of the exposed figures, for the 8-byte Poisson stream: requests" \
         "queued before the link and in flight, link utilisation, and how much" \
         "the datapath adds to the summed latency and to the runtime against" \
         "depth 0; LLC-miss regime: $llc %)"
    echo

    # ---- depth sweep ------------------------------------------------------
    local d dep q1 q5 q9 b1
    {
        echo "# depth exp%_dependent exp%_poisson0.1 exp%_poisson0.5 exp%_poisson0.9 exp%_load1.0 (8B)"
        for d in $NF_TIMING_DEPTHS; do
            dep=$(nf_timing_run --dependent --depth "$d" "${c[@]}" | nf_timing_fig exposed_pct)
            q1=$(nf_timing_run --load 0.1 --arrivals poisson --depth "$d" "${c[@]}" | nf_timing_fig exposed_pct)
            q5=$(nf_timing_run --load 0.5 --arrivals poisson --depth "$d" "${c[@]}" | nf_timing_fig exposed_pct)
            q9=$(nf_timing_run --load 0.9 --arrivals poisson --depth "$d" "${c[@]}" | nf_timing_fig exposed_pct)
            b1=$(nf_timing_run --load 1.0 --depth "$d" "${c[@]}" | nf_timing_fig exposed_pct)
            echo "$d $dep $q1 $q5 $q9 $b1"
        done
    } >"$out/depth.dat"

    echo "Exposed datapath overhead (%) vs datapath depth, 8-byte accesses:"
    printf '%6s | %9s | %9s %9s %9s | %9s\n' depth LLC-miss "pois 0.1" \
        "pois 0.5" "pois 0.9" "load 1.0"
    while read -r d dep q1 q5 q9 b1; do
        [ "${d#\#}" = "$d" ] || continue
        printf '%6s | %9.4f | %9.4f %9.4f %9.4f | %9.4f\n' \
            "$d" "$dep" "$q1" "$q5" "$q9" "$b1"
    done <"$out/depth.dat"
    echo

    # ---- key figures ------------------------------------------------------
    echo "count=$count"
    echo "llc_miss_exposed_pct=$llc"
    echo "llc_miss_exposed_ppm=$llc_ppm"
    echo "llc_miss_64b_exposed_pct=$llc64"
    echo "llc_miss_depth32_exposed_pct=$llc32"
    echo "bw_pressure_exposed_pct=$bw"
    echo "bw_pressure_poisson_exposed_pct=$bwp"
    echo "bw_pressure_max_queued=$bwq"
    echo "bw_pressure_mean_in_flight=$bwf"
    echo "overload_1.2_exposed_pct=$over"
    # The depth the RTL measures (hw/rtl, docs/rtl.md), through the same
    # model, beside the paper's bound.
    local rtl_tb rtl_lat rtl_llc
    nf_rtl_deps >&2
    mkdir -p "$NF_RTL_BUILD"
    rtl_tb=$(nf_rtl_harness full 512) || nf_die "bench timing: cannot build the RTL harness"
    rtl_lat=$("$rtl_tb" --latency | sed -n 's/^rtl_latency_cycles=//p' | head -n 1)
    [[ "$rtl_lat" =~ ^[0-9]+$ ]] || nf_die "bench timing: the RTL harness measured no latency ($rtl_tb --latency)"
    rtl_llc=$(nf_timing_run --dependent "${c[@]}" --depth "$rtl_lat" | nf_timing_fig exposed_pct)
    echo "rtl_latency_cycles=$rtl_lat"
    echo "llc_miss_exposed_pct_at_rtl_latency=$rtl_llc"
    echo "paper_exposed_bound_pct=1.67"
    awk -v a="$rtl_llc" 'BEGIN { printf "rtl_exposed_vs_paper_bound=%.4f\n", a / 1.67 }'
    awk -v f="$out/load.dat" 'BEGIN {
        while ((getline line < f) > 0) {
            if (line ~ /^#/) continue
            split(line, a, " ")
            printf "load_%s_exposed_pct=%s\n", a[1], a[2]
            printf "load_%s_poisson_exposed_pct=%s\n", a[1], a[3]
        } }'
    local meets
    meets=$(awk -v a="$llc" -v b="$bw" 'BEGIN { print (a <= 1.67 && b <= 0.01) ? "yes" : "no" }')
    echo "meets_targets=$meets"

    if [ "$plot" = 1 ]; then
        nf_timing_plot "$out"
        echo "plot_load=$out/timing-load.png"
        echo "plot_depth=$out/timing-depth.png"
        if [ "$docs" = 1 ]; then
            mkdir -p "$NF_ROOT/docs/img"
            cp "$out/timing-load.png" "$NF_ROOT/docs/img/timing-load.png"
            cp "$out/timing-depth.png" "$NF_ROOT/docs/img/timing-depth.png"
            echo "docs_plots=docs/img/timing-load.png,docs/img/timing-depth.png"
        fi
    fi
    [ "$meets" = yes ]
}
