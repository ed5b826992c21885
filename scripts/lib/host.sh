# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The project's own meson build (engine, unit tests, benchmarks, guest programs).

nf_host_build() {
    # The training program bakes a small Fashion-MNIST subset in at configure time.
    nf_need "${NF_PKGS_BUILD[@]}" dataset-fashion-mnist
    if [ ! -f "$NF_HOST_BUILD/build.ninja" ]; then
        nf_log "configuring the host build in $NF_HOST_BUILD"
        meson setup "$NF_HOST_BUILD" "$NF_ROOT" >/dev/null ||
            nf_die "meson setup of the host build failed"
    fi
    ninja -C "$NF_HOST_BUILD" -j "$(nproc)" >"$NF_BUILD/host-ninja.log" 2>&1 || {
        tail -40 "$NF_BUILD/host-ninja.log" >&2
        nf_die "host build failed (log: $NF_BUILD/host-ninja.log)"
    }
}
